/* Unit tests for events: the distributions (percentiles within their stated error, the maximum
 * exact), the state machine on a hand-made stream of records (a send to a waiting receiver is
 * timed to its next schedule-in, a preempted process's wait from its schedule-out, a collection
 * from start to end, a migration, exits per parent, records out of the window ignored), the
 * checks evring applies to the region an agent publishes, and the text's microseconds. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "evring.h"
#include "events_print.h"
#include "events_stats.h"

#define PID(n) (((uint64_t)(n) << 4) | 0x3)

static void ev(struct evstats *s, uint64_t ts, uint16_t kind, uint16_t arg, uint64_t pid,
	       uint64_t extra, unsigned ring)
{
	struct xp_ev e = {.ts_ns = ts, .pid = pid, .extra = extra, .kind = kind, .arg = arg};

	evstats__hold(s, &e, ring);
}

static void test_dist(void)
{
	struct dist vm = {.sub_bits = DIST_VM_BITS}, pr = {0};
	uint64_t i;

	CHECK_INT("empty: p50 0", 0, dist__quantile(&vm, 0.5));
	for (i = 1; i <= 10000; i++) {
		dist__add(&vm, i * 1000); /* 1 us .. 10 ms */
		dist__add(&pr, i * 1000);
	}
	CHECK("VM-wide p50 within 0.8 % of 5 ms",
	      fabs((double)dist__quantile(&vm, 0.5) - 5e6) <= 0.008 * 5e6);
	CHECK("VM-wide p99 within 0.8 % of 9.9 ms",
	      fabs((double)dist__quantile(&vm, 0.99) - 9.9e6) <= 0.008 * 9.9e6);
	CHECK("per process p50 within 3 % of 5 ms",
	      fabs((double)dist__quantile(&pr, 0.5) - 5e6) <= 0.03 * 5e6);
	CHECK_INT("max exact", 10000000, vm.max_ns);
	CHECK("p999 <= max", dist__quantile(&vm, 0.999) <= vm.max_ns);
	dist__free(&vm);
	dist__free(&pr);
}

static void test_machine(void)
{
	struct evstats s;
	struct evproc *a, *b, *c;

	if (evstats__init(&s, 2))
		return;
	s.t0 = 1000;
	ev(&s, 500, XP_EV_SPAWN, 0, PID(1), PID(9), 0); /* before the window */
	/* b waits in receive; a sends to it at 2000; b runs at 2500 on ring 1: 500 ns. */
	ev(&s, 1100, XP_EV_IN, 0, PID(2), 0, 0);
	ev(&s, 1200, XP_EV_OUT, XP_OUT_WAITING, PID(2), 0, 0);
	ev(&s, 2000, XP_EV_SEND, 0, PID(1), PID(2), 0);
	ev(&s, 2500, XP_EV_IN, 0, PID(2), 0, 1);
	/* a preempted at 3000, back at 3700: 700 ns in the run queue. */
	ev(&s, 2900, XP_EV_IN, 0, PID(1), 0, 0);
	ev(&s, 3000, XP_EV_OUT, XP_OUT_RUNNABLE, PID(1), 0, 0);
	ev(&s, 3700, XP_EV_IN, 0, PID(1), 0, 0);
	/* a major collection of 4000 ns; a spawns c, c exits killed. */
	ev(&s, 4000, XP_EV_GC_MAJOR_START, 0, PID(1), 0, 0);
	ev(&s, 8000, XP_EV_GC_MAJOR_END, 0, PID(1), 0, 0);
	ev(&s, 9000, XP_EV_SPAWN, 0, PID(1), PID(3), 0);
	ev(&s, 9500, XP_EV_EXIT, XP_EXIT_KILLED, PID(3), 0, 0);
	evstats__process(&s, UINT64_MAX);
	a = evstats__find(&s, PID(1));
	b = evstats__find(&s, PID(2));
	c = evstats__find(&s, PID(3));
	CHECK("processes found", a && b && c);
	if (!a || !b || !c)
		goto cleanup;
	CHECK_INT("record before the window ignored", 1, s.out_of_window);
	CHECK_INT("send latency: one timed", 1, s.d[ED_SEND].n);
	CHECK_INT("send latency 500 ns", 500, s.d[ED_SEND].max_ns);
	CHECK_INT("sender's latency", 500, a->d[ED_SEND].max_ns);
	CHECK_INT("run-queue waits: the woken receiver's and the preempted one's", 2,
		  s.d[ED_SCHED].n);
	CHECK_INT("preempted wait 700 ns", 700, a->d[ED_SCHED].max_ns);
	CHECK_INT("woken wait 500 ns (from the send)", 500, b->d[ED_SCHED].max_ns);
	CHECK_INT("migration of b (ring 0 then 1)", 1, b->migrations);
	CHECK_INT("major pause 4000 ns", 4000, a->d[ED_GC_MAJOR].max_ns);
	CHECK_INT("no minor", 0, s.d[ED_GC_MINOR].n);
	CHECK_INT("c's exit counted for its parent", 1, a->child_exits);
	CHECK_INT("killed", 1, s.exit_class[XP_EXIT_KILLED]);
	CHECK_INT("spawns in the window", 1, a->spawns);
	CHECK_INT("--slowest 2: the longest wait first", 700, s.slow[SLOW_SCHED][0].ns);
	CHECK_INT("--slowest 2: then the other", 500, s.slow[SLOW_SCHED][1].ns);
	CHECK_INT("--slowest: the major collection", 1, s.slow[SLOW_GC][0].major);
cleanup:
	evstats__free(&s);
}

static void test_region(void)
{
	struct xp_tracer_region g;

	memset(&g, 0, sizeof(g));
	CHECK_INT("version 0: none", EVRING_NONE, evring__check_region(&g));
	g.version = XP_TRACER_REGION_VERSION;
	g.nrings = 3;
	g.rings_addr = 0x7f0000001000;
	g.ring_records = 1024;
	g.ring_bytes = sizeof(struct xp_ev_ring) + 1024 * sizeof(struct xp_ev);
	g.record_size = sizeof(struct xp_ev);
	g.ctl_addr = 0x7f0000000000;
	g.ctl_size = sizeof(struct xp_tracer_ctl);
	CHECK_INT("a good region", EVRING_OK, evring__check_region(&g));
	g.ring_records = 1000;
	CHECK_INT("records not a power of two", EVRING_BAD_REGION, evring__check_region(&g));
	g.ring_records = 1024;
	g.ring_bytes += 8;
	CHECK_INT("ring size disagrees", EVRING_BAD_REGION, evring__check_region(&g));
	g.ring_bytes -= 8;
	g.nrings = XP_TRACER_MAX_RINGS + 1;
	CHECK_INT("too many rings", EVRING_BAD_REGION, evring__check_region(&g));
	g.nrings = 3;
	g.ctl_addr += 8;
	CHECK_INT("control slot misaligned", EVRING_BAD_REGION, evring__check_region(&g));
	g.ctl_addr -= 8;
	g.version = 2;
	CHECK_INT("unknown version", EVRING_BAD_VERSION, evring__check_region(&g));
}

/* One decimal below 10 us, whole from 10 on, by the value as printed: a column never holds both
 * "10.0" and "10". */
static void test_us_text(void)
{
	static const struct {
		uint64_t ns;
		const char *text;
	} cases[] = {{0, "0.0"},   {940, "0.9"},  {9940, "9.9"}, {9949, "9.9"}, {9950, "10"},
		     {9960, "10"}, {10000, "10"}, {10400, "10"}, {10600, "11"}, {3841000, "3841"}};
	char t[32], name[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		events__us_text(cases[i].ns, t, sizeof(t));
		snprintf(name, sizeof(name), "%llu ns as microseconds",
			 (unsigned long long)cases[i].ns);
		CHECK_STR(name, cases[i].text, t);
	}
}

int main(void)
{
	test_dist();
	test_machine();
	test_region();
	test_us_text();
	return check_done();
}
