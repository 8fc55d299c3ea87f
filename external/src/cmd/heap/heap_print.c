/* `extrospect heap`'s output: the top rows as a table or JSON, then the totals and what was
 * skipped, by reason, from a finished reading. Names (registered name, initial call, current
 * function) are read only for the rows shown (heap__names). Does not own: reading or sorting
 * (heap.c). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "heap_print.h"
#include "info.h"

static const char *const skip_names[HEAP_SKIP_COUNT] = {"unreadable", "invalid", "wrong_slot"};

static size_t shown(const struct heap_ctx *c)
{
	return c->o->limit && c->o->limit < c->n ? c->o->limit : c->n;
}

void heap__human(uint64_t b, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	double v = (double)b;
	int u = -1;

	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%" PRIu64 "B", b);
	else
		snprintf(buf, len, v < 9.95 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

static void cell(FILE *f, const struct heap_row *r, enum heap_col k, bool bytes, int width)
{
	char buf[32];

	if (!(r->known & (1u << k)))
		snprintf(buf, sizeof(buf), k == HEAP_COL_MSGQ ? "-" : "?");
	else if (bytes)
		heap__human(r->val[k], buf, sizeof(buf));
	else
		snprintf(buf, sizeof(buf), "%" PRIu64, r->val[k]);
	fprintf(f, " %*s", width, buf);
}

static void text_row(const struct heap_ctx *c, const struct heap_row *r, FILE *f)
{
	static const enum heap_col sizes[] = {HEAP_COL_TOTAL, HEAP_COL_HEAP,  HEAP_COL_OLD,
					      HEAP_COL_FRAG,  HEAP_COL_STACK, HEAP_COL_BIN};
	struct heap_names n;
	size_t i;

	heap__names(c, r, &n);
	fprintf(f, "%-14s", n.pid);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		cell(f, r, sizes[i], true, 6);
	cell(f, r, HEAP_COL_MSGQ, false, 7);
	cell(f, r, HEAP_COL_REDS, false, 11);
	fprintf(f, "  %-9s %s", r->s.have_state ? process__status_name(r->s.state) : "?",
		process__label(&n.v)[0] ? process__label(&n.v) : "-");
	if (n.cur[0])
		fprintf(f, "  %s", n.cur);
	fputc('\n', f);
}

static void text_footer(const struct heap_ctx *c, FILE *f)
{
	char t[32], b[32];
	int k;

	heap__human(c->sum[HEAP_COL_TOTAL], t, sizeof(t));
	heap__human(c->sum[HEAP_COL_BIN], b, sizeof(b));
	fprintf(f,
		"\n%zu of %zu processes shown, sorted by %s (table at 0x%" PRIx64 " from %s: %u "
		"slots, %" PRIu64 " used); all processes: %s of heaps, %s of binaries, %" PRIu64
		" running (read while moving); %.0f ms\n",
		shown(c), c->n, heap__col_name(c->sort), c->ptab.addr,
		target__src_name(c->ptab.source), c->ptab.max, c->st.used, t, b, c->running, c->ms);
	fprintf(f,
		"skipped: %" PRIu64 " unreadable, %" PRIu64 " invalid, %" PRIu64
		" in the wrong slot, %" PRIu64 " unreadable slots",
		c->skipped[HEAP_SKIP_UNREADABLE], c->skipped[HEAP_SKIP_INVALID],
		c->skipped[HEAP_SKIP_WRONG_SLOT], c->st.unreadable_slots);
	for (k = 1; k < SNAP_MEM_FAULT_COUNT; k++) {
		if (c->faults[k])
			fprintf(f, "; %" PRIu64 " with fields %s", c->faults[k],
				k == SNAP_MEM_NO_OFFSET
				    ? "this VM's layout lacks (shown ?)"
				    : process__snap_mem_fault_name((enum snap_mem_fault)k));
	}
	fputc('\n', f);
}

void heap__print_text(const struct heap_ctx *c, FILE *f)
{
	const struct target *t = c->t;
	size_t i;

	fprintf(f, "extrospect heap: BEAM pid %d, OTP %s (erts %s), %s\n", (int)t->pid,
		t->otp_release[0] ? t->otp_release : "?",
		t->erts_version[0] ? t->erts_version : "?",
		target__has_agent(t) ? "with the agent" : "without the agent");
	fprintf(f, "%-14s %6s %6s %6s %6s %6s %6s %7s %11s  %-9s %s\n", "PID", "TOTAL", "HEAP",
		"OLD", "FRAG", "STACK", "BIN", "MSGQ", "REDS", "STATUS", "NAME  CURRENT");
	for (i = 0; i < shown(c); i++)
		text_row(c, &c->rows[i], f);
	text_footer(c, f);
}

/* A size in words (process_info's unit) or null. */
static void kv_words(struct json *j, const char *key, const struct heap_row *r, enum heap_col k)
{
	json__kv_uint_known(j, key, r->known & (1u << k), r->val[k] / 8);
}

static void kv_val(struct json *j, const char *key, const struct heap_row *r, enum heap_col k)
{
	json__kv_uint_known(j, key, r->known & (1u << k), r->val[k]);
}

static void json_row(const struct heap_ctx *c, const struct heap_row *r, struct json *j)
{
	const struct heap_proc *s = &r->s;
	struct heap_names n;

	heap__names(c, r, &n);
	json__object(j);
	json__kv_string(j, "pid", n.pid);
	json__kv_addr(j, "address", s->addr);
	json__kv_string(j, "name", n.v.name[0] ? n.v.name : NULL);
	json__kv_string(j, "initial_call", n.v.initial[0] ? n.v.initial : NULL);
	json__kv_string(j, "dictionary_initial_call", n.v.pd_initial[0] ? n.v.pd_initial : NULL);
	json__kv_string(j, "current_function", n.cur[0] ? n.cur : NULL);
	json__kv_string(j, "status", s->have_state ? process__status_name(s->state) : NULL);
	kv_words(j, "total_heap_size", r, HEAP_COL_TOTAL);
	kv_words(j, "heap_size", r, HEAP_COL_HEAP);
	json__kv_uint_known(j, "heap_used", s->have_used, s->heap_used);
	kv_words(j, "old_heap_size", r, HEAP_COL_OLD);
	json__kv_uint_known(j, "old_heap_used", s->have_old, s->old_used);
	kv_words(j, "heap_fragments_size", r, HEAP_COL_FRAG);
	kv_words(j, "stack_size", r, HEAP_COL_STACK);
	kv_val(j, "binary_vheap_bytes", r, HEAP_COL_BIN);
	json__kv_uint_known(j, "binary_vheap_limit_bytes", s->have_vheap, s->vheap_limit);
	kv_val(j, "message_queue_len", r, HEAP_COL_MSGQ);
	kv_val(j, "reductions", r, HEAP_COL_REDS);
	kv_val(j, "memory_lower_bound", r, HEAP_COL_MEMORY);
	json__end_object(j);
}

static void json_totals(const struct heap_ctx *c, struct json *j)
{
	int k;

	json__key(j, "totals");
	json__object(j);
	json__kv_int(j, "processes", (int64_t)c->n);
	json__kv_int(j, "running", (int64_t)c->running);
	for (k = 0; k < HEAP_COL_COUNT; k++)
		json__kv_int(j, heap__col_name((enum heap_col)k), (int64_t)c->sum[k]);
	json__end_object(j);
	json__key(j, "skipped");
	json__object(j);
	for (k = 0; k < HEAP_SKIP_COUNT; k++)
		json__kv_int(j, skip_names[k], (int64_t)c->skipped[k]);
	json__kv_int(j, "unreadable_slots", (int64_t)c->st.unreadable_slots);
	json__kv_int(j, "bad_slots", (int64_t)c->st.bad);
	json__end_object(j);
	json__key(j, "fields_not_shown");
	json__object(j);
	for (k = 1; k < SNAP_MEM_FAULT_COUNT; k++)
		json__kv_int(j, process__snap_mem_fault_name((enum snap_mem_fault)k),
			     (int64_t)c->faults[k]);
	json__end_object(j);
}

void heap__print_json(const struct heap_ctx *c, struct json *j)
{
	const struct target *t = c->t;
	size_t i;

	json__object(j);
	json__kv_int(j, "os_pid", t->pid);
	json__kv_string(j, "otp_release", t->otp_release);
	json__kv_string(j, "erts_version", t->erts_version);
	json__kv_bool(j, "agent", target__has_agent(t));
	json__kv_bool(j, "pids_decoded", c->pr.pids.known);
	json__kv_string(j, "sort", heap__col_name(c->sort));
	json__key(j, "processes");
	json__array(j);
	for (i = 0; i < shown(c); i++)
		json_row(c, &c->rows[i], j);
	json__end_array(j);
	json_totals(c, j);
	json__key(j, "process_table");
	json__object(j);
	json__kv_addr(j, "address", c->ptab.addr);
	json__kv_string(j, "source", target__src_name(c->ptab.source));
	json__kv_int(j, "slots", c->ptab.max);
	json__kv_int(j, "used", (int64_t)c->st.used);
	json__end_object(j);
	json__kv_int(j, "elapsed_ms", (int64_t)(c->ms + 0.5));
	info__json_mem_failures(t, j);
	json__end_object(j);
}
