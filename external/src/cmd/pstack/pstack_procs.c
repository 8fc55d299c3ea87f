/* pstack --all: every process of the process table, read from outside in batches. First the
 * index (pstack_index.c): every Process once, in address order, for its pid (the listing's
 * order) and its stack's bounds. Then, batch by batch in pid order, the stacks of those parked
 * at the index, packed in an arena, and each Process once again after its stack: that copy is
 * what the row shows, and the stack stands when it agrees with the index's (the same stack and
 * heap bounds, and the same digest of its pid, frame pointer, resume point and reductions; not
 * running). One that moved meanwhile is read again in a second round of the batch, Process,
 * stack and Process (one that moved still is read alone, then reported as changed). A process
 * on a scheduler is not walked here: its stop is stale (the scheduler snapshot has its stack). A
 * second thread reads batches ahead of the rows. A million processes cost a few thousand system
 * calls and 60 bytes each (the table's 12, the index's 48). See pstack_list.h; the rows are
 * written by pstack_rows.c. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pstack_list.h"

#define STACK_ARENA (4u << 20) /* the stacks of one batch; a larger one is read alone */

/* One process of the batch being read: 80 bytes, not a snap (5 KB of names): a thousand slots
 * of those were a thousand pages touched a batch. */
struct slot {
	const struct index_mark *f; /* what the index kept of its copy */
	uint64_t addr;		    /* its Process */
	uint32_t ix;		    /* its slot in the process table */
	int rc;		 /* 0, or why it is skipped (NOT_IN_SLOT, -EINVAL, a read error) */
	uint64_t *words; /* its stack in the arena; NULL: no stack, or read alone */
	size_t bytes;
	uint64_t stop, heap, hend; /* retry: the stack's bounds as the batch's copy says */
	const uint8_t *data;	   /* the batch's copy of its Process (in bounce or snaps) */
	bool span, complete, walk;
	bool retry; /* moved since the index: Process, stack and Process read again */
	int stack_rc, again_rc;
};

struct batch {
	struct mem_req *q;
	struct slot *slots;
	uint8_t *snaps, *again; /* MEM_MANY_BATCH copies of len bytes each */
	uint8_t *bounce;	/* the Processes copied in ranges, parsed there (lent) */
	uint64_t *arena;
	size_t len, used; /* used: bytes of the arena taken in this batch */
	uint32_t *qk;	  /* the slot of each request */
	const struct pstack_index *x;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int batch_new(struct batch *b, const struct process_reader *pr)
{
	b->len = process__snap_len(pr);
	b->q = calloc(MEM_MANY_BATCH, sizeof(*b->q));
	b->slots = calloc(MEM_MANY_BATCH, sizeof(*b->slots));
	b->snaps = malloc((size_t)MEM_MANY_BATCH * b->len);
	b->again = malloc((size_t)MEM_MANY_BATCH * b->len);
	b->arena = malloc(STACK_ARENA);
	b->qk = calloc(MEM_MANY_BATCH, sizeof(*b->qk));
	b->bounce = malloc(MEM_BOUNCE_BYTES);
	return b->q && b->slots && b->snaps && b->again && b->arena && b->qk && b->bounce ? 0
											  : -ENOMEM;
}

static void batch_free(struct batch *b)
{
	free(b->q);
	free(b->slots);
	free(b->snaps);
	free(b->again);
	free(b->arena);
	free(b->qk);
	free(b->bounce);
}

/* On a scheduler, in a collection or free as this copy says: its stack is not to be read. */
static bool busy(const struct process_marks *b)
{
	return process__is_running(b->state) || (b->state & (XP_PSFLG_GC | XP_PSFLG_FREE));
}

/* Did the process move between the two reads (scheduled, garbage collected, exited)? Its
 * reductions count only grows when it runs. */
static bool moved(const struct process_marks *a, const struct process_marks *b)
{
	return a->pid != b->pid || a->stop != b->stop || a->hend != b->hend || a->heap != b->heap ||
	       a->fp != b->fp || a->i != b->i ||
	       (a->have_reds && b->have_reds && a->reds != b->reds) || busy(b);
}

const char *pstack_procs__not_walked(bool have_state, uint32_t state)
{
	if (!have_state)
		return "state unknown";
	if (state & XP_PSFLG_FREE)
		return "not read: free";
	if (process__is_running(state))
		return "not read: running";
	if (state & XP_PSFLG_GC)
		return "not read: garbage collecting";
	return NULL;
}

static const char *not_walked(const struct process_snap *s)
{
	return pstack_procs__not_walked(s->have_state, s->state);
}

/* Each slot from the index: its Process, what the index kept of it, and whether its stack is
 * to be read. */
static void from_index(struct batch *b, const struct ref *r, size_t m)
{
	for (size_t k = 0; k < m; k++) {
		const struct index_mark *f = &b->x->marks[r[k].at];

		b->slots[k] = (struct slot){.f = f,
					    .addr = b->x->procs[r[k].at],
					    .ix = b->x->ixs[r[k].at],
					    .walk = pstack_index__walkable(f)};
	}
}

/* Whether a slot moved since the index (or is walkable now and was not), seen its copy just
 * read: then it is read again, a second round from that copy. */
static bool mark_moved(struct slot *s, const struct process_marks *seen)
{
	bool walk = !pstack_procs__not_walked(seen->have_state, seen->state);

	s->retry = s->walk ? !pstack_index__same(s->f, seen) || busy(seen) : walk;
	if (!s->retry)
		return false;
	s->walk = walk;
	s->stop = seen->stop;
	s->heap = seen->heap;
	s->hend = seen->hend;
	s->words = NULL;
	s->span = false;
	s->stack_rc = 0;
	return true;
}

/* Each Process of the batch in one copy, after the stacks, kept for its row (lent, in the
 * batch's bounce): checked against its slot in the table and against the index's copy. Returns
 * how many moved. */
static size_t read_snaps(const struct process_reader *pr, struct mem *mem, struct batch *b,
			 size_t m)
{
	struct process_marks seen;
	size_t k, n = 0;

	for (k = 0; k < m; k++)
		b->q[k] = (struct mem_req){.addr = b->slots[k].addr,
					   .buf = b->snaps + k * b->len,
					   .len = b->len,
					   .lend = true};
	mem__read_many_at(mem, b->q, m, b->bounce);
	for (k = 0; k < m; k++) {
		struct slot *s = &b->slots[k];
		int rc = b->q[k].rc;

		s->data = b->q[k].data;
		if (!rc)
			rc = process__parse_marks(pr, s->addr, s->data, b->len, &seen);
		if (!rc && pr->pids.known && !ptab__pid_in_slot(&pr->pids, seen.pid, s->ix))
			rc = NOT_IN_SLOT;
		s->rc = rc;
		if (!rc)
			n += mark_moved(s, &seen);
	}
	return n;
}

/* The stacks of the parked processes of the batch, packed in the arena in one read: their
 * bounds from the index's copy, or in the second round (retry) from the copy read since. */
static void read_stacks(struct mem *mem, struct batch *b, size_t m, bool retry)
{
	size_t k, n = 0;

	for (k = 0; k < m; k++) {
		struct slot *s = &b->slots[k];
		uint64_t stop = retry ? s->stop : s->f->stop;

		if (s->retry != retry || !s->walk ||
		    !(s->span = pstack__stack_span(stop, retry ? s->heap : s->f->heap,
						   retry ? s->hend : s->f->hend, &s->bytes,
						   &s->complete)))
			continue;
		if (s->bytes > STACK_ARENA - b->used)
			continue; /* read alone when walked */
		s->words = b->arena + b->used / 8;
		b->q[n] = (struct mem_req){.addr = stop, .buf = s->words, .len = s->bytes};
		b->qk[n++] = (uint32_t)k;
		b->used += (s->bytes + 7) & ~(size_t)7;
	}
	mem__read_many(mem, b->q, n);
	for (k = 0; k < n; k++)
		b->slots[b->qk[k]].stack_rc = b->q[k].rc;
}

/* The second round's Processes again, after their stacks: did they move meanwhile? */
static void read_again(struct mem *mem, struct batch *b, size_t m)
{
	size_t k, n = 0;

	for (k = 0; k < m; k++) {
		if (!b->slots[k].retry || !b->slots[k].walk)
			continue;
		b->q[n] = (struct mem_req){
		    .addr = b->slots[k].addr, .buf = b->again + k * b->len, .len = b->len};
		b->qk[n++] = (uint32_t)k;
	}
	mem__read_many(mem, b->q, n);
	for (k = 0; k < n; k++)
		b->slots[b->qk[k]].again_rc = b->q[k].rc;
}

/* The first walk of row (the batch's copy), from what the batch read. */
static enum estack_end first_walk(struct listing *l, struct slot *s, const struct process_snap *row,
				  struct pstack_frames *fr)
{
	fr->n = 0;
	if (!s->span)
		return ESTACK_END_NO_BOTTOM;
	if (!s->words)
		return pstack__process_stack(l->c, row, fr);
	if (s->stack_rc)
		return ESTACK_END_TRUNCATED;
	return pstack__walk_words(l->c, row, s->words, s->bytes, s->complete, fr);
}

static const char *end_text(struct listing *l, enum estack_end end)
{
	l->walked++;
	l->ends[end]++;
	return end == ESTACK_END_BOTTOM ? "complete" : erlang_stack__end_name(end);
}

/* The stack of slot k, row its copy after the stack, checked against it (the first round's
 * against the index's copy); one that moved in the second round too is read again alone, once,
 * into row. Returns the stack status text. */
static const char *stack_of(struct listing *l, struct batch *b, size_t k, struct process_snap *row,
			    struct pstack_frames *fr)
{
	struct slot *s = &b->slots[k];
	struct process_marks was, now;
	struct process_snap again;
	const char *why;
	enum estack_end end;

	fr->n = 0;
	if ((why = not_walked(row))) {
		l->running += process__is_running(row->state);
		return why;
	}
	if (!s->retry) /* it agrees with the index's copy, its stack read in between */
		return end_text(l, first_walk(l, s, row, fr));
	end = first_walk(l, s, row, fr);
	process__snap_marks(row, &was);
	if (!s->again_rc &&
	    !process__parse_marks(&l->c->pr, s->addr, b->again + k * b->len, b->len, &now) &&
	    !moved(&was, &now))
		return end_text(l, end);
	/* It moved: once more, alone, from a fresh copy. */
	if (process__read_snap(&l->c->pr, s->addr, row) == 0 &&
	    ptab__pid_in_slot(&l->c->pr.pids, row->v.pid, s->ix)) {
		if ((why = not_walked(row))) {
			fr->n = 0;
			l->running += process__is_running(row->state);
			return why;
		}
		end = pstack__process_stack(l->c, row, fr);
		process__snap_marks(row, &was);
		if (process__read_snap(&l->c->pr, s->addr, &again) == 0) {
			process__snap_marks(&again, &now);
			if (!moved(&was, &now))
				return end_text(l, end);
		}
	}
	fr->n = 0;
	l->changed++;
	return "not read: changed while reading";
}

/* Read the processes r[0..m), one batch, through mem: their stacks and Processes, and those that
 * moved meanwhile once more. Reads nothing of l but the process reader. */
static void read_batch(const struct listing *l, struct mem *mem, struct batch *b,
		       const struct ref *r, size_t m)
{
	b->used = 0;
	from_index(b, r, m);
	read_stacks(mem, b, m, false);
	if (read_snaps(&l->c->pr, mem, b, m)) {
		read_stacks(mem, b, m, true);
		read_again(mem, b, m);
	}
}

/* Walk and write the processes of a batch read by read_batch, each parsed again into row from
 * the batch's copy. Returns how many were listed. */
static size_t write_batch(struct listing *l, struct batch *b, size_t m, struct process_snap *row,
			  struct pstack_frames *fr)
{
	size_t k, listed = 0;
	int rc;

	for (k = 0; k < m && !l->gone; k++) {
		const char *stack;

		rc = b->slots[k].rc;
		if (!rc) /* as read_snaps parsed it: the same bytes */
			rc = process__parse_snap(&l->c->pr, b->slots[k].addr, b->slots[k].data,
						 b->len, row);
		if (rc) {
			pstack_index__skip(l, rc);
			continue;
		}
		stack = stack_of(l, b, k, row, fr);
		pstack_rows__emit(l, row, stack, fr);
		listed++;
	}
	return listed;
}

/* The batches read by a second thread ahead of this one, which walks and writes the rows: the
 * kernel's copies then overlap the rows' writing. A batch that thread has not begun when its
 * rows are due is read here instead, so that neither waits while there is reading to do (on two
 * cores with the VM busy on one, a waiting thread's core is seldom handed to the other). That
 * thread reads only through its own struct mem (its scratch and counters), and only the batch it
 * claimed; this one reads through c->t->mem (names, dictionaries, processes read alone). */
#define AHEAD_SLOTS 3 /* batches in flight: the one written, and two read ahead */

struct ahead {
	const struct listing *l;
	struct mem *mem;
	struct batch b[AHEAD_SLOTS];
	bool done[AHEAD_SLOTS]; /* the batch in this slot is read */
	const struct ref *v;
	size_t n, nb;	      /* processes, batches */
	size_t next, written; /* the first batch no thread has claimed; batches written */
	bool quit;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

static size_t batch_len(size_t n, size_t bi)
{
	size_t i = bi * MEM_MANY_BATCH;

	return n - i < MEM_MANY_BATCH ? n - i : MEM_MANY_BATCH;
}

static void ahead_read(struct ahead *a, struct mem *mem, size_t bi)
{
	read_batch(a->l, mem, &a->b[bi % AHEAD_SLOTS], a->v + bi * MEM_MANY_BATCH,
		   batch_len(a->n, bi));
}

static void *ahead_thread(void *arg)
{
	struct ahead *a = arg;
	size_t bi;

	pthread_mutex_lock(&a->mu);
	while (!a->quit && a->next < a->nb) {
		if (a->next >= a->written + AHEAD_SLOTS) { /* every slot is taken */
			pthread_cond_wait(&a->cv, &a->mu);
			continue;
		}
		bi = a->next++;
		pthread_mutex_unlock(&a->mu);
		ahead_read(a, a->mem, bi);
		pthread_mutex_lock(&a->mu);
		a->done[bi % AHEAD_SLOTS] = true;
		pthread_cond_broadcast(&a->cv);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* Batch bi: read here when no thread claimed it yet, else once it is read (meanwhile, a batch
 * after it no thread claimed yet is read here: this thread does not wait while there is reading
 * to do); then written. */
static size_t ahead_write(struct ahead *a, struct listing *l, size_t bi, struct process_snap *row,
			  struct pstack_frames *fr)
{
	size_t slot = bi % AHEAD_SLOTS, listed, other;
	bool mine;

	pthread_mutex_lock(&a->mu);
	if ((mine = a->next == bi))
		a->next++;
	while (!mine && !a->done[slot]) {
		if (a->next < a->nb && a->next < a->written + AHEAD_SLOTS) {
			other = a->next++;
			pthread_mutex_unlock(&a->mu);
			ahead_read(a, l->c->t->mem, other);
			pthread_mutex_lock(&a->mu);
			a->done[other % AHEAD_SLOTS] = true;
			pthread_cond_broadcast(&a->cv);
			continue;
		}
		pthread_cond_wait(&a->cv, &a->mu);
	}
	pthread_mutex_unlock(&a->mu);
	if (mine)
		ahead_read(a, l->c->t->mem, bi);
	listed = write_batch(l, &a->b[slot], batch_len(a->n, bi), row, fr);
	pthread_mutex_lock(&a->mu);
	a->done[slot] = false;
	a->written = bi + 1;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	return listed;
}

/* The listing of v[0..n) with the batches read ahead. false when that cannot start (no second
 * reader, memory, or thread): nothing was listed, list them in turn. */
static bool list_ahead(struct listing *l, const struct ref *v, size_t n,
		       const struct pstack_index *x, struct process_snap *row,
		       struct pstack_frames *fr, size_t *kept)
{
	struct ahead a = {.l = l, .v = v, .n = n, .nb = (n + MEM_MANY_BATCH - 1) / MEM_MANY_BATCH};
	pthread_t th;
	bool started = false;
	size_t i;

	pthread_mutex_init(&a.mu, NULL);
	pthread_cond_init(&a.cv, NULL);
	if (mem__open_twin(&a.mem, l->c->t->mem))
		goto cleanup;
	for (i = 0; i < AHEAD_SLOTS; i++) {
		if (batch_new(&a.b[i], &l->c->pr))
			goto cleanup;
		a.b[i].x = x;
	}
	if (pthread_create(&th, NULL, ahead_thread, &a))
		goto cleanup;
	started = true;
	for (i = 0; i < a.nb && !*l->c->stop && !l->gone; i++)
		*kept += ahead_write(&a, l, i, row, fr);
	pthread_mutex_lock(&a.mu);
	a.quit = true;
	pthread_cond_broadcast(&a.cv);
	pthread_mutex_unlock(&a.mu);
	pthread_join(th, NULL);
	mem__add_failures(l->c->t->mem, a.mem);
cleanup:
	for (i = 0; i < AHEAD_SLOTS; i++)
		batch_free(&a.b[i]);
	mem__free(a.mem);
	pthread_cond_destroy(&a.cv);
	pthread_mutex_destroy(&a.mu);
	return started;
}

int pstack__processes(struct pstack_ctx *c, FILE *f, struct json *j, char *err, size_t errlen)
{
	struct listing l = {.c = c, .f = f, .j = j};
	struct pstack_frames *fr = malloc(sizeof(*fr));
	struct process_snap *row = malloc(sizeof(*row)); /* the one being written */
	struct batch b = {0};
	struct ptab_stats st;
	uint32_t *ixs = NULL;
	uint64_t *procs = NULL;
	struct pstack_index x = {0};
	double start = now_ms();
	size_t n = 0, kept = 0, i, m;
	int rc;

	if (!fr || !row || (rc = pstack_rows__init(&l)) || (rc = batch_new(&b, &c->pr))) {
		rc = -ENOMEM;
		goto cleanup;
	}
	if ((rc = ptab__collect(&c->ptab, c->t->mem, &ixs, &procs, &n, &st)))
		goto cleanup;
	if ((rc = pstack_index__all(&l, ixs, procs, n, &x)))
		goto cleanup;
	b.x = &x;
	if (j) {
		json__key(j, "processes");
		json__array(j);
	} else {
		fprintf(f, "\n== processes ==\n");
	}
	if (!list_ahead(&l, x.v, x.kept, &x, row, fr, &kept)) {
		for (i = 0; i < x.kept && !*c->stop && !l.gone; i += m) {
			m = x.kept - i < MEM_MANY_BATCH ? x.kept - i : MEM_MANY_BATCH;
			read_batch(&l, c->t->mem, &b, x.v + i, m);
			kept += write_batch(&l, &b, m, row, fr);
		}
	}
	if (j)
		json__end_array(j);
	pstack_rows__summary(&l, &st, kept, now_ms() - start);
	if (l.gone) { /* what was read is written, the document complete; exit code 7 */
		fprintf(stderr,
			"extrospect: the VM exited while it was read: %zu processes listed\n",
			kept);
		rc = TARGET_EGONE;
	}
cleanup:
	if (rc == -ESRCH)
		rc = TARGET_EGONE;
	if (rc && rc != TARGET_EGONE)
		snprintf(err, errlen, "--all: %s", strerror(-rc));
	pstack_rows__free(&l);
	batch_free(&b);
	pstack_index__free(&x);
	free(ixs);
	free(procs);
	free(row);
	free(fr);
	return rc;
}
