/* The flight recorder's triggers. See triggers.h. A run is what the timeline calls one
 * (report/trace.h): samples of one process on one scheduler with no gap of more than
 * TRACE_GAP_PERIODS periods between them (TRACE_LATE_PERIODS with no switch record or other
 * sample of that thread in the gap; lost records are not known here: the dump's timeline,
 * which knows, may still cut such a run where the trigger did not); its length is counted from
 * half a period before its first sample to half a period after its last, as the timeline draws
 * it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/trace.h"
#include "triggers.h"

const char *trig__name(enum trig_kind k)
{
	static const char *const names[] = {"sigusr2", "long-run", "gc", "msgq", "runq"};

	return k < TRIG_COUNT ? names[k] : "?";
}

const char *trig__mark(enum trig_kind k)
{
	static const char *const marks[] = {"trigger: SIGUSR2", "trigger: long-run", "trigger: gc",
					    "trigger: msgq", "trigger: runq"};

	return k < TRIG_COUNT ? marks[k] : "trigger";
}

int trig__init(struct triggers *tr, const struct trig_opts *o, size_t nsched, uint32_t freq_hz)
{
	*tr = (struct triggers){
	    .o = *o, .period_ns = 1000000000ull / (freq_hz ? freq_hz : 997), .nsched = nsched};
	tr->sched = calloc(nsched ? nsched : 1, sizeof(*tr->sched));
	return tr->sched ? 0 : -ENOMEM;
}

void trig__free(struct triggers *tr)
{
	free(tr->sched);
	tr->sched = NULL;
}

/* The run's (or collection's) length is wall time: the process held its scheduler all along, but
 * the OS may have preempted the scheduler's thread for part of it, which the event says, as the
 * dump's summary does for its longest runs. */
static bool fire(struct trig_event *ev, enum trig_kind k, uint64_t time_ns, const char *sched_name,
		 const char *group, uint64_t len_ns, uint64_t off_ns)
{
	int n;

	ev->kind = k;
	ev->time_ns = time_ns;
	n = snprintf(ev->detail, sizeof(ev->detail),
		     k == TRIG_GC ? "%s ran one garbage collection of %s for %.0f ms"
				  : "%s ran %s for %.0f ms without a break",
		     sched_name, group, (double)len_ns / 1e6);
	if (off_ns >= 1000000 && n > 0 && (size_t)n < sizeof(ev->detail))
		snprintf(ev->detail + n, sizeof(ev->detail) - (size_t)n,
			 " (%.0f ms of it its thread was preempted by the OS)",
			 (double)off_ns / 1e6);
	return true;
}

void trig__switch(struct triggers *tr, size_t sched, uint64_t time_ns, bool out, bool preempt)
{
	struct trig_sched *s;

	if (sched >= tr->nsched)
		return;
	s = &tr->sched[sched];
	s->other = true;
	tr->have_switches = true;
	if (out) {
		s->out_ns = preempt ? time_ns : 0; /* time blocked counts as a gap */
	} else if (s->out_ns && time_ns > s->out_ns) {
		s->off_ns += time_ns - s->out_ns;
		s->out_ns = 0;
	}
}

bool trig__sample(struct triggers *tr, size_t sched, const char *sched_name, uint64_t time_ns,
		  const char *group, bool process, bool gc, struct trig_event *ev)
{
	uint64_t gap = (uint64_t)((double)tr->period_ns * TRACE_GAP_PERIODS), len, off;
	struct trig_sched *s;
	bool same;

	if (sched >= tr->nsched)
		return false;
	s = &tr->sched[sched];
	if (!process) { /* the scheduler's own loop: a gap, if long enough, as any other */
		s->other = true;
		return false;
	}
	/* As the timeline: no sample for a while, yet no switch record and nothing else sampled on
	 * that thread, is the sampling timer late, not a break. Lost records are not known here. */
	same = process && s->group[0] &&
	       (time_ns - s->last_ns <= gap + s->off_ns ||
		report__trace_late((int64_t)(time_ns - s->last_ns), (int64_t)gap, tr->period_ns,
				   tr->have_switches, false, !s->other)) &&
	       report__trace_same(s->group, group);
	off = same ? s->off_ns : 0;
	s->off_ns = 0;
	s->other = false;
	s->run_off_ns += off;
	if (!same) {
		snprintf(s->group, sizeof(s->group), "%s", process ? group : "");
		s->first_ns = time_ns;
		s->fired = false;
		s->run_off_ns = 0;
	}
	if (gc && !(same && s->gc_open)) {
		s->gc_first_ns = time_ns;
		s->gc_fired = false;
		s->gc_off_ns = 0;
	} else if (gc) {
		s->gc_off_ns += off;
	}
	s->gc_open = gc && process;
	s->last_ns = time_ns;
	if (!process)
		return false;
	len = time_ns - s->first_ns + tr->period_ns;
	if (tr->o.long_run_ns && !s->fired && len >= tr->o.long_run_ns) {
		s->fired = true;
		return fire(ev, TRIG_LONG_RUN, time_ns, sched_name, group, len, s->run_off_ns);
	}
	len = time_ns - s->gc_first_ns + tr->period_ns;
	if (tr->o.gc_ns && gc && !s->gc_fired && len >= tr->o.gc_ns) {
		s->gc_fired = true;
		return fire(ev, TRIG_GC, time_ns, sched_name, group, len, s->gc_off_ns);
	}
	return false;
}
