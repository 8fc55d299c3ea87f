/* `extrospect heap PID`'s reading: the memory of every Erlang process, read from the process
 * table from outside: each Process in one copy, its fields checked (process__snap_memory),
 * sorted by one column; and the names of the rows shown. Nothing is sent to the VM and nothing
 * in it is allocated or stopped. Owns: the reading and the columns' names; the command is
 * heap_cmd.c, printing heap_print.c, --watch heap_watch.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "heap.h"
#include "jitmap.h"
#include "names.h"
#include "readers.h"

static const char *const col_names[HEAP_COL_COUNT] = {"total", "heap", "old",  "frag",	"stack",
						      "bin",   "msgq", "reds", "memory"};

const char *heap__col_name(enum heap_col c)
{
	return (unsigned)c < HEAP_COL_COUNT ? col_names[c] : "?";
}

int heap__col_of(const char *name)
{
	int c;

	for (c = 0; c < HEAP_COL_COUNT; c++) {
		if (strcmp(name, col_names[c]) == 0)
			return c;
	}
	return -1;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void set(struct heap_row *r, enum heap_col c, uint64_t v)
{
	r->val[c] = v;
	r->known |= 1u << c;
}

/* The columns of one row from its checked snap; a column whose fields are unknown or failed
 * their check stays unknown (printed '?', JSON null), never 0. */
static void columns(struct heap_ctx *c, struct heap_row *r, struct process_snap *s)
{
	uint64_t old = 0, heap = s->heap_sz * 8;
	enum snap_mem_fault f = process__snap_memory(s);

	if (f)
		c->faults[f]++;
	if (s->have_old)
		old = (s->old_hend - s->old_heap);
	set(r, HEAP_COL_HEAP, heap);
	if (s->have_sizes)
		set(r, HEAP_COL_STACK, s->v.hend - s->v.stop);
	if (s->have_old)
		set(r, HEAP_COL_OLD, old);
	if (s->have_mbuf)
		set(r, HEAP_COL_FRAG, s->mbuf_sz * 8);
	if (s->have_old && s->have_mbuf) {
		set(r, HEAP_COL_TOTAL, heap + old + s->mbuf_sz * 8);
		/* erts_process_memory (B/erl_process_dump.c 25:115, 29:117): an abandoned heap
		 * counts as well as the fragment the process runs on meanwhile. */
		set(r, HEAP_COL_MEMORY,
		    (uint64_t)c->t->off[XP_OFF_P_SIZEOF].value + r->val[HEAP_COL_TOTAL] +
			(s->v.abandoned_heap ? s->v.hend - s->v.heap : 0));
	}
	if (s->have_vheap)
		set(r, HEAP_COL_BIN, (s->vheap + s->old_vheap) * 8);
	if (s->have_msg_len)
		set(r, HEAP_COL_MSGQ, (uint64_t)s->msg_len);
	if (s->have_reds)
		set(r, HEAP_COL_REDS, s->reds);
}

static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct heap_row *x = a, *y = b;
	enum heap_col k = *(const enum heap_col *)arg;
	bool kx = x->known & (1u << k), ky = y->known & (1u << k);

	if (kx != ky)
		return kx ? -1 : 1; /* unknown values last */
	if (kx && x->val[k] != y->val[k])
		return x->val[k] > y->val[k] ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

static void add_row(struct heap_ctx *c, struct heap_row *r)
{
	int k;

	c->running += r->s.have_state && process__is_running(r->s.state);
	for (k = 0; k < HEAP_COL_COUNT; k++) {
		if (r->known & (1u << k))
			c->sum[k] += r->val[k];
	}
}

/* The row's copy of what the output shows of s. */
static void slim(struct heap_proc *p, const struct process_snap *s)
{
	*p = (struct heap_proc){
	    .addr = s->v.addr,
	    .pid = s->v.pid,
	    .i = s->i,
	    .heap_used = s->have_sizes ? (s->v.htop - s->v.heap) / 8 : 0,
	    .old_used = s->have_old ? (s->old_htop - s->old_heap) / 8 : 0,
	    .vheap_limit = s->vheap_sz * 8,
	    .reg = s->v.reg,
	    .mfa = {s->v.mfa[0], s->v.mfa[1], s->v.mfa[2]},
	    .dict = s->v.dict,
	    .ident_copied = s->v.ident_copied,
	    .state = s->state,
	    .have_state = s->have_state,
	    .have_i = s->have_i,
	    .have_old = s->have_old,
	    .have_used = s->have_sizes,
	    .have_vheap = s->have_vheap,
	};
}

static void swap_rows(struct heap_row *a, struct heap_row *b)
{
	struct heap_row t = *a;

	*a = *b;
	*b = t;
}

/* heap -n N: rows[0..nrows) is a binary heap of the top N so far, the last of them at rows[0]
 * (cmp_rows is a total order: the N kept are the first N of a full sort). The new row is at
 * rows[nrows] (rows[top] once full). */
static void top_add(struct heap_ctx *c)
{
	size_t i = c->nrows, k;

	if (c->nrows == c->top) {
		if (cmp_rows(&c->rows[c->top], &c->rows[0], &c->sort) >= 0)
			return; /* after the last one kept */
		c->rows[0] = c->rows[c->top];
		for (i = 0; (k = 2 * i + 1) < c->top; i = k) { /* sift down */
			if (k + 1 < c->top && cmp_rows(&c->rows[k + 1], &c->rows[k], &c->sort) > 0)
				k++;
			if (cmp_rows(&c->rows[k], &c->rows[i], &c->sort) <= 0)
				break;
			swap_rows(&c->rows[i], &c->rows[k]);
		}
		return;
	}
	for (c->nrows++; i && cmp_rows(&c->rows[i], &c->rows[(i - 1) / 2], &c->sort) > 0;
	     i = (i - 1) / 2) /* sift up */
		swap_rows(&c->rows[i], &c->rows[(i - 1) / 2]);
}

/* Keep the Process copied at proc (rc: its read) when plausible and in its slot ix. */
static void keep(struct heap_ctx *c, uint64_t proc, uint32_t ix, const uint8_t *buf, size_t len,
		 int rc)
{
	struct heap_row *r = &c->rows[c->top ? c->nrows : c->n];
	struct process_snap s;

	if (!rc)
		rc = process__parse_snap(&c->pr, proc, buf, len, &s);
	if (rc) {
		c->skipped[rc == -EINVAL ? HEAP_SKIP_INVALID : HEAP_SKIP_UNREADABLE]++;
		return;
	}
	if (c->pr.pids.known && !ptab__pid_in_slot(&c->pr.pids, s.v.pid, ix)) {
		c->skipped[HEAP_SKIP_WRONG_SLOT]++;
		return;
	}
	columns(c, r, &s); /* checks s's memory fields first */
	slim(&r->s, &s);
	r->order = process__pid_data(&c->pr.pids, s.v.pid);
	add_row(c, r);
	c->n++;
	if (c->top)
		top_add(c);
	else
		c->nrows = c->n;
}

/* Read every Process once, MEM_MANY_BATCH at a time in one process_vm_readv, in address order
 * so that neighbours share one copy: 100,000 processes are 100 system calls, not 100,000. */
static int read_all(struct heap_ctx *c, uint32_t *ixs, uint64_t *procs, size_t n)
{
	size_t len = process__snap_len(&c->pr), i, k, b;
	struct mem_req *q = calloc(MEM_MANY_BATCH, sizeof(*q));
	uint8_t *bufs = malloc((size_t)MEM_MANY_BATCH * len);

	c->rows = calloc(c->top && c->top < n ? c->top + 1 : n ? n : 1, sizeof(*c->rows));
	if (c->top >= n)
		c->top = 0; /* every row is kept anyway */
	if (!c->rows || !q || !bufs || ptab__by_address(ixs, procs, n)) {
		free(q);
		free(bufs);
		return -ENOMEM;
	}
	for (i = 0; i < n && !*c->stop; i += b) {
		b = n - i < MEM_MANY_BATCH ? n - i : MEM_MANY_BATCH;
		for (k = 0; k < b; k++) /* lent: parsed where the reader copied them */
			q[k] = (struct mem_req){
			    .addr = procs[i + k], .buf = bufs + k * len, .len = len, .lend = true};
		mem__read_many(c->t->mem, q, b);
		for (k = 0; k < b; k++)
			keep(c, procs[i + k], ixs[i + k], q[k].data, len,
			     !procs[i + k] || (procs[i + k] & 7) ? -EINVAL : q[k].rc);
	}
	free(q);
	free(bufs);
	qsort_r(c->rows, c->nrows, sizeof(*c->rows), cmp_rows, &c->sort);
	return 0;
}

void heap__names(const struct heap_ctx *c, const struct heap_row *r, struct heap_names *n)
{
	const struct jit_range *jr;

	process__pid_text(&c->pr.pids, r->s.pid, n->pid, sizeof(n->pid));
	memset(&n->v, 0, sizeof(n->v));
	n->v.addr = r->s.addr;
	n->v.pid = r->s.pid;
	n->v.reg = r->s.reg;
	memcpy(n->v.mfa, r->s.mfa, sizeof(n->v.mfa));
	n->v.dict = r->s.dict;
	n->v.ident_copied = r->s.ident_copied;
	/* Neither registered nor with a dictionary when copied: named from the copy, with no
	 * read (-n all of a million parked processes); else its initial call and dictionary
	 * pointer come from the copy, the rest is read now. */
	if (!process__identity_copied(&c->pr, &n->v))
		process__read_identity(&c->pr, &n->v);
	n->cur[0] = '\0';
	/* A running process's i is stale: where it last stopped, not where it is. */
	if (!r->s.have_i || !r->s.have_state || process__is_running(r->s.state) || !c->t->jit)
		return;
	jr = jitmap__lookup(c->t->jit, r->s.i);
	if (jr && jitmap__frame_name(jr, n->cur, sizeof(n->cur)))
		names__display_inplace(n->cur, sizeof(n->cur), c->pr.erlang_names);
}

int heap__setup(struct heap_ctx *c, char *err, size_t errlen)
{
	char why[256];
	int rc;

	/* Before the process reader: a scanned table makes pids decodable (OTP 28+, no agent). */
	rc = ptab__locate(c->t, &c->ptab, why, sizeof(why));
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		snprintf(err, errlen, "the process table: %s", why);
		return TARGET_EUNSUPPORTED;
	}
	if (process__reader(&c->pr, c->t)) {
		snprintf(err, errlen, "the Process layout of this VM is unknown");
		return TARGET_EUNSUPPORTED;
	}
	c->pr.erlang_names = c->o->erlang_names;
	/* The rows' names (registered names, initial calls, dictionary keys) repeat: -n all of
	 * a million processes reads each atom once, not a million times. */
	return c->pr.have_atoms ? atom__cache_on(&c->pr.atoms) : 0;
}

int heap__read(struct heap_ctx *c)
{
	uint64_t gone = mem__failures(c->t->mem, MEM_FAIL_GONE);
	uint32_t *ixs = NULL;
	uint64_t *procs = NULL;
	double start = now_ms();
	size_t n = 0;
	int rc;

	free(c->rows);
	c->rows = NULL;
	c->n = c->nrows = 0;
	c->running = 0;
	memset(c->skipped, 0, sizeof(c->skipped));
	memset(c->faults, 0, sizeof(c->faults));
	memset(c->sum, 0, sizeof(c->sum));
	if (!(rc = ptab__collect(&c->ptab, c->t->mem, &ixs, &procs, &n, &c->st)))
		rc = read_all(c, ixs, procs, n);
	c->ms = now_ms() - start;
	free(ixs);
	free(procs);
	/* A read that found the VM gone: what was read before stands, marked partial. */
	if (!rc && mem__failures(c->t->mem, MEM_FAIL_GONE) > gone)
		rc = TARGET_EGONE;
	return rc;
}
