/* pstack --all's output: one row a process (its identity, status, sizes, current function and
 * frames, as text or JSON) and the summary of the listing. Atom texts are cached by term:
 * initial calls repeat across a million processes. Does not own: reading the processes
 * (pstack_procs.c). See pstack_list.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "pstack_list.h"
#include "report/report.h"

#define ATOM_SLOTS 16384 /* atom text cache, direct-mapped */
#define MFA_SLOTS  256	 /* initial calls as shown, by {M, F, A}, direct-mapped */

static const char *const skip_names[SKIP_COUNT] = {"unreadable", "invalid", "wrong_slot"};

struct atom_slot {
	uint64_t term;
	char *text;
};

/* An initial call as shown: a million processes share a few, and formatting each costs more
 * than the rest of its row. */
struct mfa_slot {
	uint64_t mfa[3];
	char *text;
};

#define TEXT_BYTES (64u << 10) /* text rows gathered before they go to the stream */

int pstack_rows__init(struct listing *l)
{
	l->atoms = calloc(ATOM_SLOTS, sizeof(*l->atoms));
	l->mfas = calloc(MFA_SLOTS, sizeof(*l->mfas));
	l->txt = (struct pstack_text){.f = l->f, .b = malloc(TEXT_BYTES), .cap = TEXT_BYTES};
	return l->atoms && l->mfas && l->txt.b ? 0 : -ENOMEM;
}

void pstack_rows__free(struct listing *l)
{
	size_t i;

	if (l->txt.b) /* what is gathered is written: the listing so far */
		pstack_text__flush(&l->txt);
	free(l->txt.b);
	l->txt.b = NULL;

	for (i = 0; l->atoms && i < ATOM_SLOTS; i++)
		free(l->atoms[i].text);
	for (i = 0; l->mfas && i < MFA_SLOTS; i++)
		free(l->mfas[i].text);
	free(l->atoms);
	free(l->mfas);
	l->atoms = NULL;
	l->mfas = NULL;
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
	struct mfa_slot *slot;
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
	slot = &l->mfas[((s->initial[0] ^ s->initial[1] * 31 ^ s->initial[2]) >> 6) * 2654435761u %
			MFA_SLOTS];
	if (slot->text && !memcmp(slot->mfa, s->initial, sizeof(slot->mfa))) {
		memcpy(id->initial, slot->text, strlen(slot->text) + 1); /* it came from there */
		return;
	}
	m = atom(l, s->initial[0]);
	f = atom(l, s->initial[1]);
	if (!m[0] || !f[0])
		return; /* not cached: maybe a torn read */
	snprintf(id->initial, sizeof(id->initial), "%s:%s/%" PRIu64, m, f, s->initial[2]);
	names__display_inplace(id->initial, sizeof(id->initial), erl);
	free(slot->text);
	memcpy(slot->mfa, s->initial, sizeof(slot->mfa));
	slot->text = strdup(id->initial);
}

static const char *current_fn(struct listing *l, const struct process_snap *s)
{
	const struct jit_range *r;
	uint32_t id;

	if (!s->have_i || process__is_running(s->state))
		return "";
	r = jitmap__lookup(l->c->t->jit, s->i);
	if (r && pstack__jit_frame(l->c, r, &id) == 0)
		return agg__frame_name(l->c->agg, id);
	return "";
}

struct row {
	const struct process_snap *s;
	const char *pid, *cur, *stack;
	const struct process_view *id;
	const struct pstack_frames *fr;
};

/* Keys as literals (json__lit_key): the row is most of a million-row document. */
static void emit_json(struct listing *l, const struct row *r)
{
	const struct process_snap *s = r->s;
	const char *label = process__label(r->id);
	struct json *j = l->j;

	json__object(j);
	json__lit_key(j, "pid");
	json__string(j, r->pid);
	json__lit_key(j, "address");
	json__addr(j, s->v.addr);
	json__lit_key(j, "name");
	json__string(j, r->id->name[0] ? r->id->name : NULL);
	json__lit_key(j, "initial_call");
	json__string(j, r->id->initial[0] ? r->id->initial : NULL);
	json__lit_key(j, "dictionary_initial_call");
	json__string(j, r->id->pd_initial[0] ? r->id->pd_initial : NULL);
	json__lit_key(j, "label");
	json__string(j, label[0] ? label : NULL);
	json__lit_key(j, "status");
	json__string(j, s->have_state ? process__status_name(s->state) : NULL);
	json__lit_key(j, "message_queue_len");
	if (s->have_msg_len)
		json__int(j, s->msg_len);
	else
		json__null(j);
	json__lit_key(j, "heap_size");
	json__int(j, (int64_t)s->heap_sz);
	json__lit_key(j, "stack_size");
	if (s->have_sizes)
		json__uint(j, (s->v.hend - s->v.stop) / 8);
	else
		json__null(j);
	json__lit_key(j, "current_function");
	json__string(j, r->cur[0] ? r->cur : NULL);
	json__lit_key(j, "pc");
	json__addr(j, process__is_running(s->state) ? 0 : s->i);
	json__lit_key(j, "stack");
	json__string(j, r->stack);
	pstack__json_frames(l->c, r->fr, j);
	json__end_object(j);
}

#define LIT(d, s) ((char *)memcpy((d), (s), sizeof(s) - 1) + sizeof(s) - 1)

/* A string value, or null when empty. */
static char *str_or_null(char *d, const char *s, size_t n)
{
	return n ? json__escape_to(d, s, n) : LIT(d, "null");
}

/* The fields before the frames: as emit_json writes them. The label is one of the three names
 * before it: its text is copied from there, not escaped again. */
static char *json_head(char *d, const struct row *r, const size_t len[6])
{
	const struct process_snap *s = r->s;
	const struct process_view *id = r->id;
	const char *status = s->have_state ? process__status_name(s->state) : NULL;
	char *name, *initial, *pd, *end[3];

	d = json__escape_to(LIT(d, "{\"pid\":"), r->pid, len[0]);
	d = LIT(d, ",\"address\":");
	d += json__addr_text(s->v.addr, d);
	name = LIT(d, ",\"name\":");
	initial = LIT(end[0] = str_or_null(name, id->name, len[1]), ",\"initial_call\":");
	pd = LIT(end[1] = str_or_null(initial, id->initial, len[2]),
		 ",\"dictionary_initial_call\":");
	d = LIT(end[2] = str_or_null(pd, id->pd_initial, len[3]), ",\"label\":");
	if (len[1] || len[3] || len[2]) { /* process__label's choice */
		const char *from = len[1] ? name : len[3] ? pd : initial;
		size_t n = (size_t)(end[len[1] ? 0 : len[3] ? 2 : 1] - from);

		d = (char *)memcpy(d, from, n) + n;
	} else {
		d = LIT(d, "null");
	}
	d = LIT(d, ",\"status\":");
	d = status ? json__escape_to(d, status, strlen(status)) : LIT(d, "null");
	d = LIT(d, ",\"message_queue_len\":");
	d = s->have_msg_len ? pstack__int_to(d, s->msg_len) : LIT(d, "null");
	d = pstack__int_to(LIT(d, ",\"heap_size\":"), (int64_t)s->heap_sz);
	d = LIT(d, ",\"stack_size\":");
	d = s->have_sizes ? json__uint_to(d, (s->v.hend - s->v.stop) / 8) : LIT(d, "null");
	d = str_or_null(LIT(d, ",\"current_function\":"), r->cur, len[4]);
	d = LIT(d, ",\"pc\":");
	d += json__addr_text(process__is_running(s->state) ? 0 : s->i, d);
	return json__escape_to(LIT(d, ",\"stack\":"), r->stack, len[5]);
}

/* The row straight into the writer's buffer: what emit_json writes, without a call a field.
 * false when it cannot be (no buffer, or a frame's text not kept): nothing was written. */
static bool emit_json_direct(struct listing *l, const struct row *r)
{
	size_t len[6] = {strlen(r->pid),	 strlen(r->id->name),
			 strlen(r->id->initial), strlen(r->id->pd_initial),
			 strlen(r->cur),	 strlen(r->stack)};
	size_t need =
	    256 + JSON_ADDR_MAX * 2 + JSON_ESCAPED_MAX(len[0]) +
	    2 * (JSON_ESCAPED_MAX(len[1]) + JSON_ESCAPED_MAX(len[2]) + JSON_ESCAPED_MAX(len[3])) +
	    JSON_ESCAPED_MAX(len[4]) + JSON_ESCAPED_MAX(len[5]);
	struct json *j = l->j;
	char *d;

	if (!pstack__json_frames_ready(l->c, r->fr) || !json__room(j, need + 1))
		return false;
	json__value(j); /* its comma first: then the room, which that may have taken */
	d = json__room(j, need);
	json__wrote(j, json_head(d, r, len));
	pstack__json_frames_direct(l->c, r->fr, j);
	d = json__room(j, 1);
	*d++ = '}';
	json__wrote(j, d);
	return true;
}

static void emit_text(struct listing *l, const struct row *r)
{
	const struct process_snap *s = r->s;
	const char *label = process__label(r->id);
	struct pstack_text *t = &l->txt;

	pstack_text__put(t, "\n", 1);
	pstack_text__str(t, r->pid);
	pstack_text__put(t, " ", 1);
	pstack_text__str(t, label[0] ? label : "-");
	pstack_text__put(t, "  ", 2);
	pstack_text__str(t, s->have_state ? process__status_name(s->state) : "?");
	if (s->have_msg_len) {
		pstack_text__put(t, "  msgq ", 7);
		pstack_text__int(t, s->msg_len);
	}
	pstack_text__put(t, "  heap ", 7);
	pstack_text__uint(t, s->heap_sz, 0);
	if (s->have_sizes) {
		pstack_text__put(t, "  stack ", 8);
		pstack_text__uint(t, (s->v.hend - s->v.stop) / 8, 0);
	} else {
		pstack_text__put(t, "  stack ?", 9);
	}
	if (r->cur[0]) {
		pstack_text__put(t, "  current ", 10);
		pstack_text__str(t, r->cur);
	}
	if (strcmp(r->stack, "complete") != 0) {
		pstack_text__put(t, "  [", 3);
		pstack_text__str(t, r->stack);
		pstack_text__put(t, "]", 1);
	}
	pstack_text__put(t, "\n", 1);
	pstack__text_frames(l->c, r->fr, t);
}

void pstack_rows__emit(struct listing *l, const struct process_snap *s, const char *stack,
		       const struct pstack_frames *fr)
{
	struct process_view id;
	char pid[48];
	struct row r = {.s = s, .pid = pid, .id = &id, .stack = stack, .fr = fr};

	process__pid_text(&l->c->pr.pids, s->v.pid, pid, sizeof(pid));
	identity(l, s, &id);
	r.cur = current_fn(l, s);
	if (l->j && !emit_json_direct(l, &r))
		emit_json(l, &r);
	else if (!l->j)
		emit_text(l, &r);
}

static void summary_json(struct listing *l, const struct ptab_stats *st, size_t kept, double ms)
{
	const struct ptab *pt = &l->c->ptab;
	struct json *j = l->j;
	int i;

	json__key(j, "process_table");
	json__object(j);
	json__kv_addr(j, "address", pt->addr);
	json__kv_string(j, "source", target__src_name(pt->source));
	json__kv_int(j, "slots", pt->max);
	json__kv_int(j, "used", (int64_t)st->used);
	json__kv_int(j, "reserved", (int64_t)st->reserved);
	json__kv_int(j, "listed", (int64_t)kept);
	json__kv_int(j, "walked", (int64_t)l->walked);
	json__kv_int(j, "running", (int64_t)l->running);
	json__kv_int(j, "changed_while_reading", (int64_t)l->changed);
	json__kv_bool(j, "vm_exited", l->gone);
	json__key(j, "skipped");
	json__object(j);
	for (i = 0; i < SKIP_COUNT; i++)
		json__kv_int(j, skip_names[i], (int64_t)l->skipped[i]);
	json__kv_int(j, "unreadable_slots", (int64_t)st->unreadable_slots);
	json__kv_int(j, "bad_slots", (int64_t)st->bad);
	json__end_object(j);
	json__key(j, "dictionary_initial_call");
	json__object(j);
	for (i = 0; i < PDICT_RESULT_COUNT; i++)
		json__kv_int(j, procdict__result_name(i), (int64_t)l->pdict[i]);
	json__end_object(j);
	json__kv_int(j, "elapsed_ms", (int64_t)(ms + 0.5));
	json__end_object(j);
}

void pstack_rows__summary(struct listing *l, const struct ptab_stats *st, size_t kept, double ms)
{
	const struct ptab *pt = &l->c->ptab;

	if (l->j) {
		summary_json(l, st, kept, ms);
		return;
	}
	pstack_text__flush(&l->txt); /* the rows first */
	fprintf(l->f,
		"\n%zu processes listed (table at 0x%" PRIx64 " from %s: %u slots, %" PRIu64
		" used), %" PRIu64 " stacks walked (%" PRIu64 " complete), %" PRIu64
		" running, %" PRIu64 " changed while read; skipped: %" PRIu64
		" unreadable, %" PRIu64 " invalid, %" PRIu64 " in the wrong slot; %.0f ms\n",
		kept, pt->addr, target__src_name(pt->source), pt->max, st->used, l->walked,
		l->ends[ESTACK_END_BOTTOM], l->running, l->changed, l->skipped[SKIP_UNREADABLE],
		l->skipped[SKIP_INVALID], l->skipped[SKIP_WRONG_SLOT], ms);
	report__pdict_summary(l->pdict, l->f);
	if (l->gone)
		fprintf(l->f, "the VM exited while it was read: the listing above is partial\n");
}
