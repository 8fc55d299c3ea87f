/* Erlang stack walks from stack words. See erlang_stack.h. On the stack an aligned word is a
 * return address (or, in FP layout, a saved frame pointer): terms are tagged 01, 10 or 11 and
 * headers never appear there (B/erl_term.h), so no guessing is involved in the RA scan. */
#include <stdlib.h>
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

static const char *const root_labels[ESTACK_END_COUNT] = {
    [ESTACK_END_MOVED_ON] = "[Erlang callers unknown: stack read too late]",
    [ESTACK_END_NOT_CAPTURED] = "[Erlang callers unknown: stack read too late, not captured]",
    [ESTACK_END_COPY_SHORT] = "[Erlang callers unknown: stack copy too small, read too late]",
    [ESTACK_END_CALL_MISMATCH] = "[Erlang callers unknown: call-site mismatch]",
    [ESTACK_END_UNVERIFIED] = "[Erlang callers unknown: stack read too late, unverifiable]",
    /* Stopped short of the stack's bottom (normal_exit as its last word): the frames found
     * are the stack's, what lies below them is not known. */
    [ESTACK_END_BAD_CHAIN] = "[Erlang callers unknown: bad frame chain]",
    [ESTACK_END_NO_BOTTOM] = "[Erlang callers unknown: no stack bottom]",
};

const char *erlang_stack__root_label(enum estack_end end)
{
	return (unsigned)end < ESTACK_END_COUNT ? root_labels[end] : NULL;
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
	static uint64_t epochs;

	memset(c, 0, sizeof(*c));
	c->epoch = __atomic_add_fetch(&epochs, 1, __ATOMIC_RELAXED);
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
		if (!out->unresolved++)
			out->unresolved_ra = w;
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

/* A walk kept for the next (erlang_stack__walk_memo): the last one, and this one's own records. */
struct memo_run {
	const struct estack_memo_side *prev; /* NULL: nothing to take from */
	uint32_t *to_end, *unres_from;	     /* this walk's own frames' records, from its first */
	size_t top_to_end, stop_to_end;	     /* this walk's */
	size_t from;			     /* words[from, n) are alike the end of prev's */
	size_t k;     /* prev's frames before k were taken from words farther from the end */
	bool invalid; /* this walk skipped words (a trace frame) or was cut: not kept */
	size_t fresh; /* frames this walk named itself: the first ones */
	size_t taken; /* frames taken from prev: the rest, which stay where they are in prev */
};

/* The rest of the walk from word i, taken from prev's: its frames from the one as far from the
 * end (prev's scan took a frame there: it reached that word, as this one did, and the words from
 * there on are alike, so is the rest of the scan). False when there is none there, or its frames
 * do not fit. */
static bool take_memo(struct memo_run *m, size_t i, size_t n, struct estack_result *out)
{
	const struct estack_memo_side *p = m->prev;
	const size_t base = ESTACK_MAX_FRAMES - p->nframes;
	const uint32_t *to_end = p->to_end + base;
	size_t d = n - i, at = out->nframes, cnt;

	if (d > p->top_to_end || d < p->stop_to_end)
		return false;
	while (m->k < p->nframes && to_end[m->k] > d)
		m->k++;
	if (m->k == p->nframes || to_end[m->k] != d)
		return false;
	cnt = p->nframes - m->k;
	if (at + cnt > ESTACK_MAX_FRAMES) {
		m->prev = NULL;
		return false;
	}
	memcpy(out->frames + at, p->frames + base + m->k, cnt * sizeof(*out->frames));
	out->nframes = at + cnt;
	out->unresolved += p->unres_from[base + m->k];
	/* The bottom reached: whole, unless a word on the way named no function (take_ra). */
	if (p->end == ESTACK_END_BOTTOM || p->end == ESTACK_END_UNRESOLVED)
		out->end = out->unresolved ? ESTACK_END_UNRESOLVED : ESTACK_END_BOTTOM;
	else
		out->end = p->end;
	out->more_unknown = p->more_unknown;
	m->stop_to_end = p->stop_to_end;
	m->fresh = at;
	m->taken = cnt;
	return true;
}

/* RA layout: every aligned word is a return address. FP layout, as a fallback (fp_words): the
 * same scan, passing over the saved frame pointers. m (RA layout only, else NULL): take the
 * bottom from the last walk, and record this one. */
static void walk_ra(const struct estack_cfg *c, const uint64_t *w, size_t n, uint64_t e,
		    bool fp_words, bool complete, const struct jit_range *leaf,
		    struct estack_result *out, struct memo_run *m)
{
	size_t i = 0;

	while (fp_words && i < n && saved_fp(w, i, n, e))
		i++;
	i = take_top(c, w, n, i, leaf, out);
	if (m) {
		for (size_t k = 0; k < out->nframes; k++) {
			m->to_end[k] = (uint32_t)(n + 1); /* before any the scan takes */
			m->unres_from[k] = 0;
		}
		m->top_to_end = n - i;
	}
	for (; i < n; i++) {
		size_t nf = out->nframes;
		uint32_t unres = out->unresolved;
		int skip;

		if (m && m->prev && i >= m->from && take_memo(m, i, n, out))
			return;
		if ((w[i] & XP_CP_MASK) || (fp_words && saved_fp(w, i, n, e)))
			continue;
		skip = take_ra(c, w[i], complete && i == n - 1, out);
		if (m && out->nframes > nf) {
			m->to_end[nf] = (uint32_t)(n - i);
			m->unres_from[nf] = unres; /* before it, for now: walk_memo turns it */
		}
		if (skip < 0) {
			if (out->end == ESTACK_END_TRUNCATED) {
				count_more(c, w, i, n, complete, out);
				if (m)
					m->invalid = true;
			}
			if (m)
				m->stop_to_end = n - i;
			return;
		}
		if (skip && m)
			m->invalid = true;
		i += (size_t)skip;
	}
	if (m)
		m->stop_to_end = 0;
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
	out->unresolved_ra = 0;
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
		walk_ra(c, words, nwords, e, false, complete, leaf, out, NULL);
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
	walk_ra(c, words, nwords, e, true, complete, leaf, out, NULL);
	if (out->end == ESTACK_END_BOTTOM) {
		out->rescanned = true;
		return;
	}
	reset(out);
	walk_fp(c, words, nwords, e, fp, complete, leaf, out);
}

/* Room in memo for a walk of n words; -1 when there is none. The words kept stay at the end of
 * a larger buffer. */
static int memo_reserve(struct estack_memo *memo, size_t n)
{
	struct estack_memo_side *d = &memo->last;

	if (n > d->cap_words || !d->words) {
		size_t cap = d->cap_words ? d->cap_words : 1024;
		uint64_t *w;

		while (cap < n)
			cap *= 2;
		if (!(w = realloc(d->words, cap * sizeof(*w))))
			return -1;
		if (d->nwords)
			memmove(w + cap - d->nwords, w + d->cap_words - d->nwords,
				d->nwords * sizeof(*w));
		d->words = w;
		d->cap_words = cap;
	}
	if (!d->frames) {
		d->frames = malloc(ESTACK_MAX_FRAMES * sizeof(*d->frames));
		d->to_end = malloc(ESTACK_MAX_FRAMES * sizeof(*d->to_end));
		d->unres_from = malloc(ESTACK_MAX_FRAMES * sizeof(*d->unres_from));
		memo->fresh_to_end = malloc(ESTACK_MAX_FRAMES * sizeof(*memo->fresh_to_end));
		memo->fresh_unres = malloc(ESTACK_MAX_FRAMES * sizeof(*memo->fresh_unres));
		if (!d->frames || !d->to_end || !d->unres_from || !memo->fresh_to_end ||
		    !memo->fresh_unres) {
			free(d->frames);
			free(d->to_end);
			free(d->unres_from);
			free(memo->fresh_to_end);
			free(memo->fresh_unres);
			/* All of them: erlang_stack__memo_free frees them again. */
			d->frames = NULL;
			d->to_end = d->unres_from = NULL;
			memo->fresh_to_end = memo->fresh_unres = NULL;
			return -1;
		}
	}
	return 0;
}

/* How many words a (n of them) and b (pn) end with that the scan sees alike: the same word, or
 * two terms (a collection moves what they point to, and the scan passes over any term). Blocks
 * that are the same byte for byte first. */
static size_t alike_end(const uint64_t *a, size_t n, const uint64_t *b, size_t pn)
{
	size_t lim = n < pn ? n : pn, l = 0;

	while (l < lim) {
		size_t k = lim - l < 32 ? lim - l : 32;

		if (!memcmp(a + n - l - k, b + pn - l - k, k * sizeof(*a))) {
			l += k;
			continue;
		}
		for (; k > 0; k--, l++) {
			uint64_t x = a[n - 1 - l], y = b[pn - 1 - l];

			if (x != y && (!(x & XP_CP_MASK) || !(y & XP_CP_MASK)))
				return l;
		}
	}
	return l;
}

void erlang_stack__walk_memo(const struct estack_cfg *c, struct estack_memo *memo,
			     const uint64_t *words, size_t nwords, uint64_t e, uint64_t fp,
			     bool complete, const struct jit_range *leaf, struct estack_result *out)
{
	struct estack_memo_side *p;
	struct memo_run m = {0};
	size_t l = 0, k, base;

	if (!memo || c->frame_layout == XP_LAYOUT_FP) {
		erlang_stack__walk(c, words, nwords, e, fp, complete, leaf, out);
		return;
	}
	p = &memo->last;
	memo->last_taken = 0;
	if (memo_reserve(memo, nwords)) {
		p->epoch = 0;
		erlang_stack__walk(c, words, nwords, e, fp, complete, leaf, out);
		return;
	}
	m.to_end = memo->fresh_to_end;
	m.unres_from = memo->fresh_unres;
	if (p->epoch && p->epoch == c->epoch && p->complete == complete &&
	    (l = alike_end(words, nwords, p->words + p->cap_words - p->nwords, p->nwords)) > 0) {
		m.prev = p;
		m.from = nwords - l;
	}
	reset(out);
	walk_ra(c, words, nwords, e, false, complete, leaf, out, &m);
	if (!m.taken)
		m.fresh = out->nframes;
	/* The frames this walk named: unresolved words before each, turned into from each on. */
	for (k = 0; k < m.fresh; k++)
		m.unres_from[k] = out->unresolved - m.unres_from[k];
	memo->walks++;
	memo->last_taken = m.taken;
	if (m.taken) {
		memo->reused++;
		memo->frames_reused += m.taken;
	}
	/* Kept in place: the frames taken are the last ones already, this walk's own go before
	 * them; the words alike the end of the last walk's stay (alike is an equivalence: the same
	 * word, or any two terms), the rest go before them. */
	base = ESTACK_MAX_FRAMES - out->nframes;
	memcpy(p->frames + base, out->frames, m.fresh * sizeof(*out->frames));
	memcpy(p->to_end + base, m.to_end, m.fresh * sizeof(*m.to_end));
	memcpy(p->unres_from + base, m.unres_from, m.fresh * sizeof(*m.unres_from));
	memcpy(p->words + p->cap_words - nwords, words, (nwords - l) * sizeof(*words));
	p->nwords = nwords;
	p->nframes = out->nframes;
	p->top_to_end = m.top_to_end;
	p->stop_to_end = m.stop_to_end;
	p->end = out->end;
	p->more_unknown = out->more_unknown;
	p->complete = complete;
	p->epoch = m.invalid ? 0 : c->epoch;
}

void erlang_stack__memo_free(struct estack_memo *memo)
{
	if (!memo)
		return;
	free(memo->last.words);
	free(memo->last.frames);
	free(memo->last.to_end);
	free(memo->last.unres_from);
	free(memo->fresh_to_end);
	free(memo->fresh_unres);
	memset(memo, 0, sizeof(*memo));
}
