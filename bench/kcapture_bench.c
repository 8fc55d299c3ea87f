/* xp_kcapture_bench [SECONDS]: the in-kernel capture's own costs, as root. Prints the time
 * kcapture__open takes to have the program ready (median of 20), then, for each kind of sample
 * (JIT code whose stack perf's copy holds, native code copying 3,000 bytes below hend through the
 * scheduler's current_process, a garbage collection copying 128 KiB from stop), one thread
 * spinning with r13 at a fake Process while perf samples it at 9973 Hz with the program attached:
 * the program's mean run time per sample (kernel BPF stats, enabled by BPF_ENABLE_STATS only for
 * the run) and the thread's spins per second; and the program's size. Does not own: the end-to-end
 * overhead (bench/run). */
#include "kcapture.h"
#include "perf.h"

#include <errno.h>
#include <linux/bpf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define HEAP_BYTES  16384
#define STACK_BYTES 3000
#define GC_BYTES    (KCAP_STACK_MAX + 4096)
#define E_BYTES	    1000
#define OPENS	    20
#define RATE_HZ	    9973

enum { F_HTOP = 16, F_HEND = 24, F_STOP = 32, F_HEAP = 40, SPAN_LO = 8, SPAN_LEN = 48 };
enum kind { K_JIT, K_NATIVE, K_GC, K_COUNT };
static const char *const kind_name[K_COUNT] = {"jit (perf's copy holds the stack)",
					       "native (3000 B below hend, via scheduler)",
					       "gc (128 KiB from stop)"};

struct spinner {
	uint64_t r13, rsp;
	volatile int *stop;
	volatile uint64_t spins;
	volatile pid_t tid;
};

static void *spin(void *arg)
{
	struct spinner *s = arg;

	s->tid = (pid_t)syscall(SYS_gettid);
	if (s->rsp) {
		__asm__ volatile("mov %0, %%r13\n"
				 "mov %%rsp, %%r12\n"
				 "mov %2, %%rsp\n"
				 "1: incq (%3)\n"
				 "cmpl $0, (%1)\n"
				 "je 1b\n"
				 "mov %%r12, %%rsp\n"
				 :
				 : "r"(s->r13), "r"(s->stop), "r"(s->rsp), "r"(&s->spins)
				 : "r12", "r13", "memory");
		return NULL;
	}
	__asm__ volatile("mov %0, %%r13\n"
			 "1: incq (%2)\n"
			 "cmpl $0, (%1)\n"
			 "je 1b\n"
			 :
			 : "r"(s->r13), "r"(s->stop), "r"(&s->spins)
			 : "r13", "memory");
	return NULL;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The program's run count and time; with xlated and jited, its size (instructions, bytes). */
static int prog_info(int fd, uint64_t *cnt, uint64_t *ns, uint32_t *xlated, uint32_t *jited)
{
	struct bpf_prog_info info;
	union bpf_attr a;

	memset(&info, 0, sizeof(info));
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = (uint32_t)fd;
	a.info.info_len = sizeof(info);
	a.info.info = (uint64_t)(uintptr_t)&info;
	if (syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &a, sizeof(a)))
		return -errno;
	*cnt = info.run_cnt;
	*ns = info.run_time_ns;
	if (xlated)
		*xlated = info.xlated_prog_len / 8;
	if (jited)
		*jited = info.jited_prog_len;
	return 0;
}

static void on_sample(const struct perf_sample *ps, void *ctx)
{
	struct kcapture *k = ctx;

	kcapture__drain(k, ps->time);
	kcapture__find(k, ps->tid, ps->time, ps->regs[PERF_R_IP], ps->regs[PERF_R_SP]);
}

static void fake_process(uint64_t *p, uint8_t *heap, uint8_t *stop)
{
	memset(p, 0, 64);
	p[F_HEAP / 8] = (uint64_t)(uintptr_t)heap;
	p[F_HEND / 8] = (uint64_t)(uintptr_t)(heap + HEAP_BYTES);
	p[F_HTOP / 8] = (uint64_t)(uintptr_t)(heap + HEAP_BYTES - STACK_BYTES);
	p[F_STOP / 8] = (uint64_t)(uintptr_t)stop;
}

/* One kind of sample for secs seconds: ns per program run, spins per second. */
static int run(enum kind kind, double secs, double *ns_per_run, double *spins_per_s)
{
	static uint64_t proc[8], cur;
	static uint8_t heap[HEAP_BYTES], gc[GC_BYTES];
	struct kcap_cfg cfg = {SPAN_LO, SPAN_LEN, F_HTOP, F_HEND, F_STOP, F_HEAP,
			       2,	RATE_HZ,  0,	  0,	  {0},	  0};
	struct perf_opts o = {PERF_EV_CPU_CLOCK, RATE_HZ, 8192, 64, 0, -1, false, false, false};
	volatile int stop = 0;
	struct spinner sp = {.stop = &stop};
	struct perf_session *ps = NULL;
	struct kcapture *k = NULL;
	uint64_t c0 = 0, n0 = 0, c1 = 0, n1 = 0, s0;
	char why[256];
	pthread_t th;
	double t0;
	int rc;

	fake_process(proc, heap, kind == K_GC ? gc : heap + HEAP_BYTES - 800);
	cur = (uint64_t)(uintptr_t)proc;
	cfg.perf_stack = kind == K_JIT ? 8192 : 0;
	if ((rc = kcapture__open(&k, &cfg, why, sizeof(why)))) {
		fprintf(stderr, "kcapture__open: %s\n", why);
		return rc;
	}
	sp.r13 = kind == K_NATIVE ? 0 : cur;
	sp.rsp = kind == K_JIT ? (uint64_t)(uintptr_t)(heap + HEAP_BYTES - E_BYTES) : 0;
	pthread_create(&th, NULL, spin, &sp);
	while (!sp.tid)
		sched_yield();
	if (kind == K_NATIVE)
		kcapture__watch(k, sp.tid, (uint64_t)(uintptr_t)&cur, 0);
	o.bpf_prog_fd = kcapture__prog_fd(k);
	rc = perf_session__open(&ps, (const pid_t *)&sp.tid, 1, &o);
	if (!rc)
		rc = prog_info(o.bpf_prog_fd, &c0, &n0, NULL, NULL);
	s0 = sp.spins;
	t0 = now();
	while (!rc && now() - t0 < secs)
		perf_session__poll(ps, 50, on_sample, k);
	*spins_per_s = (double)(sp.spins - s0) / (now() - t0);
	if (!rc)
		rc = prog_info(o.bpf_prog_fd, &c1, &n1, NULL, NULL);
	stop = 1;
	pthread_join(th, NULL);
	perf_session__free(ps);
	kcapture__free(k);
	*ns_per_run = c1 > c0 ? (double)(n1 - n0) / (double)(c1 - c0) : 0;
	return rc;
}

int main(int argc, char **argv)
{
	struct kcap_cfg cfg = {SPAN_LO, SPAN_LEN, F_HTOP, F_HEND, F_STOP, F_HEAP,
			       2,	997,	  8192,	  0,	  {0},	  0};
	double secs = argc > 1 ? atof(argv[1]) : 3, ms[OPENS], ns, spins;
	uint32_t xlated = 0, jited = 0;
	union bpf_attr a;
	uint64_t cnt;
	char why[256];
	int stats_fd;

	for (int i = 0; i < OPENS; i++) {
		struct kcapture *k = NULL;
		double t0 = now();

		if (kcapture__open(&k, &cfg, why, sizeof(why))) {
			fprintf(stderr, "kcapture__open: %s\n", why);
			return 77;
		}
		ms[i] = (now() - t0) * 1e3;
		if (i == 0 && !prog_info(kcapture__prog_fd(k), &cnt, &cnt, &xlated, &jited))
			printf("program: %u instructions, %u bytes JIT-compiled\n", xlated, jited);
		kcapture__free(k);
	}
	qsort(ms, OPENS, sizeof(ms[0]), cmp_double);
	printf("kcapture__open: median %.2f ms, min %.2f, max %.2f (of %d)\n",
	       (ms[OPENS / 2 - 1] + ms[OPENS / 2]) / 2, ms[0], ms[OPENS - 1], OPENS);
	memset(&a, 0, sizeof(a));
	a.enable_stats.type = BPF_STATS_RUN_TIME;
	stats_fd = (int)syscall(SYS_bpf, BPF_ENABLE_STATS, &a, sizeof(a));
	if (stats_fd < 0)
		fprintf(stderr, "BPF_ENABLE_STATS: %s (run times are 0)\n", strerror(errno));
	for (int kind = 0; kind < K_COUNT; kind++) {
		if (run(kind, secs, &ns, &spins))
			return 1;
		printf("%-44s %8.0f ns per sample, %.3g spins/s\n", kind_name[kind], ns, spins);
	}
	if (stats_fd >= 0)
		close(stats_fd);
	return 0;
}
