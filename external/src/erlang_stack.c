/* Erlang stack walks from stack words. See erlang_stack.h. On the stack an aligned word is a
 * return address (or, in FP layout, a saved frame pointer): terms are tagged 01, 10 or 11 and
 * headers never appear there (B/erl_term.h), so no guessing is involved in the RA scan. */
#include <string.h>

#include "erlang_stack.h"

static const char *const end_names[ESTACK_END_COUNT] = {
    [ESTACK_END_BOTTOM] = "bottom",	    [ESTACK_END_TRUNCATED] = "truncated",
    [ESTACK_END_UNRESOLVED] = "unresolved", [ESTACK_END_BAD_CHAIN] = "bad frame chain",
    [ESTACK_END_NO_BOTTOM] = "no bottom",   [ESTACK_END_MOVED_ON] = "moved on (read late)",
};

const char *erlang_stack__end_name(enum estack_end end)
{
	return (unsigned)end < ESTACK_END_COUNT ? end_names[end] : "?";
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool erlang_stack__is_function(const struct jit_range *r)
{
	return r && !ends_with(r->name, "-CodeInfoPrologue") && !strstr(r->name, "::codeHeader") &&
	       !strstr(r->name, "::codeFooter");
}

static uint64_t start_of(const struct jitmap *jit, const char *name)
{
	const struct jit_range *r = jitmap__find(jit, name);

	return r ? r->start : 0;
}

void erlang_stack__cfg(struct estack_cfg *c, const struct jitmap *jit, uint32_t frame_layout,
		       uint64_t normal_exit, const struct xp_layout *row)
{
	memset(c, 0, sizeof(*c));
	c->jit = jit;
	c->frame_layout = frame_layout;
	c->normal_exit = normal_exit ? normal_exit : start_of(jit, "erts_beamasm:normal_exit/0");
	c->trace_cp[ESTACK_TRACE_RETURN] = start_of(jit, "erts_beamasm:return_trace/0");
	c->trace_cp[ESTACK_TRACE_EXCEPTION] = start_of(jit, "erts_beamasm:exception_trace/0");
	c->trace_cp[ESTACK_TRACE_RETURN_TO] = start_of(jit, "erts_beamasm:return_to_trace/0");
	c->trace_cp[ESTACK_TRACE_TIME_OR_CALL] = start_of(jit, "erts_beamasm:return_time_trace/0");
	if (!c->trace_cp[ESTACK_TRACE_TIME_OR_CALL])
		c->trace_cp[ESTACK_TRACE_TIME_OR_CALL] =
		    start_of(jit, "erts_beamasm:call_trace_return/0");
	if (row) {
		c->trace_words[ESTACK_TRACE_RETURN] = (uint32_t)row->trace_words_return;
		c->trace_words[ESTACK_TRACE_EXCEPTION] = (uint32_t)row->trace_words_return;
		c->trace_words[ESTACK_TRACE_RETURN_TO] = (uint32_t)row->trace_words_return_to;
		c->trace_words[ESTACK_TRACE_TIME_OR_CALL] = (uint32_t)row->trace_words_time;
	}
}

static int trace_kind(const struct estack_cfg *c, uint64_t w)
{
	int i;

	for (i = 0; i < ESTACK_TRACE_COUNT; i++) {
		if (c->trace_cp[i] && w == c->trace_cp[i])
			return i;
	}
	return -1;
}

static bool push(struct estack_result *out, uint64_t ra, const struct jit_range *fn)
{
	if (out->nframes >= ESTACK_MAX_FRAMES)
		return false;
	out->frames[out->nframes].ra = ra;
	out->frames[out->nframes].fn = fn;
	out->nframes++;
	return true;
}

/* One candidate return address: a frame, a trace frame to skip, or the bottom. Returns the
 * number of words it consumes beyond itself, or -1 to stop. */
static int take_ra(const struct estack_cfg *c, uint64_t w, bool last, struct estack_result *out)
{
	const struct jit_range *r;
	int kind;

	if (w == c->normal_exit) {
		/* A full stack only if every aligned word on the way named a function. */
		out->end = !last	     ? ESTACK_END_NO_BOTTOM
			   : out->unresolved ? ESTACK_END_UNRESOLVED
					     : ESTACK_END_BOTTOM;
		return -1;
	}
	kind = trace_kind(c, w);
	if (kind >= 0)
		return (int)c->trace_words[kind];
	r = jitmap__lookup(c->jit, w);
	if (!erlang_stack__is_function(r)) {
		out->unresolved++;
		return 0;
	}
	if (!push(out, w, r)) {
		out->end = ESTACK_END_TRUNCATED;
		return -1;
	}
	return 0;
}

static void walk_ra(const struct estack_cfg *c, const uint64_t *w, size_t n, bool complete,
		    struct estack_result *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int skip;

		if (w[i] & XP_CP_MASK)
			continue;
		skip = take_ra(c, w[i], complete && i == n - 1, out);
		if (skip < 0)
			return;
		i += (size_t)skip;
	}
	out->end = complete ? ESTACK_END_NO_BOTTOM : ESTACK_END_TRUNCATED;
}

/* FP layout: frames are [saved rbp][RA]; the chain ends with a 0 frame pointer whose RA is
 * normal_exit, in the last two words below hend. */
static void walk_fp(const struct estack_cfg *c, const uint64_t *w, size_t n, uint64_t e,
		    uint64_t fp, bool complete, struct estack_result *out)
{
	uint64_t prev = e, hend = e + 8 * n;

	/* Between the leaf's `push rbp` and `mov rbp,rsp` (frequent in a tight tail-recursive loop,
	 * which leaves and re-enters its frame every iteration) E[0] is the saved rbp: a stack
	 * address, never a term or code. Otherwise, with rbp != E, the leaf has no frame yet
	 * (function entry, or a call into a shared fragment) and E[0] is its return address. */
	if (n > 1 && fp != e && w[0] == fp)
		fp = e;
	else if (n > 0 && fp != e && !(w[0] & XP_CP_MASK) && take_ra(c, w[0], false, out) < 0)
		return;
	for (;;) {
		size_t i;

		if (fp < prev || fp + 16 > hend || (fp & 7)) {
			out->end = complete ? ESTACK_END_BAD_CHAIN : ESTACK_END_TRUNCATED;
			return;
		}
		i = (size_t)(fp - e) / 8;
		if (take_ra(c, w[i + 1], complete && i + 2 == n, out) < 0)
			return;
		if (w[i] == 0) {
			out->end = ESTACK_END_NO_BOTTOM;
			return;
		}
		prev = fp + 16;
		fp = w[i];
	}
}

void erlang_stack__walk(const struct estack_cfg *c, const uint64_t *words, size_t nwords,
			uint64_t e, uint64_t fp, bool complete, struct estack_result *out)
{
	out->nframes = 0;
	out->unresolved = 0;
	out->end = ESTACK_END_NO_BOTTOM;
	if (c->frame_layout == XP_LAYOUT_FP)
		walk_fp(c, words, nwords, e, fp, complete, out);
	else
		walk_ra(c, words, nwords, complete, out);
}
