/* What the parts of `extrospect pstack` share (pstack.h): the stack of a parked process and the
 * output of frames. The lowest file of pstack: the command (pstack.c), the scheduler snapshot
 * (pstack_sched.c) and the process listing (pstack_procs.c) call it; it calls none of them. */
#include <stdio.h>

#include "names.h"
#include "pstack.h"

static const char *const kind_names[] = {
    [FRAME_ERLANG] = "erlang",
    [FRAME_NATIVE] = "native",
    [FRAME_JIT_GLOBAL] = "jit",
    [FRAME_LABEL] = "label",
};

int pstack__jit_frame(struct pstack_ctx *c, const struct jit_range *r, uint32_t *id)
{
	char name[1024];
	bool erlang = jitmap__frame_name(r, name, sizeof(name));

	if (erlang)
		names__display_inplace(name, sizeof(name), c->pr.erlang_names);
	return agg__frame(c->agg, name, erlang ? FRAME_ERLANG : FRAME_JIT_GLOBAL, id);
}

static void add_frame(struct pstack_frames *fr, uint32_t id, uint64_t addr)
{
	if (fr->n >= PSTACK_MAX_FRAMES)
		return;
	fr->id[fr->n] = id;
	fr->addr[fr->n++] = addr;
}

enum estack_end pstack__process_stack(struct pstack_ctx *c, const struct process_snap *s,
				      struct pstack_frames *out)
{
	const struct process_view *p = &s->v;
	const struct jit_range *cur = s->have_i ? jitmap__lookup(c->t->jit, s->i) : NULL;
	uint64_t bytes = p->hend - p->stop;
	struct estack_result *er = c->er;
	bool complete = true;
	uint32_t id;
	size_t i;

	out->n = 0;
	if (p->stop <= p->heap || p->stop >= p->hend || (p->stop & 7))
		return ESTACK_END_NO_BOTTOM;
	if (bytes > PSTACK_STACK_BYTES) {
		bytes = PSTACK_STACK_BYTES;
		complete = false;
	}
	if (mem__read(c->t->mem, p->stop, c->words, (size_t)bytes))
		return ESTACK_END_TRUNCATED;
	if (cur && pstack__jit_frame(c, cur, &id) == 0)
		add_frame(out, id, s->i);
	erlang_stack__walk(&c->ecfg, c->words, (size_t)bytes / 8, p->stop, p->frame_pointer,
			   complete, NULL, er);
	for (i = 0; i < er->nframes; i++) {
		if (pstack__jit_frame(c, er->frames[i].fn, &id) == 0)
			add_frame(out, id, er->frames[i].ra);
	}
	return er->end;
}

void pstack__json_frames(const struct pstack_ctx *c, const struct pstack_frames *fr, struct json *j)
{
	uint32_t i;

	json__key(j, "frames");
	json__array(j);
	for (i = 0; i < fr->n; i++) {
		enum frame_kind k = agg__frame_kind(c->agg, fr->id[i]);

		json__object(j);
		json__kv_string(j, "function", agg__frame_name(c->agg, fr->id[i]));
		json__kv_string(j, "kind", (unsigned)k < 4 ? kind_names[k] : "?");
		json__kv_addr(j, "address", fr->addr[i]);
		json__end_object(j);
	}
	json__end_array(j);
}

void pstack__print_frames(const struct pstack_ctx *c, const struct pstack_frames *fr, FILE *f)
{
	uint32_t i;

	for (i = 0; i < fr->n; i++) {
		enum frame_kind k = agg__frame_kind(c->agg, fr->id[i]);

		fprintf(f, "    #%-3u %s%s\n", i, agg__frame_name(c->agg, fr->id[i]),
			k == FRAME_NATIVE ? "  [native]" : "");
	}
}
