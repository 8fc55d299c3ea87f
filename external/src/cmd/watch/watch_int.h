/* watch's private parts, shared by watch.c (snapshots, the spy, the command), watch_find.c
 * (finding P), watch_poll.c (--method poll) and watch_report.c (the report). */
#ifndef XP_WATCH_INT_H
#define XP_WATCH_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "perf.h"
#include "process.h"
#include "spies.h"
#include "target.h"
#include "watch.h"

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

extern const char *const watch__end_names[];

uint64_t watch__now_ns(void);
/* A spy's copy (or a poll's read) of P's struct: perf_session's callback, ctx a struct watch. */
void watch__on_sample(const struct perf_sample *ps, void *ctx);
/* P's Process struct by pid text or registered name (w->o): sets w->proc, pid_term, pid_text,
 * name and w->pr. 0, CMD_EUSAGE (no such process), TARGET_EUNSUPPORTED, -ENOMEM. */
int watch__find_process(struct watch *w, char *err, size_t errlen);
void watch__run_poll(struct watch *w, volatile sig_atomic_t *stop);
/* Print the table or JSON, and write -o. */
void watch__report(struct watch *w);

#endif /* XP_WATCH_INT_H */
