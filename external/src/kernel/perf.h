/* perf_event_open sampling of a target's threads: one event per thread (software cpu-clock by
 * default, hardware cycles on request), or one per thread and CPU writing into one ring per CPU
 * (shared rings), each sample carrying IP, TID, TIME, CPU, the user registers and a copy of the
 * user stack, read from mmap ring buffers. Lost records are counted and listed by ring and time
 * window; malformed records are counted. Does not own: what the samples mean (unwinding, Erlang
 * stacks). */
#ifndef XP_PERF_H
#define XP_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The user registers captured with every sample (PERF_REG_X86_* numbering, asm/perf_regs.h). */
enum perf_reg {
	PERF_R_AX = 0,
	PERF_R_BX,
	PERF_R_CX,
	PERF_R_DX,
	PERF_R_SI,
	PERF_R_DI,
	PERF_R_BP,
	PERF_R_SP,
	PERF_R_IP,
	PERF_R_R8,
	PERF_R_R9,
	PERF_R_R10,
	PERF_R_R11,
	PERF_R_R12,
	PERF_R_R13,
	PERF_R_R14,
	PERF_R_R15,
	PERF_R_COUNT
};

/* PERF_EV_CTX_SWITCH: every context switch of the thread (period 1, freq_hz ignored), kernel
 * side included: a spy's snapshots (watch.c). */
enum perf_event_kind { PERF_EV_CPU_CLOCK = 0, PERF_EV_CYCLES, PERF_EV_CTX_SWITCH };

struct perf_opts {
	enum perf_event_kind event;
	uint32_t freq_hz;     /* samples per second per thread, e.g. 997 */
	uint32_t stack_bytes; /* user stack copied per sample (<= 65528, multiple of 8) */
	uint32_t mmap_pages;  /* data pages per ring, a power of two (perf__ring_pages sizes it) */
	uint32_t
	    wakeup_events; /* wake a waiting poll every N samples; 0: when the ring is half full */
	int bpf_prog_fd;   /* > 0: a BPF program attached to every event (kcapture.h) */
	bool user_only;	   /* exclude samples taken in the kernel (--user-only) */
	/* Also PERF_RECORD_SWITCH: each time a thread goes off or on a CPU, and whether it went
	 * off preempted (still runnable) or because it blocked (perf_session__on_switch). */
	bool switches;
	/* One ring per CPU, which every thread's event on that CPU writes to (an event per thread
	 * and CPU): the memory follows the CPUs, which bound how many samples are taken at once,
	 * not the threads. Refused (an old kernel, too many fds): one ring per thread. */
	bool shared_rings;
};

/* A ring holds SECONDS of samples at freq_hz, each stack_bytes + PERF_SAMPLE_FIXED, between
 * PERF_RING_MIN_PAGES and PERF_RING_MAX_BYTES: PERF_RING_SECONDS for a ring whose reader is woken
 * by every sample, PERF_RING_SECONDS_BATCHED for one read in batches (wakeup_events 0), which
 * wakes its reader when 1/PERF_WAKE_PART full, so that a reader that polls every 100 ms anyway is
 * woken by its own timeout rather than by the rings (a ring a CPU woke it 8 times a second more,
 * and a wake-up of the sampler costs more than a sample), and still has PERF_RING_SECONDS_BATCHED
 * / 2 of room when woken. */
#define PERF_RING_SECONDS	  0.25
#define PERF_RING_SECONDS_BATCHED 0.5
#define PERF_RING_MIN_PAGES	  16u
#define PERF_RING_MAX_BYTES	  (16u << 20)
/* A ring per thread (shared rings refused): every ring together at most this, each smaller. */
#define PERF_THREAD_RINGS_MAX_BYTES (64u << 20)
/* A ring read in batches wakes the reader when 1/PERF_WAKE_PART of it is full. */
#define PERF_WAKE_PART 2
/* Data pages for one ring (a power of two): seconds of samples, rounded up. */
uint32_t perf__ring_pages(uint32_t freq_hz, uint32_t stack_bytes, double seconds, size_t page_size);

/* Records the kernel dropped from one ring in one window: from the last sample read from that
 * ring before the loss to the LOST record the kernel wrote once it had room (CLOCK_MONOTONIC ns).
 * Losses of one ring less than PERF_LOSS_JOIN_NS apart are one window. */
#define PERF_LOSS_MAX	  32
#define PERF_LOSS_JOIN_NS 100000000ull
struct perf_loss {
	uint64_t lost;
	uint64_t from_ns, to_ns;
	/* A thread's ring: that thread. A CPU's ring: the thread whose sample found room again
	 * (the lost ones were of the threads that ran on that CPU in the window). */
	pid_t tid;
	int cpu; /* a CPU's ring: that CPU; a thread's: -1 */
};

struct perf_sample {
	uint64_t ip, time; /* ip: the user-mode ip, also for a sample taken in the kernel */
	uint32_t pid, tid, cpu;
	bool kernel; /* taken in the kernel, on the thread's behalf (a syscall, a fault) */
	uint64_t regs[PERF_R_COUNT]; /* valid when regs_valid */
	bool regs_valid;	     /* false for samples taken in kernel mode with no user regs */
	const uint8_t *stack;	     /* copy of [regs[SP], regs[SP] + stack_size) */
	uint64_t stack_size;	     /* bytes actually copied (dyn_size) */
};

struct perf_stats {
	uint64_t samples;	 /* delivered to the callback */
	uint64_t lost;		 /* PERF_RECORD_LOST: records the kernel dropped */
	uint64_t throttled;	 /* PERF_RECORD_THROTTLE */
	uint64_t malformed;	 /* records skipped because they did not parse */
	uint64_t threads_gone;	 /* threads that exited while sampled */
	uint64_t bpf_unattached; /* events the BPF program could not be attached to */
	bool kernel_excluded;	 /* kernel-mode samples not taken: asked, or not permitted */
	/* The rings: how many, data bytes each (each has a metadata page more), shared by CPU. */
	uint32_t rings;
	uint64_t ring_bytes;
	uint64_t opened_ns; /* when the session opened (CLOCK_MONOTONIC): the losses' time 0 */
	bool shared_rings;
	uint64_t peak_fill;	   /* the most bytes a ring held when drained */
	uint64_t longest_gap_ns;   /* the longest time from the end of a drain to the next */
	uint64_t longest_drain_ns; /* the longest drain (delivering its samples included) */
	struct perf_loss losses[PERF_LOSS_MAX]; /* the windows of lost records, oldest first */
	uint32_t nlosses;
	uint64_t lost_unlisted; /* lost in windows past the list's end */
};

struct perf_session;

typedef void (*perf_sample_fn)(const struct perf_sample *s, void *ctx);
/* A thread went off its CPU (out; preempt: while still runnable) or back on, at time. */
typedef void (*perf_switch_fn)(uint32_t tid, uint64_t time, bool out, bool preempt, void *ctx);

/* Open one event per tid. 0, -EACCES/-EPERM (perf_event_paranoid, CAP_PERFMON), -ENOENT (cycles
 * not available here), -ESRCH (a thread vanished before any opened), or another -errno. Threads
 * that exit during open are skipped and counted. */
int perf_session__open(struct perf_session **out, const pid_t *tids, size_t ntids,
		       const struct perf_opts *opts);
/* Add a thread later (a scheduler thread that appeared). */
int perf_session__add_thread(struct perf_session *s, pid_t tid);
/* Also end perf_session__poll's wait when fd polls readable, edge-triggered (another ring whose
 * producer asks for a wake-up: kcapture__wake_fd). fd stays the caller's. 0 or -errno. */
int perf_session__wake_on(struct perf_session *s, int fd);
/* Wait up to timeout_ms for data, then deliver every complete sample, oldest first across the
 * threads' rings. Returns the number delivered, or a negative errno. */
int perf_session__poll(struct perf_session *s, int timeout_ms, perf_sample_fn fn, void *ctx);
const struct perf_stats *perf_session__stats(const struct perf_session *s);
/* With opts.switches: where switch records go, in each ring's time order (before the samples
 * that follow them). */
void perf_session__on_switch(struct perf_session *s, perf_switch_fn fn, void *ctx);
size_t perf_session__nthreads(const struct perf_session *s);
void perf_session__free(struct perf_session *s);

/* Parse one PERF_RECORD_SAMPLE body laid out for the session's sample_type (exposed for tests on
 * captured bytes). 0 or -EPROTO. */
int perf__parse_sample(const uint8_t *rec, size_t len, struct perf_sample *out);
/* The time now in the samples' clock (use_clockid CLOCK_MONOTONIC), ns. */
uint64_t perf__now_ns(void);

#endif /* XP_PERF_H */
