/* The Chrome trace event format timeline (see trace.h): samples sorted per scheduler thread, cut
 * into runs of one process, each run one "X" event with its sampled functions nested under it as
 * "X" events, the gaps between runs as idle, marks as global instant events. A sample at time t
 * stands for the period before it: a run's edges are put half a period outside its first and
 * last samples, never past the midpoint to a neighbouring sample, so that each edge is within
 * half a period of the truth when the thread ran throughout. Does not own: the samples. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "report.h"
#include "trace.h"

#define TRACE_MAX_DEPTH 256

enum ev_type { EV_RUN = 0, EV_FUNC, EV_IDLE };

struct ev {
	int64_t ts, dur;
	uint32_t thread, depth;
	uint8_t type;
	bool process, gc;
	uint8_t kind;	   /* enum frame_kind of EV_FUNC */
	const char *name;  /* the frame, or the run's group */
	int64_t unc[2];	   /* EV_RUN: trace_run's start_unc_ns, end_unc_ns */
	int64_t unsampled; /* EV_RUN: trace_run's unsampled_ns */
};

struct evbuf {
	struct ev *v;
	size_t n, cap;
	int err;
};

static int cmp_samples(const void *x, const void *y)
{
	const struct trace_sample *a = x, *b = y;

	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	return a->time_ns < b->time_ns ? -1 : a->time_ns > b->time_ns;
}

static int cmp_events(const void *x, const void *y)
{
	const struct ev *a = x, *b = y;

	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->dur != b->dur) /* the enclosing event first */
		return a->dur > b->dur ? -1 : 1;
	return a->depth < b->depth ? -1 : a->depth > b->depth;
}

void report__trace_split(const char *group, char *pid, size_t pidlen, const char **name)
{
	const char *sp;

	pid[0] = '\0';
	*name = group;
	if (group[0] != '<')
		return;
	sp = strchr(group, ' ');
	snprintf(pid, pidlen, "%.*s", sp ? (int)(sp - group) : (int)strlen(group), group);
	*name = sp ? sp + 1 : "";
}

static int cmp_switches(const void *x, const void *y)
{
	const struct trace_switch *a = x, *b = y;

	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	return a->time_ns < b->time_ns ? -1 : a->time_ns > b->time_ns;
}

/* What a thread did between two of its samples, from its switch records. */
struct gap {
	int64_t off_ns;	    /* off the CPU preempted (still runnable) */
	int64_t blocked_ns; /* off the CPU blocked */
	bool blocked;	    /* it went off blocked (its scheduler slept) */
	int64_t blocked_at; /* the first time it did */
	int64_t resumed_at; /* the last time it came back on, 0 none */
	unsigned nswitches; /* switch records of the thread between them */
};

/* Between samples a and b of one thread; *k is a cursor into the sorted switches that only
 * moves forward, as the samples are walked in (thread, time) order. */
static void gap_between(const struct trace_input *in, size_t *k, const struct trace_sample *a,
			const struct trace_sample *b, struct gap *g)
{
	const struct trace_switch *w = in->switches;
	int64_t out_at = 0, blocked_at = 0; /* off the CPU preempted / blocked since, 0 not */

	*g = (struct gap){0};
	while (*k < in->nswitches && (w[*k].thread < a->thread ||
				      (w[*k].thread == a->thread && w[*k].time_ns <= a->time_ns)))
		(*k)++;
	for (; *k < in->nswitches && w[*k].thread == a->thread && w[*k].time_ns < b->time_ns;
	     (*k)++) {
		g->nswitches++;
		if (w[*k].kind == TRACE_SWITCH_IN) {
			g->off_ns += out_at ? w[*k].time_ns - out_at : 0;
			g->blocked_ns += blocked_at ? w[*k].time_ns - blocked_at : 0;
			out_at = blocked_at = 0;
			g->resumed_at = w[*k].time_ns;
			continue;
		}
		out_at = w[*k].kind == TRACE_SWITCH_PREEMPTED ? w[*k].time_ns : 0;
		blocked_at = w[*k].kind == TRACE_SWITCH_BLOCKED ? w[*k].time_ns : 0;
		if (w[*k].kind == TRACE_SWITCH_BLOCKED && !g->blocked) {
			g->blocked = true;
			g->blocked_at = w[*k].time_ns;
		}
	}
}

/* One process: the same pid ("<0.81.0> name": a name read again may differ, when its read failed
 * once), or the same label. */
bool report__trace_same(const char *a, const char *b)
{
	size_t n = strcspn(a, " ");

	if (a[0] != '<' || b[0] != '<')
		return strcmp(a, b) == 0;
	return strncmp(a, b, n) == 0 && (b[n] == ' ' || b[n] == '\0');
}

bool report__trace_late(int64_t d, int64_t gap, uint64_t period_ns, bool have_switches, bool lost,
			bool quiet)
{
	return have_switches && !lost && quiet && d > gap &&
	       d <= (int64_t)period_ns * TRACE_LATE_PERIODS;
}

/* The label most of a run's samples had. */
static const char *run_label(const struct trace_input *in, size_t first, size_t last)
{
	const char *cand[4];
	size_t count[4], n = 0, i, j, best = 0;

	for (i = first; i <= last; i++) {
		if (!in->samples[i].process && in->samples[first].process)
			continue;
		for (j = 0; j < n && strcmp(cand[j], in->samples[i].group); j++)
			;
		if (j == n && n == 4)
			continue;
		if (j == n) {
			cand[n] = in->samples[i].group;
			count[n++] = 0;
		}
		count[j]++;
	}
	for (j = 1; j < n; j++)
		best = count[j] > count[best] ? j : best;
	return cand[best];
}

/* The time between a and b past one period that no sample covers although the switch records
 * say a's thread stayed on its CPU (TRACE_LATE_PERIODS), else 0. */
static int64_t late_timer(const struct trace_input *in, const struct trace_sample *a,
			  const struct trace_sample *b, const struct gap *g, int64_t gap)
{
	int64_t d = b->time_ns - a->time_ns;

	if (!report__trace_late(d, gap, in->period_ns, in->have_switches, in->records_lost,
				!g->nswitches))
		return 0;
	return d - (int64_t)in->period_ns;
}

/* Does b go on with a's run? late_ok: a and b are consecutive samples of the thread (not
 * across samples of its scheduler without a process, which show its timer firing). */
static bool continues(const struct trace_input *in, const struct trace_sample *a,
		      const struct trace_sample *b, const struct gap *g, int64_t gap, bool late_ok)
{
	if (a->process != b->process || !report__trace_same(a->group, b->group))
		return false;
	if (late_ok && late_timer(in, a, b, g, gap))
		return true;
	/* Time blocked counts as a gap (a scheduler that slept, or a wait on a lock while it ran
	 * the process: the samples cannot tell which); time preempted does not. */
	return b->time_ns - a->time_ns - (in->have_switches ? g->off_ns : 0) <= gap;
}

/* The first switch of thread after time t (in->nswitches when none). */
static size_t first_after(const struct trace_input *in, uint32_t thread, int64_t t)
{
	size_t lo = 0, hi = in->nswitches;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct trace_switch *w = &in->switches[mid];

		if (w->thread < thread || (w->thread == thread && w->time_ns <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* When thread, on its CPU at t (a sample), had run `need` more ns on it: time off it preempted
 * is skipped; blocking ends the walk there (*hit set: the run cannot go past it); so does
 * limit. */
static int64_t cpu_forward(const struct trace_input *in, uint32_t thread, int64_t t, int64_t need,
			   int64_t limit, bool *hit)
{
	size_t k = first_after(in, thread, t);
	bool on = true;

	for (; k < in->nswitches && in->switches[k].thread == thread; k++) {
		const struct trace_switch *w = &in->switches[k];

		if (w->time_ns >= limit)
			break;
		if (on && w->time_ns - t >= need)
			return t + need;
		if (on)
			need -= w->time_ns - t;
		if (w->kind == TRACE_SWITCH_BLOCKED) {
			*hit = true;
			return w->time_ns;
		}
		on = w->kind == TRACE_SWITCH_IN;
		t = w->time_ns;
	}
	if (!on)
		return t;
	return t + need < limit ? t + need : limit;
}

/* When thread, on its CPU at t, had run `need` ns on it before t; a thread coming back from
 * blocking ends the walk there (*hit set), as does limit. */
static int64_t cpu_backward(const struct trace_input *in, uint32_t thread, int64_t t, int64_t need,
			    int64_t limit, bool *hit)
{
	size_t k = first_after(in, thread, t - 1);
	bool on = true;

	while (k-- > 0 && in->switches[k].thread == thread) {
		const struct trace_switch *w = &in->switches[k];

		if (w->time_ns <= limit)
			break;
		if (on && t - w->time_ns >= need)
			return t - need;
		if (on)
			need -= t - w->time_ns;
		if (w->kind == TRACE_SWITCH_IN && k > 0 && in->switches[k - 1].thread == thread &&
		    in->switches[k - 1].kind == TRACE_SWITCH_BLOCKED) {
			*hit = true;
			return w->time_ns;
		}
		on = w->kind != TRACE_SWITCH_IN;
		t = w->time_ns;
	}
	if (!on)
		return t;
	return t - need > limit ? t - need : limit;
}

/* Time thread spent off its CPU preempted (still runnable) between from and to: the process it
 * ran may have stopped anywhere in it, which no sample tells. */
static int64_t preempted_between(const struct trace_input *in, uint32_t thread, int64_t from,
				 int64_t to)
{
	size_t k = first_after(in, thread, from);
	int64_t out_at = 0, sum = 0;

	for (; k < in->nswitches && in->switches[k].thread == thread; k++) {
		const struct trace_switch *w = &in->switches[k];

		if (w->time_ns >= to)
			break;
		if (w->kind == TRACE_SWITCH_IN && out_at)
			sum += w->time_ns - out_at;
		out_at = w->kind == TRACE_SWITCH_PREEMPTED ? w->time_ns : 0;
	}
	return sum;
}

/* CPU time of a's thread between samples a and b. */
static int64_t cpu_between(const struct trace_input *in, const struct trace_sample *a,
			   const struct trace_sample *b, const struct gap *g)
{
	return b->time_ns - a->time_ns - (in->have_switches ? g->off_ns + g->blocked_ns : 0);
}

/* A run's end after its last sample a. With switch records: where its thread blocked, when it
 * did with less than a period on its CPU since a (a sample would have come in between: the
 * process ran until its scheduler went to sleep, give or take the scheduler's own few steps).
 * Else half a period of CPU time on, or halfway to the thread's next sample b. */
static int64_t end_edge(const struct trace_input *in, const struct trace_sample *a,
			const struct trace_sample *b, const struct gap *g, int64_t half,
			int64_t *unc)
{
	int64_t cpu = b ? cpu_between(in, a, b, g) : INT64_MAX,
		need = cpu < 2 * half ? cpu / 2 : half;
	int64_t limit = b ? b->time_ns : INT64_MAX, e;
	bool hit = false;

	*unc = 0;
	if (!in->have_switches)
		return a->time_ns + need;
	e = cpu_forward(in, a->thread, a->time_ns, 2 * half, limit, &hit);
	if (hit) { /* preempted before it blocked: the process may have stopped before that */
		*unc = preempted_between(in, a->thread, a->time_ns, e);
		return e;
	}
	/* Time the thread was preempted where the edge may be: on either side of it. */
	e = cpu_forward(in, a->thread, a->time_ns, need, limit, &hit);
	*unc = b && cpu < 2 * half ? g->off_ns : e - a->time_ns - need;
	*unc = *unc > 0 ? *unc : 0;
	return e;
}

/* A run's start before its first sample b (a: the thread's sample before, or NULL): where its
 * thread woke, when less than a period of CPU time before b; else as end_edge. */
static int64_t start_edge(const struct trace_input *in, const struct trace_sample *a,
			  const struct trace_sample *b, const struct gap *g, int64_t half,
			  int64_t *unc)
{
	int64_t cpu = a ? cpu_between(in, a, b, g) : INT64_MAX,
		need = cpu < 2 * half ? cpu / 2 : half;
	int64_t limit = a ? a->time_ns : INT64_MIN, st;
	bool hit = false;

	*unc = 0;
	if (!in->have_switches)
		return b->time_ns - need;
	st = cpu_backward(in, b->thread, b->time_ns, 2 * half, limit, &hit);
	if (hit) { /* preempted after it woke: the process may have started after that */
		*unc = preempted_between(in, b->thread, st, b->time_ns);
		return st;
	}
	if (a && cpu < 2 * half)
		return end_edge(in, a, b, g, half, unc); /* the same edge */
	st = cpu_backward(in, b->thread, b->time_ns, need, limit, &hit);
	*unc = b->time_ns - st - need > 0 ? b->time_ns - st - need : 0;
	return st;
}

/* Samples of the scheduler without a process (its own loop, between two turns of one process)
 * do not end a process's run when the same process is sampled next within the gap: the index of
 * that sample (the cursor *k and *g moved past the idle ones), else 0 (nothing moved). */
static size_t across_idle(const struct trace_input *in, size_t *k, size_t j, int64_t gapns,
			  struct gap *g)
{
	const struct trace_sample *s = in->samples;
	size_t m = j + 1, k2 = *k;

	while (m < in->nsamples && s[m].thread == s[j].thread && !s[m].process)
		m++;
	if (m == j + 1 || m >= in->nsamples || s[m].thread != s[j].thread)
		return 0;
	gap_between(in, &k2, &s[j], &s[m], g);
	if (!continues(in, &s[j], &s[m], g, gapns, false))
		return 0;
	*k = k2;
	return m;
}

int report__trace_runs(struct trace_input *in, int (*fn)(const struct trace_run *r, void *ctx),
		       void *ctx)
{
	int64_t half = (int64_t)in->period_ns / 2;
	int64_t gapns = (int64_t)((double)in->period_ns * TRACE_GAP_PERIODS);
	struct trace_sample *s = in->samples;
	struct gap g = {0}, before = {0};
	size_t i = 0, j, k = 0;
	bool next, prev = false;
	int rc;

	qsort(s, in->nsamples, sizeof(*s), cmp_samples);
	qsort(in->switches, in->nswitches, sizeof(*in->switches), cmp_switches);
	while (i < in->nsamples) {
		struct trace_run r = {.thread = s[i].thread,
				      .group = s[i].group,
				      .process = s[i].process,
				      .first = i};

		r.start_ns =
		    start_edge(in, prev ? &s[i - 1] : NULL, &s[i], &before, half, &r.start_unc_ns);
		r.gap_before = !prev				    ? TRACE_GAP_UNKNOWN
			       : before.blocked			    ? TRACE_GAP_BLOCKED
			       : in->have_switches && before.off_ns ? TRACE_GAP_PREEMPTED
								    : TRACE_GAP_UNKNOWN;
		for (j = i;; j++) {
			size_t m;

			r.gc_samples += s[j].gc;
			next = j + 1 < in->nsamples && s[j + 1].thread == s[j].thread;
			if (!next)
				break;
			if (r.process && (m = across_idle(in, &k, j, gapns, &g))) {
				r.preempted_ns += g.off_ns;
				j = m - 1;
				continue;
			}
			gap_between(in, &k, &s[j], &s[j + 1], &g);
			if (!continues(in, &s[j], &s[j + 1], &g, gapns, true))
				break;
			r.preempted_ns += g.off_ns;
			r.unsampled_ns += late_timer(in, &s[j], &s[j + 1], &g, gapns);
		}
		r.last = j;
		r.group = run_label(in, i, j);
		r.end_ns = end_edge(in, &s[j], next ? &s[j + 1] : NULL, &g, half, &r.end_unc_ns);
		before = g;
		prev = next;
		if ((rc = fn(&r, ctx)))
			return rc;
		i = j + 1;
	}
	return 0;
}

static void push(struct evbuf *b, const struct ev *e)
{
	struct ev *v;

	if (b->err || e->dur <= 0)
		return;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;

		v = realloc(b->v, cap * sizeof(*v));
		if (!v) {
			b->err = -ENOMEM;
			return;
		}
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = *e;
}

struct open_frame {
	const char *name;
	uint8_t kind;
	int64_t start;
};

struct walk {
	struct trace_input *in;
	struct evbuf evs;
	struct open_frame open[TRACE_MAX_DEPTH];
	uint32_t nopen;
	int64_t *last_end; /* per thread: where the last run ended, 0 none */
};

static void close_frames(struct walk *w, uint32_t thread, uint32_t keep, int64_t at)
{
	while (w->nopen > keep) {
		struct open_frame *o = &w->open[--w->nopen];
		struct ev e = {.ts = o->start,
			       .dur = at - o->start,
			       .thread = thread,
			       .depth = w->nopen + 1,
			       .type = EV_FUNC,
			       .process = true,
			       .gc = classify__is_gc_name(o->name),
			       .kind = o->kind,
			       .name = o->name};

		push(&w->evs, &e);
	}
}

/* The functions of one sample, from `at` on: the frames it shares with the open ones go on. */
static void sample_frames(struct walk *w, const struct trace_sample *s, int64_t at)
{
	uint32_t n = s->nframes < TRACE_MAX_DEPTH ? s->nframes : TRACE_MAX_DEPTH, k = 0;

	while (k < n && k < w->nopen &&
	       strcmp(w->open[k].name, agg__frame_name(s->agg, s->frames[k])) == 0)
		k++;
	close_frames(w, s->thread, k, at);
	for (; k < n; k++)
		w->open[w->nopen++] =
		    (struct open_frame){.name = agg__frame_name(s->agg, s->frames[k]),
					.kind = (uint8_t)agg__frame_kind(s->agg, s->frames[k]),
					.start = at};
}

static int on_run(const struct trace_run *r, void *ctx)
{
	struct walk *w = ctx;
	const struct trace_sample *s = w->in->samples;
	int64_t prev = w->last_end[r->thread];
	struct ev e = {.ts = r->start_ns,
		       .dur = r->end_ns - r->start_ns,
		       .thread = r->thread,
		       .type = EV_RUN,
		       .process = r->process,
		       .gc = r->gc_samples == r->last - r->first + 1,
		       .name = r->group,
		       .unc = {r->start_unc_ns, r->end_unc_ns},
		       .unsampled = r->unsampled_ns};
	size_t j;

	if (prev && r->start_ns > prev) {
		struct ev idle = {.ts = prev,
				  .dur = r->start_ns - prev,
				  .thread = r->thread,
				  .type = EV_IDLE,
				  .kind = (uint8_t)r->gap_before};

		push(&w->evs, &idle);
	}
	w->last_end[r->thread] = r->end_ns;
	push(&w->evs, &e);
	w->nopen = 0;
	for (j = r->first; j <= r->last; j++)
		if (s[j].process || !r->process)
			sample_frames(w, &s[j],
				      j == r->first ? r->start_ns
						    : s[j - 1].time_ns +
							  (s[j].time_ns - s[j - 1].time_ns) / 2);
	close_frames(w, r->thread, 0, r->end_ns);
	return w->evs.err;
}

/* A JSON string: escaped, and bytes that are not well-formed UTF-8 as U+FFFD. */
static void put_string(FILE *f, const char *p)
{
	fputc('"', f);
	while (*p) {
		size_t n = report__utf8_len(p);
		unsigned char c = (unsigned char)*p;

		if (!n) {
			fputs("\\ufffd", f);
			p++;
			continue;
		}
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fwrite(p, 1, n, f);
		p += n;
	}
	fputc('"', f);
}

/* Microseconds with three decimals, exact (a double would round ns away). */
static void put_us(FILE *f, const char *key, int64_t ns)
{
	fprintf(f, ",\"%s\":%s%" PRId64 ".%03" PRId64, key, ns < 0 ? "-" : "",
		(ns < 0 ? -ns : ns) / 1000, (ns < 0 ? -ns : ns) % 1000);
}

static const char *category(const struct ev *e)
{
	if (e->type == EV_IDLE || (e->type == EV_RUN && !e->process))
		return "idle";
	if (e->gc)
		return "gc";
	if (e->type == EV_RUN)
		return "process";
	return e->kind == FRAME_ERLANG ? "erlang" : e->kind == FRAME_LABEL ? "label" : "native";
}

static void put_event(FILE *f, const struct trace_input *in, const struct ev *e)
{
	const char *name = e->name;
	char pid[64];

	if (e->type == EV_RUN && e->process) {
		report__trace_split(e->name, pid, sizeof(pid), &name);
		if (!name[0])
			name = pid;
	} else if (e->type == EV_IDLE) {
		name = e->kind == TRACE_GAP_BLOCKED ? "[scheduler asleep: its thread blocked]"
		       : e->kind == TRACE_GAP_PREEMPTED
			   ? "[no samples: idle, or its thread preempted by the OS]"
			   : "[no samples: scheduler idle]";
	}
	fputs(",\n{\"ph\":\"X\",\"name\":", f);
	put_string(f, name);
	fprintf(f, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d", category(e), in->vm_pid,
		(int)in->threads[e->thread].tid);
	put_us(f, "ts", e->ts);
	put_us(f, "dur", e->dur);
	if (e->type == EV_RUN && e->process) {
		fputs(",\"args\":{\"pid\":", f);
		put_string(f, pid);
		fputs(",\"name\":", f);
		put_string(f, name);
		if (e->unc[0] || e->unc[1])
			fprintf(f, ",\"start_uncertain_ms\":%.3f,\"end_uncertain_ms\":%.3f",
				(double)e->unc[0] / 1e6, (double)e->unc[1] / 1e6);
		if (e->unsampled)
			fprintf(f, ",\"unsampled_ms\":%.3f", (double)e->unsampled / 1e6);
		fputc('}', f);
	} else if (e->gc) {
		fputs(",\"args\":{\"collection\":true}", f);
	}
	fputc('}', f);
}

static void put_metadata(FILE *f, const struct trace_input *in)
{
	size_t i;

	fprintf(f,
		"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":"
		"\"BEAM pid %d\"}}",
		in->vm_pid, in->vm_pid);
	for (i = 0; i < in->nthreads; i++) {
		fprintf(f,
			",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{"
			"\"name\":",
			in->vm_pid, (int)in->threads[i].tid);
		put_string(f, in->threads[i].name);
		fprintf(f,
			"}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%d,"
			"\"args\":{\"sort_index\":%zu}}",
			in->vm_pid, (int)in->threads[i].tid, i);
	}
	for (i = 0; i < in->nmarks; i++) {
		fputs(",\n{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"trigger\",\"name\":", f);
		put_string(f, in->marks[i].name);
		fprintf(f, ",\"pid\":%d,\"tid\":0", in->vm_pid);
		put_us(f, "ts", in->marks[i].time_ns);
		fputs(",\"args\":{\"detail\":", f);
		put_string(f, in->marks[i].detail ? in->marks[i].detail : "");
		fputs("}}", f);
	}
}

int report__trace(struct trace_input *in, FILE *f)
{
	struct walk w = {.in = in};
	size_t i;
	int rc;

	w.last_end = calloc(in->nthreads ? in->nthreads : 1, sizeof(*w.last_end));
	if (!w.last_end)
		return -ENOMEM;
	rc = report__trace_runs(in, on_run, &w);
	if (rc)
		goto cleanup;
	qsort(w.evs.v, w.evs.n, sizeof(*w.evs.v), cmp_events);
	fputs("{\"traceEvents\":[\n", f);
	put_metadata(f, in);
	for (i = 0; i < w.evs.n; i++)
		put_event(f, in, &w.evs.v[i]);
	fprintf(f,
		"\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"generator\":\"extrospect\","
		"\"sampling_period_ns\":%" PRIu64 ",\"clock\":",
		in->period_ns);
	put_string(f, in->clock_note ? in->clock_note : "");
	fputs("}}\n", f);
	rc = report__finish(f);
cleanup:
	free(w.evs.v);
	free(w.last_end);
	return rc;
}
