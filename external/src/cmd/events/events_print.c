/* events: the report, as text or JSON (format in docs/guide.md, "How long do messages wait?"). Per
 * kind: the count and rate VM-wide, the distribution where the kind has a duration (p50, p90, p99,
 * p99.9, max, in microseconds), then the processes with most events of that kind, top first. */
#include <stdlib.h>
#include <string.h>

#include "events_print.h"
#include "report/json.h"

static const double quant[] = {0.50, 0.90, 0.99, 0.999};
static const char *const qkey[] = {"p50_us", "p90_us", "p99_us", "p999_us"};
static const char *const exit_names[XP_EXIT_CLASS_COUNT] = {"normal", "shutdown", "killed",
							    "noproc", "error"};

enum pkind { PK_SPAWN = 0, PK_EXIT, PK_SEND, PK_GC, PK_SCHED, PK_COUNT };
static const char *const pk_name[PK_COUNT] = {"spawn", "exit", "send", "gc", "sched"};

static uint64_t pcount(const struct evproc *p, enum pkind k)
{
	switch (k) {
	case PK_SPAWN:
		return p->spawns;
	case PK_EXIT:
		return p->child_exits + (p->parent ? 0 : p->exits);
	case PK_SEND:
		return p->sends;
	case PK_GC:
		return p->d[ED_GC].n;
	default:
		return p->d[ED_SCHED].n;
	}
}

static const struct dist *pdist(const struct evproc *p, enum pkind k)
{
	return k == PK_SEND    ? &p->d[ED_SEND]
	       : k == PK_GC    ? &p->d[ED_GC]
	       : k == PK_SCHED ? &p->d[ED_SCHED]
			       : NULL;
}

struct sort_ctx {
	const struct evproc *p;
	enum pkind k;
};

static int by_count(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	uint64_t x = pcount(&c->p[*(const size_t *)a], c->k);
	uint64_t y = pcount(&c->p[*(const size_t *)b], c->k);

	return x > y ? -1 : x < y;
}

static bool wanted(const struct evproc *p, const struct events_out *o)
{
	return !o->only || strcmp(p->pid_text, o->only) == 0 || strcmp(p->label, o->only) == 0;
}

/* Indexes of the processes with events of kind k, most first, at most o->top; n set. */
static size_t *top_of(const struct evstats *s, enum pkind k, const struct events_out *o, size_t *n)
{
	struct sort_ctx c = {s->p, k};
	size_t *ix = malloc((s->n ? s->n : 1) * sizeof(*ix)), i, m = 0;

	*n = 0;
	if (!ix)
		return NULL;
	for (i = 0; i < s->n; i++) {
		if (pcount(&s->p[i], k) && wanted(&s->p[i], o))
			ix[m++] = i;
	}
	qsort_r(ix, m, sizeof(*ix), by_count, &c);
	*n = m < o->top ? m : o->top;
	return ix;
}

static uint64_t vm_count(const struct evstats *s, enum pkind k)
{
	switch (k) {
	case PK_SPAWN:
		return s->kinds[XP_EV_SPAWN];
	case PK_EXIT:
		return s->kinds[XP_EV_EXIT];
	case PK_SEND:
		return s->kinds[XP_EV_SEND];
	case PK_GC:
		return s->d[ED_GC].n;
	default:
		return s->d[ED_SCHED].n;
	}
}

static const struct dist *vm_dist(const struct evstats *s, enum pkind k)
{
	return k == PK_SEND    ? &s->d[ED_SEND]
	       : k == PK_GC    ? &s->d[ED_GC]
	       : k == PK_SCHED ? &s->d[ED_SCHED]
			       : NULL;
}

/* ---- JSON ---- */

static void json_dist(struct json *j, const struct dist *d)
{
	unsigned i;

	for (i = 0; i < 4; i++) {
		json__key(j, qkey[i]);
		if (d->n)
			json__double(j, (double)dist__quantile(d, quant[i]) / 1e3, 3);
		else
			json__null(j);
	}
	json__key(j, "max_us");
	if (d->n)
		json__double(j, (double)d->max_ns / 1e3, 3);
	else
		json__null(j);
}

/* "key": {"count": n, percentiles}. */
static void json_sub(struct json *j, const char *key, const struct dist *d)
{
	json__key(j, key);
	json__object(j);
	json__kv_int(j, "count", (int64_t)d->n);
	json_dist(j, d);
	json__end_object(j);
}

static void json_kind_extra(struct json *j, const struct evstats *s, enum pkind k)
{
	unsigned i;

	if (k == PK_EXIT) {
		json__key(j, "classes");
		json__object(j);
		for (i = 0; i < XP_EXIT_CLASS_COUNT; i++)
			json__kv_int(j, exit_names[i], (int64_t)s->exit_class[i]);
		json__end_object(j);
	} else if (k == PK_SEND) {
		json__kv_int(j, "timed", (int64_t)s->d[ED_SEND].n);
		json__kv_int(j, "to_running", (int64_t)s->sends_to_running);
		json__kv_int(j, "untimed", (int64_t)s->untimed_sends);
	} else if (k == PK_GC) {
		json_sub(j, "minor", &s->d[ED_GC_MINOR]);
		json_sub(j, "major", &s->d[ED_GC_MAJOR]);
		json__kv_int(j, "unpaired", (int64_t)s->gc_unpaired);
	} else if (k == PK_SCHED) {
		json__kv_int(j, "migrations", (int64_t)s->migrations);
		json__kv_bool(j, "waits_measured", s->runq);
	}
}

static void json_proc(struct json *j, const struct evproc *p, enum pkind k, double secs)
{
	const struct dist *d = pdist(p, k);

	json__object(j);
	json__kv_string(j, "pid", p->pid_text);
	json__kv_string(j, "name", p->label[0] ? p->label : NULL);
	json__kv_int(j, "count", (int64_t)pcount(p, k));
	json__key(j, "per_second");
	json__double(j, secs > 0 ? (double)pcount(p, k) / secs : 0, 3);
	if (d)
		json_dist(j, d);
	if (k == PK_EXIT) {
		json__kv_int(j, "children", (int64_t)p->child_exits);
		json__kv_string(j, "class",
				p->exits && !p->parent ? exit_names[p->exit_class] : NULL);
	}
	if (k == PK_SEND)
		json__kv_int(j, "timed", (int64_t)p->d[ED_SEND].n);
	if (k == PK_GC) {
		json_sub(j, "minor", &p->d[ED_GC_MINOR]);
		json_sub(j, "major", &p->d[ED_GC_MAJOR]);
	}
	if (k == PK_SCHED)
		json__kv_int(j, "migrations", (int64_t)p->migrations);
	json__end_object(j);
}

static const char *const slow_name[SLOW_KINDS] = {"gc", "sched", "send"};

/* A pid's text and name as the names pass left them ("" when the process is not in s). */
static const struct evproc *proc_of(const struct evstats *s, uint64_t pid)
{
	return evstats__find((struct evstats *)s, pid);
}

static const char *const when_name[] = {"during", "before", "after"};

/* The stack of e's process (events_stacks.h): false when none is kept near it. */
static bool slow_stack(const struct events_out *o, const struct evproc *p, const struct slow_ev *e,
		       struct evs_hit *h)
{
	return o->stacks && p && p->pid_text[0] &&
	       evstacks__find(o->stacks, p->pid_text, e->ts - e->ns, e->ts, h);
}

static void json_stack(struct json *j, const struct events_out *o, const struct evproc *p,
		       const struct slow_ev *e)
{
	struct evs_hit h;

	json__key(j, "stack");
	if (!slow_stack(o, p, e, &h)) {
		json__null(j);
		return;
	}
	json__object(j);
	json__kv_string(j, "sampled", when_name[h.when]);
	json__key(j, "gap_us");
	json__double(j, (double)h.gap_ns / 1e3, 1);
	json__kv_int(j, "samples_during", h.samples_during);
	json__kv_bool(j, "in_gc", h.gc);
	json__key(j, "frames"); /* innermost first */
	json__array(j);
	for (uint32_t i = 0; i < h.n; i++)
		json__string(j, h.frames[i]);
	json__end_array(j);
	json__end_object(j);
}

static void json_slowest(struct json *j, const struct evstats *s, const struct events_out *o)
{
	const struct evproc *p, *q;
	unsigned k, i;

	json__key(j, "slowest");
	json__object(j);
	for (k = 0; k < SLOW_KINDS; k++) {
		json__key(j, slow_name[k]);
		json__array(j);
		for (i = 0; i < s->nslow[k]; i++) {
			const struct slow_ev *e = &s->slow[k][i];

			p = proc_of(s, e->pid);
			json__object(j);
			json__kv_string(j, "pid", p ? p->pid_text : NULL);
			json__kv_string(j, "name", p && p->label[0] ? p->label : NULL);
			json__key(j, "us");
			json__double(j, (double)e->ns / 1e3, 3);
			json__key(j, "end_s"); /* seconds into the window */
			json__double(j, (double)(e->ts - s->t0) / 1e9, 3);
			if (k == SLOW_GC)
				json__kv_bool(j, "major", e->major);
			if (k == SLOW_SEND) {
				q = proc_of(s, e->other);
				json__kv_string(j, "sender", q ? q->pid_text : NULL);
			}
			json_stack(j, o, p, e);
			json__end_object(j);
		}
		json__end_array(j);
	}
	json__end_object(j);
}

void events__print_json(const struct evstats *s, const struct events_out *o, FILE *f)
{
	uint64_t scale = s->sample_n > 1 ? s->sample_n : 1;
	struct json j;
	size_t *ix, n, i;
	unsigned k;

	json__init(&j, f);
	json__object(&j);
	json__kv_string(&j, "otp", o->otp);
	json__kv_string(&j, "mechanism", o->mechanism);
	json__kv_int(&j, "sample_n", (int64_t)scale);
	json__key(&j, "seconds");
	json__double(&j, o->seconds, 3);
	json__key(&j, "window_ns"); /* CLOCK_MONOTONIC, the records' clock */
	json__object(&j);
	json__kv_int(&j, "start", (int64_t)s->t0);
	json__kv_int(&j, "end", (int64_t)s->t1);
	json__end_object(&j);
	json__key(&j, "records");
	json__object(&j);
	json__kv_int(&j, "read", (int64_t)o->read);
	json__kv_int(&j, "lost_overwritten", (int64_t)o->lapped);
	json__kv_int(&j, "lost_torn", (int64_t)o->torn);
	json__kv_int(&j, "out_of_window", (int64_t)s->out_of_window);
	json__end_object(&j);
	json__key(&j, "agent_rings");
	json__object(&j);
	json__kv_int(&j, "rings", (int64_t)o->nrings);
	json__kv_int(&j, "bytes", (int64_t)o->rings_bytes);
	json__kv_addr(&j, "address", o->rings_addr);
	json__end_object(&j);
	for (k = 0; k < PK_COUNT; k++) {
		const struct dist *d = vm_dist(s, (enum pkind)k);

		json__key(&j, pk_name[k]);
		json__object(&j);
		json__kv_int(&j, "count", (int64_t)(vm_count(s, (enum pkind)k) * scale));
		json__key(&j, "per_second");
		json__double(
		    &j,
		    o->seconds > 0 ? (double)(vm_count(s, (enum pkind)k) * scale) / o->seconds : 0,
		    3);
		if (d)
			json_dist(&j, d);
		json_kind_extra(&j, s, (enum pkind)k);
		json__key(&j, "processes");
		json__array(&j);
		ix = top_of(s, (enum pkind)k, o, &n);
		for (i = 0; ix && i < n; i++)
			json_proc(&j, &s->p[ix[i]], (enum pkind)k, o->seconds);
		free(ix);
		json__end_array(&j);
		json__end_object(&j);
	}
	if (s->slowest)
		json_slowest(&j, s, o);
	json__end_object(&j);
	fputc('\n', f);
}

/* ---- text ---- */

void events__us_text(uint64_t ns, char *buf, size_t len)
{
	snprintf(buf, len, ns < 9950 ? "%.1f" : "%.0f", (double)ns / 1e3);
}

static void text_us(FILE *f, uint64_t ns)
{
	char t[32];

	events__us_text(ns, t, sizeof(t));
	fprintf(f, " %9s", t);
}

static void text_dist(FILE *f, const struct dist *d)
{
	unsigned i;

	if (!d->n) {
		fprintf(f, " %9s %9s %9s %9s %9s", "-", "-", "-", "-", "-");
		return;
	}
	for (i = 0; i < 4; i++)
		text_us(f, dist__quantile(d, quant[i]));
	text_us(f, d->max_ns);
}

static void text_kind_head(FILE *f, const struct evstats *s, enum pkind k, double secs,
			   uint64_t scale)
{
	static const char *const what[PK_COUNT] = {
	    "processes spawned",
	    "processes exited",
	    "messages sent; latency: from the send to the receiver's next run",
	    "collections; pause",
	    "run-queue waits; from runnable to running",
	};
	uint64_t c = vm_count(s, k) * scale;
	const struct dist *d = vm_dist(s, k);
	unsigned i;

	fprintf(f, "\n%-6s %10llu  %10.1f/s  %s\n", pk_name[k], (unsigned long long)c,
		secs > 0 ? (double)c / secs : 0, what[k]);
	if (k == PK_EXIT) {
		fprintf(f, "       ");
		for (i = 0; i < XP_EXIT_CLASS_COUNT; i++)
			fprintf(f, " %s %llu", exit_names[i], (unsigned long long)s->exit_class[i]);
		fputc('\n', f);
	}
	if (k == PK_SEND)
		fprintf(f, "        %llu timed, %llu to a running receiver, %llu untimed\n",
			(unsigned long long)s->d[ED_SEND].n,
			(unsigned long long)s->sends_to_running,
			(unsigned long long)s->untimed_sends);
	if (k == PK_GC)
		fprintf(f, "        %llu minor (p50 %.1f us), %llu major (p50 %.1f us)\n",
			(unsigned long long)s->d[ED_GC_MINOR].n,
			(double)dist__quantile(&s->d[ED_GC_MINOR], 0.5) / 1e3,
			(unsigned long long)s->d[ED_GC_MAJOR].n,
			(double)dist__quantile(&s->d[ED_GC_MAJOR], 0.5) / 1e3);
	if (k == PK_SCHED)
		fprintf(f, "        %llu migrations between schedulers%s\n",
			(unsigned long long)s->migrations,
			s->runq ? ""
				: "; waits not measured: the agent's Process.state offset is "
				  "not verified, so a schedule-out does not say runnable or "
				  "waiting");
	if (d) {
		fprintf(f, "        us:    %9s %9s %9s %9s %9s\n        VM-wide", "p50", "p90",
			"p99", "p99.9", "max");
		text_dist(f, d);
		fputc('\n', f);
	}
}

/* Under a slowest line: its process's stack, innermost first (at most 8 frames). */
static void text_stack(FILE *f, const struct events_out *o, const struct evproc *p,
		       const struct slow_ev *e)
{
	struct evs_hit h;
	uint32_t i;

	if (!o->stacks)
		return;
	if (!slow_stack(o, p, e, &h)) {
		fprintf(f, "        (no sample of it within 10 ms)\n");
		return;
	}
	if (h.when == EVS_DURING)
		fprintf(f, "        sampled during it (%u sample%s)%s:\n", h.samples_during,
			h.samples_during == 1 ? "" : "s", h.gc ? ", in the collection" : "");
	else
		fprintf(f, "        sampled %.1f ms %s it:\n", (double)h.gap_ns / 1e6,
			when_name[h.when]);
	for (i = 0; i < h.n && i < 8; i++)
		fprintf(f, "          %s\n", h.frames[i]);
	if (h.n > 8)
		fprintf(f, "          ... %u more\n", h.n - 8);
}

static void text_slowest(FILE *f, const struct evstats *s, const struct events_out *o)
{
	static const char *const what[SLOW_KINDS] = {"collections (pause)", "run-queue waits",
						     "message waits (send to the receiver's run)"};
	const struct evproc *p, *q;
	unsigned k, i;

	for (k = 0; k < SLOW_KINDS; k++) {
		fprintf(f, "\nslowest %s%s\n", what[k],
			o->stacks ? "" : "; no stack (no sampler: see the warning above)");
		for (i = 0; i < s->nslow[k]; i++) {
			const struct slow_ev *e = &s->slow[k][i];

			p = proc_of(s, e->pid);
			fprintf(f, "  %10.1f us  at %7.3f s  %-14s %s", (double)e->ns / 1e3,
				(double)(e->ts - s->t0) / 1e9, p ? p->pid_text : "?",
				p && p->label[0] ? p->label : "-");
			if (k == SLOW_GC)
				fprintf(f, " (%s)", e->major ? "major" : "minor");
			if (k == SLOW_SEND) {
				q = proc_of(s, e->other);
				fprintf(f, " (from %s)", q ? q->pid_text : "?");
			}
			fputc('\n', f);
			text_stack(f, o, p, e);
		}
	}
}

void events__print_text(const struct evstats *s, const struct events_out *o, FILE *f)
{
	uint64_t scale = s->sample_n > 1 ? s->sample_n : 1;
	size_t *ix, n, i;
	unsigned k;

	fprintf(f, "events: %.2f s, %s, ", o->seconds, o->mechanism);
	if (scale > 1)
		fprintf(f, "1 process in %llu traced (VM-wide counts scaled by %llu)\n",
			(unsigned long long)scale, (unsigned long long)scale);
	else
		fprintf(f, "every process traced\n");
	fprintf(f,
		"records: %llu read, %llu lost (%llu overwritten before they were read, %llu "
		"torn)\n",
		(unsigned long long)o->read, (unsigned long long)(o->lapped + o->torn),
		(unsigned long long)o->lapped, (unsigned long long)o->torn);
	for (k = 0; k < PK_COUNT; k++) {
		const struct dist *d;

		text_kind_head(f, s, (enum pkind)k, o->seconds, scale);
		ix = top_of(s, (enum pkind)k, o, &n);
		if (!ix || !n) {
			free(ix);
			continue;
		}
		fprintf(f, "  %-14s %-28s %9s %9s", "PID", "NAME", "COUNT", "/s");
		if (vm_dist(s, (enum pkind)k))
			fprintf(f, " %9s %9s %9s %9s %9s", "p50 us", "p90", "p99", "p99.9", "max");
		fputc('\n', f);
		for (i = 0; i < n; i++) {
			const struct evproc *p = &s->p[ix[i]];

			fprintf(f, "  %-14s %-28.28s %9llu %9.1f", p->pid_text,
				p->label[0] ? p->label : "-",
				(unsigned long long)pcount(p, (enum pkind)k),
				o->seconds > 0 ? (double)pcount(p, (enum pkind)k) / o->seconds : 0);
			d = pdist(p, (enum pkind)k);
			if (d)
				text_dist(f, d);
			fputc('\n', f);
		}
		free(ix);
	}
	if (s->slowest)
		text_slowest(f, s, o);
}
