/* record --ring: the flight recorder. See flight.h. One trigger at a time: from it the ring keeps
 * everything back to a window before it, and the dump is written --after it (plus the poll's
 * latency, so that its samples have arrived). Triggers while one is pending, within --min-gap of
 * the last dump, or past --max-dumps are counted, not dumped. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "flight.h"
#include "report/outfile.h"
#include "report/report.h"
#include "run.h"
#include "trig_msgq.h"
#include "trig_runq.h"
#include "triggers.h"

#define FLIGHT_DRAIN_NS (150 * 1000000ull) /* samples still on their way after --after */

struct flight {
	const struct cli_opts *o;
	struct target *t;
	struct ring ring;
	struct triggers trig;
	struct msgq_watch msgq; /* with --trigger msgq= */
	bool have_msgq;
	struct runq_watch runq; /* with --trigger runq=, else for the summary when it can */
	bool have_runq;
	char (*sched_name)[48];
	char dir[4096];
	bool pending;
	struct trig_event ev;
	uint64_t from_ns, dump_at_ns, last_dump_ns;
	unsigned dumps;
	uint64_t fired[TRIG_COUNT], during_pending, within_gap, past_max;
	size_t peak_bytes;
	int err;
};

void flight__stamp(int64_t wall_ns, char *buf, size_t len, bool compact)
{
	time_t sec = (time_t)(wall_ns / 1000000000);
	struct tm tm;
	char ymd[32];

	gmtime_r(&sec, &tm);
	if (!strftime(ymd, sizeof(ymd), compact ? "%Y%m%dT%H%M%S" : "%Y-%m-%d %H:%M:%S", &tm))
		ymd[0] = 0;
	snprintf(buf, len, "%s.%03u%s", ymd, (unsigned)(wall_ns / 1000000 % 1000),
		 compact ? "Z" : " UTC");
}

static void clock_note(struct ring *r, int64_t err_ns)
{
	snprintf(r->clock_note, sizeof(r->clock_note),
		 "sample times are perf's CLOCK_MONOTONIC plus CLOCK_REALTIME - CLOCK_MONOTONIC "
		 "read when written (+-%" PRId64 " ns); a step of the wall clock inside the window "
		 "is not followed",
		 err_ns);
}

int flight__trace_all(struct ring *r, const struct cli_opts *o, struct trace_input *in)
{
	int64_t err_ns, off = ring__clock_offset(&err_ns);

	clock_note(r, err_ns);
	return ring__input(r, 0, UINT64_MAX, off, o->freq_hz, in);
}

static void trigger(struct flight *f, const struct trig_event *ev)
{
	int64_t err_ns, off = ring__clock_offset(&err_ns);
	char when[48];

	f->fired[ev->kind]++;
	if (f->pending) {
		f->during_pending++;
		return;
	}
	if (f->o->max_dumps && f->dumps >= f->o->max_dumps) {
		f->past_max++;
		return;
	}
	if (f->dumps && f->o->min_gap_ns && ev->time_ns < f->last_dump_ns + f->o->min_gap_ns) {
		f->within_gap++;
		return;
	}
	f->pending = true;
	f->ev = *ev;
	f->from_ns = ev->time_ns > f->o->ring_ns ? ev->time_ns - f->o->ring_ns : 0;
	f->dump_at_ns = ev->time_ns + f->o->after_ns;
	f->ring.keep_from_ns = f->from_ns ? f->from_ns : 1;
	flight__stamp((int64_t)ev->time_ns + off, when, sizeof(when), false);
	fprintf(stderr, "extrospect: trigger %s at %s: %s; dumping in %.1f s\n",
		trig__name(ev->kind), when, ev->detail, (double)f->o->after_ns / 1e9);
}

static void on_record(const struct sample_record *rec, void *ctx)
{
	struct flight *f = ctx;
	const struct ring_sample *s;
	struct trig_event ev = {0};

	if (!ring__hold(&f->ring, rec))
		return; /* not a scheduler's, or no memory */
	s = &f->ring.s[f->ring.n - 1];
	if (trig__sample(&f->trig, s->sched, f->sched_name[s->sched], s->time_ns,
			 agg__group_name(f->ring.gen[s->gen].agg, rec->group),
			 s->flags & RING_F_PROCESS, s->flags & RING_F_GC, &ev))
		trigger(f, &ev);
}

static void on_switch(uint32_t tid, uint64_t time, bool out, bool preempt, void *ctx)
{
	struct flight *f = ctx;
	int sched = ring__switch(&f->ring, tid, time, out, preempt);

	if (sched >= 0)
		trig__switch(&f->trig, (size_t)sched, time, out, preempt);
}

/* One file of the dump, complete or not at all. */
static int write_file(struct flight *f, const char *base, const char *ext, struct trace_input *in,
		      const struct agg *a, int64_t off, const char *partial)
{
	char path[4200];
	struct outfile of;
	int rc;

	snprintf(path, sizeof(path), "%s%s", base, ext);
	if ((rc = outfile__open(&of, path))) {
		fprintf(stderr, "extrospect: cannot write %s: %s\n", path,
			report__output_error(rc));
		return rc;
	}
	if (strcmp(ext, ".trace.json") == 0)
		rc = report__trace(in, of.f);
	else if (strcmp(ext, ".folded") == 0)
		rc = report__collapsed(a, of.f);
	else
		rc =
		    flight__summary(in, &f->ev, off, partial, f->have_runq ? &f->runq : NULL, of.f);
	if ((rc = outfile__close(&of, rc)))
		fprintf(stderr, "extrospect: cannot write %s: %s (nothing written)\n", path,
			strerror(-rc));
	return rc;
}

static int write_dump(struct flight *f, const char *partial)
{
	int64_t err_ns, off = ring__clock_offset(&err_ns);
	struct trace_mark mark = {.time_ns = (int64_t)f->ev.time_ns + off,
				  .name = trig__mark(f->ev.kind),
				  .detail = f->ev.detail};
	char stamp[48], base[4160];
	struct trace_input in;
	struct agg *a = NULL;
	int rc, rc2;

	clock_note(&f->ring, err_ns);
	if ((rc = ring__input(&f->ring, f->from_ns, f->dump_at_ns, off, f->o->freq_hz, &in)))
		return rc;
	in.marks = &mark;
	in.nmarks = 1;
	flight__stamp((int64_t)f->ev.time_ns + off, stamp, sizeof(stamp), true);
	snprintf(base, sizeof(base), "%s/%s-%s", f->dir, stamp, trig__name(f->ev.kind));
	rc = ring__input_agg(&in, &a);
	if (!rc) {
		rc = write_file(f, base, ".trace.json", &in, a, off, partial);
		rc2 = write_file(f, base, ".folded", &in, a, off, partial);
		rc = rc ? rc : rc2;
		rc2 = write_file(f, base, ".txt", &in, a, off, partial);
		rc = rc ? rc : rc2;
	}
	if (!rc)
		fprintf(stderr,
			"extrospect: dump %u: wrote %s.{trace.json,folded,txt} (%zu samples)%s%s\n",
			f->dumps + 1, base, in.nsamples, partial ? ": " : "",
			partial ? partial : "");
	agg__free(a);
	ring__input_free(&in);
	f->dumps++;
	f->pending = false;
	f->ring.keep_from_ns = 0;
	f->last_dump_ns = f->ev.time_ns;
	return rc;
}

static int turn(struct run_ctx *ctx, struct sampler *s)
{
	struct flight *f = ctx->user;
	uint64_t now = ring__now_ns();
	struct trig_event ev2 = {0};
	size_t bytes;
	int rc = 0;

	if (run__take(ctx->stop, RUN_DUMP)) {
		struct trig_event ev = {.kind = TRIG_SIGNAL, .time_ns = now};

		snprintf(ev.detail, sizeof(ev.detail), "SIGUSR2 asked for a dump");
		trigger(f, &ev);
	}
	if (f->have_msgq && msgq__check(&f->msgq, now, &ev2))
		trigger(f, &ev2);
	if (f->have_runq && (rc = runq__check(&f->runq, now, &ev2)) == 1)
		trigger(f, &ev2);
	if (rc < 0 && f->o->trig.runq_len) {
		snprintf(ctx->err, sizeof(ctx->err), "%s", f->runq.why);
		return TARGET_EUNSUPPORTED;
	}
	if (rc < 0)
		f->have_runq = false; /* the summary goes without run queues */
	if (f->pending && now >= f->dump_at_ns + FLIGHT_DRAIN_NS) {
		write_dump(f, NULL);
		if (f->o->max_dumps && f->dumps >= f->o->max_dumps)
			*ctx->stop = RUN_STOP;
	}
	if (ring__turn(&f->ring, s, now))
		return -ENOMEM;
	bytes = ring__bytes(&f->ring);
	f->peak_bytes = bytes > f->peak_bytes ? bytes : f->peak_bytes;
	return 0;
}

/* --trigger runq: its checks must pass; without it the run queues are read for the summary
 * when they can be, and quietly not when they cannot. */
static int prepare_runq(struct flight *f, char *err, size_t errlen)
{
	char why[256];
	int rc = runq__init(&f->runq, f->t, f->o->trig.runq_len, why, sizeof(why));

	if (rc == -ENOMEM || (rc && f->o->trig.runq_len)) {
		snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : why);
		return rc == -ENOMEM ? rc : TARGET_EUNSUPPORTED;
	}
	f->have_runq = rc == 0;
	return 0;
}

static int prepare(struct flight *f, char *err, size_t errlen)
{
	struct stat st;
	size_t i, n;

	snprintf(f->dir, sizeof(f->dir), "%s", f->o->output);
	n = strlen(f->dir);
	while (n > 1 && f->dir[n - 1] == '/')
		f->dir[--n] = '\0';
	if (mkdir(f->dir, 0755) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", f->dir, strerror(errno));
		return -errno;
	}
	if (stat(f->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "record --ring: -o %s must be a directory", f->dir);
		return -ENOTDIR;
	}
	f->sched_name = calloc(f->t->nsched ? f->t->nsched : 1, sizeof(*f->sched_name));
	if (!f->sched_name || trig__init(&f->trig, &f->o->trig, f->t->nsched, f->o->freq_hz)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < f->t->nsched; i++)
		ring__thread_name(&f->t->sched[i], f->sched_name[i], sizeof(f->sched_name[i]));
	if (f->o->trig.msgq_name[0]) {
		int rc = msgq__init(&f->msgq, f->t, f->o->trig.msgq_name, f->o->trig.msgq_len, err,
				    errlen);

		if (rc)
			return rc == -ENOMEM ? rc : TARGET_EUNSUPPORTED;
		f->have_msgq = true;
	}
	return prepare_runq(f, err, errlen);
}

static void final_summary(const struct flight *f)
{
	uint64_t oldest, newest;

	ring__span(&f->ring, &oldest, &newest);
	fprintf(stderr,
		"extrospect: flight recorder: %u dump%s written; ring held %zu samples over %.1f s "
		"at the end, %.1f MiB (peak %.1f MiB)\n",
		f->dumps, f->dumps == 1 ? "" : "s", ring__held(&f->ring),
		newest > oldest ? (double)(newest - oldest) / 1e9 : 0.0,
		(double)ring__bytes(&f->ring) / 1048576.0, (double)f->peak_bytes / 1048576.0);
	fprintf(stderr,
		"  triggers fired: SIGUSR2 %" PRIu64 ", long-run %" PRIu64 ", gc %" PRIu64
		", msgq %" PRIu64 ", runq %" PRIu64 "; not dumped: %" PRIu64
		" while a dump was pending, %" PRIu64 " within --min-gap, %" PRIu64
		" past --max-dumps\n",
		f->fired[TRIG_SIGNAL], f->fired[TRIG_LONG_RUN], f->fired[TRIG_GC],
		f->fired[TRIG_MSGQ], f->fired[TRIG_RUNQ], f->during_pending, f->within_gap,
		f->past_max);
	if (f->have_runq)
		fprintf(stderr,
			"  run queues: read %" PRIu64
			" times (%zu schedulers, every %d ms), %" PRIu64
			" reads of a queue failed their checks\n",
			f->runq.reads, f->runq.nq, TRIG_RUNQ_EVERY_MS, f->runq.bad);
}

int cmd__record_ring(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop,
		     char *err, size_t errlen)
{
	struct flight f = {.o = o, .t = t};
	struct run_ctx ctx = {
	    .t = t, .stop = stop, .verbose = o->verbose, .user = &f, .turn = turn};
	struct agg *a;
	int rc;

	if ((rc = prepare(&f, err, errlen)))
		goto cleanup;
	if ((rc = agg__new(&a)))
		goto cleanup;
	ring__init(&f.ring, t, a, o->ring_ns);
	cmd__sampler_opts(o, &ctx.opts);
	ctx.opts.group = GROUP_PID; /* a run is one process's */
	/* A scheduler's time without a process ends a run where it is sampled (the dumps' collapsed
	 * stacks and summaries leave it out). */
	ctx.opts.include_idle = true;
	ctx.opts.on_record = on_record;
	ctx.opts.on_switch = on_switch;
	ctx.opts.record_ctx = &f;
	ctx.agg = a;
	fprintf(stderr,
		"extrospect: flight recorder: holding the last %.0f s of samples (%d bytes each: "
		"about %.1f KiB a second per busy scheduler at %u Hz, plus their distinct stacks); "
		"dumps go to %s/\n",
		(double)o->ring_ns / 1e9, FLIGHT_SAMPLE_BYTES,
		FLIGHT_SAMPLE_BYTES * (double)o->freq_hz / 1024.0, o->freq_hz, f.dir);
	rc = run__sample(&ctx);
	if (rc) {
		snprintf(err, errlen, "%s", ctx.err);
		goto cleanup;
	}
	if (f.pending)
		write_dump(&f,
			   ctx.target_exited
			       ? "the VM exited before --after ended: the dump ends at its last "
				 "sample"
			       : "stopped before --after ended: the dump ends at its last sample");
	run__summary(&ctx, "the ring", stderr);
	final_summary(&f);
	rc = ctx.target_exited ? TARGET_EGONE : 0;
cleanup:
	ring__free(&f.ring);
	trig__free(&f.trig);
	runq__free(&f.runq);
	free(f.sched_name);
	return rc;
}
