/* watch: what P runs while it is on CPU. The spy's snapshots say when P runs, not where (its
 * resume address is stale while it runs); the scheduler samples `record --erlang-pid` takes say
 * where, but only while a scheduler thread holds a CPU. watch runs that sampler alongside the spy
 * and splits P's running time by the innermost Erlang function of P's samples. Does not own:
 * sampling (sampler.c), the split itself (watch.c's report). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "sampler.h"
#include "watch_cpu.h"

#define CPU_HZ 997

struct watch_cpu {
	struct sampler *s;
	struct agg *agg;
	uint64_t *count; /* by frame id */
	size_t cap;
	uint64_t total;
	FILE *timeline;
};

static void on_record(const struct sample_record *r, void *ctx)
{
	struct watch_cpu *c = ctx;
	uint32_t id;

	if (r->kind != SAMPLE_ERLANG || r->nerlang == 0)
		return;
	id = r->frames[r->nerlang - 1]; /* root first: the innermost Erlang frame */
	if (id >= c->cap) {
		size_t cap = (id + 1) * 2;
		uint64_t *v = realloc(c->count, cap * sizeof(*v));

		if (!v)
			return;
		memset(v + c->cap, 0, (cap - c->cap) * sizeof(*v));
		c->count = v;
		c->cap = cap;
	}
	c->count[id]++;
	c->total++;
	if (c->timeline)
		fprintf(c->timeline, "c %" PRIu64 " %s\n", r->ps->time,
			agg__frame_name(c->agg, id));
}

int watch_cpu__new(struct watch_cpu **out, struct target *t, const char *pid_text, unsigned hz,
		   char *err, size_t errlen)
{
	struct watch_cpu *c = calloc(1, sizeof(*c));
	struct sampler_opts so = {
	    .freq_hz = hz ? hz : CPU_HZ,
	    .event = PERF_EV_CPU_CLOCK,
	    .only_erlang = true,
	    .erlang_pid = pid_text,
	    .keep_priority = true,
	    .on_record = on_record,
	};
	int rc;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	so.record_ctx = c;
	if ((rc = agg__new(&c->agg)) || (rc = sampler__new(t, &so, c->agg, &c->s, err, errlen))) {
		watch_cpu__free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void watch_cpu__set_timeline(struct watch_cpu *c, FILE *f)
{
	if (c)
		c->timeline = f;
}

int watch_cpu__poll(struct watch_cpu *c, int timeout_ms)
{
	return c ? sampler__poll(c->s, timeout_ms) : 0;
}

void watch_cpu__refresh_code(struct watch_cpu *c)
{
	sampler__refresh_code(c->s);
}

static int by_count(const void *a, const void *b)
{
	const struct watch_cpu_fn *x = a, *y = b;

	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : 0;
}

size_t watch_cpu__functions(const struct watch_cpu *c, struct watch_cpu_fn *out, size_t max,
			    uint64_t *total)
{
	size_t i, n = 0;

	*total = c ? c->total : 0;
	if (!c || !max)
		return 0;
	for (i = 0; i < c->cap; i++) {
		if (!c->count[i])
			continue;
		if (n < max) {
			out[n].name = agg__frame_name(c->agg, (uint32_t)i);
			out[n++].samples = c->count[i];
			continue;
		}
		qsort(out, n, sizeof(*out), by_count); /* keep the largest max */
		if (c->count[i] > out[n - 1].samples)
			out[n - 1] = (struct watch_cpu_fn){agg__frame_name(c->agg, (uint32_t)i),
							   c->count[i]};
	}
	qsort(out, n, sizeof(*out), by_count);
	return n;
}

void watch_cpu__free(struct watch_cpu *c)
{
	if (!c)
		return;
	sampler__free(c->s);
	agg__free(c->agg);
	free(c->count);
	free(c);
}
