/* Unit tests for the Erlang stack walker (erlang_stack.c) on synthetic stacks over a synthetic
 * JIT map: exact frames in order, the RA scan skipping terms and trace-frame payloads, the FP
 * chain, and every way a walk can end short. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "erlang_stack.h"
#include "estack_map.h"

#define RA_MID (BASE_APP + 0x150) /* returns into app:mid/2 */
#define RA_TOP (BASE_APP + 0x260) /* returns into app:top/0 */
#define EXIT   (BASE_ASM + 0x0)	  /* normal_exit */
#define TRACE  (BASE_ASM + 0x40)  /* return_trace */
#define FRAG   (BASE_ASM + 0x80)  /* global::times_body_shared */
#define FRAG2  (BASE_ASM + 0xc0)  /* global::mul_add_body_shared */
/* Unaligned return addresses, as OTP's safe_fragment_call leaves them: into app:leaf/1 after a
 * call to FRAG, and into FRAG after a call to FRAG2. */
#define URA_LEAF (BASE_APP + 0x51)
#define URA_FRAG (BASE_ASM + 0x93)
#define SMALL(n) (((uint64_t)(n) << 4) | 0xf)
#define LIST_PTR 0x7f0000aa0001ULL
#define BOXED	 0x7f0000aa0012ULL

static const char *name_of(const struct estack_result *r, size_t i)
{
	return i < r->nframes && r->frames[i].fn ? r->frames[i].fn->name : "(none)";
}

static void test_ra(const struct estack_cfg *c)
{
	/* [y0 y1][RA mid][y0][RA top][normal_exit] from E up. */
	const uint64_t st[] = {SMALL(1), LIST_PTR, RA_MID, BOXED, RA_TOP, EXIT};
	const uint64_t trace[] = {RA_MID, TRACE, 0x7f0000100038ULL, SMALL(3), RA_TOP, EXIT};
	const uint64_t stray[] = {RA_MID, 0x7f00dead0000ULL, RA_TOP, EXIT};
	struct estack_result r;

	erlang_stack__walk(c, st, 6, 0x1000, 0, true, NULL, &r);
	CHECK_INT("ra frames", 2, r.nframes);
	CHECK_STR("ra frame 0", "app:mid/2", name_of(&r, 0));
	CHECK_STR("ra frame 1", "app:top/0", name_of(&r, 1));
	CHECK_INT("ra end", ESTACK_END_BOTTOM, r.end);
	erlang_stack__walk(c, st, 5, 0x1000, 0, false, NULL, &r);
	CHECK_INT("ra partial copy is truncated", ESTACK_END_TRUNCATED, r.end);
	CHECK_INT("ra partial copy keeps frames", 2, r.nframes);
	erlang_stack__walk(c, st, 5, 0x1000, 0, true, NULL, &r);
	CHECK_INT("ra without normal_exit", ESTACK_END_NO_BOTTOM, r.end);
	/* The return_trace payload holds an MFA pointer into module code: skipped, not a frame. */
	erlang_stack__walk(c, trace, 6, 0x1000, 0, true, NULL, &r);
	CHECK_INT("trace frames skipped", 2, r.nframes);
	CHECK_STR("trace frame 1", "app:top/0", name_of(&r, 1));
	CHECK_INT("trace end", ESTACK_END_BOTTOM, r.end);
	erlang_stack__walk(c, stray, 4, 0x1000, 0, true, NULL, &r);
	CHECK_INT("stray aligned word counted", 1, r.unresolved);
	CHECK_INT("stray word spoils validity", ESTACK_END_UNRESOLVED, r.end);
	CHECK("stray word kept", r.unresolved_ra == 0x7f00dead0000ULL);
	CHECK_INT("stray word frames kept", 2, r.nframes);
	erlang_stack__walk(c, st, 6, 0x1000, 0, true, NULL, &r);
	CHECK("a whole walk keeps no word", r.unresolved_ra == 0);
	{
		const uint64_t early[] = {RA_MID, EXIT, RA_TOP, EXIT};

		erlang_stack__walk(c, early, 4, 0x1000, 0, true, NULL, &r);
		CHECK_INT("normal_exit above the bottom", ESTACK_END_NO_BOTTOM, r.end);
	}
}

/* The call-site check, as the sampler's callsite.c would answer it for this synthetic code. */
static bool returns_from(void *ctx, uint64_t ra, const struct jit_range *callee)
{
	(void)ctx;
	return (ra == URA_LEAF && callee->start == FRAG) ||
	       (ra == URA_FRAG && callee->start == FRAG2);
}

static void test_fragment_top(struct estack_cfg *c, const struct jitmap *m)
{
	/* A frameless function (app:leaf/1) called a fragment without aligning the return
	 * address; its caller's frame (mid) and the bottom follow. */
	const uint64_t st[] = {URA_LEAF, RA_MID, SMALL(2), RA_TOP, EXIT};
	const uint64_t nested[] = {URA_FRAG, URA_LEAF, RA_MID, RA_TOP, EXIT};
	const struct jit_range *frag = jitmap__lookup(m, FRAG), *frag2 = jitmap__lookup(m, FRAG2);
	const struct jit_range *mid = jitmap__lookup(m, RA_MID);
	struct estack_result r;

	CHECK("fragment is a fragment", erlang_stack__is_fragment(frag));
	/* Without the check an unaligned word is a term: the frameless function is lost (the
	 * defect this guards against: its native time went to its caller). */
	erlang_stack__walk(c, st, 5, 0x1000, 0, true, frag, &r);
	CHECK_STR("unverified: caller first", "app:mid/2", name_of(&r, 0));
	c->returns_from = returns_from;
	erlang_stack__walk(c, st, 5, 0x1000, 0, true, frag, &r);
	CHECK_INT("fragment top: frames", 3, r.nframes);
	CHECK_STR("fragment top: the frameless caller first", "app:leaf/1", name_of(&r, 0));
	CHECK_STR("fragment top: then its caller", "app:mid/2", name_of(&r, 1));
	CHECK_INT("fragment top: one unaligned", 1, r.top_unaligned);
	CHECK_INT("fragment top: complete", ESTACK_END_BOTTOM, r.end);
	/* A fragment called by a fragment called by the function. */
	erlang_stack__walk(c, nested, 5, 0x1000, 0, true, frag2, &r);
	CHECK_INT("nested fragments: frames", 4, r.nframes);
	CHECK_STR("nested fragments: the calling fragment", "global::times_body_shared",
		  name_of(&r, 0));
	CHECK_STR("nested fragments: then the function", "app:leaf/1", name_of(&r, 1));
	/* A fragment that pushed words of its own (bs_get_utf8_shared: a bit offset, raw, and its
	 * match context) above its return address: passed over up to the row's count, and only
	 * when the return address follows them. */
	{
		const uint64_t pushed[] = {0x1000, BOXED, URA_LEAF, RA_MID, RA_TOP, EXIT};

		erlang_stack__walk(c, pushed, 6, 0x1000, 0, true, frag, &r);
		CHECK_INT("pushed words, none allowed: unresolved", ESTACK_END_UNRESOLVED, r.end);
		c->push_words = 1;
		erlang_stack__walk(c, pushed, 6, 0x1000, 0, true, frag, &r);
		CHECK_INT("pushed words, fewer allowed: unresolved", ESTACK_END_UNRESOLVED, r.end);
		c->push_words = 2;
		erlang_stack__walk(c, pushed, 6, 0x1000, 0, true, frag, &r);
		CHECK_STR("pushed words: the frameless caller first", "app:leaf/1", name_of(&r, 0));
		CHECK_INT("pushed words: two passed over", 2, r.top_pushed);
		CHECK_INT("pushed words: complete", ESTACK_END_BOTTOM, r.end);
		/* A return address that does not follow a call to the fragment ends the search:
		 * the words below it are not the fragment's. */
		erlang_stack__walk(c, pushed, 6, 0x1000, 0, true, frag2, &r);
		CHECK_INT("pushed words, other fragment: none passed over", 0, r.top_pushed);
		c->push_words = 0;
	}
	/* The leaf is no fragment, or the word does not follow a call to it: a term. */
	erlang_stack__walk(c, st, 5, 0x1000, 0, true, mid, &r);
	CHECK_STR("function leaf: unaligned word is a term", "app:mid/2", name_of(&r, 0));
	erlang_stack__walk(c, st, 5, 0x1000, 0, true, frag2, &r);
	CHECK_STR("other fragment: unaligned word is a term", "app:mid/2", name_of(&r, 0));
	/* FP layout, a JIT sample in the fragment before its frame: rbp is still the caller's. */
	{
		const uint64_t fp[] = {URA_LEAF, SMALL(1), 0x1020, RA_MID, 0, EXIT};

		c->frame_layout = XP_LAYOUT_FP;
		erlang_stack__walk(c, fp, 6, 0x1000, 0x1010, true, frag, &r);
		CHECK_INT("fp fragment entry: frames", 2, r.nframes);
		CHECK_STR("fp fragment entry: the frameless caller", "app:leaf/1", name_of(&r, 0));
		CHECK_STR("fp fragment entry: then the chain", "app:mid/2", name_of(&r, 1));
		CHECK_INT("fp fragment entry: complete", ESTACK_END_BOTTOM, r.end);
		c->frame_layout = XP_LAYOUT_RA;
	}
	c->returns_from = NULL;
}

static void test_ra_deep(const struct estack_cfg *c)
{
	size_t n = ESTACK_MAX_FRAMES + 10, i;
	uint64_t *st = calloc(n + 1, sizeof(*st));
	struct estack_result r;

	if (!st)
		return;
	for (i = 0; i < n; i++)
		st[i] = RA_MID;
	st[n] = EXIT;
	erlang_stack__walk(c, st, n + 1, 0x1000, 0, true, NULL, &r);
	CHECK_INT("deep stack capped", ESTACK_MAX_FRAMES, r.nframes);
	CHECK_INT("deep stack truncated", ESTACK_END_TRUNCATED, r.end);
	CHECK_INT("deep stack: frames left out, counted", 10, r.more);
	CHECK("deep stack: the count is exact", !r.more_unknown);
	erlang_stack__walk(c, st, n, 0x1000, 0, false, NULL, &r);
	CHECK_INT("deep stack, words cut too: counted so far", 10, r.more);
	CHECK("deep stack, words cut too: more unknown", r.more_unknown);
	free(st);
}

static bool same_walk(const struct estack_result *a, const struct estack_result *b)
{
	return a->nframes == b->nframes && a->end == b->end && a->unresolved == b->unresolved &&
	       a->more == b->more && a->more_unknown == b->more_unknown &&
	       a->top_unaligned == b->top_unaligned && a->top_pushed == b->top_pushed &&
	       !memcmp(a->frames, b->frames, a->nframes * sizeof(*a->frames));
}

/* The memoised walk: the bottom of a stack the last walk had is taken from it, from the first
 * frame at the same distance from the bottom below the words that differ, and the result is the
 * plain walk's; nothing is taken across a trace frame's skip, a different cfg or completeness. */
static void test_memo(struct estack_cfg *c, const struct jitmap *m)
{
	enum { N = 301 };
	static struct estack_result plain, memo_r; /* large */
	struct estack_memo memo = {0};
	uint64_t a[N], b[N];
	size_t i;

	/* 100 frames of [SMALL][RA_TOP][BOXED] under a top that differs, a stray word among them.
	 */
	for (i = 0; i < N - 1; i++)
		a[i] = i % 3 == 1 ? RA_TOP : i % 3 ? BOXED : SMALL(i);
	a[150] = 0x7f00dead0000ULL;
	a[N - 1] = EXIT;
	memcpy(b, a, sizeof(a));
	b[0] = RA_MID;
	b[3] = RA_MID;
	erlang_stack__walk_memo(c, &memo, a, N, 0x1000, 0, true, NULL, &memo_r);
	erlang_stack__walk(c, a, N, 0x1000, 0, true, NULL, &plain);
	CHECK("memo: first walk as plain", same_walk(&plain, &memo_r));
	CHECK_INT("memo: first walk takes nothing", 0, memo.reused);
	erlang_stack__walk_memo(c, &memo, b, N, 0x1000, 0, true, NULL, &memo_r);
	erlang_stack__walk(c, b, N, 0x1000, 0, true, NULL, &plain);
	CHECK("memo: second walk as plain", same_walk(&plain, &memo_r));
	CHECK_INT("memo: second walk takes the bottom", 1, memo.reused);
	/* b's words from 4 on are a's: the frame at word 4 (RA_TOP) and every one below it. */
	CHECK_INT("memo: frames taken", 99, memo.frames_reused);
	CHECK_INT("memo: frames", 102, memo_r.nframes);
	CHECK_STR("memo: top frame walked", "app:mid/2", name_of(&memo_r, 0));
	CHECK_INT("memo: stray word below still counted", 1, memo_r.unresolved);
	/* Its word is the plain walk's only: the memo keeps counts (the sampler walks again). */
	CHECK("memo: the stray word is not kept", memo_r.unresolved_ra == 0);
	CHECK("plain: the stray word is kept", plain.unresolved_ra == 0x7f00dead0000ULL);
	CHECK_INT("memo: end", ESTACK_END_UNRESOLVED, memo_r.end);
	/* A shorter stack with the same bottom: taken at the same distance from it. */
	erlang_stack__walk_memo(c, &memo, a + 30, N - 30, 0x1000, 0, true, NULL, &memo_r);
	erlang_stack__walk(c, a + 30, N - 30, 0x1000, 0, true, NULL, &plain);
	CHECK("memo: shorter stack as plain", same_walk(&plain, &memo_r));
	CHECK_INT("memo: shorter stack takes its whole", 2, memo.reused);
	/* Not complete (the words stop short of hend): nothing taken from a complete walk. */
	erlang_stack__walk_memo(c, &memo, a + 30, N - 31, 0x1000, 0, false, NULL, &memo_r);
	erlang_stack__walk(c, a + 30, N - 31, 0x1000, 0, false, NULL, &plain);
	CHECK("memo: cut stack as plain", same_walk(&plain, &memo_r));
	CHECK_INT("memo: cut stack takes nothing", 2, memo.reused);
	/* A trace frame skips words: that walk is not kept. */
	b[99] = TRACE;
	erlang_stack__walk_memo(c, &memo, b, N, 0x1000, 0, true, NULL, &memo_r);
	erlang_stack__walk(c, b, N, 0x1000, 0, true, NULL, &plain);
	CHECK("memo: trace frame as plain", same_walk(&plain, &memo_r));
	erlang_stack__walk_memo(c, &memo, a, N, 0x1000, 0, true, NULL, &memo_r);
	erlang_stack__walk(c, a, N, 0x1000, 0, true, NULL, &plain);
	CHECK("memo: after a trace frame as plain", same_walk(&plain, &memo_r));
	CHECK_INT("memo: nothing taken after a trace frame's skip", 2, memo.reused);
	erlang_stack__walk_memo(c, &memo, a, N, 0x1000, 0, true, NULL, &memo_r);
	CHECK("memo: the same stack again as plain", same_walk(&plain, &memo_r));
	CHECK_INT("memo: the same stack again: taken", 3, memo.reused);
	/* 99 frames taken by the second walk, 90 (all) by the shorter one, 100 (all) here. */
	CHECK_INT("memo: the same stack again: every frame taken", 99 + 90 + 100,
		  memo.frames_reused);
	/* The map changed (a new cfg): nothing taken. */
	erlang_stack__cfg(c, m, XP_LAYOUT_RA, 0, layout__find("13.1.5", XP_FLAVOR_JIT, "x86_64"));
	erlang_stack__walk_memo(c, &memo, a, N, 0x1000, 0, true, NULL, &memo_r);
	CHECK_INT("memo: nothing taken across a new cfg", 3, memo.reused);
	CHECK("memo: new cfg as plain", same_walk(&plain, &memo_r));
	erlang_stack__memo_free(&memo);
}

static void test_fp(struct estack_cfg *c)
{
	/* E = 0x1000: [y0][fp1 -> 0x1018][RA mid][y0][fp2 = 0][... ] words:
	 * 0x1000 y, 0x1008 saved fp (0x1020), 0x1010 RA mid, 0x1018 y, 0x1020 0, 0x1028 EXIT */
	const uint64_t st[] = {SMALL(7), 0x1020, RA_MID, SMALL(8), 0, EXIT};
	const uint64_t leaf[] = {RA_TOP, 0x1010, RA_MID, 0, 0, EXIT};
	const uint64_t loop[] = {SMALL(7), 0x1008, RA_MID, SMALL(8), 0, EXIT};
	struct estack_result r;

	c->frame_layout = XP_LAYOUT_FP;
	erlang_stack__walk(c, st, 6, 0x1000, 0x1008, true, NULL, &r);
	CHECK_INT("fp frames", 1, r.nframes);
	CHECK_STR("fp frame 0", "app:mid/2", name_of(&r, 0));
	CHECK_INT("fp end", ESTACK_END_BOTTOM, r.end);
	/* At function entry the leaf RA sits at E[0], outside the chain. */
	erlang_stack__walk(c, leaf, 6, 0x1000, 0x1008, true, NULL, &r);
	CHECK_INT("fp leaf frames", 2, r.nframes);
	CHECK_STR("fp leaf frame 0", "app:top/0", name_of(&r, 0));
	CHECK_STR("fp leaf frame 1", "app:mid/2", name_of(&r, 1));
	/* A chain that does not go up, or a frame pointer outside the stack or misaligned, breaks
	 * the walk; the words are then scanned as in RA layout, past saved frame pointers (stack
	 * addresses, and the bottom's 0), and kept when that reaches the bottom. */
	erlang_stack__walk(c, loop, 6, 0x1000, 0x1008, true, NULL, &r);
	CHECK_INT("fp chain must go up: rescanned whole", ESTACK_END_BOTTOM, r.end);
	CHECK("fp chain must go up: said so", r.rescanned);
	CHECK_STR("fp chain must go up: the frame", "app:mid/2", name_of(&r, 0));
	erlang_stack__walk(c, st, 6, 0x1000, 0x2000, true, NULL, &r);
	CHECK_INT("fp outside the stack: rescanned", ESTACK_END_BOTTOM, r.end);
	erlang_stack__walk(c, st, 6, 0x1000, 0x1009, true, NULL, &r);
	CHECK_INT("fp misaligned: rescanned", ESTACK_END_BOTTOM, r.end);
	erlang_stack__walk(c, st, 6, 0x1000, 0x1008, true, NULL, &r);
	CHECK("a whole chain is not rescanned", !r.rescanned);
	{
		/* A stray aligned word that is neither a return address nor a stack address: the
		 * scan does not reach the bottom either, and the chain's answer stands. */
		const uint64_t bad[] = {SMALL(7), 0x1020, RA_MID, 0x7f00dead0000ULL, 0, EXIT};

		erlang_stack__walk(c, bad, 6, 0x1000, 0x2000, true, NULL, &r);
		CHECK_INT("fp broken, scan unresolved: bad chain", ESTACK_END_BAD_CHAIN, r.end);
		CHECK("fp broken, scan unresolved: not rescanned", !r.rescanned);
	}
	/* A frame pointer so high that fp + 16 wraps was taken inside the words (fuzz_estack,
	 * corpus/estack/regress_fp_wraps.bin): read far outside them. Now the chain breaks there,
	 * and the scan past saved frame pointers stands in. */
	erlang_stack__walk(c, st, 6, 0x1000, 0xfffffffffffffff8ULL, true, NULL, &r);
	CHECK_INT("fp + 16 wraps: rescanned", ESTACK_END_BOTTOM, r.end);
	{
		const uint64_t wrap[] = {SMALL(7), 0xfffffffffffffff8ULL, RA_MID, 0, 0, EXIT};

		erlang_stack__walk(c, wrap, 6, 0x1000, 0x1008, true, NULL, &r);
		CHECK_INT("saved fp + 16 wraps", ESTACK_END_BAD_CHAIN, r.end);
	}
	c->frame_layout = XP_LAYOUT_RA;
}

/* Every way a walk ends has its root label, a class: a whole stack and an unresolved one (every
 * frame kept is the stack's) have none, a cut one is labelled by the sampler with its count, and
 * every other end says the callers are unknown, each in its own words. */
static void test_root_labels(void)
{
	for (int e = 0; e < ESTACK_END_COUNT; e++) {
		const char *l = erlang_stack__root_label((enum estack_end)e);
		char what[96];

		snprintf(what, sizeof(what), "root label of a walk ended %s",
			 erlang_stack__end_name((enum estack_end)e));
		if (e == ESTACK_END_BOTTOM || e == ESTACK_END_UNRESOLVED ||
		    e == ESTACK_END_TRUNCATED) {
			CHECK(what, l == NULL);
			continue;
		}
		CHECK(what, l && strncmp(l, "[Erlang callers unknown: ", 25) == 0 &&
				l[strlen(l) - 1] == ']');
		for (int o = 0; l && o < e; o++) {
			const char *k = erlang_stack__root_label((enum estack_end)o);

			if (k && strcmp(k, l) == 0)
				CHECK(what, false); /* two causes under one label */
		}
	}
	CHECK_STR("no bottom", "[Erlang callers unknown: no stack bottom]",
		  erlang_stack__root_label(ESTACK_END_NO_BOTTOM));
	CHECK("out of range", erlang_stack__root_label(ESTACK_END_COUNT) == NULL);
}

int main(void)
{
	struct jitmap *m = estack_map__new();
	const struct xp_layout *row = layout__find("13.1.5", XP_FLAVOR_JIT, "x86_64");
	struct estack_cfg c;

	if (!m)
		return check_skip("cannot build the JIT map");
	erlang_stack__cfg(&c, m, XP_LAYOUT_RA, 0, row);
	CHECK_U64("normal_exit from the JIT map", EXIT, c.normal_exit);
	CHECK_U64("return_trace from the JIT map", TRACE, c.trace_cp[ESTACK_TRACE_RETURN]);
	CHECK_INT("25 return_trace payload", 2, c.trace_words[ESTACK_TRACE_RETURN]);
	CHECK("prologue is no function",
	      !erlang_stack__is_function(jitmap__lookup(m, BASE_APP + 0x10)));
	test_ra(&c);
	test_ra_deep(&c);
	test_fragment_top(&c, m);
	test_memo(&c, m);
	test_fp(&c);
	test_root_labels();
	jitmap__free(m);
	return check_done();
}
