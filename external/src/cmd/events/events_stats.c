/* events: the records, in time order, through a small state machine per process (see
 * events.h). What each figure measures:
 * - gc: from gc_{minor,major}_start to the matching _end of the same process: the collection's
 *   pause as the VM reports it (the tracer's own cost at the start is inside it);
 * - sched: from the moment a process is scheduled out still runnable (the VM names its current
 *   function: preempted, yielding) to its next schedule-in; and from the first message sent to a
 *   process that went out waiting (in receive) to its next schedule-in. Waits ended by a timeout
 *   or another signal are not measured;
 * - send latency: from a send (the message is in a local receiver's queue when the send
 *   returns) to the receiver's next schedule-in, for receivers that were not running then;
 *   sends to a running receiver are counted apart, without a time;
 * - migration: a schedule-in on another scheduler thread than the process's previous one;
 * - exit: counted per parent (the process that spawned it, when the spawn was in the window),
 *   else per exiting process.
 * Records are held until every ring has been read past their time (a watermark), then sorted,
 * so that a send and the receiver's schedule-in on two schedulers are seen in order. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "events_stats.h"

#define MAX_PROCS (1u << 20)

static unsigned dist_nb(unsigned sb)
{
	return (41u - sb) << sb;
}

static unsigned dist_index(uint64_t v, unsigned sb)
{
	unsigned msb;

	if (v >= (1ull << 40))
		v = (1ull << 40) - 1;
	if (v < (1ull << sb))
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	return ((msb - sb + 1) << sb) + (unsigned)((v >> (msb - sb)) - (1ull << sb));
}

static uint64_t dist_mid(unsigned idx, unsigned sb)
{
	uint64_t m, lo, hi;
	unsigned e;

	if (idx < (1u << sb))
		return idx;
	e = (idx >> sb) - 1;
	m = (1ull << sb) + (idx & ((1u << sb) - 1));
	lo = m << e;
	hi = ((m + 1) << e) - 1;
	return lo + (hi - lo) / 2;
}

void dist__add(struct dist *d, uint64_t ns)
{
	if (!d->sub_bits)
		d->sub_bits = DIST_PROC_BITS;
	if (!d->b) {
		d->b = calloc(dist_nb(d->sub_bits), sizeof(*d->b));
		if (!d->b)
			return;
	}
	d->b[dist_index(ns, d->sub_bits)]++;
	d->n++;
	d->sum_ns += ns;
	if (ns > d->max_ns)
		d->max_ns = ns;
}

uint64_t dist__quantile(const struct dist *d, double q)
{
	uint64_t want, seen = 0, v;
	unsigned i, nb;

	if (!d->n || !d->b)
		return 0;
	want = (uint64_t)(q * (double)d->n);
	if (want >= d->n)
		want = d->n - 1;
	nb = dist_nb(d->sub_bits);
	for (i = 0; i < nb; i++) {
		seen += d->b[i];
		if (seen > want) {
			v = dist_mid(i, d->sub_bits);
			return v > d->max_ns ? d->max_ns : v;
		}
	}
	return d->max_ns;
}

void dist__free(struct dist *d)
{
	free(d->b);
	d->b = NULL;
}

int evstats__init(struct evstats *s, unsigned slowest)
{
	unsigned i;

	memset(s, 0, sizeof(*s));
	s->slowest = slowest;
	for (i = 0; slowest && i < SLOW_KINDS; i++) {
		s->slow[i] = calloc(slowest, sizeof(*s->slow[i]));
		if (!s->slow[i]) {
			evstats__free(s);
			return -ENOMEM;
		}
	}
	s->nslots = 1u << 12;
	s->slot = calloc(s->nslots, sizeof(*s->slot));
	if (!s->slot) {
		evstats__free(s);
		return -ENOMEM;
	}
	for (i = 0; i < ED_COUNT; i++)
		s->d[i].sub_bits = DIST_VM_BITS;
	return 0;
}

void evstats__free(struct evstats *s)
{
	size_t i;
	unsigned k;

	for (i = 0; i < s->n; i++)
		for (k = 0; k < ED_COUNT; k++)
			dist__free(&s->p[i].d[k]);
	for (k = 0; k < ED_COUNT; k++)
		dist__free(&s->d[k]);
	for (k = 0; k < SLOW_KINDS; k++)
		free(s->slow[k]);
	free(s->p);
	free(s->slot);
	free(s->held);
	memset(s, 0, sizeof(*s));
}

static size_t hash_pid(uint64_t pid, size_t nslots)
{
	return (size_t)(((pid >> 4) * 0x9e3779b97f4a7c15ull) >> 20) & (nslots - 1);
}

static int rehash(struct evstats *s)
{
	size_t n2 = s->nslots * 2, i, h;
	uint32_t *sl = calloc(n2, sizeof(*sl));

	if (!sl)
		return -ENOMEM;
	for (i = 0; i < s->n; i++) {
		for (h = hash_pid(s->p[i].pid, n2); sl[h]; h = (h + 1) & (n2 - 1))
			;
		sl[h] = (uint32_t)(i + 1);
	}
	free(s->slot);
	s->slot = sl;
	s->nslots = n2;
	return 0;
}

static struct evproc *lookup(struct evstats *s, uint64_t pid, bool create)
{
	size_t h;
	struct evproc *p;

	if (!pid)
		return NULL;
	for (h = hash_pid(pid, s->nslots); s->slot[h]; h = (h + 1) & (s->nslots - 1)) {
		if (s->p[s->slot[h] - 1].pid == pid)
			return &s->p[s->slot[h] - 1];
	}
	if (!create || s->n >= MAX_PROCS)
		return NULL;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		struct evproc *np = realloc(s->p, cap * sizeof(*np));

		if (!np) {
			s->oom = true;
			return NULL;
		}
		s->p = np;
		s->cap = cap;
	}
	p = &s->p[s->n];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->ring = -1;
	s->slot[h] = (uint32_t)++s->n;
	if (s->n * 2 > s->nslots && rehash(s))
		s->oom = true;
	return p;
}

struct evproc *evstats__find(struct evstats *s, uint64_t pid)
{
	return lookup(s, pid, false);
}

void evstats__hold(struct evstats *s, const struct xp_ev *ev, unsigned ring)
{
	if (s->nheld == s->capheld) {
		size_t cap = s->capheld ? s->capheld * 2 : 65536;
		struct xp_ev *h = realloc(s->held, cap * sizeof(*h));

		if (!h) {
			s->oom = true;
			return;
		}
		s->held = h;
		s->capheld = cap;
	}
	s->held[s->nheld] = *ev;
	s->held[s->nheld++].seq = ring; /* checked by the reader; the ring rides in it now */
}

/* Keep e if it is among the s->slowest longest of its kind (insertion into a short list). */
static void keep_slow(struct evstats *s, enum slow_kind k, const struct slow_ev *e)
{
	struct slow_ev *l = s->slow[k];
	unsigned i, n = s->nslow[k];

	if (!s->slowest || (n == s->slowest && e->ns <= l[n - 1].ns))
		return;
	if (n < s->slowest)
		n = ++s->nslow[k];
	for (i = n - 1; i > 0 && l[i - 1].ns < e->ns; i--)
		l[i] = l[i - 1];
	l[i] = *e;
}

static void add_dist(struct evstats *s, struct evproc *p, enum ev_dist k, uint64_t ns)
{
	dist__add(&s->d[k], ns);
	dist__add(&p->d[k], ns);
}

static void on_in(struct evstats *s, size_t pi, uint64_t ts, unsigned ring)
{
	struct evproc *p = &s->p[pi];
	uint32_t i;

	if (p->known && !p->running) {
		uint64_t from = 0;

		if (p->out_how == XP_OUT_RUNNABLE && ts >= p->out_ts)
			from = p->out_ts;
		else if (p->out_how == XP_OUT_WAITING && p->wake_ts && ts >= p->wake_ts)
			from = p->wake_ts;
		if (from) {
			struct slow_ev e = {ts - from, ts, p->pid, 0, 0};

			add_dist(s, p, ED_SCHED, e.ns);
			keep_slow(s, SLOW_SCHED, &e);
		}
	}
	for (i = 0; i < p->npend; i++) {
		struct evproc *from = &s->p[p->pend_from[i]];

		if (ts >= p->pend_ts[i]) {
			struct slow_ev e = {ts - p->pend_ts[i], ts, p->pid, from->pid, 0};

			dist__add(&s->d[ED_SEND], e.ns);
			dist__add(&from->d[ED_SEND], e.ns);
			keep_slow(s, SLOW_SEND, &e);
		}
	}
	p->npend = 0;
	if (p->ring >= 0 && p->ring != (int16_t)ring) {
		p->migrations++;
		s->migrations++;
	}
	p->ring = (int16_t)ring;
	p->known = 1;
	p->running = 1;
	p->wake_ts = 0;
}

static void on_send(struct evstats *s, size_t si, uint64_t to, uint64_t ts)
{
	struct evproc *r, *p;

	s->p[si].sends++;
	r = (to & 0xf) == 0x3 ? lookup(s, to, true) : NULL;
	if (!r) {
		s->untimed_sends++;
		return;
	}
	p = &s->p[si];
	if (!r->known) {
		s->untimed_sends++;
		return;
	}
	if (r->running) {
		p->sends_to_running++;
		s->sends_to_running++;
		return;
	}
	if (r->out_how == XP_OUT_WAITING && !r->wake_ts)
		r->wake_ts = ts;
	if (r->npend < sizeof(r->pend_ts) / sizeof(r->pend_ts[0])) {
		r->pend_ts[r->npend] = ts;
		r->pend_from[r->npend++] = (uint32_t)si;
	} else {
		s->untimed_sends++;
	}
}

static void on_gc(struct evstats *s, struct evproc *p, uint16_t kind, uint16_t arg, uint64_t ts)
{
	bool major = kind == XP_EV_GC_MAJOR_START || kind == XP_EV_GC_MAJOR_END;

	if (kind == XP_EV_GC_MINOR_START || kind == XP_EV_GC_MAJOR_START) {
		p->gc_ts = ts;
		p->gc_major = major;
		return;
	}
	if (!p->gc_ts || p->gc_major != major || ts < p->gc_ts) {
		s->gc_unpaired++;
		p->gc_ts = 0;
		return;
	}
	if (arg != EV_GC_KIND_UNKNOWN)
		add_dist(s, p, major ? ED_GC_MAJOR : ED_GC_MINOR, ts - p->gc_ts);
	add_dist(s, p, ED_GC, ts - p->gc_ts);
	{
		struct slow_ev e = {ts - p->gc_ts, ts, p->pid, 0, major};

		keep_slow(s, SLOW_GC, &e);
	}
	p->gc_ts = 0;
}

static void process_one(struct evstats *s, const struct xp_ev *e, unsigned ring)
{
	struct evproc *p;
	size_t pi;

	if (e->ts_ns < s->t0 || (s->t1 && e->ts_ns > s->t1)) {
		s->out_of_window++;
		return;
	}
	s->kinds[e->kind]++;
	p = lookup(s, e->pid, true);
	if (!p)
		return;
	pi = (size_t)(p - s->p);
	switch (e->kind) {
	case XP_EV_SPAWN:
		p->spawns++;
		p = lookup(s, e->extra, true);
		if (p)
			p->parent = (uint32_t)pi + 1;
		break;
	case XP_EV_EXIT:
		p->exits++;
		p->exit_class = e->arg < XP_EXIT_CLASS_COUNT ? e->arg : XP_EXIT_ERROR;
		s->exit_class[p->exit_class]++;
		if (p->parent)
			s->p[p->parent - 1].child_exits++;
		break;
	case XP_EV_SEND:
		on_send(s, pi, e->extra, e->ts_ns);
		break;
	case XP_EV_IN:
		on_in(s, pi, e->ts_ns, ring);
		break;
	case XP_EV_OUT:
		p->known = 1;
		p->running = 0;
		p->out_how = (uint8_t)e->arg;
		p->out_ts = e->ts_ns;
		p->wake_ts = 0;
		break;
	default:
		on_gc(s, p, e->kind, e->arg, e->ts_ns);
		break;
	}
}

static int cmp_ts(const void *a, const void *b)
{
	const struct xp_ev *x = a, *y = b;

	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

uint64_t evstats__records(const struct evstats *s)
{
	uint64_t n = 0;

	for (size_t k = 0; k < XP_EV_KIND_COUNT; k++)
		n += s->kinds[k];
	return n;
}

void evstats__process(struct evstats *s, uint64_t watermark)
{
	size_t done = 0;

	qsort(s->held, s->nheld, sizeof(*s->held), cmp_ts);
	while (done < s->nheld && s->held[done].ts_ns < watermark) {
		process_one(s, &s->held[done], s->held[done].seq);
		done++;
	}
	memmove(s->held, s->held + done, (s->nheld - done) * sizeof(*s->held));
	s->nheld -= done;
}
