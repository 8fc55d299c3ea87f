/* The dump's one-screen summary: the trigger, the window, the longest runs (which process ran
 * where, for how long, mostly in which function), the busiest processes. See flight.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flight.h"
#include "report/report.h"
#include "trig_runq.h"
#include "triggers.h"

#define TOP_RUNS 8
/* A runq trigger's: the longest runs on its scheduler behind a long queue. */
#define TOP_RUNQ_RUNS 5
#define TOP_FUNCS     32

struct top_run {
	struct trace_run r;
	const char *fn; /* the innermost Erlang function most of its samples were in */
	unsigned pct;
};

struct runs {
	struct trace_input *in;
	const struct runq_watch *rq; /* NULL: no run-queue readings */
	int64_t offset_ns;	     /* wall clock - CLOCK_MONOTONIC */
	/* Which runs are ranked: those on thread only_thread (all when has_only), and behind a
	 * queue of at least min_runq (0: any); at most max of them. */
	bool has_only;
	uint32_t only_thread;
	int64_t min_runq;
	size_t max;
	struct top_run top[TOP_RUNS];
	size_t n, nruns;
};

/* The innermost Erlang function of a sample, or NULL. */
static const char *leaf_erlang(const struct trace_sample *s)
{
	uint32_t i = s->nframes;

	while (i-- > 0) {
		if (agg__frame_kind(s->agg, s->frames[i]) == FRAME_ERLANG)
			return agg__frame_name(s->agg, s->frames[i]);
	}
	return NULL;
}

static void main_function(const struct runs *rs, struct top_run *t)
{
	const char *name[TOP_FUNCS];
	size_t count[TOP_FUNCS], n = 0, i, j, best = 0;

	for (i = t->r.first; i <= t->r.last; i++) {
		const char *fn = leaf_erlang(&rs->in->samples[i]);

		if (!fn)
			continue;
		for (j = 0; j < n && strcmp(name[j], fn); j++)
			;
		if (j == n && n == TOP_FUNCS)
			continue;
		if (j == n) {
			name[n] = fn;
			count[n++] = 0;
		}
		count[j]++;
	}
	t->fn = NULL;
	for (j = 0; j < n; j++) {
		if (count[j] > best) {
			best = count[j];
			t->fn = name[j];
		}
	}
	t->pct = (unsigned)(100 * best / (t->r.last - t->r.first + 1));
}

/* The most processes waiting in the run queue of r's scheduler during r, or -1 (no reading):
 * the readings within the run, widened by half their interval (a run shorter than it may fall
 * between two). */
static int64_t runq_max(const struct runs *rs, const struct trace_run *r)
{
	int64_t half = TRIG_RUNQ_EVERY_MS * 1000000ll / 2;
	int64_t from = r->start_ns - rs->offset_ns - half, to = r->end_ns - rs->offset_ns + half;

	if (!rs->rq || from < 0)
		return -1;
	return runq__max_in(rs->rq, r->thread, (uint64_t)from, (uint64_t)to);
}

static int on_run(const struct trace_run *r, void *ctx)
{
	struct runs *rs = ctx;
	int64_t len = r->end_ns - r->start_ns;
	size_t i;

	rs->nruns++;
	if (!r->process || (rs->has_only && r->thread != rs->only_thread))
		return 0;
	for (i = rs->n; i > 0 && rs->top[i - 1].r.end_ns - rs->top[i - 1].r.start_ns < len; i--)
		;
	if (i >= rs->max || (rs->min_runq && runq_max(rs, r) < rs->min_runq))
		return 0;
	memmove(&rs->top[i + 1], &rs->top[i],
		((rs->n < rs->max ? rs->n : rs->max - 1) - i) * sizeof(rs->top[0]));
	rs->top[i] = (struct top_run){.r = *r};
	rs->n += rs->n < rs->max;
	return 0;
}

static void runq_note(const struct runs *rs, const struct top_run *t, FILE *f)
{
	int64_t n = runq_max(rs, &t->r);

	if (n >= 0)
		fprintf(f, ", while its run queue held up to %lld process%s", (long long)n,
			n == 1 ? "" : "es");
}

static void print_runs(struct runs *rs, FILE *f)
{
	char when[48];
	double ms;
	size_t i;

	for (i = 0; i < rs->n; i++) {
		struct top_run *t = &rs->top[i];

		main_function(rs, t);
		flight__stamp(t->r.start_ns, when, sizeof(when), false);
		ms = (double)(t->r.end_ns - t->r.start_ns) / 1e6;
		fprintf(f, "  %s ran %s for %.*f ms from %s", rs->in->threads[t->r.thread].name,
			t->r.group, ms < 9.95 ? 1 : 0, ms, when + 11);
		if (t->fn)
			fprintf(f, ", in %s (%u%% of its samples)", t->fn, t->pct);
		runq_note(rs, t, f);
		if (t->r.gc_samples)
			fprintf(f, ", %zu sample%s in garbage collection", t->r.gc_samples,
				t->r.gc_samples == 1 ? "" : "s");
		if (t->r.preempted_ns >= 1000000)
			fprintf(f, " (%.0f ms of it its thread was preempted by the OS)",
				(double)t->r.preempted_ns / 1e6);
		if (t->r.unsampled_ns >= 1000000)
			fprintf(f,
				" (%.0f ms of it without a sample while its thread stayed on its "
				"CPU: the sampling timer fired late)",
				(double)t->r.unsampled_ns / 1e6);
		if (t->r.start_unc_ns >= 1000000 || t->r.end_unc_ns >= 1000000)
			fprintf(f,
				" (start uncertain by %.0f ms, end by %.0f ms: the OS preempted "
				"its thread there)",
				(double)t->r.start_unc_ns / 1e6, (double)t->r.end_unc_ns / 1e6);
		fputc('\n', f);
	}
}

/* A runq trigger's: which processes ran on its scheduler while the queue was long, whatever
 * ran longer elsewhere in the window. */
static int print_runq_runs(struct trace_input *in, const struct trig_event *ev,
			   const struct runs *all, FILE *f)
{
	struct runs rs = {.in = in,
			  .rq = all->rq,
			  .offset_ns = all->offset_ns,
			  .has_only = true,
			  .only_thread = (uint32_t)ev->sched,
			  .min_runq = all->rq->limit,
			  .max = TOP_RUNQ_RUNS};
	int rc;

	if (ev->sched >= in->nthreads)
		return 0;
	if ((rc = report__trace_runs(in, on_run, &rs)))
		return rc;
	fprintf(f, "\nLongest runs on %s while its run queue held %lld or more:\n",
		in->threads[ev->sched].name, (long long)all->rq->limit);
	print_runs(&rs, f);
	if (!rs.n)
		fprintf(f, "  (none sampled in the window)\n");
	return 0;
}

int flight__summary(struct trace_input *in, const struct trig_event *ev, int64_t offset_ns,
		    const char *partial, const struct runq_watch *rq, FILE *f)
{
	struct runs rs = {.in = in, .rq = rq, .offset_ns = offset_ns, .max = TOP_RUNS};
	char a[48], b[48], c[48];
	struct agg *agg = NULL;
	int rc;

	flight__stamp((int64_t)ev->time_ns + offset_ns, a, sizeof(a), false);
	fprintf(f, "extrospect flight recorder dump: BEAM pid %d\n", in->vm_pid);
	fprintf(f, "Trigger: %s at %s: %s\n", trig__name(ev->kind), a, ev->detail);
	if ((rc = report__trace_runs(in, on_run, &rs)))
		return rc;
	if (in->nsamples) {
		int64_t lo = in->samples[0].time_ns, hi = lo;

		for (size_t i = 0; i < in->nsamples; i++) {
			lo = in->samples[i].time_ns < lo ? in->samples[i].time_ns : lo;
			hi = in->samples[i].time_ns > hi ? in->samples[i].time_ns : hi;
		}
		flight__stamp(lo, b, sizeof(b), false);
		flight__stamp(hi, c, sizeof(c), false);
		fprintf(f,
			"Window: %s to %s (%.1f s): %zu samples, %zu runs on %zu scheduler "
			"threads, %.3f ms apart\n",
			b, c + 11, (double)(hi - lo) / 1e9, in->nsamples, rs.nruns, in->nthreads,
			(double)in->period_ns / 1e6);
	}
	if (partial)
		fprintf(f, "Partial: %s\n", partial);
	fprintf(f,
		"\nLongest runs (one process on one scheduler without a break; edges within half a "
		"sampling period of its CPU time):\n");
	print_runs(&rs, f);
	if (!rs.n)
		fprintf(f, "  (no Erlang process was sampled in the window)\n");
	if (ev->kind == TRIG_RUNQ && ev->has_sched && rq && rq->limit > 0 &&
	    (rc = print_runq_runs(in, ev, &rs, f)))
		return rc;
	if ((rc = ring__input_agg(in, &agg)) == 0 && agg__total(agg)) {
		fputc('\n', f);
		report__top_processes(agg, f, 5);
	}
	agg__free(agg);
	fprintf(f, "\nClock: %s\n", in->clock_note ? in->clock_note : "");
	return rc ? rc : report__finish(f);
}
