/* kcapture.c tests, live: four threads of this process spin with r13 pointing at fake Process
 * structs while perf samples them with the capture program attached. A: a plain process (the
 * stack is the 3000 bytes below hend); B: one in a garbage collection (stop outside [heap, hend):
 * the copy starts at stop); C: r13 = 0, its "scheduler" slot (kcapture__watch) names A's process;
 * D: as if in JIT code, rsp (E) inside [htop, hend): the copy is [rsp, hend).
 * Every sample's capture must be found (all but one at most a thread: ci46 missed one of 346
 * once) and hold exactly the fake's bytes. Before them, without the program, a ring laid out
 * here: a capture still being copied in is waited for (test_busy_record). A fifth thread,
 * R, shrinks a fake heap's block in place with mremap over and over, its stack moved to the new
 * end first (as B/erl_gc.c resize_new_heap does): a capture in mremap, or after it before the new
 * bounds are set, must say where the heap now ends and hold the moved stack (F_REMAP), and no
 * other thread's capture may. A sixth, N, spins as if in C on a scheduler's runtime stack (rsp
 * borrowed, below the top its watch entry names): its captures must hold the KCAP_BELOW_SP bytes
 * below rsp and the stack from rsp to that top, exactly; no other thread's may hold the bytes
 * below. Exits 77 when
 * perf_event_open or BPF is not permitted (not root). Does not own: the sampler's use of it. */
#include "check.h"
#include "kcapture.h"
#include "kcapture_layout.h"
#include "perf.h"
#include "process.h"

#include <errno.h>
#include <linux/bpf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define HEAP_BYTES  16384
#define STACK_BYTES 3000
#define GC_BYTES    (KCAP_STACK_MAX + 4096)
#define E_BYTES	    1000 /* D's stack: rsp is this far below hend */
#define NTHREADS    4
/* N's runtime stack: rsp this far into the buffer, the top (its "registers") further up. */
#define N_BYTES 8192
#define N_RSP	4096
#define N_TOP	6144

/* The fake Process: fields at these byte offsets, the span [8, 56); the state word beyond it. */
enum {
	F_HTOP = 16,
	F_HEND = 24,
	F_STOP = 32,
	F_HEAP = 40,
	SPAN_LO = 8,
	SPAN_LEN = 48,
	F_STATE = 56
};
#define FAKE_STATE 0x40020000u /* DIRTY_RUNNING_SYS | GC */

struct spinner {
	uint64_t r13, rsp; /* rsp 0: the thread's own */
	volatile int *stop;
	volatile pid_t tid;
};

/* R's heap: 121,536 words shrunk to 46,422 (two of the VM's heap sizes), 64 bytes into its block;
 * its stack ends at normal_exit. */
#define R_OLD_WORDS   121536u
#define R_NEW_WORDS   46422u
#define R_HEAP_OFF    64u
#define R_STACK_BYTES 2048u
#define R_NORMAL_EXIT 0x7f00dead0000beefull
#define R_PAGE_UP(n)  (((n) + 4095u) & ~4095u)

struct remapper {
	uint64_t proc[8];
	uint64_t cur; /* the "scheduler's" current_process: proc */
	volatile int *stop;
	volatile pid_t tid;
	unsigned rounds;
};

/* The instructions between mremap's return and the new bounds (realloc's, resize_new_heap's):
 * here a spin of n rounds, between the labels xp_past_start and xp_past_end. */
extern const char xp_past_start[], xp_past_end[];
static __attribute__((noinline)) void past_mremap(unsigned long n)
{
	__asm__ volatile(".globl xp_past_start\n"
			 "xp_past_start:\n"
			 "1: pause\n"
			 "dec %0\n"
			 "jnz 1b\n"
			 ".globl xp_past_end\n"
			 "xp_past_end:\n"
			 : "+r"(n));
}

/* R: map a block, write its stack at the old heap's end, move it to the new end (memmove, as the
 * VM does), then mremap the block down to the new heap in place, and unmap it. */
static void *remap_loop(void *arg)
{
	struct remapper *r = arg;
	size_t old_len = R_PAGE_UP(R_HEAP_OFF + 8 * R_OLD_WORDS);
	size_t new_len = R_PAGE_UP(R_HEAP_OFF + 8 * R_NEW_WORDS);
	uint64_t *stack;

	r->tid = (pid_t)syscall(SYS_gettid);
	while (!*r->stop) {
		uint8_t *blk =
		    mmap(NULL, old_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint8_t *heap = blk + R_HEAP_OFF, *hend = heap + 8 * R_OLD_WORDS;

		if (blk == MAP_FAILED)
			break;
		memset(blk, 0x11, old_len); /* every page touched: mremap has work to do */
		stack = (uint64_t *)(hend - R_STACK_BYTES);
		for (size_t i = 0; i < R_STACK_BYTES / 8; i++)
			stack[i] = 0x1000 + i * 8;
		stack[R_STACK_BYTES / 8 - 1] = R_NORMAL_EXIT;
		r->proc[F_HEAP / 8] = (uint64_t)(uintptr_t)heap;
		r->proc[F_HTOP / 8] = (uint64_t)(uintptr_t)(heap + 64);
		r->proc[F_HEND / 8] = (uint64_t)(uintptr_t)hend;
		r->proc[F_STOP / 8] = (uint64_t)(uintptr_t)stack;
		memmove(heap + 8 * R_NEW_WORDS - R_STACK_BYTES, stack, R_STACK_BYTES);
		if (mremap(blk, old_len, new_len, MREMAP_MAYMOVE) != blk)
			break;
		past_mremap(3000);
		r->proc[F_STOP / 8] = r->proc[F_HEND / 8] = 0;
		munmap(blk, new_len);
		r->rounds++;
	}
	return NULL;
}

/* R's captures: in mremap (F_REMAP) and exact, or not. R_ENOUGH of each, in and past it. */
#define R_ENOUGH 5u
struct remap_seen {
	unsigned remapped, exact, other_remap;
	unsigned past; /* of the remapped, after mremap returned (in past_mremap) */
};

static void check_remap(const struct kcap_rec *r, struct remap_seen *rs)
{
	uint64_t heap, want[R_STACK_BYTES / 8];

	if (!r->remap_end)
		return;
	rs->remapped++;
	rs->past += r->ip >= (uint64_t)(uintptr_t)xp_past_start &&
		    r->ip <= (uint64_t)(uintptr_t)xp_past_end;
	if (!r->span)
		return;
	memcpy(&heap, r->span + F_HEAP - SPAN_LO, 8);
	for (size_t i = 0; i < R_STACK_BYTES / 8; i++)
		want[i] = 0x1000 + i * 8;
	want[R_STACK_BYTES / 8 - 1] = R_NORMAL_EXIT;
	if (r->remap_end == heap + 8 * R_NEW_WORDS && r->stack_len == R_STACK_BYTES &&
	    r->stack_addr == r->remap_end - R_STACK_BYTES &&
	    memcmp(r->stack, want, R_STACK_BYTES) == 0)
		rs->exact++;
}

struct seen {
	pid_t tid[NTHREADS];
	const uint64_t *proc[NTHREADS];
	const uint8_t *stack_at[NTHREADS];
	size_t stack_len[NTHREADS];
	bool sched[NTHREADS];
	unsigned samples[NTHREADS], found[NTHREADS], exact[NTHREADS];
	struct kcapture *k;
	pid_t remap_tid;
	unsigned remap_samples, remap_found;
	struct remap_seen rs;
	pid_t native_tid;
	const uint8_t *nstack;
	unsigned native_samples, native_found, native_exact, other_below;
};

/* N's capture: the bytes below its rsp and its stack up to the top, as the buffer holds them. */
static void check_native(struct seen *w, const struct kcap_rec *r)
{
	const uint64_t rsp = (uint64_t)(uintptr_t)(w->nstack + N_RSP);

	w->native_exact +=
	    r->sp == rsp && r->below &&
	    memcmp(r->below, w->nstack + N_RSP - KCAP_BELOW_SP, KCAP_BELOW_SP) == 0 && r->cstack &&
	    r->cstack_addr == rsp && r->cstack_len == N_TOP - N_RSP &&
	    memcmp(r->cstack, w->nstack + N_RSP, N_TOP - N_RSP) == 0;
}

static void *spin(void *arg)
{
	struct spinner *s = arg;

	s->tid = (pid_t)syscall(SYS_gettid);
	if (s->rsp) {
		/* Nothing is pushed while rsp is borrowed: a perf interrupt uses the kernel's
		 * stack. */
		__asm__ volatile("mov %0, %%r13\n"
				 "mov %%rsp, %%r12\n"
				 "mov %2, %%rsp\n"
				 "1: pause\n"
				 "cmpl $0, (%1)\n"
				 "je 1b\n"
				 "mov %%r12, %%rsp\n"
				 :
				 : "r"(s->r13), "r"(s->stop), "r"(s->rsp)
				 : "r12", "r13", "memory");
		return NULL;
	}
	__asm__ volatile("mov %0, %%r13\n"
			 "1: pause\n"
			 "cmpl $0, (%1)\n"
			 "je 1b\n"
			 :
			 : "r"(s->r13), "r"(s->stop)
			 : "r13", "memory");
	return NULL;
}

/* The capture of sample ps, counted in *found when there is one. */
static const struct kcap_rec *claim(struct seen *w, const struct perf_sample *ps, unsigned *found)
{
	const struct kcap_rec *r;

	kcapture__drain(w->k, ps->time);
	r = kcapture__find(w->k, ps->tid, ps->time, ps->regs[PERF_R_IP], ps->regs[PERF_R_SP]);
	*found += r != NULL;
	return r;
}

static void on_sample(const struct perf_sample *ps, void *ctx)
{
	struct seen *w = ctx;
	const struct kcap_rec *r;
	int i;

	for (i = 0; i < NTHREADS && w->tid[i] != (pid_t)ps->tid; i++)
		;
	if (w->remap_tid == (pid_t)ps->tid) {
		w->remap_samples++;
		if ((r = claim(w, ps, &w->remap_found)))
			check_remap(r, &w->rs);
		return;
	}
	if (w->native_tid == (pid_t)ps->tid) {
		w->native_samples++;
		if ((r = claim(w, ps, &w->native_found)))
			check_native(w, r);
		return;
	}
	if (i == NTHREADS || !ps->regs_valid)
		return;
	w->samples[i]++;
	if (!(r = claim(w, ps, &w->found[i])))
		return;
	w->rs.other_remap += r->remap_end != 0;
	w->other_below += r->below != NULL;
	if (r->cp == (uint64_t)(uintptr_t)w->proc[i] && r->from_scheduler == w->sched[i] &&
	    r->span && memcmp(r->span, (const uint8_t *)w->proc[i] + SPAN_LO, SPAN_LEN) == 0 &&
	    r->state_known && r->state == FAKE_STATE &&
	    r->stack_addr == (uint64_t)(uintptr_t)w->stack_at[i] &&
	    r->stack_len == w->stack_len[i] && memcmp(r->stack, w->stack_at[i], r->stack_len) == 0)
		w->exact[i]++;
}

static void fake_process(uint64_t *p, uint8_t *heap, uint8_t *stop)
{
	memset(p, 0, 64);
	p[F_STATE / 8] = FAKE_STATE;
	p[F_HEAP / 8] = (uint64_t)(uintptr_t)heap;
	p[F_HEND / 8] = (uint64_t)(uintptr_t)(heap + HEAP_BYTES);
	p[F_HTOP / 8] = (uint64_t)(uintptr_t)(heap + HEAP_BYTES - STACK_BYTES);
	p[F_STOP / 8] = (uint64_t)(uintptr_t)stop;
}

static int run(struct kcapture *k, struct seen *w, uint64_t *cur, struct remapper *rm)
{
	struct perf_opts o = {PERF_EV_CPU_CLOCK,    997,   8192,  64,	1,
			      kcapture__prog_fd(k), false, false, false};
	struct spinner sp[NTHREADS], nsp;
	struct perf_session *ps = NULL;
	volatile int stop = 0;
	static uint64_t no_process, ntop;
	pthread_t th[NTHREADS], rth, nth;
	pid_t tids[NTHREADS + 2];
	struct timespec t0, t;
	long ms;
	int rc, i;

	for (i = 0; i < NTHREADS; i++) {
		sp[i] = (struct spinner){.r13 = i == 2 ? 0 : (uint64_t)(uintptr_t)w->proc[i],
					 .rsp = i == 3 ? (uint64_t)(uintptr_t)w->stack_at[i] : 0,
					 .stop = &stop};
		pthread_create(&th[i], NULL, spin, &sp[i]);
	}
	rm->stop = &stop;
	pthread_create(&rth, NULL, remap_loop, rm);
	nsp = (struct spinner){.rsp = (uint64_t)(uintptr_t)(w->nstack + N_RSP), .stop = &stop};
	ntop = (uint64_t)(uintptr_t)(w->nstack + N_TOP);
	pthread_create(&nth, NULL, spin, &nsp);
	for (i = 0; i < NTHREADS; i++) {
		while (!sp[i].tid)
			sched_yield();
		tids[i] = w->tid[i] = sp[i].tid;
	}
	while (!rm->tid)
		sched_yield();
	tids[NTHREADS] = w->remap_tid = rm->tid;
	while (!nsp.tid)
		sched_yield();
	tids[NTHREADS + 1] = w->native_tid = nsp.tid;
	kcapture__watch(k, w->tid[2], (uint64_t)(uintptr_t)cur, 0);
	kcapture__watch(k, rm->tid, (uint64_t)(uintptr_t)&rm->cur, 0);
	kcapture__watch(k, nsp.tid, (uint64_t)(uintptr_t)&no_process, (uint64_t)(uintptr_t)&ntop);
	rc = perf_session__open(&ps, tids, NTHREADS + 2, &o);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* 1.5 s, and on up to 6 s until R has the captures its checks count (5 in mremap, 5 past
	 * it): how many land past it follows the machine's timing, 2-9 in 1.5 s on a slow one. */
	do {
		if (!rc)
			perf_session__poll(ps, 50, on_sample, w);
		clock_gettime(CLOCK_MONOTONIC, &t);
		ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
	} while (!rc && (ms < 1500 || (ms < 6000 && (w->rs.past < R_ENOUGH ||
						     w->rs.remapped - w->rs.past < R_ENOUGH))));
	if (!rc)
		CHECK_INT("perf.bpf_unattached", 0, (int)perf_session__stats(ps)->bpf_unattached);
	stop = 1;
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	pthread_join(rth, NULL);
	pthread_join(nth, NULL);
	perf_session__free(ps);
	return rc;
}

/* ---- a capture still being copied in, without the program: a ring laid out here ---- */

#define BUSY_RING 65536u
#define BUSY_LEN  (H_STACK + 4096) /* the capture still being copied */

struct committer {
	uint32_t *len; /* its length word */
	long after_us; /* committed this long after the drain began; < 0: never */
	volatile int ready, go;
	uint64_t committed_us; /* when */
};

static uint64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000;
}

/* Spins (a copy in progress on another CPU does not sleep), then commits. */
static void *commit_later(void *arg)
{
	struct committer *c = arg;
	uint64_t start;

	c->ready = 1;
	while (!c->go)
		;
	start = now_us();
	while (now_us() - start < (uint64_t)c->after_us)
		;
	__atomic_store_n(c->len, BUSY_LEN, __ATOMIC_RELEASE);
	c->committed_us = now_us();
	return NULL;
}

/* At ring position 0 a capture of thread 1 at time t0 + dt still being copied in (BUSY_BIT), then
 * one of thread 2 at t0, committed; its sample (t0) is read while the first is copied. */
static struct kcapture *busy_ring(uint64_t t0, int64_t dt, uint32_t **len1)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *cons =
	    mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *prod = mmap(NULL, (size_t)page + 2 * BUSY_RING, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *data = prod + page, *rec;
	uint64_t v, at = (BPF_RINGBUF_HDR_SZ + BUSY_LEN + 7) & ~7ull;
	struct kcapture *k = NULL;
	uint32_t hdr[2] = {0, 0};

	if (cons == MAP_FAILED || prod == MAP_FAILED ||
	    kcapture__adopt_ring(&k, cons, prod, (size_t)page, BUSY_RING))
		return NULL;
	hdr[0] = BUSY_LEN | BPF_RINGBUF_BUSY_BIT;
	memcpy(data, hdr, sizeof(hdr));
	rec = data + BPF_RINGBUF_HDR_SZ;
	v = 1;
	memcpy(rec + H_PIDTGID, &v, 8);
	v = t0 + (uint64_t)dt;
	memcpy(rec + H_TIME, &v, 8);
	hdr[0] = H_STACK;
	memcpy(data + at, hdr, sizeof(hdr));
	rec = data + at + BPF_RINGBUF_HDR_SZ;
	v = 2;
	memcpy(rec + H_PIDTGID, &v, 8);
	memcpy(rec + H_TIME, &t0, 8);
	v = 0x1234;
	memcpy(rec + H_IP, &v, 8);
	v = 0x5678;
	memcpy(rec + H_SP, &v, 8);
	v = at + ((BPF_RINGBUF_HDR_SZ + H_STACK + 7) & ~7ull);
	memcpy(prod, &v, 8); /* the producer position */
	*len1 = (uint32_t *)(void *)data;
	return k;
}

/* One try: the first capture committed after_us into the drain (< 0: never), its time dt from
 * the sample's. Whether the sample's capture was found; the drain's waits in *st; *in_time:
 * committed within 90 us of the drain's start, before its wait (100 us from when it found the
 * capture busy, later than that start) could end. */
static bool busy_try(int64_t dt, long after_us, struct kcap_stats *st, bool *in_time)
{
	const uint64_t t0 = 5000000000ull;
	uint32_t *len1 = NULL;
	struct kcapture *k = busy_ring(t0, dt, &len1);
	struct committer c = {.len = len1, .after_us = after_us};
	pthread_t th;
	uint64_t started;
	bool found;

	*in_time = false;
	if (!k)
		return false;
	if (after_us >= 0) {
		pthread_create(&th, NULL, commit_later, &c);
		while (!c.ready)
			;
	}
	started = now_us();
	c.go = 1;
	kcapture__drain(k, t0);
	kcapture__drain(k, t0 + 1000); /* the next sample's */
	found = kcapture__find(k, 2, t0, 0x1234, 0x5678) != NULL;
	if (after_us >= 0) {
		pthread_join(th, NULL);
		*in_time = c.committed_us <= started + 90;
	}
	*st = *kcapture__stats(k);
	kcapture__free(k);
	return found;
}

/* A capture that another CPU is still copying into the ring holds back every capture after it:
 * the drain waits for it (bounded) when it may hold the sample's behind it, and not when it is a
 * later sample's (ci46's and a loaded machine's missed captures, about 1 in 2,500 samples).
 * Committed 30 us into the drain, while it waits, its sample's capture is found. A try that
 * committed before the drain looked, or too late (either thread descheduled on a loaded machine;
 * the kernel's copy cannot be), shows nothing and is made again, up to 20 times. Without the
 * wait, busy.never_committed fails (no wait counted). */
static void test_busy_record(void)
{
	struct kcap_stats st = {0};
	bool found = false, in_time = false;
	int tries;

	for (tries = 0; tries < 20; tries++) {
		found = busy_try(-5000, 30, &st, &in_time);
		if ((in_time = in_time && st.busy_waits == 1))
			break;
	}
	if (in_time) {
		CHECK("busy.committed_soon.found", found);
		CHECK_INT("busy.committed_soon.given_up", 0, (int)st.busy_given_up);
	} else {
		printf("busy.committed_soon: no try committed while the drain waited (a loaded "
		       "machine): found not checked\n");
	}
	/* Given up on once, not waited for again by the next sample's drain. */
	CHECK("busy.never_committed.not_found", !busy_try(-5000, -1, &st, &in_time));
	CHECK_INT("busy.never_committed.waits", 1, (int)st.busy_waits);
	CHECK_INT("busy.never_committed.given_up", 1, (int)st.busy_given_up);
	/* A later sample's capture in progress: nothing to wait for. */
	CHECK("busy.later_sample.not_found", !busy_try(5000000, -1, &st, &in_time));
	CHECK_INT("busy.later_sample.waits", 0, (int)st.busy_waits);
}

int main(void)
{
	static uint64_t proc_a[8], proc_b[8], proc_d[8];
	uint8_t *heap_a = malloc(HEAP_BYTES), *heap_b = malloc(HEAP_BYTES), *gc = malloc(GC_BYTES);
	uint8_t *heap_d = malloc(HEAP_BYTES), *nstack = aligned_alloc(64, N_BYTES);
	/* perf_stack 0: D's copy starts at its rsp (the sampler passes perf's copy size). */
	struct kcap_cfg cfg = {SPAN_LO, SPAN_LEN, F_HTOP, F_HEND,  F_STOP, F_HEAP,
			       1,	997,	  0,	  F_STATE, {0},	   0};
	struct kcap_cfg bad = cfg;
	struct kcapture *k = NULL;
	struct seen w = {.proc = {proc_a, proc_b, proc_a, proc_d},
			 .sched = {false, false, true, false}};
	uint64_t cur = (uint64_t)(uintptr_t)proc_a;
	static struct remapper rm;
	char why[256] = "";
	int rc;

	for (size_t i = 0; i < HEAP_BYTES; i++) {
		heap_a[i] = (uint8_t)(i * 7);
		heap_b[i] = (uint8_t)(i * 13);
		heap_d[i] = (uint8_t)(i * 5 + 2);
	}
	for (size_t i = 0; i < GC_BYTES; i++)
		gc[i] = (uint8_t)(i * 3 + 1);
	for (size_t i = 0; i < N_BYTES; i++)
		nstack[i] = (uint8_t)(i * 11 + 3);
	w.nstack = nstack;
	fake_process(proc_a, heap_a, heap_a + HEAP_BYTES - 800);
	fake_process(proc_b, heap_b, gc); /* stop outside [heap, hend): in a GC */
	w.stack_at[0] = w.stack_at[2] = heap_a + HEAP_BYTES - STACK_BYTES;
	w.stack_len[0] = w.stack_len[2] = STACK_BYTES;
	w.stack_at[1] = gc;
	w.stack_len[1] = KCAP_STACK_MAX;
	fake_process(proc_d, heap_d, heap_d + HEAP_BYTES - 800);
	w.stack_at[3] = heap_d + HEAP_BYTES - E_BYTES;
	w.stack_len[3] = E_BYTES;
	rm.proc[F_STATE / 8] = FAKE_STATE;
	rm.cur = (uint64_t)(uintptr_t)rm.proc;
	cfg.normal_exit = R_NORMAL_EXIT;
	CHECK("heap_sizes", process__heap_sizes(cfg.heap_words, KCAP_HEAP_SIZES) > 100 &&
				cfg.heap_words[16] == R_NEW_WORDS &&
				cfg.heap_words[18] == R_OLD_WORDS);

	test_busy_record();
	bad.hend_off = 64; /* outside the span */
	CHECK_INT("open.bad_cfg", -EINVAL, kcapture__open(&k, &bad, why, sizeof(why)));
	CHECK("open.bad_cfg.why", strstr(why, "not known") != NULL);
	rc = kcapture__open(&k, &cfg, why, sizeof(why));
	if (rc == -EPERM || rc == -EACCES)
		return check_skip(why);
	if (!CHECK("open", rc == 0)) {
		printf("  %s\n", why);
		return check_done();
	}
	w.k = k;
	if (run(k, &w, &cur, &rm))
		return check_skip("perf_event_open is not permitted here");
	for (int i = 0; i < NTHREADS; i++) {
		char name[64];

		printf("thread %c: %u samples, %u captures found, %u exact\n", 'A' + i,
		       w.samples[i], w.found[i], w.exact[i]);
		snprintf(name, sizeof(name), "thread%c.samples", 'A' + i);
		CHECK(name, w.samples[i] >= 100);
		/* All but one at most: ci46 (2026-11-30) found 345 of 346 once, in 20 runs of CI;
		 * the sampler counts such a sample as not captured and reads it late. The cause
		 * seen (1 run in 20-40 with a CPU hog beside): a capture still being copied in on
		 * the other CPU held the sample's behind it; the drain now waits for it
		 * (test_busy_record: 0 in 120 such runs). A CPU stopped mid-copy for longer than
		 * the wait (a virtual machine's) still could: with the wait at 0.1 ms, 2 of 12
		 * runs beside two busy loops failed here, and ci75 (2026-12-02) under ctest -j2,
		 * every miss a wait given up (the kcapture line below); 0 of 12 at 1 ms. */
		snprintf(name, sizeof(name), "thread%c.samples_found_but_one_at_most", 'A' + i);
		CHECK(name, w.found[i] + 1 >= w.samples[i] && w.found[i] <= w.samples[i]);
		snprintf(name, sizeof(name), "thread%c.every_capture_exact", 'A' + i);
		CHECK_INT(name, (int)w.found[i], (int)w.exact[i]);
	}
	printf("thread R: %u rounds, %u samples, %u captures found, %u shrunk under it (%u past "
	       "the mremap), %u exact; %u others said so\n",
	       rm.rounds, w.remap_samples, w.remap_found, w.rs.remapped, w.rs.past, w.rs.exact,
	       w.rs.other_remap);
	CHECK("threadR.samples", w.remap_samples >= 100);
	CHECK("threadR.samples_found_but_one_at_most",
	      w.remap_found + 1 >= w.remap_samples && w.remap_found <= w.remap_samples);
	CHECK("threadR.some_in_mremap", w.rs.remapped - w.rs.past >= R_ENOUGH);
	CHECK("threadR.some_past_mremap", w.rs.past >= R_ENOUGH);
	CHECK_INT("threadR.every_remap_exact", (int)w.rs.remapped, (int)w.rs.exact);
	CHECK_INT("others.never_remap", 0, (int)w.rs.other_remap);
	printf("thread N: %u samples, %u captures found, %u exact\n", w.native_samples,
	       w.native_found, w.native_exact);
	CHECK("threadN.samples", w.native_samples >= 100);
	CHECK("threadN.samples_found_but_one_at_most",
	      w.native_found + 1 >= w.native_samples && w.native_found <= w.native_samples);
	CHECK_INT("threadN.every_capture_exact", (int)w.native_found, (int)w.native_exact);
	CHECK_INT("others.never_below", 0, (int)w.other_below);
	CHECK("find.none", kcapture__find(k, 1, 0, 0, 0) == NULL);
	{
		const struct kcap_stats *ks = kcapture__stats(k);

		printf("kcapture: %llu records, %llu matched, %llu unmatched; %llu waits for a "
		       "capture being copied, %llu given up\n",
		       (unsigned long long)ks->records, (unsigned long long)ks->matched,
		       (unsigned long long)ks->unmatched, (unsigned long long)ks->busy_waits,
		       (unsigned long long)ks->busy_given_up);
	}
	CHECK_INT("stats.malformed", 0, (int)kcapture__stats(k)->malformed);
	kcapture__free(k);
	kcapture__free(NULL);
	free(heap_a);
	free(heap_b);
	free(gc);
	free(heap_d);
	free(nstack);
	return check_done();
}
