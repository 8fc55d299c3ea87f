/* The flight recorder's triggers (record --ring --trigger ...): which moments are worth a dump.
 * From the samples, at no cost beyond a compare per sample: long-run (one process seen running
 * without a break for at least a time) and gc (one collection of one process, from consecutive
 * GC samples of it). SIGUSR2 asks for a dump from outside (flight.c). Does not own: sampling,
 * holding samples (ring.c), dumping (flight.c). */
#ifndef XP_TRIGGERS_H
#define XP_TRIGGERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli_values.h" /* struct trig_opts: what --trigger asked for */

enum trig_kind { TRIG_SIGNAL = 0, TRIG_LONG_RUN, TRIG_GC, TRIG_MSGQ, TRIG_RUNQ, TRIG_COUNT };

const char *trig__name(enum trig_kind k);
/* "trigger: long-run", the timeline's mark. */
const char *trig__mark(enum trig_kind k);

/* One fired trigger. */
struct trig_event {
	enum trig_kind kind;
	uint64_t time_ns; /* CLOCK_MONOTONIC: the sample that crossed the threshold, or now */
	char detail[200];
	/* TRIG_RUNQ: the scheduler whose queue crossed (index in t->sched), for the summary */
	bool has_sched;
	size_t sched;
};

/* What is being watched per scheduler thread. */
struct trig_sched {
	char group[96];		    /* the process of the current run ("" none) */
	uint64_t first_ns, last_ns; /* its first and last sample */
	uint64_t gc_first_ns;	    /* the first sample of its current collection */
	uint64_t out_ns, off_ns; /* since its last sample: off the CPU preempted since, and for */
	uint64_t run_off_ns, gc_off_ns; /* in the run and in its collection: preempted for */
	bool gc_open, fired, gc_fired;
	bool other; /* since its last sample: a switch record, or a sample without a process */
};

struct triggers {
	struct trig_opts o;
	uint64_t period_ns;
	bool have_switches; /* a switch record was seen */
	struct trig_sched *sched;
	size_t nsched;
};

int trig__init(struct triggers *tr, const struct trig_opts *o, size_t nsched, uint32_t freq_hz);
void trig__free(struct triggers *tr);
/* A scheduler's thread went off its CPU or back on (perf.h): time off the CPU preempted is not
 * a gap in a run, time blocked is. */
void trig__switch(struct triggers *tr, size_t sched, uint64_t time_ns, bool out, bool preempt);
/* One kept sample of a scheduler: true when a trigger fired (*ev filled). */
bool trig__sample(struct triggers *tr, size_t sched, const char *sched_name, uint64_t time_ns,
		  const char *group, bool process, bool gc, struct trig_event *ev);

#endif /* XP_TRIGGERS_H */
