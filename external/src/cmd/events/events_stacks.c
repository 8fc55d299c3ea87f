/* events --slowest's stacks (events_stacks.h): the sampler's records of Erlang samples go into a
 * ring of EVS_KEEP (time, process group, innermost frames); a slow event is matched to its
 * process's samples by the pid text the sampler groups them under ("<0.85.0> name"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "sampler.h"
#include "events_stacks.h"

#define EVS_KEEP       65536u		     /* about 33 s of two busy schedulers at 997 Hz */
#define EVS_MAX_GAP_NS (10ull * 1000 * 1000) /* a sample further than 10 ms is not shown */

struct evs_sample {
	uint64_t ts;
	uint32_t group;
	uint16_t n;
	uint8_t gc;
	uint32_t f[EVS_FRAMES]; /* innermost first */
};

struct evstacks {
	struct agg *agg;
	struct sampler *s;
	struct evs_sample *ring;
	uint64_t next;	/* samples kept so far; ring[next % EVS_KEEP] is the next slot */
	uint8_t *match; /* per group id while finding: 0 unknown, 1 this pid, 2 another */
	size_t nmatch;
};

static void on_record(const struct sample_record *r, void *ctx)
{
	struct evstacks *x = ctx;
	struct evs_sample *e;
	uint32_t i;

	if (r->kind != SAMPLE_ERLANG || !r->ps)
		return;
	e = &x->ring[x->next++ % EVS_KEEP];
	e->ts = r->ps->time;
	e->group = r->group;
	e->gc = r->gc;
	e->n = 0;
	for (i = r->nerlang; i-- > 0 && e->n < EVS_FRAMES;)
		e->f[e->n++] = r->frames[i];
}

int evstacks__open(struct evstacks **out, struct target *t, char *err, size_t errlen)
{
	struct evstacks *x = calloc(1, sizeof(*x));
	struct sampler_opts so = {.freq_hz = EVS_HZ,
				  .event = PERF_EV_CPU_CLOCK,
				  .group = GROUP_PID,
				  .on_record = on_record};
	int rc;

	*out = NULL;
	if (!x || !(x->ring = calloc(EVS_KEEP, sizeof(*x->ring))) || agg__new(&x->agg)) {
		evstacks__free(x);
		return -ENOMEM;
	}
	so.record_ctx = x;
	if ((rc = sampler__new(t, &so, x->agg, &x->s, err, errlen))) {
		evstacks__free(x);
		return rc;
	}
	*out = x;
	return 0;
}

int evstacks__poll(struct evstacks *x, int timeout_ms)
{
	return sampler__poll(x->s, timeout_ms);
}

/* Is group g's name "<pid_text>" or "<pid_text> name"? Memoised per group while finding. */
static bool is_pid(struct evstacks *x, uint32_t g, const char *pid_text, size_t len)
{
	const char *name;
	bool yes;

	if (g < x->nmatch && x->match[g])
		return x->match[g] == 1;
	name = agg__group_name(x->agg, g);
	yes = name && !strncmp(name, pid_text, len) && (name[len] == ' ' || !name[len]);
	if (g < x->nmatch)
		x->match[g] = yes ? 1 : 2;
	return yes;
}

/* Were the sample's Erlang callers known (not one "[Erlang callers unknown: ...]" label)? */
static bool known(const struct evstacks *x, const struct evs_sample *e)
{
	const char *name = e->n ? agg__frame_name(x->agg, e->f[0]) : NULL;

	return name && name[0] != '[';
}

static void fill(const struct evstacks *x, const struct evs_sample *e, struct evs_hit *h)
{
	h->gc = e->gc;
	h->n = e->n;
	for (uint32_t i = 0; i < e->n; i++)
		h->frames[i] = agg__frame_name(x->agg, e->f[i]);
}

bool evstacks__find(struct evstacks *x, const char *pid_text, uint64_t from, uint64_t to,
		    struct evs_hit *h)
{
	const struct evs_sample *during = NULL, *before = NULL, *after = NULL;
	uint64_t first = x->next > EVS_KEEP ? x->next - EVS_KEEP : 0;
	size_t len = strlen(pid_text);
	uint32_t ndur = 0;

	memset(h, 0, sizeof(*h));
	free(x->match);
	x->nmatch = agg__ngroups(x->agg) + 1;
	x->match = len ? calloc(x->nmatch, 1) : NULL;
	if (!x->match) {
		x->nmatch = 0;
		return false;
	}
	for (uint64_t i = first; i < x->next; i++) {
		const struct evs_sample *e = &x->ring[i % EVS_KEEP];

		if (!is_pid(x, e->group, pid_text, len))
			continue;
		if (e->ts >= from && e->ts <= to) {
			/* A walked stack over one labelled unknown, else the latest. */
			if (!during || known(x, e) || !known(x, during))
				during = e;
			ndur++;
		} else if (e->ts < from && from - e->ts <= EVS_MAX_GAP_NS &&
			   (!before || e->ts > before->ts)) {
			before = e;
		} else if (e->ts > to && e->ts - to <= EVS_MAX_GAP_NS &&
			   (!after || e->ts < after->ts)) {
			after = e;
		}
	}
	if (during) {
		h->when = EVS_DURING;
		h->samples_during = ndur;
		fill(x, during, h);
	} else if (before || after) {
		bool b = before && (!after || from - before->ts <= after->ts - to);

		h->when = b ? EVS_BEFORE : EVS_AFTER;
		h->gap_ns = b ? from - before->ts : after->ts - to;
		fill(x, b ? before : after, h);
	}
	return during || before || after;
}

void evstacks__counts(const struct evstacks *x, uint64_t *kept, uint64_t *overwritten)
{
	*kept = x->next < EVS_KEEP ? x->next : EVS_KEEP;
	*overwritten = x->next > EVS_KEEP ? x->next - EVS_KEEP : 0;
}

void evstacks__free(struct evstacks *x)
{
	if (!x)
		return;
	sampler__free(x->s);
	agg__free(x->agg);
	free(x->ring);
	free(x->match);
	free(x);
}
