/* Erlang stack walks from stack words. See erlang_stack.h. On the stack an aligned word is a
 * return address (or, in FP layout, a saved frame pointer): terms are tagged 01, 10 or 11 and
 * headers never appear there (B/erl_term.h), so no guessing is involved in the RA scan. */
#include <string.h>

#include "erlang_stack.h"

static const char *const end_names[ESTACK_END_COUNT] = {
    [ESTACK_END_BOTTOM] = "bottom",
    [ESTACK_END_TRUNCATED] = "truncated",
    [ESTACK_END_UNRESOLVED] = "unresolved",
    [ESTACK_END_BAD_CHAIN] = "bad frame chain",
    [ESTACK_END_NO_BOTTOM] = "no bottom",
    [ESTACK_END_MOVED_ON] = "moved on (read late)",
    [ESTACK_END_CALL_MISMATCH] = "call-site mismatch",
    [ESTACK_END_COPY_SHORT] = "copy too small (read late)",
    [ESTACK_END_UNVERIFIED] = "unverified (read late)",
    [ESTACK_END_NOT_CAPTURED] = "not captured (read late)",
};

const char *erlang_stack__end_name(enum estack_end end)
{
	return (unsigned)end < ESTACK_END_COUNT ? end_names[end] : "?";
}

/* Both from flags the map set once per range (jitmap.c add_range): these run for every word of
 * every stack walked. */
bool erlang_stack__is_function(const struct jit_range *r)
{
	return r && r->frame;
}

bool erlang_stack__is_fragment(const struct jit_range *r)
{
	return r && r->fragment;
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
		c->push_words = (uint32_t)row->fragment_push_words;
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
		out->more_unknown = true; /* the RA layout's caller counts them */
		return -1;
	}
	return 0;
}

/* A stack cut at ESTACK_MAX_FRAMES: count the frames left out in w[i..n), so that the cut can
 * say how many (the words are at hand; naming them is what costs). */
static void count_more(const struct estack_cfg *c, const uint64_t *w, size_t i, size_t n,
		       bool complete, struct estack_result *out)
{
	out->more_unknown = false;
	for (; i < n; i++) {
		if (!(w[i] & XP_CP_MASK) && w[i] != c->normal_exit &&
		    erlang_stack__is_function(jitmap__lookup(c->jit, w[i])))
			out->more++;
	}
	out->more_unknown = !complete;
}

/* The return address of a call to the fragment callee at w[i], or below up to c->push_words
 * words the fragment pushed itself (no code addresses: a match context, a bit offset), or n. */
static size_t fragment_ra(const struct estack_cfg *c, const uint64_t *w, size_t n, size_t i,
			  const struct jit_range *callee)
{
	for (size_t j = i; j < n && j <= i + c->push_words; j++) {
		const struct jit_range *r = jitmap__lookup(c->jit, w[j]);

		if (!r)
			continue;
		return erlang_stack__is_function(r) && c->returns_from(c->returns_ctx, w[j], callee)
			   ? j
			   : n;
	}
	return n;
}

/* The top of a stack whose leaf is a shared fragment (see erlang_stack__walk). An unaligned word
 * is a frame only when it follows a call to the callee: a term never does. Returns the index of
 * the first word left to the plain scan. */
static size_t take_top(const struct estack_cfg *c, const uint64_t *w, size_t n, size_t i,
		       const struct jit_range *leaf, struct estack_result *out)
{
	const struct jit_range *callee = leaf, *r;
	size_t j;

	for (int depth = 0; depth < ESTACK_TOP_FRAGMENTS && i < n; depth++) {
		if (!erlang_stack__is_fragment(callee) || !c->returns_from)
			break;
		j = fragment_ra(c, w, n, i, callee);
		if (j >= n)
			break;
		r = jitmap__lookup(c->jit, w[j]);
		/* The fragment's own words are passed over only when its return address follows. */
		out->top_pushed += (uint32_t)(j - i);
		i = j;
		/* Aligned: the plain scan takes it, unless it returns into a fragment, which may
		 * have been called without alignment in turn. */
		if (!(w[i] & XP_CP_MASK) && !erlang_stack__is_fragment(r))
			break;
		if (!push(out, w[i], r))
			break;
		out->top_unaligned += (w[i] & XP_CP_MASK) != 0;
		i++;
		callee = r;
	}
	return i;
}

/* In FP layout, the aligned words that are no return address: saved frame pointers (addresses in
 * the stack itself, [e, e + 8n)) and the zero one at the bottom. */
static bool saved_fp(const uint64_t *w, size_t i, size_t n, uint64_t e)
{
	return w[i] == 0 || (w[i] >= e && w[i] - e < 8 * (uint64_t)n);
}

/* RA layout: every aligned word is a return address. FP layout, as a fallback (fp_words): the
 * same scan, passing over the saved frame pointers. */
static void walk_ra(const struct estack_cfg *c, const uint64_t *w, size_t n, uint64_t e,
		    bool fp_words, bool complete, const struct jit_range *leaf,
		    struct estack_result *out)
{
	size_t i = 0;

	while (fp_words && i < n && saved_fp(w, i, n, e))
		i++;
	for (i = take_top(c, w, n, i, leaf, out); i < n; i++) {
		int skip;

		if ((w[i] & XP_CP_MASK) || (fp_words && saved_fp(w, i, n, e)))
			continue;
		skip = take_ra(c, w[i], complete && i == n - 1, out);
		if (skip < 0) {
			if (out->end == ESTACK_END_TRUNCATED)
				count_more(c, w, i, n, complete, out);
			return;
		}
		i += (size_t)skip;
	}
	out->end = complete ? ESTACK_END_NO_BOTTOM : ESTACK_END_TRUNCATED;
	out->more_unknown = !complete;
}

/* FP layout: frames are [saved rbp][RA]; the chain ends with a 0 frame pointer whose RA is
 * normal_exit, in the last two words below hend. */
static void walk_fp(const struct estack_cfg *c, const uint64_t *w, size_t n, uint64_t e,
		    uint64_t fp, bool complete, const struct jit_range *leaf,
		    struct estack_result *out)
{
	uint64_t lo = 0; /* fp - e must be at least this: the chain goes up */

	/* Between the leaf's `push rbp` and `mov rbp,rsp` (frequent in a tight tail-recursive loop,
	 * which leaves and re-enters its frame every iteration) E[0] is the saved rbp: a stack
	 * address, never a term or code. Otherwise, with rbp != E, the leaf has no frame yet
	 * (function entry, or a call into a shared fragment) and E[0] is its return address. */
	if (n > 1 && fp != e && w[0] == fp)
		fp = e;
	else if (n > 0 && fp != e && (w[0] & XP_CP_MASK))
		take_top(c, w, 1, 0, leaf, out); /* a fragment entered, its frame not made yet */
	else if (n > 0 && fp != e && take_ra(c, w[0], false, out) < 0)
		return;
	for (;;) {
		size_t i;

		/* [fp, fp + 16) within the words, reckoned from e: fp comes from the stack
		 * words and the sampled rbp, and fp + 16 or e + 8 * n may wrap. */
		if (fp < e || fp - e < lo || (fp & 7) || n < 2 || fp - e > 8 * (uint64_t)(n - 2)) {
			out->end = complete ? ESTACK_END_BAD_CHAIN : ESTACK_END_TRUNCATED;
			out->more_unknown = !complete;
			return;
		}
		i = (size_t)(fp - e) / 8;
		if (take_ra(c, w[i + 1], complete && i + 2 == n, out) < 0)
			return;
		if (w[i] == 0) {
			out->end = ESTACK_END_NO_BOTTOM;
			return;
		}
		lo = fp - e + 16;
		fp = w[i];
	}
}

static void reset(struct estack_result *out)
{
	out->nframes = 0;
	out->unresolved = 0;
	out->more = 0;
	out->more_unknown = false;
	out->top_unaligned = 0;
	out->top_pushed = 0;
	out->rescanned = false;
	out->end = ESTACK_END_NO_BOTTOM;
}

void erlang_stack__none(struct estack_result *out)
{
	reset(out);
	out->end = ESTACK_END_BOTTOM;
}

void erlang_stack__walk(const struct estack_cfg *c, const uint64_t *words, size_t nwords,
			uint64_t e, uint64_t fp, bool complete, const struct jit_range *leaf,
			struct estack_result *out)
{
	reset(out);
	if (c->frame_layout != XP_LAYOUT_FP) {
		walk_ra(c, words, nwords, e, false, complete, leaf, out);
		return;
	}
	walk_fp(c, words, nwords, e, fp, complete, leaf, out);
	if (out->end != ESTACK_END_BAD_CHAIN && out->end != ESTACK_END_UNRESOLVED)
		return;
	/* The chain breaks where code runs between its frame's pushes and pops (a prologue, a tail
	 * call's shuffle, a fragment that keeps rbp): the words are still the frames. Scan them as
	 * in RA layout, passing over saved frame pointers; kept only when that reaches the bottom,
	 * else the chain's walk stands. */
	reset(out);
	walk_ra(c, words, nwords, e, true, complete, leaf, out);
	if (out->end == ESTACK_END_BOTTOM) {
		out->rescanned = true;
		return;
	}
	reset(out);
	walk_fp(c, words, nwords, e, fp, complete, leaf, out);
}
