/* watch's state, shared by watch.c (snapshots, the spy, the command), watch_find.c (finding P),
 * watch_poll.c (--method poll) and watch_report.c (the report). Types only (and the clock),
 * owned by no file. */
#ifndef XP_WATCH_INT_H
#define XP_WATCH_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "cli.h"
#include "perf.h"
#include "process.h"
#include "spies.h"
#include "target.h"
#include "watch_view.h"

#define WATCH_MAX_ROWS 512
#define WATCH_FN_LEN   256
#define WATCH_CPU_FNS  32 /* on-CPU functions the running time is split into */

struct watch_row {
	enum watch_state state;
	char fn[WATCH_FN_LEN];
	char *stack; /* callers under the resume point, NULL until read */
	unsigned stack_tries;
	uint64_t stack_tried_ns;
	uint64_t ns, n;
};

struct watch {
	const struct cli_opts *o;
	struct target *t;
	struct process_reader pr;
	struct watch_stacks *stacks;
	struct watch_cpu *cpu; /* NULL: running time stays "(on CPU)" */
	uint64_t proc, pid_term;
	char pid_text[64], name[XP_ATOM_MAX_BYTES + 1];
	struct spy_lease lease;
	struct perf_session *ps;
	uint64_t interval_ns, start_ns, first_ns, last_ns, prev_ns, jit_retry_ns;
	int prev_row;
	enum watch_state prev_state;
	uint64_t runq_start; /* the current runnable episode's estimated start, 0 outside one */
	uint64_t runq_fine[WATCH_FINE_BUCKETS]; /* episodes by duration (watch_hist.c) */
	struct watch_row rows[WATCH_MAX_ROWS];
	size_t nrows;
	struct watch_counts c;
	unsigned foreign_in_a_row;
	enum watch_end end;
	bool done;
	FILE
	    *timeline; /* XP_WATCH_TIMELINE: each snapshot's time and state (bench/watch_methods) */
};

/* The monotonic clock in ns, what every time in struct watch is. */
static inline uint64_t watch__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* XP_WATCH_INT_H */
