/* pstack --all's index: every Process of the process table once, in address order (neighbours
 * are copied in large ranges), for its pid, to list them in pid order (a radix sort of 16-byte
 * refs), and for its stack's bounds, kept with a digest of the rest (struct index_mark); in two
 * halves, by two threads when a second reader can be had. Bad entries are skipped and counted by
 * reason. Does not own: the listing that follows (pstack_procs.c). See pstack_list.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "pstack_list.h"
#include "radix.h"

void pstack_index__skip(struct listing *l, int rc)
{
	if (rc == -ESRCH)
		l->gone = true;
	else if (rc == NOT_IN_SLOT)
		l->skipped[SKIP_WRONG_SLOT]++;
	else
		l->skipped[rc == -EINVAL ? SKIP_INVALID : SKIP_UNREADABLE]++;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

/* The digest of what a process's marks say besides its stack's bounds, bit 0 cleared. Reductions
 * count only where the VM's layout has them, as the listing's own compare does. */
static uint64_t digest(const struct process_marks *m)
{
	uint64_t h = mix(0x243f6a8885a308d3ull, m->pid);

	h = mix(h, m->fp);
	h = mix(h, m->have_i ? m->i : 0);
	h = mix(h, m->have_reds ? m->reds : 0);
	h = (h ^ (h >> 32)) * 0xd6e8feb86659fd93ull;
	return (h ^ (h >> 32)) & ~(uint64_t)1;
}

bool pstack_index__same(const struct index_mark *m, const struct process_marks *now)
{
	return m->stop == now->stop && m->hend == now->hend && m->heap == now->heap &&
	       (m->digest & ~(uint64_t)1) == digest(now);
}

/* The index's copy of the Process at place at: its ref and mark, or why it is skipped. */
static int index_one(const struct process_reader *pr, const uint8_t *buf, size_t len, uint64_t addr,
		     uint32_t ix, struct ref *r, struct index_mark *f)
{
	struct process_marks m;
	int rc = process__parse_marks(pr, addr, buf, len, &m);

	if (rc)
		return rc;
	if (pr->pids.known && !ptab__pid_in_slot(&pr->pids, m.pid, ix))
		return NOT_IN_SLOT;
	r->order = process__pid_data(&pr->pids, m.pid);
	*f = (struct index_mark){.stop = m.stop,
				 .heap = m.heap,
				 .hend = m.hend,
				 .digest =
				     digest(&m) | !pstack_procs__not_walked(m.have_state, m.state)};
	return 0;
}

/* A part of the index, the Processes at places [lo, hi) of procs, read through mem with q and
 * snaps (MEM_MANY_BATCH requests of len bytes): a ref for each kept, at v[lo, lo + kept), its
 * mark at its place in marks; the others counted in l. */
struct index_part {
	struct listing *l;
	struct mem *mem;
	struct mem_req *q;
	uint32_t *qat; /* each request's place */
	uint8_t *snaps;
	size_t len, lo, hi, kept;
	const uint64_t *procs;
	const uint32_t *ixs;
	struct ref *v;
	struct index_mark *marks;
};

/* A part's buffers: q, qat and snaps for MEM_MANY_BATCH requests of len bytes. */
static int part_new(struct index_part *p)
{
	p->q = calloc(MEM_MANY_BATCH, sizeof(*p->q));
	p->qat = calloc(MEM_MANY_BATCH, sizeof(*p->qat));
	p->snaps = malloc((size_t)MEM_MANY_BATCH * p->len);
	return p->q && p->qat && p->snaps ? 0 : -ENOMEM;
}

static void part_free(struct index_part *p)
{
	free(p->q);
	free(p->qat);
	free(p->snaps);
}

/* The requests of the next batch from place i: how many, *next the place after them. Places
 * that hold no plausible Process pointer are counted as invalid. */
static size_t part_batch(struct index_part *p, size_t i, size_t *next)
{
	size_t m = 0;

	for (; i < p->hi && m < MEM_MANY_BATCH; i++) {
		if (!p->procs[i] || (p->procs[i] & 7)) {
			p->l->skipped[SKIP_INVALID]++;
			continue;
		}
		/* lent: parsed where the reader copied them */
		p->q[m] = (struct mem_req){
		    .addr = p->procs[i], .buf = p->snaps + m * p->len, .len = p->len, .lend = true};
		p->qat[m++] = (uint32_t)i;
	}
	*next = i;
	return m;
}

static void *index_part(void *arg)
{
	struct index_part *p = arg;
	size_t i, k, m, at, c = p->lo;
	int rc;

	for (i = p->lo; i < p->hi && !*p->l->c->stop && !p->l->gone;) {
		m = part_batch(p, i, &i);
		mem__read_many(p->mem, p->q, m);
		for (k = 0; k < m; k++) {
			rc = p->q[k].rc;
			at = p->qat[k];
			if (!rc)
				rc = index_one(&p->l->c->pr, p->q[k].data, p->len, p->procs[at],
					       p->ixs[at], &p->v[c], &p->marks[at]);
			/* Bounds that disagree: a copy taken mid-collection. Read it again
			 * alone, a few times, before skipping a live process. */
			for (int t = 0; rc == -EINVAL && t < PSTACK_REREADS; t++) {
				uint8_t *buf = p->snaps + k * p->len;

				rc = mem__read(p->mem, p->procs[at], buf, p->len);
				if (!rc)
					rc = index_one(&p->l->c->pr, buf, p->len, p->procs[at],
						       p->ixs[at], &p->v[c], &p->marks[at]);
			}
			if (rc) {
				pstack_index__skip(p->l, rc);
			} else {
				p->v[c].at = at;
				c++;
			}
		}
	}
	p->kept = c - p->lo;
	return NULL;
}

/* The upper half of the index read by a second thread, with its own reader and buffers, while
 * this one reads the lower half (its counters in l2, added to l's by the caller); when that
 * cannot start, both halves are read here in turn. */
static void index_halves(struct index_part *lower, struct index_part *upper, struct listing *l2)
{
	pthread_t th;
	bool apart;

	*upper = *lower;
	upper->l = l2;
	upper->lo = lower->hi = lower->lo + (lower->hi - lower->lo) / 2;
	upper->mem = NULL; /* its own, or none: not lower's */
	upper->q = NULL;
	upper->qat = NULL;
	upper->snaps = NULL;
	apart = !part_new(upper) && !mem__open_twin(&upper->mem, l2->c->t->mem) &&
		!pthread_create(&th, NULL, index_part, upper);
	index_part(lower);
	if (apart) {
		pthread_join(th, NULL);
		mem__add_failures(l2->c->t->mem, upper->mem);
	} else {
		struct index_part here = *lower;

		here.l = l2;
		here.lo = upper->lo;
		here.hi = upper->hi;
		index_part(&here);
		upper->kept = here.kept;
	}
	part_free(upper);
	mem__free(upper->mem);
}

int pstack_index__all(struct listing *l, uint32_t *ixs, uint64_t *procs, size_t n,
		      struct pstack_index *out)
{
	const size_t nmarks = n ? n : 1;
	struct ref *v = malloc(nmarks * sizeof(*v));
	/* Written only at the places of those kept: the pages of none are touched. In huge pages:
	 * 32 MiB for a million processes was 8,000 page faults from malloc's mmap. */
	struct index_mark *marks = bigmem__map(nmarks * sizeof(*marks));
	struct listing l2 = {.c = l->c};
	struct index_part lower = {.l = l,
				   .mem = l->c->t->mem,
				   .procs = procs,
				   .ixs = ixs,
				   .v = v,
				   .marks = marks,
				   .hi = n};
	struct index_part upper;
	size_t i, c;
	int rc = -ENOMEM;

	*out = (struct pstack_index){.procs = procs, .ixs = ixs};
	lower.len = process__snap_len(&l->c->pr);
	if (!v || !marks || part_new(&lower) || ptab__by_address(ixs, procs, n))
		goto cleanup;
	index_halves(&lower, &upper, &l2);
	for (i = 0; i < SKIP_COUNT; i++)
		l->skipped[i] += l2.skipped[i];
	l->gone |= l2.gone;
	/* The refs close the gap between the halves only when the lower half skipped some. */
	if (lower.kept != upper.lo)
		memmove(v + lower.kept, v + upper.lo, upper.kept * sizeof(*v));
	c = lower.kept + upper.kept;
	if (radix__sort(v, c, sizeof(*v)))
		goto cleanup;
	out->v = v;
	out->kept = c;
	out->marks = marks;
	out->nmarks = nmarks;
	v = NULL;
	marks = NULL;
	rc = 0;
cleanup:
	part_free(&lower);
	free(v);
	bigmem__unmap(marks, nmarks * sizeof(*marks));
	return rc;
}

void pstack_index__free(struct pstack_index *x)
{
	free(x->v);
	bigmem__unmap(x->marks, x->nmarks * sizeof(*x->marks));
	*x = (struct pstack_index){0};
}
