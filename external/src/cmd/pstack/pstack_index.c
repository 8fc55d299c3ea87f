/* pstack --all's index: every Process of the process table once, in address order (neighbours
 * are copied in large ranges), for its pid, to list them in pid order (a radix sort), and for
 * its stack's bounds; in two halves, by two threads when a second reader can be had. Bad entries
 * are skipped and counted by reason. Does not own: the listing that follows (pstack_procs.c).
 * See pstack_list.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

/* The index's copy of one Process: its ref and marks, or why it is skipped. */
static int index_one(const struct process_reader *pr, const uint8_t *buf, size_t len, uint64_t addr,
		     uint32_t ix, struct ref *r, struct process_marks *f)
{
	int rc = process__parse_marks(pr, addr, buf, len, f);

	if (rc)
		return rc;
	if (pr->pids.known && !ptab__pid_in_slot(&pr->pids, f->pid, ix))
		return NOT_IN_SLOT;
	r->order = process__pid_data(&pr->pids, f->pid);
	return 0;
}

/* A part of the index, v[lo, hi), read through mem with q and snaps (MEM_MANY_BATCH requests
 * of len bytes): those kept are moved to v[lo, lo + kept), the others counted in l. */
struct index_part {
	struct listing *l;
	struct mem *mem;
	struct mem_req *q;
	uint8_t *snaps;
	size_t len, lo, hi, kept;
	struct ref *v;
	struct process_marks *f;
};

/* A part's buffers: q and snaps for MEM_MANY_BATCH requests of len bytes. */
static int part_new(struct index_part *p)
{
	p->q = calloc(MEM_MANY_BATCH, sizeof(*p->q));
	p->snaps = malloc((size_t)MEM_MANY_BATCH * p->len);
	return p->q && p->snaps ? 0 : -ENOMEM;
}

static void part_free(struct index_part *p)
{
	free(p->q);
	free(p->snaps);
}

static void *index_part(void *arg)
{
	struct index_part *p = arg;
	struct ref *v = p->v;
	size_t i, k, m, c = p->lo;
	int rc;

	for (i = p->lo; i < p->hi && !*p->l->c->stop && !p->l->gone; i += m) {
		m = p->hi - i < MEM_MANY_BATCH ? p->hi - i : MEM_MANY_BATCH;
		for (k = 0; k < m; k++) /* lent: parsed where the reader copied them */
			p->q[k] = (struct mem_req){.addr = v[i + k].addr,
						   .buf = p->snaps + k * p->len,
						   .len = p->len,
						   .lend = true};
		mem__read_many(p->mem, p->q, m);
		for (k = 0; k < m; k++) {
			rc = p->q[k].rc;
			v[c] = v[i + k];
			if (!rc)
				rc = index_one(&p->l->c->pr, p->q[k].data, p->len, v[c].addr,
					       v[c].ix, &v[c], &p->f[c]);
			/* Bounds that disagree: a copy taken mid-collection. Read it again
			 * alone, a few times, before skipping a live process. */
			for (int t = 0; rc == -EINVAL && t < PSTACK_REREADS; t++) {
				uint8_t *buf = p->snaps + k * p->len;

				rc = mem__read(p->mem, v[c].addr, buf, p->len);
				if (!rc)
					rc = index_one(&p->l->c->pr, buf, p->len, v[c].addr,
						       v[c].ix, &v[c], &p->f[c]);
			}
			if (rc) {
				pstack_index__skip(p->l, rc);
			} else {
				v[c].fi = (uint32_t)c; /* its marks stay there */
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

int pstack_index__all(struct listing *l, uint32_t *ixs, uint64_t *procs, size_t n, struct ref **out,
		      struct process_marks **firsts, size_t *kept)
{
	struct ref *v = malloc((n ? n : 1) * sizeof(*v));
	struct process_marks *f = malloc((n ? n : 1) * sizeof(*f));
	struct listing l2 = {.c = l->c};
	struct index_part lower = {.l = l, .mem = l->c->t->mem, .v = v, .f = f};
	struct index_part upper;
	size_t i, c, nv = 0;
	int rc = -ENOMEM;

	lower.len = process__snap_len(&l->c->pr);
	if (!v || !f || part_new(&lower) || ptab__by_address(ixs, procs, n))
		goto cleanup;
	for (i = 0; i < n; i++) {
		if (!procs[i] || (procs[i] & 7))
			l->skipped[SKIP_INVALID]++;
		else
			v[nv++] = (struct ref){.addr = procs[i], .ix = ixs[i]};
	}
	lower.hi = nv;
	index_halves(&lower, &upper, &l2);
	for (i = 0; i < SKIP_COUNT; i++)
		l->skipped[i] += l2.skipped[i];
	l->gone |= l2.gone;
	/* Each ref names its marks where its half wrote them (f keeps the lower half's gap), and
	 * the refs close that gap only when the lower half skipped some: a million processes'
	 * marks and refs moved onto themselves were 44 MB copied, 4 % of a listing's CPU. */
	if (lower.kept != upper.lo)
		memmove(v + lower.kept, v + upper.lo, upper.kept * sizeof(*v));
	c = lower.kept + upper.kept;
	if (radix__sort(v, c, sizeof(*v)))
		goto cleanup;
	*out = v;
	*firsts = f;
	*kept = c;
	v = NULL;
	f = NULL;
	rc = 0;
cleanup:
	part_free(&lower);
	free(v);
	free(f);
	return rc;
}
