/* perf.c tests: the sample parser on synthetic records (good, truncated, bad abi, bad sizes), then
 * a live session on a forked child spinning in a known function in two threads: tids, registers,
 * the user stack copy (checked against process_vm_readv), IPs inside the spin function, thread
 * exit, cycles availability, and the sampler's own CPU cost. Exits 77 when perf_event_open is
 * refused. Does not own: the sampler's use of samples (unwinding).
 * Over 500 lines: the tests of one object, one short function each, kept in its one file. */
#include "check.h"
#include "perf.h"
#include "proc.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NBUSY	  2
#define MAX_TIDS  16
#define SPIN_CODE __attribute__((noinline, used, section("xp_perf_spin")))

/* The linker defines these for a section whose name is a C identifier. */
extern const char __start_xp_perf_spin[], __stop_xp_perf_spin[];

/* ---- synthetic records ---- */

struct rec_buf {
	uint8_t b[1024];
	size_t len;
};

static void rec__u64(struct rec_buf *r, uint64_t v)
{
	memcpy(r->b + r->len, &v, 8);
	r->len += 8;
}

/* ip, pid|tid, time, cpu, abi, [17 regs], size, [stack, dyn] */
static void rec__build(struct rec_buf *r, uint64_t abi, uint64_t size, uint64_t dyn)
{
	r->len = 0;
	rec__u64(r, 0x401000);
	rec__u64(r, (uint64_t)222 << 32 | 111);
	rec__u64(r, 123456789);
	rec__u64(r, 1);
	rec__u64(r, abi);
	if (abi != 0) {
		for (int i = 0; i < PERF_R_COUNT; i++)
			rec__u64(r, 0x1000 + (uint64_t)i);
	}
	rec__u64(r, size);
	if (size) {
		for (uint64_t i = 0; i < size / 8; i++)
			rec__u64(r, 0xabc0 + i);
		rec__u64(r, dyn);
	}
}

static void test_parser(void)
{
	struct perf_sample s;
	struct rec_buf r;
	int bad = 0;

	rec__build(&r, 2, 64, 40);
	CHECK_INT("parse.good", 0, perf__parse_sample(r.b, r.len, &s));
	CHECK_U64("parse.ip", 0x401000, s.ip);
	CHECK_INT("parse.pid", 111, s.pid);
	CHECK_INT("parse.tid", 222, s.tid);
	CHECK_U64("parse.time", 123456789, s.time);
	CHECK_INT("parse.cpu", 1, s.cpu);
	CHECK("parse.regs_valid", s.regs_valid);
	CHECK_U64("parse.reg_sp", 0x1000 + PERF_R_SP, s.regs[PERF_R_SP]);
	CHECK_U64("parse.reg_r15", 0x1000 + PERF_R_R15, s.regs[PERF_R_R15]);
	CHECK_INT("parse.stack_size", 40, s.stack_size);
	CHECK("parse.stack_ptr", s.stack == r.b + r.len - 8 - 64);
	for (size_t cut = 0; cut < r.len; cut++)
		bad += perf__parse_sample(r.b, cut, &s) == -EPROTO;
	CHECK_INT("parse.every_truncation_eproto", r.len, bad);
	CHECK_INT("parse.trailing_eproto", -EPROTO, perf__parse_sample(r.b, r.len + 8, &s));

	rec__build(&r, 0, 0, 0);
	CHECK_INT("parse.abi_none", 0, perf__parse_sample(r.b, r.len, &s));
	CHECK("parse.abi_none_no_regs", !s.regs_valid && s.stack_size == 0 && !s.stack);
	rec__build(&r, 1, 16, 16);
	CHECK_INT("parse.abi_32_parses", 0, perf__parse_sample(r.b, r.len, &s));
	CHECK("parse.abi_32_not_valid", !s.regs_valid);
	rec__build(&r, 3, 16, 8);
	CHECK_INT("parse.bad_abi", -EPROTO, perf__parse_sample(r.b, r.len, &s));
	rec__build(&r, 2, 32, 40);
	CHECK_INT("parse.dyn_gt_size", -EPROTO, perf__parse_sample(r.b, r.len, &s));
	rec__build(&r, 2, 32, 8);
	memcpy(r.b + r.len - 8 - 32 - 8, &(uint64_t){4096}, 8); /* size beyond the record */
	CHECK_INT("parse.size_gt_record", -EPROTO, perf__parse_sample(r.b, r.len, &s));
	rec__build(&r, 0, 0, 0);
	memcpy(r.b + r.len - 8, &(uint64_t){8}, 8); /* a stack without registers */
	rec__u64(&r, 0);
	rec__u64(&r, 8);
	CHECK_INT("parse.stack_without_regs", -EPROTO, perf__parse_sample(r.b, r.len, &s));
	CHECK_INT("parse.null", -EPROTO, perf__parse_sample(NULL, 8, &s));

	/* Taken in the kernel: the ip is the kernel's; the sample is the user code that entered
	 * it, whose registers the kernel saved. */
	rec__build(&r, 2, 64, 40);
	memcpy(r.b, &(uint64_t){0xffffffff81000123ull}, 8);
	CHECK_INT("parse.kernel", 0, perf__parse_sample(r.b, r.len, &s));
	CHECK("parse.kernel_flag", s.kernel);
	CHECK_U64("parse.kernel_user_ip", 0x1000 + PERF_R_IP, s.ip);
	rec__build(&r, 2, 64, 40);
	CHECK_INT("parse.user", 0, perf__parse_sample(r.b, r.len, &s));
	CHECK("parse.user_not_kernel", !s.kernel);
	rec__build(&r, 0, 0, 0);
	memcpy(r.b, &(uint64_t){0xffffffff81000123ull}, 8);
	CHECK_INT("parse.kernel_no_regs", 0, perf__parse_sample(r.b, r.len, &s));
	CHECK("parse.kernel_no_regs_ip0", s.kernel && !s.regs_valid && s.ip == 0);
}

/* ---- the child: two threads spinning in spin() ---- */

struct child_slot {
	pid_t tid;
	uintptr_t stack_lo, stack_hi;
	int ready;
	volatile uint64_t counter;
};

/* Known values in every general register but rsp, rbp and rdi (the counter), so a sample proves
 * where each register lands in enum perf_reg: register r holds SPIN_MARK + r. */
#define SPIN_MARK 0x5a00
SPIN_CODE static void spin(volatile uint64_t *counter)
{
	__asm__ volatile("mov $0x5a00, %%eax\n\tmov $0x5a01, %%ebx\n\tmov $0x5a02, %%ecx\n\t"
			 "mov $0x5a03, %%edx\n\tmov $0x5a04, %%esi\n\tmov $0x5a09, %%r8d\n\t"
			 "mov $0x5a0a, %%r9d\n\tmov $0x5a0b, %%r10d\n\tmov $0x5a0c, %%r11d\n\t"
			 "mov $0x5a0d, %%r12d\n\tmov $0x5a0e, %%r13d\n\tmov $0x5a0f, %%r14d\n\t"
			 "mov $0x5a10, %%r15d\n"
			 "1:\tincq (%%rdi)\n\tjmp 1b\n"
			 :
			 : "D"(counter)
			 : "rax", "rbx", "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "r12",
			   "r13", "r14", "r15", "memory");
}

static void *child_thread(void *arg)
{
	struct child_slot *slot = arg;
	pthread_attr_t a;
	void *lo = NULL;
	size_t sz = 0;

	slot->tid = gettid();
	if (!pthread_getattr_np(pthread_self(), &a)) {
		pthread_attr_getstack(&a, &lo, &sz);
		pthread_attr_destroy(&a);
	}
	slot->stack_lo = (uintptr_t)lo;
	slot->stack_hi = (uintptr_t)lo + sz;
	__atomic_store_n(&slot->ready, 1, __ATOMIC_RELEASE);
	spin(&slot->counter);
	return NULL;
}

/* Ready file: "spin_lo spin_hi", then "tid stack_lo stack_hi" per busy thread. */
static int child_write_ready(const char *path, const struct child_slot *slots)
{
	char tmp[256];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "%lx %lx\n", (unsigned long)(uintptr_t)__start_xp_perf_spin,
		(unsigned long)(uintptr_t)__stop_xp_perf_spin);
	for (int i = 0; i < NBUSY; i++)
		fprintf(f, "%d %lx %lx\n", slots[i].tid, (unsigned long)slots[i].stack_lo,
			(unsigned long)slots[i].stack_hi);
	if (fclose(f))
		return -1;
	return rename(tmp, path);
}

static void child_main(const char *ready)
{
	struct child_slot slots[NBUSY];
	pthread_t th;

	memset(slots, 0, sizeof(slots));
	for (int i = 0; i < NBUSY; i++) {
		if (pthread_create(&th, NULL, child_thread, &slots[i]))
			_exit(2);
	}
	for (int i = 0; i < NBUSY; i++) {
		while (!__atomic_load_n(&slots[i].ready, __ATOMIC_ACQUIRE))
			sched_yield();
	}
	if (child_write_ready(ready, slots))
		_exit(3);
	for (;;)
		pause();
}

struct child_info {
	pid_t pid;
	uintptr_t spin_lo, spin_hi;
	pid_t busy[NBUSY];
	uintptr_t stack_lo[NBUSY], stack_hi[NBUSY];
	pid_t tids[MAX_TIDS];
	size_t ntids;
};

static int child_read_ready(const char *path, struct child_info *ci)
{
	FILE *f = fopen(path, "r");
	unsigned long lo, hi;
	int n = 0;

	if (!f)
		return -1;
	if (fscanf(f, "%lx %lx", &lo, &hi) == 2) {
		ci->spin_lo = lo;
		ci->spin_hi = hi;
		n = 1;
	}
	for (int i = 0; n && i < NBUSY; i++) {
		if (fscanf(f, "%d %lx %lx", &ci->busy[i], &lo, &hi) != 3)
			n = 0;
		ci->stack_lo[i] = lo;
		ci->stack_hi[i] = hi;
	}
	fclose(f);
	return n ? 0 : -1;
}

/* Poll for the ready file (never a fixed sleep); give up after 10 s or if the child died. */
static int child_start(const char *ready, struct child_info *ci)
{
	struct timespec tick = {0, 1000000};

	unlink(ready);
	ci->pid = fork();
	if (ci->pid < 0)
		return -1;
	if (ci->pid == 0)
		child_main(ready);
	for (int i = 0; i < 10000; i++) {
		if (!child_read_ready(ready, ci))
			return 0;
		if (waitpid(ci->pid, NULL, WNOHANG) == ci->pid)
			return -1;
		nanosleep(&tick, NULL);
	}
	return -1;
}

static int child_list_tids(struct child_info *ci)
{
	struct proc_task *tasks = NULL;
	size_t n = 0;
	int err = proc__tasks(ci->pid, &tasks, &n);

	if (err)
		return err;
	ci->ntids = 0;
	for (size_t i = 0; i < n && ci->ntids < MAX_TIDS; i++)
		ci->tids[ci->ntids++] = tasks[i].tid;
	free(tasks);
	return 0;
}

/* ---- live checks ---- */

struct live {
	const struct child_info *ci;
	uint64_t tmin, tmax;
	uint64_t last_time, backwards; /* within one poll: samples come oldest first */
	uint64_t samples, foreign, wrong_pid, regs_valid, ip_eq, sp_in_stack, stack_ok;
	uint64_t stack_checked, stack_match, in_spin, marks_ok;
	uint64_t per_busy[NBUSY];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void live_check_stack(struct live *l, const struct perf_sample *s, int busy)
{
	uint64_t sp = s->regs[PERF_R_SP], word = 0;
	struct iovec local = {&word, 8}, remote = {(void *)(uintptr_t)sp, 8};

	static const int marked[] = {PERF_R_AX,	 PERF_R_BX,  PERF_R_CX,	 PERF_R_DX,  PERF_R_SI,
				     PERF_R_R8,	 PERF_R_R9,  PERF_R_R10, PERF_R_R11, PERF_R_R12,
				     PERF_R_R13, PERF_R_R14, PERF_R_R15};
	bool marks = true;

	for (size_t i = 0; i < sizeof(marked) / sizeof(marked[0]); i++)
		marks &= s->regs[marked[i]] == SPIN_MARK + (uint64_t)marked[i];
	l->marks_ok += marks;
	l->ip_eq += s->regs[PERF_R_IP] == s->ip;
	if (busy >= 0 && sp >= l->ci->stack_lo[busy] && sp + 8 <= l->ci->stack_hi[busy])
		l->sp_in_stack++;
	if (s->stack_size >= 8 && s->stack_size <= 8192 && s->stack)
		l->stack_ok++;
	if (s->stack_size < 8 || !s->stack)
		return;
	l->stack_checked++;
	if (process_vm_readv(l->ci->pid, &local, 1, &remote, 1, 0) == 8 &&
	    !memcmp(&word, s->stack, 8))
		l->stack_match++;
}

static void live_on_sample(const struct perf_sample *s, void *ctx)
{
	struct live *l = ctx;
	int busy = -1;
	bool known = false;

	l->samples++;
	for (size_t i = 0; i < l->ci->ntids; i++)
		known |= (pid_t)s->tid == l->ci->tids[i];
	for (int i = 0; i < NBUSY; i++) {
		if ((pid_t)s->tid == l->ci->busy[i])
			busy = i;
	}
	l->foreign += !known;
	l->wrong_pid += (pid_t)s->pid != l->ci->pid;
	if (busy >= 0)
		l->per_busy[busy]++;
	l->backwards += s->time < l->last_time;
	l->last_time = s->time;
	l->tmin = s->time < l->tmin ? s->time : l->tmin;
	l->tmax = s->time > l->tmax ? s->time : l->tmax;
	l->in_spin += s->ip >= l->ci->spin_lo && s->ip < l->ci->spin_hi;
	if (!s->regs_valid)
		return;
	l->regs_valid++;
	live_check_stack(l, s, busy);
}

static int poll_for(struct perf_session *s, uint64_t ns, perf_sample_fn fn, void *ctx)
{
	uint64_t end = now_ns() + ns;
	int rc = 0;

	while (now_ns() < end) {
		rc = perf_session__poll(s, 50, fn, ctx);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void live_assert(const struct live *l, uint64_t t0, uint64_t t1)
{
	uint64_t n = l->samples ? l->samples : 1;

	printf("# samples %" PRIu64 " (busy %" PRIu64 " + %" PRIu64 "), regs %" PRIu64
	       ", sp_in_stack %" PRIu64 ", stack match %" PRIu64 "/%" PRIu64 ", in_spin %" PRIu64
	       ", marks %" PRIu64 "\n",
	       l->samples, l->per_busy[0], l->per_busy[1], l->regs_valid, l->sp_in_stack,
	       l->stack_match, l->stack_checked, l->in_spin, l->marks_ok);
	CHECK("live.samples_gt_100", l->samples > 100); /* ~2000 when idle; load steals CPU */
	CHECK("live.both_threads_sampled", l->per_busy[0] > 50 && l->per_busy[1] > 50);
	CHECK_INT("live.no_foreign_tid", 0, l->foreign);
	CHECK_INT("live.pid_is_child", 0, l->wrong_pid);
	CHECK("live.time_monotonic_in_window", l->tmin >= t0 && l->tmax <= t1);
	CHECK_INT("live.oldest_first_across_threads", 0, l->backwards);
	CHECK("live.regs_valid_most", l->regs_valid * 10 >= n * 9);
	CHECK_INT("live.regs_ip_eq_ip", l->regs_valid, l->ip_eq);
	CHECK("live.sp_in_thread_stack_most", l->sp_in_stack * 10 >= l->regs_valid * 9);
	CHECK_INT("live.stack_size_in_range", l->regs_valid, l->stack_ok);
	CHECK("live.stack_word_matches_most", l->stack_match * 10 >= l->stack_checked * 8);
	CHECK("live.ip_in_spin_most", l->in_spin * 10 >= n * 9);
	/* Samples in spin's first instructions see the registers half loaded. */
	CHECK("live.register_map_most", l->marks_ok * 10 >= n * 9);
}

static void on_count(const struct perf_sample *s, void *ctx)
{
	(*(uint64_t *)ctx)++;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void print_stats(const char *what, const struct perf_stats *st)
{
	printf("# %s: samples %" PRIu64 " lost %" PRIu64 " throttled %" PRIu64 " malformed %" PRIu64
	       " gone %" PRIu64 "\n",
	       what, st->samples, st->lost, st->throttled, st->malformed, st->threads_gone);
}

static const struct perf_opts opts_8k = {
    PERF_EV_CPU_CLOCK, 997, 8192, 64, 0, 0, false, false, false};

/* Registers and stacks of 1 s of samples. 0, or 77 when perf_event_open is refused. */
static int test_live_samples(const struct child_info *ci)
{
	struct perf_session *s = NULL;
	struct live l = {.ci = ci, .tmin = UINT64_MAX};
	pid_t others[MAX_TIDS];
	size_t n = 0;
	uint64_t t0, t1;
	int err;

	for (size_t i = 0; i < ci->ntids; i++) {
		if (ci->tids[i] != ci->pid)
			others[n++] = ci->tids[i];
	}
	t0 = now_ns(); /* sampling starts inside open */
	err = perf_session__open(&s, others, n, &opts_8k);
	if (err == -EACCES || err == -EPERM || err == -ENOSYS) {
		printf("# perf_event_open refused: %s\n", strerror(-err));
		return 77;
	}
	if (!CHECK_INT("live.open", 0, err))
		return 0;
	CHECK_INT("live.add_thread", 0, perf_session__add_thread(s, ci->pid));
	CHECK_INT("live.add_thread_dup", -EEXIST, perf_session__add_thread(s, ci->pid));
	CHECK_INT("live.nthreads", ci->ntids, perf_session__nthreads(s));
	for (uint64_t end = now_ns() + 1000000000u; now_ns() < end && err == 0;) {
		l.last_time = 0;
		err = perf_session__poll(s, 50, live_on_sample, &l);
		err = err < 0 ? err : 0;
	}
	t1 = now_ns();
	CHECK_INT("live.poll", 0, err);
	live_assert(&l, t0, t1);
	print_stats("8 KiB stacks, 1 s", perf_session__stats(s));
	CHECK_INT("live.malformed", 0, perf_session__stats(s)->malformed);
	CHECK_INT("live.delivered_eq_stats", l.samples, perf_session__stats(s)->samples);
	perf_session__free(s);
	return 0;
}

static void test_cycles(const struct child_info *ci)
{
	struct perf_opts o = opts_8k;
	struct perf_session *s = NULL;
	uint64_t n = 0;
	int err;

	o.event = PERF_EV_CYCLES;
	err = perf_session__open(&s, ci->busy, NBUSY, &o);
	CHECK("cycles.works_or_enoent", err == 0 || err == -ENOENT);
	if (!err)
		poll_for(s, 200000000u, on_count, &n);
	printf("# cycles: %s (%" PRIu64 " samples in 0.2 s)\n",
	       err ? "not available here (-ENOENT)" : "available", n);
	perf_session__free(s);
}

/* The sampler's CPU per second of sampling two busy threads with 16 KiB stacks; then the child
 * is killed and every fd must hang up without failing the session. */
static void test_cost_and_exit(struct child_info *ci)
{
	struct perf_opts o = {PERF_EV_CPU_CLOCK, 997, 16384, 64, 1, 0, false, false, false};
	struct perf_session *s = NULL, *shared = NULL;
	uint64_t n = 0, t0;
	double c0, wall;
	int rc = 0;

	if (!CHECK_INT("cost.open", 0, perf_session__open(&s, ci->busy, NBUSY, &o)))
		return;
	c0 = cpu_seconds();
	t0 = now_ns();
	poll_for(s, 1000000000u, on_count, &n);
	wall = (double)(now_ns() - t0) / 1e9;
	printf("# cost: %.2f ms sampler CPU per s, %" PRIu64
	       " samples in %.2f s (2 threads, 997 Hz, "
	       "16 KiB stacks)\n",
	       (cpu_seconds() - c0) * 1000.0 / wall, n, wall);
	print_stats("16 KiB stacks, 1 s", perf_session__stats(s));
	CHECK("cost.samples_gt_100", n > 100);

	o.shared_rings = true;
	CHECK_INT("cost.open_shared", 0, perf_session__open(&shared, ci->busy, NBUSY, &o));
	kill(ci->pid, SIGKILL);
	waitpid(ci->pid, NULL, 0);
	for (int i = 0; i < 40 && perf_session__nthreads(s) && rc >= 0; i++)
		rc = perf_session__poll(s, 50, on_count, &n);
	CHECK("exit.poll_never_fails", rc >= 0);
	CHECK_INT("exit.all_dropped", 0, perf_session__nthreads(s));
	CHECK_INT("exit.threads_gone", NBUSY, perf_session__stats(s)->threads_gone);
	perf_session__free(s);
	/* Shared rings find exited threads once a second (PERF_HUP_CHECK_NS). */
	for (int i = 0; i < 60 && perf_session__nthreads(shared) && rc >= 0; i++)
		rc = perf_session__poll(shared, 50, on_count, &n);
	CHECK("exit.shared_poll_never_fails", rc >= 0);
	CHECK_INT("exit.shared_all_dropped", 0, perf_session__nthreads(shared));
	perf_session__free(shared);
	s = NULL;
	CHECK_INT("exit.open_dead_esrch", -ESRCH, perf_session__open(&s, ci->busy, NBUSY, &o));
	CHECK("exit.open_dead_null", s == NULL);
}

/* In time order, across rings too. */
struct ordered {
	uint64_t n, last, backwards;
};

static void on_ordered(const struct perf_sample *s, void *ctx)
{
	struct ordered *o = ctx;

	o->backwards += s->time < o->last;
	o->last = s->time;
	o->n++;
}

static size_t online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (size_t)n : 1;
}

/* Shared rings: one per CPU whatever the threads, samples in time order across them. */
static void test_shared_rings(const struct child_info *ci)
{
	struct perf_opts o = opts_8k;
	struct perf_session *s = NULL;
	struct ordered ord = {0};
	const struct perf_stats *st;

	o.shared_rings = true;
	o.mmap_pages = perf__ring_pages(997, 8192, PERF_RING_SECONDS, 4096);
	if (!CHECK_INT("shared.open", 0, perf_session__open(&s, ci->busy, NBUSY, &o)))
		return;
	st = perf_session__stats(s);
	CHECK("shared.is_shared", st->shared_rings);
	CHECK_INT("shared.one_ring_per_cpu", online_cpus(), st->rings);
	CHECK_INT("shared.nthreads", NBUSY, perf_session__nthreads(s));
	CHECK_INT("shared.ring_bytes", (uint64_t)o.mmap_pages * 4096, st->ring_bytes);
	poll_for(s, 500000000u, on_ordered, &ord);
	print_stats("shared rings, 0.5 s", st);
	CHECK("shared.samples_gt_100", ord.n > 100);
	CHECK_INT("shared.time_order", 0, ord.backwards);
	CHECK_INT("shared.malformed", 0, st->malformed);
	CHECK_INT("shared.lost", 0, st->lost);
	perf_session__free(s);
}

/* Ring sizes: seconds of samples, a power of two, bounded. */
static void test_ring_pages(void)
{
	/* 997 Hz x (8192 + 512) B x 0.25 s = 2.17 MB: 1024 pages of 4 KiB (4 MiB). */
	CHECK_INT("pages.997_8k", 1024, perf__ring_pages(997, 8192, PERF_RING_SECONDS, 4096));
	/* 997 Hz x (2048 + 512) B x 0.5 s = 1.28 MB: 512 pages (2 MiB). */
	CHECK_INT("pages.997_2k_batched", 512,
		  perf__ring_pages(997, 2048, PERF_RING_SECONDS_BATCHED, 4096));
	CHECK_INT("pages.min", PERF_RING_MIN_PAGES,
		  perf__ring_pages(1, 8, PERF_RING_SECONDS, 4096));
	CHECK_INT("pages.max", PERF_RING_MAX_BYTES / 4096,
		  perf__ring_pages(99999, 65528, PERF_RING_SECONDS, 4096));
}

/* A ring nobody reads for 0.4 s loses records: counted, and listed with the ring and the window
 * from the last sample read before them to the kernel's LOST record. */
static void test_losses(const struct child_info *ci, bool shared)
{
	struct perf_opts o = opts_8k;
	struct perf_session *s = NULL;
	const struct perf_stats *st;
	uint64_t n = 0, t_read, t_end;
	uint32_t after_gap = 0;
	const char *what = shared ? "losses.shared" : "losses.thread";

	o.mmap_pages = PERF_RING_MIN_PAGES; /* 64 KiB: 7 samples */
	o.shared_rings = shared;
	if (!CHECK_INT(what, 0, perf_session__open(&s, ci->busy, NBUSY, &o)))
		return;
	poll_for(s, 100000000u, on_count, &n);
	t_read = now_ns();
	usleep(400000);
	poll_for(s, 100000000u, on_count, &n);
	t_end = now_ns();
	st = perf_session__stats(s);
	print_stats(what, st);
	CHECK("losses.counted", st->lost > 0);
	CHECK("losses.listed", st->nlosses >= 1 && st->nlosses <= PERF_LOSS_MAX);
	/* The gap's loss ends after it; on a loaded machine the 7-sample ring may also have
	 * overflowed before, while the first 0.1 s was read late: a window of its own. */
	for (uint32_t i = 0; i < st->nlosses; i++) {
		const struct perf_loss *l = &st->losses[i];

		printf("# %s: %" PRIu64 " lost, cpu %d tid %d, %.3f..%.3f s\n", what, l->lost,
		       l->cpu, (int)l->tid, (double)(l->from_ns - st->opened_ns) / 1e9,
		       (double)(l->to_ns - st->opened_ns) / 1e9);
		CHECK("losses.window_in_run", l->from_ns >= st->opened_ns && l->to_ns <= t_end);
		CHECK("losses.window_ordered", l->to_ns > l->from_ns);
		after_gap += l->to_ns > t_read;
		CHECK("losses.ring", shared ? l->cpu >= 0 : l->cpu == -1);
		CHECK("losses.thread", l->tid == ci->busy[0] || l->tid == ci->busy[1]);
	}
	CHECK("losses.window_ends_after_gap", after_gap >= 1);
	perf_session__free(s);
}

/* wakeup_events = 1: a wait returns with the first sample or two, long before the ring is half
 * full (8 KiB stacks, 1024 pages: about 256 samples per thread). Without it, the first return
 * brings many. What arrived while the events were opened is drained first; the bounds leave room
 * for a loaded machine that runs this test late. */
static void test_wakeup(const struct child_info *ci)
{
	struct perf_opts o = opts_8k;
	struct perf_session *s = NULL;
	uint64_t each = 0, batch = 0;
	int got = 0;

	o.mmap_pages = 1024;
	o.wakeup_events = 1;
	if (!CHECK_INT("wakeup.open", 0, perf_session__open(&s, ci->busy, NBUSY, &o)))
		return;
	perf_session__poll(s, 0, on_count, &each);
	for (int i = 0; i < 40 && got == 0; i++)
		got = perf_session__poll(s, 5000, on_count, &each);
	printf("# wakeup_events 1: first wait delivered %d samples\n", got);
	CHECK("wakeup.each_sample", got >= 1 && got < 64);
	perf_session__free(s);
	o.wakeup_events = 0;
	s = NULL;
	if (!CHECK_INT("wakeup.open_batch", 0, perf_session__open(&s, ci->busy, NBUSY, &o)))
		return;
	perf_session__poll(s, 0, on_count, &batch);
	got = 0;
	for (int i = 0; i < 40 && got == 0; i++)
		got = perf_session__poll(s, 5000, on_count, &batch);
	printf("# wakeup_events 0: first wait delivered %d samples\n", got);
	CHECK("wakeup.batch", got >= 128);
	perf_session__free(s);
}

static void test_bad_opts(void)
{
	struct perf_opts o = opts_8k;
	struct perf_session *s = NULL;
	pid_t self = getpid();

	o.stack_bytes = 12;
	CHECK_INT("opts.stack_unaligned", -EINVAL, perf_session__open(&s, &self, 1, &o));
	o = opts_8k;
	o.mmap_pages = 3;
	CHECK_INT("opts.pages_not_pow2", -EINVAL, perf_session__open(&s, &self, 1, &o));
	o = opts_8k;
	o.mmap_pages = 1;
	CHECK_INT("opts.ring_too_small", -EINVAL, perf_session__open(&s, &self, 1, &o));
	o = opts_8k;
	o.freq_hz = 0;
	CHECK_INT("opts.freq_zero", -EINVAL, perf_session__open(&s, &self, 1, &o));
	CHECK_INT("opts.no_tids", -EINVAL, perf_session__open(&s, &self, 0, &opts_8k));
	perf_session__free(NULL);
	CHECK("free_null", perf_session__nthreads(NULL) == 0 && !perf_session__stats(NULL));
}

int main(void)
{
	struct child_info ci;
	char ready[64];
	int rc;

	test_parser();
	test_bad_opts();
	memset(&ci, 0, sizeof(ci));
	snprintf(ready, sizeof(ready), "/tmp/xp_perf_ready.%d", (int)getpid());
	if (!CHECK("child.ready", child_start(ready, &ci) == 0)) {
		if (ci.pid > 0)
			kill(ci.pid, SIGKILL);
		return check_done();
	}
	unlink(ready);
	CHECK("child.spin_range", ci.spin_lo && ci.spin_hi > ci.spin_lo);
	CHECK_INT("child.tasks", 0, child_list_tids(&ci));
	CHECK_INT("child.ntids", NBUSY + 1, ci.ntids);
	rc = test_live_samples(&ci);
	if (rc == 77) {
		kill(ci.pid, SIGKILL);
		waitpid(ci.pid, NULL, 0);
		return check_skip("perf_event_open is not permitted here");
	}
	test_cycles(&ci);
	test_ring_pages();
	test_shared_rings(&ci);
	test_losses(&ci, false);
	test_losses(&ci, true);
	test_wakeup(&ci);
	test_cost_and_exit(&ci);
	return check_done();
}
