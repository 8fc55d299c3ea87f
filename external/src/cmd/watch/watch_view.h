/* What `extrospect watch` measures and reports: P's states, why a watch ended, the counts of
 * snapshots, the report's rows (watch.c fills them, watch_report.c prints them). Types only,
 * owned by no file. */
#ifndef XP_WATCH_VIEW_H
#define XP_WATCH_VIEW_H

#include <stddef.h>
#include <stdint.h>

/* process_info(P, status) terms, with garbage_collecting shortened. */
enum watch_state {
	WS_RUNNING = 0,
	WS_RUNNABLE,
	WS_WAITING,
	WS_GC,
	WS_SUSPENDED,
	WS_EXITING,
	WS_COUNT
};

enum watch_end {
	WATCH_END_DURATION = 0,
	WATCH_END_INTERRUPTED,
	WATCH_END_PROCESS_EXITED,
	WATCH_END_VM_EXITED,
	WATCH_END_LEASE_LOST,
};

struct watch_counts {
	uint64_t taken;	       /* snapshots of P used */
	uint64_t off_target;   /* the spy switched out away from P's struct (preempted, parked) */
	uint64_t unreadable;   /* the copy was too short to hold P's pid and state */
	uint64_t heap_in_flux; /* P's, but its heap fields inconsistent (GC, exit): state only */
	uint64_t not_process;  /* the struct no longer held P's pid */
	uint64_t other;	       /* samples of another thread (none expected) */
	uint64_t lost;	       /* perf records the kernel dropped */
};

#define WATCH_HIST_BUCKETS 24 /* runnable episodes: [0, 2) us, [2, 4) us, ... */
/* The same, 16 buckets per power of two (exact below 16 us); the last also holds any longer. */
#define WATCH_FINE_BUCKETS (16 + (WATCH_HIST_BUCKETS - 4) * 16)

/* One of P's on-CPU functions and its scheduler samples (watch_cpu.c). */
struct watch_cpu_fn {
	const char *name; /* innermost Erlang function */
	uint64_t samples;
};
/* What the report prints. rows are (state, function) pairs with their time. */
struct watch_report_row {
	enum watch_state state;
	const char *fn;
	const char *stack; /* callers, "" when not read */
	uint64_t ns, n;
};

struct watch_report {
	const char *pid_text, *name, *end, *method;
	int spy_tid;
	unsigned spy_index;
	uint64_t interval_ns, wall_ns;
	struct watch_counts c;
	const struct watch_report_row *rows;
	size_t nrows;
	uint64_t runq_hist[WATCH_HIST_BUCKETS]; /* runnable episodes by duration, log2 us */
	double runq_median_us, runq_p90_us;	/* from the fine histogram; 0 without episodes */
};

#endif /* XP_WATCH_VIEW_H */
