/* A timeline of what ran when, in the Chrome trace event format (a JSON object with traceEvents,
 * as Perfetto, chrome://tracing and speedscope open it): one track per scheduler thread, each
 * contiguous run of one Erlang process on it one complete event, the sampled functions nested
 * under it, collections, idle time and marks (a trigger) on it. Also the runs themselves, for
 * a text summary. Does not own: keeping samples (cmd/record/ring.c), the clock mapping (the
 * caller gives wall-clock times). */
#ifndef XP_TRACE_H
#define XP_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "aggregate.h"

/* One track: a scheduler thread. */
struct trace_thread {
	pid_t tid;
	char name[48]; /* "scheduler 3", "dirty cpu scheduler 1" */
};

/* One kept sample. */
struct trace_sample {
	int64_t time_ns;       /* wall clock, ns since the Unix epoch */
	uint32_t thread;       /* index into trace_input.threads */
	bool process;	       /* an Erlang process ran (else: scheduler time without one) */
	bool gc;	       /* a frame of the stack is a garbage collection */
	const char *group;     /* "<0.812.0> my_cache", "<0.90.0>", or the idle label */
	const struct agg *agg; /* names of frames */
	const uint32_t *frames;
	uint32_t nframes; /* root first */
};

/* A thread went off its CPU or back on. */
enum trace_switch_kind { TRACE_SWITCH_IN = 0, TRACE_SWITCH_PREEMPTED, TRACE_SWITCH_BLOCKED };

struct trace_switch {
	int64_t time_ns;
	uint32_t thread;
	uint8_t kind; /* enum trace_switch_kind */
};

/* A moment marked on every track (a trigger). */
struct trace_mark {
	int64_t time_ns;
	const char *name;   /* "trigger: long-run" */
	const char *detail; /* one line */
};

struct trace_input {
	const struct trace_thread *threads;
	size_t nthreads;
	struct trace_sample *samples; /* any order: sorted here by thread, then time */
	size_t nsamples;
	uint64_t period_ns; /* the sampling period: runs are bounded to half of it */
	/* Switches off and on the CPU (any order: sorted here), and whether they were recorded. */
	struct trace_switch *switches;
	size_t nswitches;
	bool have_switches;
	/* The kernel dropped records while these were taken: a switch may be missing, so a gap
	 * with none recorded proves nothing. */
	bool records_lost;
	const struct trace_mark *marks;
	size_t nmarks;
	int vm_pid;
	const char *clock_note; /* how sample times were mapped to the wall clock */
};

/* One contiguous run of one process (or of no process) on one thread. */
struct trace_run {
	uint32_t thread;
	const char *group;
	bool process;
	int64_t start_ns, end_ns;
	size_t first, last;   /* its samples: input.samples[first..last] after sorting */
	size_t gc_samples;    /* of them, in a collection */
	int64_t preempted_ns; /* of its time, off the CPU preempted (with switches) */
	/* Of its time, on the CPU by the switch records yet without a sample for more than
	 * TRACE_GAP_PERIODS: the sampling timer fired late (a hypervisor held the virtual CPU, or
	 * interrupts were off); the run goes on across it (see TRACE_LATE_PERIODS). */
	int64_t unsampled_ns;
	/* How far off each edge may be beyond half a period: the time its thread was preempted
	 * where the edge falls (the process may have run up to either end of it); 0 mostly. */
	int64_t start_unc_ns, end_unc_ns;
	/* Before it on its thread, since the last run: the thread blocked (the scheduler slept),
	 * was only preempted, or neither was recorded. */
	enum { TRACE_GAP_UNKNOWN = 0, TRACE_GAP_BLOCKED, TRACE_GAP_PREEMPTED } gap_before;
};

/* A run ends where the next sample of its thread is another process's, or after more than
 * TRACE_GAP_PERIODS sampling periods with no sample of that thread, not counting time its thread
 * was off the CPU preempted by the OS (with switch records; time blocked counts). */
#define TRACE_GAP_PERIODS 2.5
/* Except: with switch records complete (none lost), two samples of one process on one thread
 * with no switch of that thread between them, up to this many periods apart, are one run: the
 * thread never left its CPU, and a scheduler that ran anything else there for a period or more
 * would have been sampled; the time past one period is the run's unsampled_ns. */
#define TRACE_LATE_PERIODS 20
/* Is a gap of d ns between two samples of one process on one thread, longer than gap, that
 * rule: switch records come (have_switches), none was lost, and the thread had none between the
 * two, nor a sample without a process (quiet)? The timeline and the flight recorder's long-run
 * trigger both ask it. */
bool report__trace_late(int64_t d, int64_t gap, uint64_t period_ns, bool have_switches, bool lost,
			bool quiet);

/* Sorts in->samples, then calls fn for every run in thread, then time order; fn's non-zero
 * return stops and is returned. */
int report__trace_runs(struct trace_input *in, int (*fn)(const struct trace_run *r, void *ctx),
		       void *ctx);
/* The whole timeline as JSON. 0 or -errno (-EIO: a write error). */
int report__trace(struct trace_input *in, FILE *f);
/* "<0.812.0> my_cache" -> pid "<0.812.0>", name "my_cache"; "<0.90.0>" -> name ""; a label
 * ("[...]") -> pid "". */
/* Do two group names name one process: the same pid, or the same label? */
bool report__trace_same(const char *a, const char *b);
void report__trace_split(const char *group, char *pid, size_t pidlen, const char **name);

#endif /* XP_TRACE_H */
