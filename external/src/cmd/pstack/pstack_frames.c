/* What the parts of `extrospect pstack` share (pstack.h): the stack of a parked process and the
 * output of frames. The lowest file of pstack: the command (pstack.c), the scheduler snapshot
 * (pstack_sched.c) and the process listing (pstack_procs.c) call it; it calls none of them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "pstack.h"

static const char *const kind_names[] = {
    [FRAME_ERLANG] = "erlang",
    [FRAME_NATIVE] = "native",
    [FRAME_JIT_GLOBAL] = "jit",
    [FRAME_LABEL] = "label",
};

#define FCACHE_SLOTS 16384 /* frame ids by JIT range, direct-mapped; a power of 2 */
/* A frame's JSON but its address: a name of at most 1 KB, six bytes a byte when escaped. */
#define FJSON_MAX 8192

struct pstack_fslot {
	const struct jit_range *r;
	uint32_t id;
};

/* Each frame's object up to its address's value, {"function":"..","kind":"..","address":, by
 * frame id: a million rows escape the same few hundred names otherwise. */
struct pstack_fjson {
	char **text;
	uint32_t *len;
	size_t n; /* ids covered by text and len */
};

int pstack__frame_cache(struct pstack_ctx *c)
{
	c->fcache = calloc(FCACHE_SLOTS, sizeof(*c->fcache));
	c->fjson = calloc(1, sizeof(*c->fjson));
	return c->fcache && c->fjson ? 0 : -ENOMEM;
}

void pstack__frame_cache_free(struct pstack_ctx *c)
{
	struct pstack_fjson *fj = c->fjson;

	for (size_t i = 0; fj && i < fj->n; i++)
		free(fj->text[i]);
	if (fj) {
		free(fj->text);
		free(fj->len);
	}
	free(fj);
	free(c->fcache);
	c->fjson = NULL;
	c->fcache = NULL;
}

int pstack__jit_frame(struct pstack_ctx *c, const struct jit_range *r, uint32_t *id)
{
	struct pstack_fslot *s = NULL;
	char name[1024];
	bool erlang;
	int rc;

	if (c->fcache) {
		s = &c->fcache[((uintptr_t)r >> 3) * 2654435761u % FCACHE_SLOTS];
		if (s->r == r) {
			*id = s->id;
			return 0;
		}
	}
	erlang = jitmap__frame_name(r, name, sizeof(name));
	if (erlang)
		names__display_inplace(name, sizeof(name), c->pr.erlang_names);
	rc = agg__frame(c->agg, name, erlang ? FRAME_ERLANG : FRAME_JIT_GLOBAL, id);
	if (!rc && s)
		*s = (struct pstack_fslot){.r = r, .id = *id};
	return rc;
}

static void add_frame(struct pstack_frames *fr, uint32_t id, uint64_t addr)
{
	if (fr->n >= PSTACK_MAX_FRAMES)
		return;
	fr->id[fr->n] = id;
	fr->addr[fr->n++] = addr;
}

bool pstack__stack_span(uint64_t stop, uint64_t heap, uint64_t hend, size_t *bytes, bool *complete)
{
	if (stop <= heap || stop >= hend || (stop & 7))
		return false;
	*complete = hend - stop <= PSTACK_STACK_BYTES;
	*bytes = *complete ? (size_t)(hend - stop) : PSTACK_STACK_BYTES;
	return true;
}

enum estack_end pstack__walk_words(struct pstack_ctx *c, const struct process_snap *s,
				   const uint64_t *words, size_t bytes, bool complete,
				   struct pstack_frames *out)
{
	const struct jit_range *cur = s->have_i ? jitmap__lookup(c->t->jit, s->i) : NULL;
	struct estack_result *er = c->er;
	uint32_t id;
	size_t i;

	out->n = 0;
	if (cur && pstack__jit_frame(c, cur, &id) == 0)
		add_frame(out, id, s->i);
	erlang_stack__walk(&c->ecfg, words, bytes / 8, s->v.stop, s->v.frame_pointer, complete,
			   NULL, er);
	for (i = 0; i < er->nframes; i++) {
		if (pstack__jit_frame(c, er->frames[i].fn, &id) == 0)
			add_frame(out, id, er->frames[i].ra);
	}
	return er->end;
}

enum estack_end pstack__process_stack(struct pstack_ctx *c, const struct process_snap *s,
				      struct pstack_frames *out)
{
	size_t bytes;
	bool complete;

	out->n = 0;
	if (!pstack__stack_span(s->v.stop, s->v.heap, s->v.hend, &bytes, &complete))
		return ESTACK_END_NO_BOTTOM;
	if (mem__read(c->t->mem, s->v.stop, c->words, bytes))
		return ESTACK_END_TRUNCATED;
	return pstack__walk_words(c, s, c->words, bytes, complete, out);
}

/* The frame's object up to its address, written on its first use: 0, or -ENOMEM (then the
 * caller writes it field by field). */
static int frame_json(const struct pstack_ctx *c, uint32_t id, const char **text, uint32_t *len)
{
	struct pstack_fjson *fj = c->fjson;
	enum frame_kind k = agg__frame_kind(c->agg, id);
	char buf[FJSON_MAX];
	struct json m;

	if (!fj)
		return -ENOMEM;
	if (id >= fj->n) {
		size_t n = id + 1 > 2 * fj->n ? id + 1 : 2 * fj->n;
		char **t = realloc(fj->text, n * sizeof(*t));
		uint32_t *l = t ? realloc(fj->len, n * sizeof(*l)) : NULL;

		if (t)
			fj->text = t;
		if (!t || !l)
			return -ENOMEM;
		fj->len = l;
		memset(t + fj->n, 0, (n - fj->n) * sizeof(*t));
		fj->n = n;
	}
	if (!fj->text[id]) {
		json__init_mem(&m, buf, sizeof(buf));
		json__object(&m);
		json__lit_key(&m, "function");
		json__string(&m, agg__frame_name(c->agg, id));
		json__lit_key(&m, "kind");
		json__string(&m, (unsigned)k < 4 ? kind_names[k] : "?");
		json__lit_key(&m, "address");
		if (m.truncated || !(fj->text[id] = malloc(m.len)))
			return -ENOMEM;
		memcpy(fj->text[id], buf, m.len);
		fj->len[id] = (uint32_t)m.len;
	}
	*text = fj->text[id];
	*len = fj->len[id];
	return 0;
}

static void json_frame(const struct pstack_ctx *c, uint32_t id, uint64_t addr, struct json *j)
{
	enum frame_kind k = agg__frame_kind(c->agg, id);
	const char *text;
	uint32_t n;

	if (frame_json(c, id, &text, &n) == 0) {
		json__raw_addr(j, text, n, addr, '}');
		return;
	}
	json__object(j);
	json__lit_key(j, "function");
	json__string(j, agg__frame_name(c->agg, id));
	json__lit_key(j, "kind");
	json__string(j, (unsigned)k < 4 ? kind_names[k] : "?");
	json__lit_key(j, "address");
	json__addr(j, addr);
	json__end_object(j);
}

void pstack__json_frames(const struct pstack_ctx *c, const struct pstack_frames *fr, struct json *j)
{
	json__lit_key(j, "frames");
	json__array(j);
	for (uint32_t i = 0; i < fr->n; i++)
		json_frame(c, fr->id[i], fr->addr[i], j);
	json__end_array(j);
}

bool pstack__json_frames_ready(const struct pstack_ctx *c, const struct pstack_frames *fr)
{
	const char *text;
	uint32_t n;

	for (uint32_t i = 0; i < fr->n; i++) {
		if (frame_json(c, fr->id[i], &text, &n))
			return false;
	}
	return true;
}

void pstack__json_frames_direct(const struct pstack_ctx *c, const struct pstack_frames *fr,
				struct json *j)
{
	const char *text;
	uint32_t i, n;
	char *d = json__room(j, 16);

	memcpy(d, ",\"frames\":[", 11);
	json__wrote(j, d + 11);
	for (i = 0; i < fr->n; i++) {
		frame_json(c, fr->id[i], &text, &n);
		d = json__room(j, n + JSON_ADDR_MAX + 2);
		if (i)
			*d++ = ',';
		memcpy(d, text, n);
		d += n;
		d += json__addr_text(fr->addr[i], d);
		*d++ = '}';
		json__wrote(j, d);
	}
	d = json__room(j, 1);
	*d++ = ']';
	json__wrote(j, d);
}

void pstack_text__flush(struct pstack_text *t)
{
	if (t->n)
		fwrite_unlocked(t->b, 1, t->n, t->f);
	t->n = 0;
}

void pstack_text__put(struct pstack_text *t, const char *s, size_t n)
{
	if (n > t->cap - t->n) {
		pstack_text__flush(t);
		if (n > t->cap) {
			fwrite_unlocked(s, 1, n, t->f);
			return;
		}
	}
	memcpy(t->b + t->n, s, n);
	t->n += n;
}

void pstack_text__str(struct pstack_text *t, const char *s)
{
	pstack_text__put(t, s, strlen(s));
}

char *pstack__int_to(char *d, int64_t v)
{
	if (v < 0) {
		*d++ = '-';
		return json__uint_to(d, -(uint64_t)v);
	}
	return json__uint_to(d, (uint64_t)v);
}

void pstack_text__uint(struct pstack_text *t, uint64_t v, size_t width)
{
	char d[48], *e = json__uint_to(d, v);

	while ((size_t)(e - d) < width && e < d + sizeof(d))
		*e++ = ' ';
	pstack_text__put(t, d, (size_t)(e - d));
}

void pstack_text__int(struct pstack_text *t, int64_t v)
{
	char d[24];

	pstack_text__put(t, d, (size_t)(pstack__int_to(d, v) - d));
}

void pstack__text_frames(const struct pstack_ctx *c, const struct pstack_frames *fr,
			 struct pstack_text *t)
{
	for (uint32_t i = 0; i < fr->n; i++) {
		pstack_text__put(t, "    #", 5);
		pstack_text__uint(t, i, 3);
		pstack_text__put(t, " ", 1);
		pstack_text__str(t, agg__frame_name(c->agg, fr->id[i]));
		if (agg__frame_kind(c->agg, fr->id[i]) == FRAME_NATIVE)
			pstack_text__put(t, "  [native]", 10);
		pstack_text__put(t, "\n", 1);
	}
}

void pstack__print_frames(const struct pstack_ctx *c, const struct pstack_frames *fr, FILE *f)
{
	char b[4096];
	struct pstack_text t = {.f = f, .b = b, .cap = sizeof(b)};

	pstack__text_frames(c, fr, &t);
	pstack_text__flush(&t);
}
