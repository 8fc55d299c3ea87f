/* The flight recorder's memory. See ring.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "classify.h"
#include "ring.h"

#define RING_MIN_CAP 4096

int ring__init(struct ring *r, const struct target *t, struct agg *agg, uint64_t window_ns)
{
	*r = (struct ring){.t = t, .window_ns = window_ns, .gen_start_ns = ring__now_ns()};
	r->gen[0] = (struct ring_gen){.agg = agg, .used = true};
	return 0;
}

static void gen_free(struct ring_gen *g)
{
	agg__free(g->agg);
	free(g->gc);
	*g = (struct ring_gen){0};
}

void ring__free(struct ring *r)
{
	unsigned i;

	for (i = 0; i < RING_GENS; i++) {
		if (r->gen[i].used)
			gen_free(&r->gen[i]);
	}
	free(r->s);
	free(r->sw);
	r->s = NULL;
	r->sw = NULL;
}

uint64_t ring__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int64_t ns_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t ring__clock_offset(int64_t *err_ns)
{
	int64_t best = INT64_MAX, off = 0;
	int i;

	for (i = 0; i < 8; i++) {
		int64_t r1 = ns_of(CLOCK_REALTIME), m = ns_of(CLOCK_MONOTONIC);
		int64_t r2 = ns_of(CLOCK_REALTIME);

		if (r2 - r1 < best) {
			best = r2 - r1;
			off = r1 + (r2 - r1) / 2 - m;
		}
	}
	*err_ns = (best + 1) / 2;
	return off;
}

/* Room for one more sample: the held ones moved to the front, or the array doubled. */
static int reserve(struct ring *r)
{
	struct ring_sample *p;
	size_t cap;

	if (r->n < r->cap)
		return 0;
	if (r->head >= r->cap / 2 && r->head) {
		memmove(r->s, r->s + r->head, (r->n - r->head) * sizeof(*r->s));
		r->n -= r->head;
		r->head = 0;
		return 0;
	}
	cap = r->cap ? r->cap * 2 : RING_MIN_CAP;
	p = realloc(r->s, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	r->s = p;
	r->cap = cap;
	return 0;
}

static bool frame_is_gc(struct ring_gen *g, uint32_t id)
{
	if (id >= g->ngc) {
		size_t n = agg__nframes(g->agg) + 256;
		uint8_t *p = realloc(g->gc, n);

		if (!p)
			return false;
		memset(p + g->ngc, 0, n - g->ngc);
		g->gc = p;
		g->ngc = n;
	}
	if (!g->gc[id])
		g->gc[id] = classify__is_gc_name(agg__frame_name(g->agg, id)) ? 2 : 1;
	return g->gc[id] == 2;
}

void ring__on_record(const struct sample_record *rec, void *ctx)
{
	ring__hold(ctx, rec);
}

bool ring__hold(struct ring *r, const struct sample_record *rec)
{
	struct ring_gen *g = &r->gen[r->cur];
	struct ring_sample *s;
	uint32_t i;

	if (!rec->sched || reserve(r))
		return false;
	s = &r->s[r->n++];
	*s = (struct ring_sample){.time_ns = rec->ps->time,
				  .stack = agg__last_stack(g->agg),
				  .sched = (uint16_t)(rec->sched - r->t->sched),
				  .gen = (uint8_t)r->cur,
				  .flags = rec->kind == SAMPLE_ERLANG ? RING_F_PROCESS : 0};
	for (i = 0; i < rec->nframes; i++) {
		if (frame_is_gc(g, rec->frames[i])) {
			s->flags |= RING_F_GC;
			break;
		}
	}
	g->held++;
	r->added++;
	return true;
}

static int sched_of(const struct ring *r, uint32_t tid)
{
	size_t i;

	for (i = 0; i < r->t->nsched; i++) {
		if ((uint32_t)r->t->sched[i].tid == tid)
			return (int)i;
	}
	return -1;
}

int ring__switch(struct ring *r, uint32_t tid, uint64_t time, bool out, bool preempt)
{
	int sched = sched_of(r, tid);

	if (sched < 0)
		return -1;
	if (r->nsw == r->capsw) {
		size_t cap = r->capsw ? r->capsw * 2 : RING_MIN_CAP;
		struct ring_switch *p;

		if (r->swhead >= r->capsw / 2 && r->swhead) {
			memmove(r->sw, r->sw + r->swhead, (r->nsw - r->swhead) * sizeof(*r->sw));
			r->nsw -= r->swhead;
			r->swhead = 0;
		} else if ((p = realloc(r->sw, cap * sizeof(*p)))) {
			r->sw = p;
			r->capsw = cap;
		} else {
			return -1;
		}
	}
	r->sw[r->nsw++] = (struct ring_switch){.time_ns = time,
					       .sched = (uint16_t)sched,
					       .kind = !out	 ? TRACE_SWITCH_IN
						       : preempt ? TRACE_SWITCH_PREEMPTED
								 : TRACE_SWITCH_BLOCKED};
	r->have_switches = true;
	return sched;
}

void ring__on_switch(uint32_t tid, uint64_t time, bool out, bool preempt, void *ctx)
{
	ring__switch(ctx, tid, time, out, preempt);
}

static int rotate(struct ring *r, struct sampler *s, uint64_t now_ns)
{
	struct agg *a;
	unsigned i;

	for (i = 0; i < RING_GENS && r->gen[i].used; i++)
		;
	if (i == RING_GENS) /* a long pending dump holds them all: the current one grows */
		return 0;
	if (agg__new(&a))
		return -ENOMEM;
	sampler__swap_agg(s, a);
	r->gen[i] = (struct ring_gen){.agg = a, .used = true};
	r->cur = i;
	r->gen_start_ns = now_ns;
	return 0;
}

int ring__turn(struct ring *r, struct sampler *s, uint64_t now_ns)
{
	unsigned i;

	r->records_lost = sampler__perf_stats(s)->lost != 0;
	if (!r->window_ns)
		return 0;
	while (r->head < r->n && r->s[r->head].time_ns + r->window_ns < now_ns &&
	       (!r->keep_from_ns || r->s[r->head].time_ns < r->keep_from_ns)) {
		r->gen[r->s[r->head].gen].held--;
		r->head++;
		r->evicted++;
	}
	while (r->swhead < r->nsw && r->sw[r->swhead].time_ns + r->window_ns < now_ns &&
	       (!r->keep_from_ns || r->sw[r->swhead].time_ns < r->keep_from_ns))
		r->swhead++;
	for (i = 0; i < RING_GENS; i++) {
		if (i != r->cur && r->gen[i].used && !r->gen[i].held)
			gen_free(&r->gen[i]);
	}
	if (now_ns - r->gen_start_ns >= r->window_ns)
		return rotate(r, s, now_ns);
	return 0;
}

size_t ring__bytes(const struct ring *r)
{
	size_t n = r->cap * sizeof(*r->s) + r->capsw * sizeof(*r->sw);
	unsigned i;

	for (i = 0; i < RING_GENS; i++) {
		if (r->gen[i].used)
			n += agg__bytes(r->gen[i].agg) + r->gen[i].ngc;
	}
	return n;
}

size_t ring__held(const struct ring *r)
{
	return r->n - r->head;
}

void ring__span(const struct ring *r, uint64_t *oldest, uint64_t *newest)
{
	*oldest = r->n > r->head ? r->s[r->head].time_ns : 0;
	*newest = r->n > r->head ? r->s[r->n - 1].time_ns : 0;
}

void ring__thread_name(const struct target_sched *sch, char *buf, size_t len)
{
	static const char *const kind[] = {"scheduler", "dirty cpu scheduler",
					   "dirty io scheduler"};

	snprintf(buf, len, "%s %u", sch->type < 3 ? kind[sch->type] : "thread", sch->number);
}

int ring__input(struct ring *r, uint64_t from_ns, uint64_t to_ns, int64_t offset_ns,
		uint32_t freq_hz, struct trace_input *in)
{
	struct trace_thread *th;
	size_t i, k = 0;

	*in = (struct trace_input){.period_ns = 1000000000ull / (freq_hz ? freq_hz : 997),
				   .vm_pid = (int)r->t->pid,
				   .clock_note = r->clock_note};
	th = calloc(r->t->nsched ? r->t->nsched : 1, sizeof(*th));
	in->samples = calloc(ring__held(r) ? ring__held(r) : 1, sizeof(*in->samples));
	if (!th || !in->samples) {
		free(th);
		free(in->samples);
		return -ENOMEM;
	}
	for (i = 0; i < r->t->nsched; i++) {
		th[i].tid = r->t->sched[i].tid;
		ring__thread_name(&r->t->sched[i], th[i].name, sizeof(th[i].name));
	}
	in->threads = th;
	in->nthreads = r->t->nsched;
	in->have_switches = r->have_switches;
	in->records_lost = r->records_lost;
	in->switches = calloc(r->nsw - r->swhead + 1, sizeof(*in->switches));
	if (!in->switches)
		return -ENOMEM;
	for (i = r->swhead; i < r->nsw; i++) {
		const struct ring_switch *w = &r->sw[i];

		if (w->time_ns >= from_ns && w->time_ns <= to_ns)
			in->switches[in->nswitches++] =
			    (struct trace_switch){.time_ns = (int64_t)w->time_ns + offset_ns,
						  .thread = w->sched,
						  .kind = w->kind};
	}
	for (i = r->head; i < r->n; i++) {
		const struct ring_sample *s = &r->s[i];
		const struct agg *a = r->gen[s->gen].agg;
		struct agg_stack st;

		if (s->time_ns < from_ns || s->time_ns > to_ns || s->sched >= r->t->nsched)
			continue;
		agg__stack_by_id(a, s->stack, &st);
		in->samples[k++] = (struct trace_sample){.time_ns = (int64_t)s->time_ns + offset_ns,
							 .thread = s->sched,
							 .process = s->flags & RING_F_PROCESS,
							 .gc = s->flags & RING_F_GC,
							 .group = agg__group_name(a, st.group),
							 .agg = a,
							 .frames = st.frames,
							 .nframes = st.nframes};
	}
	in->nsamples = k;
	return 0;
}

void ring__input_free(struct trace_input *in)
{
	free((void *)in->threads);
	free(in->samples);
	free(in->switches);
	in->threads = NULL;
	in->samples = NULL;
	in->switches = NULL;
}

static int add_sample(struct agg *a, const struct trace_sample *s, uint32_t *ids)
{
	uint32_t group, i;
	int rc;

	if ((rc = agg__group(a, s->group, &group)))
		return rc;
	for (i = 0; i < s->nframes; i++) {
		if ((rc = agg__frame(a, agg__frame_name(s->agg, s->frames[i]),
				     agg__frame_kind(s->agg, s->frames[i]), &ids[i])))
			return rc;
	}
	return agg__add(a, group, ids, s->nframes, 1);
}

int ring__input_agg(const struct trace_input *in, struct agg **out)
{
	uint32_t *ids = NULL;
	size_t i, cap = 0;
	int rc;

	if ((rc = agg__new(out)))
		return rc;
	for (i = 0; i < in->nsamples && !rc; i++) {
		const struct trace_sample *s = &in->samples[i];

		if (!s->process)
			continue;
		if (s->nframes > cap) {
			uint32_t *p = realloc(ids, s->nframes * sizeof(*ids));

			if (!p) {
				rc = -ENOMEM;
				break;
			}
			ids = p;
			cap = s->nframes;
		}
		rc = add_sample(*out, s, ids);
	}
	free(ids);
	return rc;
}
