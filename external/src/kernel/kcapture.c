/* In-kernel capture at the sample. See kcapture.h. The program is kcapture.bpf.c, compiled to BPF
 * at build time and embedded as a libbpf skeleton (kcapture.skel.h): it reads the sampled
 * registers, finds the current Process (the scheduler's current_process when the sampler told us
 * where it lives, else r13), copies its bounds span and the top of its stack, and appends the lot
 * to a BPF ring buffer. This file loads it, and drains the ring before the perf rings, pairing
 * each capture with its sample by thread, ip, sp and time. */
#include "kcapture.h"
#include "perf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <linux/bpf.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kcapture.skel.h"
#include "privilege.h"
#endif

struct kcapture_bpf;

/* The capture ring holds what a sampler that wakes every RUN_POLL_MS (50 ms), or a little later,
 * may find: KCAP_RING_SECONDS of full-size captures on every CPU. */
#define KCAP_RING_MIN	  (4u << 20)
#define KCAP_RING_MAX	  (64u << 20)
#define KCAP_RING_SECONDS 0.125
#define KCAP_CONS_STEP	  16 /* the consumer position is handed back in 1/16s of the ring */
/* A capture wakes the sampler when this part of the ring is unread (kcapture__wake_fd): the
 * ring then still has room for the captures taken while the sampler gets going. */
#define KCAP_WAKE_PART 2
#define KCAP_PENDING   256 /* captures kept until their sample is read */
/* A capture no sample claimed within this long after it is given up (its perf record was lost),
 * so that it does not hold the ring's space. Samples are read in time order. */
#define KCAP_EXPIRE_NS 100000000ull
/* The ring is sized for captures of this size: most stacks are far smaller; a capture of a deep
 * stack that finds the ring full is lost (its sample is then read without one, and says so). */
#define KCAP_RING_TYPICAL (32u << 10)
#define KCAP_MATCH_NS	  1000000ull /* perf stamps its sample a microsecond or two before */
/* How long a drain waits for a capture still being copied into the ring (bpf_ringbuf_output's
 * copy of up to 130 KiB, a few microseconds) when it may be of the sample being read or hold
 * that sample's capture behind it. 1 ms, not 0.1: on a 2-vCPU guest with both CPUs busy a copy
 * was still not committed after 0.1 ms in 4 of 12 runs of test_kcapture (up to 4 times a run,
 * each a sample read late), in 0 of 12 with 1 ms (2 December 2026). A wait given up costs the
 * sampler its length, rarely: 0-6 waits in about 2 200 captures a run there. */
#define KCAP_BUSY_WAIT_NS 1000000ull
#define KCAP_LOG_BYTES	  (64u << 10)

/* A capture read but not yet claimed by its sample. Its bytes stay in the kernel's ring, where
 * rec points: the consumer position is not moved past the oldest pending capture, so the
 * program cannot overwrite them (a capture of 128 KiB is not copied for each sample). */
struct slot {
	struct kcap_rec rec;
	uint64_t pos; /* the ring position of its header */
	bool used;    /* not yet claimed nor given up */
};

struct kcapture {
	struct kcap_cfg cfg;
	struct kcapture_bpf *skel; /* the program and its maps (kcapture.skel.h) */
	int watch_fd, ring_fd, prog_fd;
	bool own_prog_fd; /* prog_fd is a duplicate of the skeleton's fd 0 */
	uint8_t *cons;	  /* the consumer position page (read-write) */
	uint8_t *prod;	  /* the producer position page, then the data mapped twice */
	size_t page_size;
	uint32_t ring_bytes; /* a power of two */
	/* Pending captures in ring order: slots[head], ... (count of them, modulo KCAP_PENDING). */
	struct slot slots[KCAP_PENDING];
	size_t head, count;
	uint64_t read; /* the ring position parsed up to; the consumer position trails it */
	/* The producer position as last loaded, and the consumer position as last stored: both
	 * lines are shared with the program on every CPU, so each access is a cache miss there
	 * and here. prod is loaded again once read reaches it; cons is stored when it moved on
	 * by KCAP_CONS_STEP (the program then has that much less room, 1/16 of the ring). */
	uint64_t prod_seen, cons_told;
	uint64_t busy_given_up_at; /* the ring position + 1 of the busy capture last given up on */
	struct kcap_stats st;
};

/* ---- loading --------------------------------------------------------------------------------- */

#if defined(__x86_64__)
static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0; /* failures reach the caller as why */
}

/* The verifier's last word (a one-line reason), or "": its last line, past the statistics it
 * ends with ("processed N insns ...", "verification time ..."). */
static const char *last_line(char *log)
{
	char *line;

	for (;;) {
		while ((line = strrchr(log, '\n')) && line[1] == '\0')
			*line = '\0';
		line = strrchr(log, '\n');
		line = line ? line + 1 : log;
		if (line == log || (strncmp(line, "processed ", 10) != 0 &&
				    strncmp(line, "verification time", 17) != 0))
			return line;
		line[-1] = '\0';
	}
}

/* Open the skeleton, size its maps, set the offsets it copies, load it. */
static int load_program(struct kcapture *k, uint32_t cpus, char *why, size_t whylen)
{
	const struct kcap_cfg *c = &k->cfg;
	struct kcapture_bpf *skel;
	char *log = NULL;
	int err = 0;

	libbpf_set_print(quiet);
	skel = k->skel = kcapture_bpf__open();
	if (!skel) {
		err = -errno;
		snprintf(why, whylen, "cannot open the capture program: %s", strerror(-err));
		return err;
	}
	skel->rodata->span_lo = c->span_lo;
	skel->rodata->span_len = c->span_len;
	skel->rodata->htop_off = c->htop_off;
	skel->rodata->hend_off = c->hend_off;
	skel->rodata->stop_off = c->stop_off;
	skel->rodata->heap_off = c->heap_off;
	skel->rodata->perf_stack = c->perf_stack;
	skel->rodata->state_off = c->state_off;
	skel->rodata->normal_exit = c->normal_exit;
	skel->rodata->wake_bytes = k->ring_bytes / KCAP_WAKE_PART;
	memcpy((void *)skel->rodata->heap_words, c->heap_words, sizeof(c->heap_words));
	/* A second load with the verifier's log on, only when the first fails (libbpf retries). */
	log = calloc(1, KCAP_LOG_BYTES);
	if (!log || (err = bpf_program__set_log_buf(skel->progs.kcapture, log, KCAP_LOG_BYTES)) ||
	    (err = bpf_map__set_max_entries(skel->maps.scratch, cpus)) ||
	    (err = bpf_map__set_max_entries(skel->maps.ring, k->ring_bytes))) {
		err = log ? err : -ENOMEM;
		snprintf(why, whylen, "cannot set up the capture program: %s", strerror(-err));
		goto cleanup;
	}
	if ((err = kcapture_bpf__load(skel))) {
		char setcap[4200] = "";

		if (err == -EPERM)
			privilege__setcap_line(setcap, sizeof(setcap));
		snprintf(why, whylen, "the kernel refused the capture program: %s%s%s%s%s",
			 strerror(-err),
			 err == -EPERM ? " (needs root, or CAP_BPF and CAP_PERFMON: " : "", setcap,
			 err == -EPERM ? ")" : "", log[0] ? ": " : "");
		if (log[0])
			snprintf(why + strlen(why), whylen - strlen(why), "%s", last_line(log));
		goto cleanup;
	}
	k->prog_fd = bpf_program__fd(skel->progs.kcapture);
	k->watch_fd = bpf_map__fd(skel->maps.watch);
	k->ring_fd = bpf_map__fd(skel->maps.ring);
	/* perf_opts.bpf_prog_fd takes 0 for "none" */
	if (k->prog_fd == 0) {
		k->prog_fd = fcntl(0, F_DUPFD_CLOEXEC, 1);
		k->own_prog_fd = k->prog_fd >= 0;
		err = k->prog_fd < 0 ? -errno : 0;
	}
cleanup:
	free(log); /* libbpf keeps the pointer only for the load */
	return err;
}

/* The program reads the sampled registers as x86-64's struct pt_regs: a kernel of another
 * architecture (this binary under emulation) would hand it a different layout. */
static int arch_ok(char *why, size_t whylen)
{
	struct utsname u;

	if (uname(&u) == 0 && strcmp(u.machine, "x86_64") != 0) {
		snprintf(why, whylen,
			 "the capture program reads x86-64 registers; the kernel is %s", u.machine);
		return -ENOTSUP;
	}
	return 0;
}

static uint32_t ring_bytes(const struct kcap_cfg *c)
{
	double want = (double)c->cpus * c->rate_hz * KCAP_RING_SECONDS * KCAP_RING_TYPICAL;
	uint32_t b = KCAP_RING_MIN;

	while (b < KCAP_RING_MAX && b < want)
		b <<= 1;
	return b;
}

static int map_ring(struct kcapture *k)
{
	void *m;

	m = mmap(NULL, k->page_size, PROT_READ | PROT_WRITE, MAP_SHARED, k->ring_fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	k->cons = m;
	m = mmap(NULL, k->page_size + 2 * (size_t)k->ring_bytes, PROT_READ, MAP_SHARED, k->ring_fd,
		 (off_t)k->page_size);
	if (m == MAP_FAILED)
		return -errno;
	k->prod = m;
	return 0;
}

/* The CPU numbers bpf_get_smp_processor_id() may return: 0 .. the highest possible. */
static uint32_t possible_cpus(void)
{
	char buf[256];
	unsigned lo, hi = 0;
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	long n = sysconf(_SC_NPROCESSORS_CONF);

	if (f) {
		const char *s = fgets(buf, sizeof(buf), f);
		const char *last = s ? strrchr(s, ',') : NULL;

		if (s && sscanf(last ? last + 1 : s, "%u-%u", &lo, &hi) < 2 &&
		    sscanf(last ? last + 1 : s, "%u", &hi) < 1)
			hi = 0;
		fclose(f);
	}
	if (n > 0 && (unsigned long)n > hi + 1ul)
		hi = (unsigned)n - 1;
	return hi + 1 < 8192 ? hi + 1 : 8192;
}

static bool cfg_ok(const struct kcap_cfg *c)
{
	return c->span_len && c->span_len <= KCAP_SPAN_MAX && !(c->span_len & 7) &&
	       c->perf_stack <= (1u << 16) && !(c->perf_stack & 7) && c->htop_off >= c->span_lo &&
	       c->htop_off + 8 <= c->span_lo + c->span_len && c->hend_off >= c->span_lo &&
	       c->hend_off + 8 <= c->span_lo + c->span_len && c->stop_off >= c->span_lo &&
	       c->stop_off + 8 <= c->span_lo + c->span_len && c->heap_off >= c->span_lo &&
	       c->heap_off + 8 <= c->span_lo + c->span_len && c->span_lo < (1u << 20) &&
	       c->state_off < (1u << 20) && !(c->state_off & 3);
}

int kcapture__open(struct kcapture **out, const struct kcap_cfg *cfg, char *why, size_t whylen)
{
	struct kcapture *k;
	long page = sysconf(_SC_PAGESIZE);
	int err;

	*out = NULL;
	if (!cfg_ok(cfg) || page <= 0) {
		snprintf(why, whylen, "the Process fields it copies are not known");
		return -EINVAL;
	}
	if ((err = arch_ok(why, whylen)))
		return err;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->cfg = *cfg;
	k->page_size = (size_t)page;
	k->ring_bytes = ring_bytes(cfg);
	k->watch_fd = k->ring_fd = k->prog_fd = -1;
	if ((err = load_program(k, possible_cpus(), why, whylen)))
		goto cleanup;
	if ((err = map_ring(k))) {
		snprintf(why, whylen, "cannot map the capture ring: %s", strerror(-err));
		goto cleanup;
	}
	k->read = __atomic_load_n((uint64_t *)k->cons, __ATOMIC_RELAXED);
	k->prod_seen = k->cons_told = k->read;
	*out = k;
	return 0;
cleanup:
	kcapture__free(k);
	return err;
}
#else
int kcapture__open(struct kcapture **out, const struct kcap_cfg *cfg, char *why, size_t whylen)
{
	*out = NULL;
	snprintf(why, whylen,
		 "the capture program reads x86-64 registers; this build is not x86-64");
	return -ENOTSUP;
}
#endif /* __x86_64__ */

int kcapture__adopt_ring(struct kcapture **out, uint8_t *cons, uint8_t *prod, size_t page_size,
			 uint32_t ring_bytes)
{
	struct kcapture *k;

	*out = NULL;
	if (!cons || !prod || !ring_bytes || (ring_bytes & (ring_bytes - 1)) ||
	    !(k = calloc(1, sizeof(*k))))
		return -EINVAL;
	k->cons = cons;
	k->prod = prod;
	k->page_size = page_size;
	k->ring_bytes = ring_bytes;
	k->watch_fd = k->ring_fd = k->prog_fd = -1;
	*out = k;
	return 0;
}

int kcapture__prog_fd(const struct kcapture *k)
{
	return k ? k->prog_fd : -1;
}

int kcapture__watch(struct kcapture *k, pid_t tid, uint64_t current_process_addr,
		    uint64_t registers_addr)
{
#if defined(__x86_64__)
	uint32_t key = (uint32_t)tid;
	struct kcap_watch w = {.current_process = current_process_addr,
			       .registers = registers_addr};

	return bpf_map_update_elem(k->watch_fd, &key, &w, BPF_ANY);
#else
	return -ENOTSUP;
#endif
}

/* ---- the ring -------------------------------------------------------------------------------- */

/* Give up the oldest pending capture; one its sample never claimed counts as unmatched. */
static void drop_oldest(struct kcapture *k)
{
	struct slot *s = &k->slots[k->head];

	k->st.unmatched += s->used;
	s->used = false;
	k->head = (k->head + 1) % KCAP_PENDING;
	k->count--;
}

/* Parse the capture at data (len bytes, in the ring) into the next pending slot; the oldest
 * pending capture makes room when all are taken. */
static void keep(struct kcapture *k, const uint8_t *data, uint32_t len, uint64_t pos)
{
	struct slot *s;
	struct kcap_rec *r;
	uint64_t v[H_BELOW / 8], flags;

	k->st.records++;
	if (len < H_STACK || len > H_MAX) {
		k->st.malformed++;
		return;
	}
	if (k->count == KCAP_PENDING)
		drop_oldest(k);
	s = &k->slots[(k->head + k->count++) % KCAP_PENDING];
	r = &s->rec;
	s->pos = pos;
	memcpy(v, data, sizeof(v));
	flags = v[H_FLAGS / 8];
	*r = (struct kcap_rec){.tid = (uint32_t)v[H_PIDTGID / 8],
			       .time = v[H_TIME / 8],
			       .ip = v[H_IP / 8],
			       .sp = v[H_SP / 8],
			       .cp = v[H_CP / 8],
			       .from_scheduler = flags & F_FROM_SCHEDULER,
			       .sched_none = flags & F_SCHED_NONE,
			       .state_known = flags & F_STATE_OK,
			       .state = (uint32_t)(flags >> F_STATE_SHIFT),
			       .span = flags & F_SPAN_OK ? data + H_SPAN : NULL,
			       .stack_addr = v[H_STACK_ADDR / 8],
			       .stack_len = v[H_STACK_LEN / 8],
			       .remap_end = flags & F_REMAP ? v[H_REMAP_END / 8] : 0};
	/* The program bounds stack_len; the record's length bounds it again. */
	if (r->stack_len > len - H_STACK || !r->span)
		r->stack_len = 0;
	r->stack = r->stack_len ? data + H_STACK : NULL;
	r->cstack_addr = v[H_CSTACK_ADDR / 8];
	r->cstack_len = v[H_CSTACK_LEN / 8];
	if (r->cstack_len > len - H_STACK - r->stack_len)
		r->cstack_len = 0;
	r->cstack = r->cstack_len ? data + H_STACK + r->stack_len : NULL;
	r->below = v[H_BELOW_LEN / 8] == KCAP_BELOW_SP ? data + H_BELOW : NULL;
	s->used = true;
}

/* Give up the pending captures at the head that were claimed (their samples are done: "valid
 * until the next drain") or that no sample claimed in KCAP_EXPIRE_NS, then hand the ring's space
 * up to the oldest capture still pending back to the program. */
static void release(struct kcapture *k, uint64_t upto)
{
	uint64_t cons;

	while (k->count) {
		struct slot *s = &k->slots[k->head];

		if (s->used && s->rec.time + KCAP_EXPIRE_NS > upto)
			break;
		drop_oldest(k);
	}
	cons = k->count ? k->slots[k->head].pos : k->read;
	if (cons - k->cons_told < k->ring_bytes / KCAP_CONS_STEP)
		return;
	__atomic_store_n((uint64_t *)k->cons, cons, __ATOMIC_RELEASE);
	k->cons_told = cons;
}

/* A capture the next sample will claim: its header, its Process span and the top of its stack
 * copy, which the sampler reads first, were written by the program on another CPU and are each a
 * cache miss; asked for now, they arrive while this sample is resolved. */
static void prefetch_record(const uint8_t *data, uint64_t mask, uint64_t at, uint32_t len)
{
	const uint64_t end = at + BPF_RINGBUF_HDR_SZ + (len < H_STACK + 128 ? len : H_STACK + 128);

	for (uint64_t a = at + 64; a < end; a += 64)
		__builtin_prefetch(data + (a & mask));
}

/* The length word of the record at h, once it is no longer being written: a capture that another
 * CPU's program is still copying in (reserved before the sample being read was, or at about its
 * time) is waited for, up to KCAP_BUSY_WAIT_NS. Until it is committed the drain cannot pass it,
 * and a capture behind it, committed already, would be missed: seen when a 128 KiB capture was
 * being copied on one CPU while the sampler read a sample of the other. A record whose time, as
 * copied so far, is later than the sample's is not waited for, nor one given up on already (a
 * CPU stopped mid-copy: each sample after would wait again). Still busy: the word as it is. */
static uint32_t committed_len(struct kcapture *k, const uint8_t *h, uint64_t upto)
{
	uint32_t len = __atomic_load_n((const uint32_t *)h, __ATOMIC_ACQUIRE);
	uint64_t time, start;

	if (!(len & BPF_RINGBUF_BUSY_BIT) || k->busy_given_up_at == k->read + 1)
		return len;
	memcpy(&time, h + BPF_RINGBUF_HDR_SZ + H_TIME, sizeof(time));
	if (time > upto + KCAP_MATCH_NS)
		return len;
	k->st.busy_waits++;
	start = perf__now_ns();
	while ((len = __atomic_load_n((const uint32_t *)h, __ATOMIC_ACQUIRE)) &
	       BPF_RINGBUF_BUSY_BIT) {
		if (perf__now_ns() - start > KCAP_BUSY_WAIT_NS) {
			k->st.busy_given_up++;
			k->busy_given_up_at = k->read + 1;
			break;
		}
#if defined(__x86_64__)
		__builtin_ia32_pause();
#endif
	}
	return len;
}

void kcapture__drain(struct kcapture *k, uint64_t upto)
{
	uint64_t prod, mask, time;
	const uint8_t *data;

	if (!k)
		return;
	mask = k->ring_bytes - 1;
	data = k->prod + k->page_size;
	release(k, upto);
	if (k->read >= k->prod_seen)
		k->prod_seen = __atomic_load_n((uint64_t *)k->prod, __ATOMIC_ACQUIRE);
	prod = k->prod_seen;
	while (k->read < prod) {
		const uint8_t *h = data + (k->read & mask);
		uint32_t len = committed_len(k, h, upto);
		uint64_t next;

		if (len & BPF_RINGBUF_BUSY_BIT)
			break; /* still being written: next time */
		next =
		    k->read +
		    ((((uint64_t)len & ~BPF_RINGBUF_DISCARD_BIT) + BPF_RINGBUF_HDR_SZ + 7) & ~7ull);
		if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
			/* Later than the sample being read: it stays in the ring until its own.
			 * The ring holds captures in commit order, which across CPUs is time
			 * order to within microseconds. */
			if (len >= H_TIME + 8) {
				memcpy(&time, h + BPF_RINGBUF_HDR_SZ + H_TIME, sizeof(time));
				if (time > upto + KCAP_MATCH_NS) {
					prefetch_record(data, mask, k->read, len);
					break;
				}
			}
			keep(k, h + BPF_RINGBUF_HDR_SZ, len, k->read);
		}
		k->read = next;
	}
	release(k, upto);
}

const struct kcap_rec *kcapture__find(struct kcapture *k, uint32_t tid, uint64_t time, uint64_t ip,
				      uint64_t sp)
{
	if (!k)
		return NULL;
	for (size_t i = 0; i < k->count; i++) {
		struct slot *s = &k->slots[(k->head + i) % KCAP_PENDING];

		if (!s->used || s->rec.tid != tid || s->rec.ip != ip || s->rec.sp != sp ||
		    (s->rec.time > time ? s->rec.time - time : time - s->rec.time) > KCAP_MATCH_NS)
			continue;
		s->used = false;
		k->st.matched++;
		return &s->rec;
	}
	return NULL;
}

int kcapture__wake_fd(const struct kcapture *k)
{
	return k ? k->ring_fd : -1;
}

const struct kcap_stats *kcapture__stats(const struct kcapture *k)
{
	return k ? &k->st : NULL;
}

void kcapture__free(struct kcapture *k)
{
	if (!k)
		return;
	if (k->prod)
		munmap(k->prod, k->page_size + 2 * (size_t)k->ring_bytes);
	if (k->cons)
		munmap(k->cons, k->page_size);
	if (k->own_prog_fd)
		close(k->prog_fd);
#if defined(__x86_64__)
	kcapture_bpf__destroy(k->skel);
#endif
	free(k);
}
