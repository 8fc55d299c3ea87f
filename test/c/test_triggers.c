/* Unit tests for the flight recorder's long-run trigger (external/src/cmd/record/triggers.c):
 * where a run goes on and where it breaks, as the timeline's (report/trace.h). A process
 * sampled every period fires at the threshold; a gap of 4 periods with no switch record of its
 * thread (the sampling timer late) does not break it once switch records are known to come; the
 * same gap with the thread blocked in it, or with the scheduler sampled without a process, or
 * with no switch record ever seen, does; time preempted does not, and the event says how long
 * the OS preempted the thread within the run (or within the collection, for the gc trigger). */
#include <string.h>

#include "check.h"
#include "triggers.h"

#define MS   1000000ull
#define SRV  "<0.90.0> xp_stall_server"
#define FREQ 1000u /* a 1 ms period */

enum gap_kind { GAP_LATE, GAP_BLOCKED, GAP_IDLE, GAP_PREEMPTED };

/* SRV on scheduler 0 every ms from 0, with one 4 ms gap of kind k at 40 ms; scheduler 1 had one
 * switch record (switch records come) unless no_switches. The time of the long-run trigger
 * (100 ms), or 0 when it did not fire by 200 ms; with gc, every sample is in a collection and
 * the gc trigger (100 ms) is asked instead. The event's text in detail (when not NULL). */
static uint64_t fired_at_gc(enum gap_kind k, bool no_switches, bool gc, char *detail)
{
	struct trig_opts o = {.long_run_ns = gc ? 0 : 100 * MS, .gc_ns = gc ? 100 * MS : 0};
	struct triggers tr;
	struct trig_event ev;
	uint64_t t, at = 0;

	if (trig__init(&tr, &o, 2, FREQ))
		return 1;
	if (!no_switches)
		trig__switch(&tr, 1, 0, true, false);
	for (t = 0; t <= 200 * MS && !at; t += MS) {
		if (t > 40 * MS && t < 44 * MS) {
			if (k == GAP_BLOCKED && t == 41 * MS)
				trig__switch(&tr, 0, t, true, false);
			if (k == GAP_BLOCKED && t == 43 * MS)
				trig__switch(&tr, 0, t, false, false);
			if (k == GAP_PREEMPTED && t == 41 * MS)
				trig__switch(&tr, 0, t, true, true);
			if (k == GAP_PREEMPTED && t == 43 * MS)
				trig__switch(&tr, 0, t, false, false);
			if (k == GAP_IDLE && t == 42 * MS)
				trig__sample(&tr, 0, "scheduler 1", t,
					     "[normal scheduler: no process]", false, false, &ev);
			continue;
		}
		if (trig__sample(&tr, 0, "scheduler 1", t, SRV, true, gc, &ev)) {
			at = t;
			CHECK_INT("the event's kind", gc ? TRIG_GC : TRIG_LONG_RUN, ev.kind);
			if (detail)
				strcpy(detail, ev.detail);
		}
	}
	trig__free(&tr);
	return at;
}

static uint64_t fired_at(enum gap_kind k, bool no_switches)
{
	return fired_at_gc(k, no_switches, false, NULL);
}

int main(void)
{
	char detail[sizeof(((struct trig_event *)0)->detail)];

	/* The run's length counts half a period each side: 99 ms of samples make 100 ms. */
	CHECK_U64("a late timer (no switch record in the gap): one run, fires at 99 ms", 99 * MS,
		  fired_at(GAP_LATE, false));
	CHECK_U64("preempted in the gap: one run", 99 * MS, fired_at(GAP_PREEMPTED, false));
	CHECK_U64("blocked in the gap: a new run from 44 ms", 143 * MS,
		  fired_at(GAP_BLOCKED, false));
	CHECK_U64("sampled without a process in the gap: a new run from 44 ms", 143 * MS,
		  fired_at(GAP_IDLE, false));
	CHECK_U64("no switch record ever seen: the gap breaks the run", 143 * MS,
		  fired_at(GAP_LATE, true));
	fired_at_gc(GAP_PREEMPTED, false, false, detail);
	CHECK_STR("preempted 2 ms in the run: the event says so",
		  "scheduler 1 ran " SRV " for 100 ms without a break (2 ms of it its thread was "
		  "preempted by the OS)",
		  detail);
	fired_at_gc(GAP_LATE, false, false, detail);
	CHECK_STR("a late timer: nothing preempted to say",
		  "scheduler 1 ran " SRV " for 100 ms without a break", detail);
	CHECK_U64("gc, preempted in the gap: one collection", 99 * MS,
		  fired_at_gc(GAP_PREEMPTED, false, true, detail));
	CHECK_STR("gc, preempted 2 ms in the collection: the event says so",
		  "scheduler 1 ran one garbage collection of " SRV " for 100 ms (2 ms of it its "
		  "thread was preempted by the OS)",
		  detail);
	return check_done();
}
