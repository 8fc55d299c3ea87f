/* `extrospect heap --watch SECONDS`: a reading of every process each interval, matched to the
 * previous one by pid; rows sorted by the growth of the --sort column over the interval, with
 * the growth since the process was first seen, and "long-lived" flags for an old heap or
 * binaries that grew and never shrank over two intervals or more (data that outlives
 * collections: the shape of a leak). Owns: the loop, the matching and its output. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heap.h"
#include "heap_print.h"
#include "heap_watch.h"

#define SLICE_MS 100 /* the wait between readings is cut in slices to see Ctrl-C */

/* One process across readings. */
struct seen {
	uint64_t pid;
	uint64_t first[HEAP_COL_COUNT], last[HEAP_COL_COUNT];
	uint32_t known;	       /* first and last both known, per column */
	uint32_t grew, shrank; /* per column, over every interval */
	uint32_t intervals;    /* how many intervals it was seen across */
	int64_t delta;	       /* of the sort column over the last interval */
	size_t row;	       /* its row in the current reading */
};

struct watch {
	struct heap_ctx *c;
	struct seen *prev, *cur;
	size_t nprev, ncur;
	uint64_t fresh, exited;
	unsigned interval;
	double started_ms;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_pid(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Carry p's history into s, which holds this reading's values. */
static void carry(struct seen *s, const struct seen *p, enum heap_col sort)
{
	uint32_t both = s->known & p->known;
	int k;

	s->intervals = p->intervals + 1;
	for (k = 0; k < HEAP_COL_COUNT; k++) {
		uint32_t bit = 1u << k;

		s->first[k] = p->first[k];
		if (!(both & bit))
			continue;
		s->grew = (s->grew & ~bit) | (p->grew & bit) | (s->last[k] > p->last[k] ? bit : 0);
		s->shrank =
		    (s->shrank & ~bit) | (p->shrank & bit) | (s->last[k] < p->last[k] ? bit : 0);
	}
	s->known &= p->known;
	s->delta = both & (1u << sort) ? (int64_t)(s->last[sort] - p->last[sort]) : 0;
}

/* This reading's processes, matched to the last reading's by pid. */
static int match(struct watch *w)
{
	struct heap_ctx *c = w->c;
	size_t i, matched = 0;

	w->cur = calloc(c->n ? c->n : 1, sizeof(*w->cur));
	if (!w->cur)
		return -ENOMEM;
	w->ncur = c->n;
	for (i = 0; i < c->n; i++) {
		struct seen *s = &w->cur[i];
		const struct seen *p;

		s->pid = c->rows[i].s.pid;
		s->row = i;
		s->known = c->rows[i].known;
		memcpy(s->last, c->rows[i].val, sizeof(s->last));
		memcpy(s->first, c->rows[i].val, sizeof(s->first));
		p = w->prev ? bsearch(s, w->prev, w->nprev, sizeof(*s), cmp_pid) : NULL;
		if (p) {
			carry(s, p, c->sort);
			matched++;
		} else if (w->prev) {
			w->fresh++;
		}
	}
	w->exited += w->nprev - matched;
	return 0;
}

static int cmp_delta(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;

	if (x->delta != y->delta)
		return x->delta > y->delta ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

static bool long_lived(const struct seen *s, enum heap_col k)
{
	uint32_t bit = 1u << k;

	return s->intervals >= 2 && (s->known & bit) && (s->grew & bit) && !(s->shrank & bit);
}

static void signed_size(int64_t v, bool bytes, char *buf, size_t len)
{
	char h[24];

	if (!bytes) {
		snprintf(buf, len, "%+" PRId64, v);
		return;
	}
	heap__human((uint64_t)(v < 0 ? -v : v), h, sizeof(h));
	snprintf(buf, len, "%c%s", v < 0 ? '-' : '+', h);
}

static bool is_bytes(enum heap_col k)
{
	return k != HEAP_COL_MSGQ && k != HEAP_COL_REDS;
}

static void text_row(const struct watch *w, const struct seen *s, FILE *f)
{
	const struct heap_ctx *c = w->c;
	const struct heap_row *r = &c->rows[s->row];
	enum heap_col k = c->sort;
	char now[32], d[40], since[40];
	struct heap_names n;

	heap__names(c, r, &n);
	if (is_bytes(k))
		heap__human(s->last[k], now, sizeof(now));
	else
		snprintf(now, sizeof(now), "%" PRIu64, s->last[k]);
	signed_size(s->delta, is_bytes(k), d, sizeof(d));
	signed_size((int64_t)(s->last[k] - s->first[k]), is_bytes(k), since, sizeof(since));
	fprintf(f, "%-14s %8s %9s %9s  %-9s %s%s%s%s\n", n.pid, now, d, since,
		r->s.have_state ? process__status_name(r->s.state) : "?",
		process__label(&n.v)[0] ? process__label(&n.v) : "-",
		long_lived(s, HEAP_COL_OLD) || long_lived(s, HEAP_COL_BIN) ? "  long-lived:" : "",
		long_lived(s, HEAP_COL_OLD) ? " old" : "",
		long_lived(s, HEAP_COL_BIN) ? " bin" : "");
}

static void json_row(const struct watch *w, const struct seen *s, struct json *j)
{
	const struct heap_ctx *c = w->c;
	struct heap_names n;

	heap__names(c, &c->rows[s->row], &n);
	json__object(j);
	json__kv_string(j, "pid", n.pid);
	json__kv_string(j, "name", n.v.name[0] ? n.v.name : NULL);
	json__kv_string(j, "initial_call", n.v.initial[0] ? n.v.initial : NULL);
	json__kv_string(j, "dictionary_initial_call", n.v.pd_initial[0] ? n.v.pd_initial : NULL);
	json__key(j, "value");
	json__uint(j, s->last[c->sort]);
	json__kv_int(j, "growth", s->delta);
	json__kv_int(j, "growth_since_first", (int64_t)(s->last[c->sort] - s->first[c->sort]));
	json__kv_int(j, "intervals", s->intervals);
	json__kv_bool(j, "long_lived_old", long_lived(s, HEAP_COL_OLD));
	json__kv_bool(j, "long_lived_bin", long_lived(s, HEAP_COL_BIN));
	json__end_object(j);
}

/* One interval's rows to c->out, flushed: 0, or the negative errno of a failed write. */
static int report(struct watch *w, const struct seen *v, size_t n, double secs)
{
	const struct heap_ctx *c = w->c;
	size_t i, shown = c->o->limit && c->o->limit < n ? c->o->limit : n;
	struct json j;

	if (c->o->json) {
		json__init(&j, c->out);
		json__object(&j);
		json__kv_int(&j, "interval", w->interval);
		json__kv_int(&j, "elapsed_ms", (int64_t)(secs * 1000 + 0.5));
		json__kv_string(&j, "sort", heap__col_name(c->sort));
		json__kv_int(&j, "processes", (int64_t)c->n);
		json__kv_int(&j, "new", (int64_t)w->fresh);
		json__kv_int(&j, "exited", (int64_t)w->exited);
		json__key(&j, "rows");
		json__array(&j);
		for (i = 0; i < shown; i++)
			json_row(w, &v[i], &j);
		json__end_array(&j);
		json__end_object(&j); /* ends its line */
	} else {
		fprintf(c->out,
			"\ninterval %u (%.1f s since the first reading): %zu processes, %" PRIu64
			" new, %" PRIu64 " exited; sorted by the growth of %s\n",
			w->interval, secs, c->n, w->fresh, w->exited, heap__col_name(c->sort));
		fprintf(c->out, "%-14s %8s %9s %9s  %-9s %s\n", "PID", "NOW", "INTERVAL", "SINCE",
			"STATUS", "NAME");
		for (i = 0; i < shown; i++)
			text_row(w, &v[i], c->out);
	}
	errno = 0;
	if (fflush(c->out) != 0 || ferror(c->out))
		w->c->out_err = errno ? -errno : -EIO;
	return w->c->out_err;
}

/* The growth since the last reading, largest first (processes seen before only). */
static int interval(struct watch *w)
{
	struct seen *v = malloc((w->ncur ? w->ncur : 1) * sizeof(*v));
	size_t i, n = 0;
	int rc;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < w->ncur; i++) {
		if (w->cur[i].intervals > 0)
			v[n++] = w->cur[i];
	}
	qsort(v, n, sizeof(*v), cmp_delta);
	w->interval++;
	rc = report(w, v, n, (now_ms() - w->started_ms) / 1000);
	free(v);
	return rc;
}

/* Wait until the next reading is due; false when asked to stop or past -d. */
static bool wait_next(const struct watch *w, double due_ms)
{
	const struct cli_opts *o = w->c->o;
	struct timespec slice = {0, SLICE_MS * 1000000L};

	while (!*w->c->stop && now_ms() < due_ms) {
		if (o->duration_s > 0 && now_ms() - w->started_ms >= o->duration_s * 1000)
			return false;
		nanosleep(&slice, NULL);
	}
	return !*w->c->stop &&
	       !(o->duration_s > 0 && now_ms() - w->started_ms > o->duration_s * 1000 + SLICE_MS);
}

int heap__watch(struct heap_ctx *c)
{
	struct watch w = {.c = c, .started_ms = now_ms()};
	double due = w.started_ms;
	int rc = 0;

	if (!c->o->json)
		fprintf(c->out,
			"extrospect heap --watch: BEAM pid %d, a reading every %.1f s; Ctrl-C "
			"stops\n",
			(int)c->t->pid, c->o->watch_s);
	while (!rc) {
		w.fresh = w.exited = 0;
		/* A reading cut by Ctrl-C is not compared: its missing processes did not exit. */
		if ((rc = heap__read(c)) || *c->stop || (rc = match(&w)))
			break;
		qsort(w.cur, w.ncur, sizeof(*w.cur), cmp_pid);
		/* match left each row index valid: rows were not reordered since. */
		if (w.prev && (rc = interval(&w)))
			break;
		free(w.prev);
		w.prev = w.cur;
		w.nprev = w.ncur;
		w.cur = NULL;
		due += c->o->watch_s * 1000;
		if (!wait_next(&w, due))
			break;
	}
	if (rc == TARGET_EGONE)
		fprintf(stderr, "extrospect: the VM exited after %u intervals\n", w.interval);
	free(w.prev);
	free(w.cur);
	return rc;
}
