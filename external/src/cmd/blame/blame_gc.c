/* `blame --gc`: garbage collection per process, from the samples in GC frames. Per process: the
 * GC samples and the time they stand for (samples x sample period), the GC runs seen (a
 * scheduler's consecutive GC samples for one process, less than 1.5 periods apart: a lower bound
 * of the count, since GCs shorter than a period are mostly missed and back-to-back ones merge),
 * and the kind where a frame names it: major (major_collection, full_sweep_heaps, hibernation,
 * a literal-area collection) or minor (minor_collection). Debian's beam.smp names neither
 * major_collection nor minor_collection (static functions, stripped): then the kind is unknown,
 * and the table says so. Does not own: which samples are GC (blame.c's gc alias), sampling. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "blame_gc.h"

static const char *const major_names[] = {"major_collection", "full_sweep_heaps",
					  "erts_garbage_collect_hibernate",
					  "erts_garbage_collect_literals"};
static const char *const minor_names[] = {"minor_collection"};

struct gc_proc {
	uint64_t samples, runs, major, minor;
};

/* The last sample of one scheduler thread: was it GC, for which group, when. */
struct gc_last {
	bool gc;
	uint32_t group;
	uint64_t time;
};

struct blame_gc {
	const struct agg *agg;
	const struct target *t;
	uint64_t period_ns;
	struct gc_proc *proc; /* by group id */
	size_t nproc;
	struct gc_last *last; /* by scheduler index */
	size_t nlast;
	uint64_t samples, major, minor;
};

int blame_gc__new(const struct agg *a, const struct target *t, uint32_t freq_hz,
		  struct blame_gc **out)
{
	struct blame_gc *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->agg = a;
	g->t = t;
	g->period_ns = freq_hz ? 1000000000ull / freq_hz : 1000000ull;
	g->nlast = t->nsched ? t->nsched : 1;
	g->last = calloc(g->nlast, sizeof(*g->last));
	if (!g->last) {
		free(g);
		return -ENOMEM;
	}
	*out = g;
	return 0;
}

void blame_gc__free(struct blame_gc *g)
{
	if (!g)
		return;
	free(g->proc);
	free(g->last);
	free(g);
}

static bool in(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return true;
	return false;
}

/* +1 major, -1 minor, 0 not named. */
static int kind_of(const struct blame_gc *g, const struct sample_record *r)
{
	for (uint32_t i = r->nerlang; i < r->nframes; i++) {
		const char *n = agg__frame_name(g->agg, r->frames[i]);

		if (in(n, major_names, sizeof(major_names) / sizeof(major_names[0])))
			return 1;
		if (in(n, minor_names, sizeof(minor_names) / sizeof(minor_names[0])))
			return -1;
	}
	return 0;
}

static struct gc_proc *proc_slot(struct blame_gc *g, uint32_t group)
{
	if (group >= g->nproc) {
		size_t n = g->nproc ? g->nproc : 64;
		struct gc_proc *p;

		while (n <= group)
			n *= 2;
		p = realloc(g->proc, n * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + g->nproc, 0, (n - g->nproc) * sizeof(*p));
		g->proc = p;
		g->nproc = n;
	}
	return &g->proc[group];
}

int blame_gc__add(struct blame_gc *g, const struct sample_record *r, bool gc)
{
	size_t idx = r->sched ? (size_t)(r->sched - g->t->sched) : g->nlast;
	struct gc_last *l = idx < g->nlast ? &g->last[idx] : NULL;
	uint64_t now = r->ps->time;
	struct gc_proc *p;
	bool same_run;
	int k;

	same_run = l && l->gc && l->group == r->group && (now - l->time) * 2 <= g->period_ns * 3;
	if (l)
		*l = (struct gc_last){.gc = gc, .group = r->group, .time = now};
	if (!gc)
		return 0;
	if (!(p = proc_slot(g, r->group)))
		return -ENOMEM;
	k = kind_of(g, r);
	p->samples++;
	p->runs += !same_run;
	p->major += k > 0;
	p->minor += k < 0;
	g->samples++;
	g->major += k > 0;
	g->minor += k < 0;
	return 0;
}

static int by_samples(const void *pa, const void *pb, void *ctx)
{
	const struct blame_gc *g = ctx;
	const uint32_t *a = pa, *b = pb;

	if (g->proc[*a].samples != g->proc[*b].samples)
		return g->proc[*a].samples > g->proc[*b].samples ? -1 : 1;
	return *a < *b ? -1 : 1;
}

void blame_gc__print(const struct blame_gc *g, unsigned limit, FILE *f)
{
	uint32_t *ix, n = 0, i;

	fputs("\nGarbage collection per process (TIME: samples x sample period; RUNS: GCs seen as "
	      "consecutive samples, a lower bound of the count):\n",
	      f);
	fprintf(f, "  %9s  %7s  %5s  %6s  %5s  %7s  %s\n", "TIME_MS", "SAMPLES", "RUNS", "MAJOR",
		"MINOR", "UNKNOWN", "PROCESS");
	ix = calloc(g->nproc ? g->nproc : 1, sizeof(*ix));
	for (i = 0; ix && i < g->nproc; i++)
		if (g->proc[i].samples)
			ix[n++] = i;
	if (ix)
		qsort_r(ix, n, sizeof(*ix), by_samples, (void *)g);
	for (i = 0; ix && i < n && i < limit; i++) {
		const struct gc_proc *p = &g->proc[ix[i]];

		fprintf(f, "  %9.1f  %7llu  %5llu  %6llu  %5llu  %7llu  %s\n",
			(double)(p->samples * g->period_ns) / 1e6, (unsigned long long)p->samples,
			(unsigned long long)p->runs, (unsigned long long)p->major,
			(unsigned long long)p->minor,
			(unsigned long long)(p->samples - p->major - p->minor),
			agg__group_name(g->agg, ix[i]));
	}
	if (n > limit)
		fprintf(f, "  (%u more; -n shows more rows)\n", n - limit);
	if (g->samples && !g->major && !g->minor)
		fputs("  Major or minor: unknown, this beam.smp names neither major_collection nor "
		      "minor_collection (static functions, no debug symbols); only hibernation and "
		      "literal-area collections would be named, and none ran.\n",
		      f);
	free(ix);
}
