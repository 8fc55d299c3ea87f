/* extrospect events PID: lease the agent's event tracer for -d seconds, drain its rings every
 * 10 ms, and report spawns, exits, sends, collections and run-queue waits (events.h). The
 * lease is renewed every 100 ms; stopping (the duration, SIGINT, SIGTERM) withdraws it, and a
 * sampler that dies leaves it to run out: the agent clears the flags within lease_ns + 100 ms. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "evring.h"
#include "run.h"
#include "events_names.h"
#include "events_print.h"
#include "events_stacks.h"
#include "events_stats.h"
#include "events_uprobes.h"

#define DRAIN_NS       10000000ull  /* between drains */
#define RENEW_NS       100000000ull /* between lease renewals */
#define WATERMARK_NS   5000000ull   /* records younger than this wait for the next drain */
#define START_WAIT_S   20.0	    /* for the agent to set the flags (a VM under load is slow) */
#define LAPSE_POLL_NS  50000000ull  /* watching another sampler's lease */
#define LAPSE_SLACK_NS 300000000ull /* past XP_TRACER_LEASE_NS: the agent's poll, a slow VM */
#define DEFAULT_S      10.0

const char events__usage[] =
    "Usage: extrospect events [OPTIONS] PID\n"
    "\n"
    "Which processes are born and die, how long messages wait, how long collections pause\n"
    "processes and how long runnable processes wait for a scheduler: the agent's event tracer\n"
    "(an erl_tracer NIF: the VM calls it for each event, it writes a 32-byte record into a ring\n"
    "in the agent's memory, no message and no tracer process) read from outside for -d seconds\n"
    "(default 10). Needs the agent. Per kind, the count and rate, VM-wide and for the processes\n"
    "with most events, and where the kind has a duration its percentiles in microseconds:\n"
    "  spawn  processes spawned, per parent\n"
    "  exit   processes exited, by reason class: normal, shutdown ({shutdown, _} too), killed,\n"
    "         noproc (and noconnection), error (any other reason)\n"
    "  send   messages sent, per sender; latency: from the send to the receiver's next\n"
    "         schedule-in, for receivers that were not running (a send to a running process\n"
    "         is counted, not timed)\n"
    "  gc     each collection's pause (gc_*_start to gc_*_end), minor and major, per process\n"
    "  sched  run-queue wait: from being scheduled out still runnable (preempted, yielding), or\n"
    "         from the first message to a process waiting in receive, to the next\n"
    "         schedule-in; waits ended by a timeout are not measured. Migrations: a\n"
    "         schedule-in on another scheduler than the process's last one\n"
    "On OTP 27+ the tracer has a trace session of its own (a user's dbg is unaffected); on\n"
    "OTP 25 and 26 it is refused while another tracer is set (exit status 10). Stopping (the\n"
    "duration, Ctrl-C) clears every flag; if this program is killed, the agent clears them\n"
    "within about a second. A full ring is overwritten: records lost are counted and printed.\n"
    "\n"
    "  -d SECONDS            how long to record (default 10)\n"
    "  --erlang-pid P        only that process in the per-process lists (VM-wide figures stay)\n"
    "  --name NAME           the same, by registered name or initial call\n"
    "  --top N               processes per kind (default 10)\n"
    "  --sample N            trace one process in N (by pid): VM-wide counts are scaled by N\n"
    "  --slowest N           also list the N longest collections, run-queue waits and message\n"
    "                        waits, each with its process, when it ended, and the process's\n"
    "                        Erlang stack: sampled during it (a collection: where the process\n"
    "                        stood, which triggered it), else the nearest sample before or\n"
    "                        after it within 10 ms, the gap given. It samples the scheduler\n"
    "                        threads at 997 Hz as record does, and costs what record costs\n"
    "  --json                one JSON object on stdout (keys spawn, exit, send, gc, sched)\n"
    "  --source SOURCE       tracer (default): the agent's event tracer, as above; uprobes:\n"
    "                        uprobes on beam.smp's exported functions, no agent needed, root\n"
    "                        (system-wide probes), OTP 25 and 27 only (the newest OTP's\n"
    "                        beam.smp is stripped): spawn, exit, send counts and collection\n"
    "                        pauses (minor and major not told), no run-queue or message waits;\n"
    "                        each call traps into the kernel (the table in\n"
    "                        docs/accuracy-and-cost.md). The kernel writes a breakpoint into\n"
    "                        the VM's code (its own copy of those pages) for the run: the one\n"
    "                        mode in which the VM's memory is changed, hence opt-in\n"
    "\n"
    "Exit status: 0, 6 without the agent (or an agent without the event tracer; uprobes: a\n"
    "stripped beam.smp), 10 when the agent refused (another tracer on OTP 25, another sampler\n"
    "reading events: one still renewing its lease; one that stopped renewing, killed, is\n"
    "waited for until its lease runs out, about a second) or uprobes were not permitted (not\n"
    "root).\n"
    "\n"
    "Examples:\n"
    "  extrospect events -d 10 4242\n"
    "  extrospect events -d 5 --name my_server 4242\n"
    "  extrospect events -d 10 --slowest 10 4242       # the ten longest collections, waits,\n"
    "                                                  # each with its process's stack\n"
    "  extrospect events -d 10 --json 4242 | jq '.send.processes[0]'\n"
    "  extrospect events -d 5 --source uprobes 4242   # no agent in the VM\n";

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void nap_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};

	nanosleep(&ts, NULL);
}

static void hold_cb(const struct xp_ev *ev, unsigned ring, void *ctx)
{
	evstats__hold(ctx, ev, ring);
}

static const char *why_text(uint32_t why)
{
	switch (why) {
	case XP_TRACER_WHY_OTHER_TRACER:
		return "another tracer is set in the VM (dbg, recon_trace, ...); before OTP 27 a "
		       "process has one tracer: stop it first";
	case XP_TRACER_WHY_TRACE_FAILED:
		return "setting the trace flags failed (the VM's log says why)";
	case XP_TRACER_WHY_NO_PROCESS:
		return "the agent's extrospect_events process is not running (is the extrospect "
		       "application started?)";
	default:
		return "no reason given";
	}
}

/* Start, and when another sampler holds the tracer, watch its lease until it runs out: a
 * sampler killed a moment ago (its lease not renewed since) holds it until then, and the agent
 * stops its session at expiry. A renewal meanwhile is a live sampler: busy. */
static enum evring_status start_after_stale(struct evring *r, uint64_t want, uint64_t sample_n,
					    volatile sig_atomic_t *stop)
{
	enum evring_status st = evring__start(r, want, sample_n);
	uint64_t end = now_ns() + XP_TRACER_LEASE_NS + LAPSE_SLACK_NS;
	struct xp_tracer_ctl c0, c;

	if (st != EVRING_BUSY || evring__ctl(r, &c0))
		return st;
	while (!*stop && now_ns() < end) {
		nap_ns(LAPSE_POLL_NS);
		if (evring__ctl(r, &c))
			return EVRING_READ_FAILED;
		if (c.lease != c0.lease || c.owner != c0.owner)
			return EVRING_BUSY; /* renewed, or another sampler took it: alive */
		if (now_ns() > c.lease_expiry_ns)
			return evring__start(r, want, sample_n);
	}
	return EVRING_BUSY;
}

/* Wait for the agent to set the flags: 0 with the session's start time, or an error. */
static int wait_on(struct evring *r, volatile sig_atomic_t *stop, uint64_t *started, bool *runq,
		   char *err, size_t errlen)
{
	uint64_t end = now_ns() + (uint64_t)(START_WAIT_S * 1e9), renew = 0;
	struct xp_tracer_ctl c;

	while (!*stop && now_ns() < end) {
		if (evring__ctl(r, &c))
			return TARGET_EGONE;
		if (c.state == XP_TRACER_ON && c.owner == (uint64_t)getpid() &&
		    c.session > r->session) {
			*started = c.started_ns;
			*runq = (c.caps & XP_TRACER_CAP_RUNQ) != 0;
			return 0;
		}
		if (c.state == XP_TRACER_REFUSED && c.owner == (uint64_t)getpid() &&
		    c.session > r->session) {
			snprintf(err, errlen, "the agent refused to trace: %s", why_text(c.reason));
			return EVENTS_EREFUSED;
		}
		if (now_ns() > renew) {
			evring__renew(r);
			renew = now_ns() + RENEW_NS;
		}
		nap_ns(DRAIN_NS);
	}
	snprintf(err, errlen, "the agent did not start tracing within %.0f s (state %u)",
		 START_WAIT_S, c.state);
	return *stop ? 0 : -ETIMEDOUT;
}

/* Drain every DRAIN_NS and renew every RENEW_NS until the end or a stop. */
static int run_loop(struct evring *r, struct evstats *s, struct evstacks *x,
		    const struct cli_opts *o, volatile sig_atomic_t *stop, uint64_t started)
{
	double secs = o->duration_s > 0 ? o->duration_s : DEFAULT_S;
	uint64_t end = started + (uint64_t)(secs * 1e9), renew = 0, now;

	while (!*stop && (now = now_ns()) < end) {
		if (evring__drain(r, hold_cb, s))
			return TARGET_EGONE;
		evstats__process(s, now - WATERMARK_NS);
		if (now > renew) {
			if (evring__renew(r))
				return TARGET_EGONE;
			renew = now + RENEW_NS;
		}
		if (!x)
			nap_ns(DRAIN_NS);
		else if (evstacks__poll(x, (int)(DRAIN_NS / 1000000)) == -ESRCH)
			return TARGET_EGONE;
	}
	return 0;
}

static int report(const struct cli_opts *o, struct target *t, struct evring *r, struct evstats *s,
		  struct evstacks *x, uint64_t uprobes_lost)
{
	struct events_out out = {
	    .json = o->json,
	    .top = o->limit ? o->limit : 10,
	    .only = o->erlang_pid ? o->erlang_pid : o->name,
	    .seconds = (double)(s->t1 - s->t0) / 1e9,
	    .read = r ? r->read : evstats__records(s),
	    .lapped = r ? r->lost[EVLOSS_LAPPED] : uprobes_lost,
	    .torn = r ? r->lost[EVLOSS_TORN] : 0,
	    .mechanism = !r		   ? "uprobes"
			 : s->sample_n > 1 ? "erl_tracer, sampled"
					   : "erl_tracer",
	    .otp = t->otp_release,
	    .rings_addr = r ? r->region.rings_addr : 0,
	    .rings_bytes = r ? (uint64_t)r->region.nrings * r->region.ring_bytes : 0,
	    .nrings = r ? r->region.nrings : 0,
	    .stacks = x,
	};

	events__names(t, s, o->erlang_names);
	if (o->json)
		events__print_json(s, &out, stdout);
	else
		events__print_text(s, &out, stdout);
	return fflush(stdout) ? -EIO : 0;
}

/* --source uprobes: no agent, no lease; --slowest without stacks (not sampled). */
static int events_uprobes(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop,
			  char *err, size_t errlen)
{
	struct evstats s;
	uint64_t lost = 0;
	int rc;

	if (evstats__init(&s, o->events_slowest))
		return -ENOMEM;
	run__raise_priority(t->pid); /* as the tracer's reader: a ring left full loses hits */
	rc = events__uprobes(t, o->duration_s > 0 ? o->duration_s : DEFAULT_S, stop, &s, &lost, err,
			     errlen);
	if (!rc)
		rc = report(o, t, NULL, &s, NULL, lost);
	evstats__free(&s);
	return rc;
}

int cmd__events(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
		size_t errlen)
{
	struct evstacks *x = NULL;
	struct evring r;
	struct evstats s;
	enum evring_status st;
	uint64_t started = 0;
	int rc;

	if (o->events_uprobes)
		return events_uprobes(o, t, stop, err, errlen);
	if (!target__has_agent(t)) {
		snprintf(err, errlen,
			 "events needs the extrospect agent in the VM (its event "
			 "tracer runs inside): start the extrospect application, or "
			 "`extrospect inject` (docs/agent.md)");
		return TARGET_EUNSUPPORTED;
	}
	st = evring__open(t, &r);
	if (st != EVRING_OK) {
		snprintf(err, errlen, "events: %s", evring__status_str(st));
		return st == EVRING_NONE ? TARGET_EUNSUPPORTED : -EIO;
	}
	if (evstats__init(&s, o->events_slowest)) {
		evring__close(&r);
		return -ENOMEM;
	}
	s.sample_n = o->events_sample;
	st = start_after_stale(&r, XP_EVF_PROCS | XP_EVF_SEND | XP_EVF_RUNNING | XP_EVF_GC,
			       o->events_sample, stop);
	if (st != EVRING_OK) {
		snprintf(err, errlen, "events: %s", evring__status_str(st));
		rc = st == EVRING_BUSY ? EVENTS_EREFUSED : -EIO;
		if (*stop) { /* stopped while another's lease ran out: nothing recorded */
			rc = 0;
			err[0] = '\0';
		}
		goto cleanup;
	}
	rc = wait_on(&r, stop, &started, &s.runq, err, errlen);
	if (rc || *stop)
		goto cleanup;
	s.t0 = started;
	run__raise_priority(t->pid); /* a ring overwritten while we wait for a CPU is lost */
	if (o->events_slowest && evstacks__open(&x, t, err, errlen)) {
		fprintf(stderr, "events: --slowest without stacks: %s\n", err);
		err[0] = '\0';
	}
	fprintf(stderr, "events: recording for %.1f s (Ctrl-C stops)\n",
		o->duration_s > 0 ? o->duration_s : DEFAULT_S);
	rc = run_loop(&r, &s, x, o, stop, started);
	s.t1 = now_ns();
	fprintf(stderr, "events: stopped recording\n");
	evring__stop(&r);
	if (evring__drain(&r, hold_cb, &s) == EVRING_OK)
		evstats__process(&s, UINT64_MAX);
	if (!rc)
		rc = report(o, t, &r, &s, x, 0);
cleanup:
	evstacks__free(x);
	evring__stop(&r);
	evring__close(&r);
	evstats__free(&s);
	return rc;
}
