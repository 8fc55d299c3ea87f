/* pstack --all: every process of the process table, read from outside. The table is read in
 * large chunks, each Process in one copy, its stack in one more, and the Process once again
 * after the stack to make sure it did not run meanwhile (a process that did is read again, then
 * reported as changed). Atom texts are cached: initial calls repeat across processes. A process
 * on a scheduler is not walked here: its stop is stale (the scheduler snapshot has its stack).
 * Bad entries are skipped and counted by reason. See pstack.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "names.h"
#include "pstack.h"
#include "report/report.h"

#define ATOM_SLOTS 16384 /* atom text cache, open addressing */
#define READ_TRIES 2

enum skip_reason {
	SKIP_UNREADABLE = 0, /* the Process could not be read */
	SKIP_INVALID,	     /* not a plausible live Process */
	SKIP_WRONG_SLOT,     /* its pid does not belong in the slot it was found in */
	SKIP_COUNT
};
static const char *const skip_names[SKIP_COUNT] = {"unreadable", "invalid", "wrong_slot"};

struct atom_slot {
	uint64_t term;
	char *text;
};

struct entry {
	struct process_snap s;
	uint32_t ix;
	uint64_t order;
};

struct listing {
	struct pstack_ctx *c;
	FILE *f;
	struct json *j;
	struct atom_slot *atoms;
	uint64_t skipped[SKIP_COUNT];
	uint64_t walked, running, changed, ends[ESTACK_END_COUNT];
	uint64_t pdict[PDICT_RESULT_COUNT]; /* '$initial_call' reads by result */
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Quoted atom text, cached by term; "" when unreadable (not cached: it may be a torn read). */
static const char *atom(struct listing *l, uint64_t term)
{
	struct atom_slot *s = &l->atoms[((term >> 6) * 2654435761u) % ATOM_SLOTS];
	char raw[XP_ATOM_MAX_BYTES + 1], q[XP_ATOM_MAX_BYTES + 4];

	if (s->text && s->term == term)
		return s->text;
	if (!l->c->pr.have_atoms || atom__text(&l->c->pr.atoms, term, raw, sizeof(raw)))
		return "";
	process__atom_quoted(raw, q, sizeof(q));
	free(s->text);
	s->term = term;
	s->text = strdup(q);
	return s->text ? s->text : "";
}

/* Registered name, initial call and proc_lib's '$initial_call', as names.h shows them. */
static void identity(struct listing *l, const struct process_snap *s, struct process_view *id)
{
	const struct target_value *o = &l->c->t->off[XP_OFF_REGPROC_NAME];
	bool erl = l->c->pr.erlang_names;
	uint64_t term;
	const char *m, *f;

	id->name[0] = id->initial[0] = '\0';
	if (s->have_reg && s->reg && o->present &&
	    mem__read_u64(l->c->t->mem, s->reg + (uint64_t)o->value, &term) == 0)
		names__display(atom(l, term), erl, id->name, sizeof(id->name));
	id->pd_result =
	    procdict__initial_call(&l->c->pr, &s->v, id->pd_initial, sizeof(id->pd_initial));
	l->pdict[id->pd_result]++;
	names__display_inplace(id->pd_initial, sizeof(id->pd_initial), erl);
	if (!s->have_initial || s->initial[2] > 255)
		return;
	m = atom(l, s->initial[0]);
	f = atom(l, s->initial[1]);
	if (m[0] && f[0])
		snprintf(id->initial, sizeof(id->initial), "%s:%s/%" PRIu64, m, f, s->initial[2]);
	names__display_inplace(id->initial, sizeof(id->initial), erl);
}

/* Did the process move between the two reads (scheduled, garbage collected, exited)? */
static bool moved(const struct process_snap *a, const struct process_snap *b)
{
	return a->v.pid != b->v.pid || a->v.stop != b->v.stop || a->v.hend != b->v.hend ||
	       a->i != b->i || process__is_running(b->state) ||
	       (b->state & (XP_PSFLG_GC | XP_PSFLG_FREE));
}

/* Why a process's stack is not walked, or NULL to walk it. */
static const char *not_walked(const struct process_snap *s)
{
	if (!s->have_state)
		return "state unknown";
	if (s->state & XP_PSFLG_FREE)
		return "not read: free";
	if (process__is_running(s->state))
		return "not read: running";
	if (s->state & XP_PSFLG_GC)
		return "not read: garbage collecting";
	return NULL;
}

/* The stack of e, re-reading the Process after the walk; returns the stack status text. */
static const char *stack_of(struct listing *l, struct entry *e, struct pstack_frames *fr)
{
	struct process_snap again;
	const char *why;
	enum estack_end end;
	int tries;

	fr->n = 0;
	for (tries = 0; tries < READ_TRIES; tries++) {
		if ((why = not_walked(&e->s))) {
			l->running += process__is_running(e->s.state);
			return why;
		}
		end = pstack__process_stack(l->c, &e->s, fr);
		if (process__read_snap(&l->c->pr, e->s.v.addr, &again) == 0 &&
		    !moved(&e->s, &again)) {
			l->walked++;
			l->ends[end]++;
			return end == ESTACK_END_BOTTOM ? "complete" : erlang_stack__end_name(end);
		}
		if (process__read_snap(&l->c->pr, e->s.v.addr, &e->s) ||
		    !ptab__pid_in_slot(&l->c->pr.pids, e->s.v.pid, e->ix))
			break;
	}
	fr->n = 0;
	l->changed++;
	return "not read: changed while reading";
}

static void current_fn(struct listing *l, const struct entry *e, char *buf, size_t len)
{
	const struct jit_range *r;
	uint32_t id;

	buf[0] = '\0';
	if (!e->s.have_i || process__is_running(e->s.state))
		return;
	r = jitmap__lookup(l->c->t->jit, e->s.i);
	if (r && pstack__jit_frame(l->c, r, &id) == 0)
		snprintf(buf, len, "%s", agg__frame_name(l->c->agg, id));
}

static void emit_json(struct listing *l, const struct entry *e, const char *pid,
		      const struct process_view *id, const char *cur, const char *stack,
		      const struct pstack_frames *fr)
{
	struct json *j = l->j;

	json__object(j);
	json__kv_string(j, "pid", pid);
	json__kv_addr(j, "address", e->s.v.addr);
	json__kv_string(j, "name", id->name[0] ? id->name : NULL);
	json__kv_string(j, "initial_call", id->initial[0] ? id->initial : NULL);
	json__kv_string(j, "dictionary_initial_call", id->pd_initial[0] ? id->pd_initial : NULL);
	json__kv_string(j, "label", process__label(id)[0] ? process__label(id) : NULL);
	json__kv_string(j, "status", e->s.have_state ? process__status_name(e->s.state) : NULL);
	json__key(j, "message_queue_len");
	if (e->s.have_msg_len)
		json__int(j, e->s.msg_len);
	else
		json__null(j);
	json__kv_int(j, "heap_size", (int64_t)e->s.heap_sz);
	json__kv_int(j, "stack_size", (int64_t)((e->s.v.hend - e->s.v.stop) / 8));
	json__kv_string(j, "current_function", cur[0] ? cur : NULL);
	json__kv_addr(j, "pc", process__is_running(e->s.state) ? 0 : e->s.i);
	json__kv_string(j, "stack", stack);
	pstack__json_frames(l->c, fr, j);
	json__end_object(j);
}

static void emit_text(struct listing *l, const struct entry *e, const char *pid,
		      const struct process_view *id, const char *cur, const char *stack,
		      const struct pstack_frames *fr)
{
	FILE *f = l->f;

	fprintf(f, "\n%s %s  %s", pid, process__label(id)[0] ? process__label(id) : "-",
		e->s.have_state ? process__status_name(e->s.state) : "?");
	if (e->s.have_msg_len)
		fprintf(f, "  msgq %" PRId64, e->s.msg_len);
	fprintf(f, "  heap %" PRIu64 "  stack %" PRIu64, e->s.heap_sz,
		(e->s.v.hend - e->s.v.stop) / 8);
	if (cur[0])
		fprintf(f, "  current %s", cur);
	if (strcmp(stack, "complete") != 0)
		fprintf(f, "  [%s]", stack);
	fputc('\n', f);
	pstack__print_frames(l->c, fr, f);
}

static void emit(struct listing *l, struct entry *e, struct pstack_frames *fr)
{
	struct process_view id;
	char pid[48], cur[1024];
	const char *stack = stack_of(l, e, fr);

	process__pid_text(&l->c->pr.pids, e->s.v.pid, pid, sizeof(pid));
	identity(l, &e->s, &id);
	current_fn(l, e, cur, sizeof(cur));
	if (l->j)
		emit_json(l, e, pid, &id, cur, stack, fr);
	else
		emit_text(l, e, pid, &id, cur, stack, fr);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return (x->order > y->order) - (x->order < y->order);
}

/* Read every Process once; keep the plausible ones whose pid belongs in their slot. */
static struct entry *read_all(struct listing *l, const uint32_t *ixs, const uint64_t *procs,
			      size_t n, size_t *kept)
{
	struct entry *v = calloc(n ? n : 1, sizeof(*v));
	size_t i, k = 0;
	int rc;

	if (!v)
		return NULL;
	for (i = 0; i < n && !*l->c->stop; i++) {
		struct entry *e = &v[k];

		rc = process__read_snap(&l->c->pr, procs[i], &e->s);
		if (rc) {
			l->skipped[rc == -EINVAL ? SKIP_INVALID : SKIP_UNREADABLE]++;
			continue;
		}
		if (!ptab__pid_in_slot(&l->c->pr.pids, e->s.v.pid, ixs[i]) && l->c->pr.pids.known) {
			l->skipped[SKIP_WRONG_SLOT]++;
			continue;
		}
		e->ix = ixs[i];
		e->order = process__pid_data(&l->c->pr.pids, e->s.v.pid);
		k++;
	}
	qsort(v, k, sizeof(*v), cmp_entry);
	*kept = k;
	return v;
}

static void summary(struct listing *l, const struct ptab_stats *st, size_t kept, double ms)
{
	const struct ptab *pt = &l->c->ptab;
	int i;

	if (l->j) {
		json__key(l->j, "process_table");
		json__object(l->j);
		json__kv_addr(l->j, "address", pt->addr);
		json__kv_string(l->j, "source", target__src_name(pt->source));
		json__kv_int(l->j, "slots", pt->max);
		json__kv_int(l->j, "used", (int64_t)st->used);
		json__kv_int(l->j, "reserved", (int64_t)st->reserved);
		json__kv_int(l->j, "listed", (int64_t)kept);
		json__kv_int(l->j, "walked", (int64_t)l->walked);
		json__kv_int(l->j, "running", (int64_t)l->running);
		json__kv_int(l->j, "changed_while_reading", (int64_t)l->changed);
		json__key(l->j, "skipped");
		json__object(l->j);
		for (i = 0; i < SKIP_COUNT; i++)
			json__kv_int(l->j, skip_names[i], (int64_t)l->skipped[i]);
		json__kv_int(l->j, "unreadable_slots", (int64_t)st->unreadable_slots);
		json__kv_int(l->j, "bad_slots", (int64_t)st->bad);
		json__end_object(l->j);
		json__key(l->j, "dictionary_initial_call");
		json__object(l->j);
		for (i = 0; i < PDICT_RESULT_COUNT; i++)
			json__kv_int(l->j, procdict__result_name(i), (int64_t)l->pdict[i]);
		json__end_object(l->j);
		json__kv_int(l->j, "elapsed_ms", (int64_t)(ms + 0.5));
		json__end_object(l->j);
		return;
	}
	fprintf(l->f,
		"\n%zu processes listed (table at 0x%" PRIx64 " from %s: %u slots, %" PRIu64
		" used), %" PRIu64 " stacks walked (%" PRIu64 " complete), %" PRIu64
		" running, %" PRIu64 " changed while read; skipped: %" PRIu64
		" unreadable, %" PRIu64 " invalid, %" PRIu64 " in the wrong slot; %.0f ms\n",
		kept, pt->addr, target__src_name(pt->source), pt->max, st->used, l->walked,
		l->ends[ESTACK_END_BOTTOM], l->running, l->changed, l->skipped[SKIP_UNREADABLE],
		l->skipped[SKIP_INVALID], l->skipped[SKIP_WRONG_SLOT], ms);
	report__pdict_summary(l->pdict, l->f);
}

int pstack__processes(struct pstack_ctx *c, FILE *f, struct json *j, char *err, size_t errlen)
{
	struct listing l = {.c = c, .f = f, .j = j};
	struct pstack_frames *fr = malloc(sizeof(*fr));
	struct ptab_stats st;
	uint32_t *ixs = NULL;
	uint64_t *procs = NULL;
	struct entry *v = NULL;
	double start = now_ms();
	size_t n = 0, kept = 0, i;
	int rc;

	l.atoms = calloc(ATOM_SLOTS, sizeof(*l.atoms));
	if (!fr || !l.atoms) {
		rc = -ENOMEM;
		goto cleanup;
	}
	if ((rc = ptab__collect(&c->ptab, c->t->mem, &ixs, &procs, &n, &st)))
		goto cleanup;
	if (!(v = read_all(&l, ixs, procs, n, &kept))) {
		rc = -ENOMEM;
		goto cleanup;
	}
	if (j) {
		json__key(j, "processes");
		json__array(j);
	} else {
		fprintf(f, "\n== processes ==\n");
	}
	for (i = 0; i < kept && !*c->stop; i++)
		emit(&l, &v[i], fr);
	if (j)
		json__end_array(j);
	summary(&l, &st, kept, now_ms() - start);
cleanup:
	if (rc)
		snprintf(err, errlen, "--all: %s", strerror(-rc));
	for (i = 0; l.atoms && i < ATOM_SLOTS; i++)
		free(l.atoms[i].text);
	free(l.atoms);
	free(v);
	free(ixs);
	free(procs);
	free(fr);
	return rc;
}
