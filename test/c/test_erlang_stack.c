/* Unit tests for the Erlang stack walker (erlang_stack.c) on synthetic stacks over a synthetic
 * JIT map: exact frames in order, the RA scan skipping terms and trace-frame payloads, the FP
 * chain, and every way a walk can end short. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "erlang_stack.h"
#include "symfile.h"

#define BASE_APP 0x7f0000100000ULL
#define BASE_ASM 0x7f0000200000ULL

static struct jitmap *make_map(void)
{
	static const struct symfile_range app[] = {
	    {0x000, 0x030, "app:leaf/1-CodeInfoPrologue"}, {0x030, 0x100, "app:leaf/1"},
	    {0x100, 0x130, "app:mid/2-CodeInfoPrologue"},  {0x130, 0x200, "app:mid/2"},
	    {0x200, 0x230, "app:top/0-CodeInfoPrologue"},  {0x230, 0x300, "app:top/0"},
	};
	static const struct symfile_range asmr[] = {
	    {0x000, 0x040, "erts_beamasm:normal_exit/0"},
	    {0x040, 0x080, "erts_beamasm:return_trace/0"},
	};
	static uint8_t blob[4096];
	struct jitmap *m = NULL;

	if (jitmap__new(&m))
		return NULL;
	jitmap__add_symfile(m, blob, symfile_build(blob, "app", BASE_APP, app[5].end, app, 6), 0x10,
			    0);
	jitmap__add_symfile(
	    m, blob, symfile_build(blob, "erts_beamasm", BASE_ASM, asmr[1].end, asmr, 2), 0x20, 1);
	jitmap__finish(m);
	return m;
}

#define RA_MID	 (BASE_APP + 0x150) /* returns into app:mid/2 */
#define RA_TOP	 (BASE_APP + 0x260) /* returns into app:top/0 */
#define EXIT	 (BASE_ASM + 0x0)   /* normal_exit */
#define TRACE	 (BASE_ASM + 0x40)  /* return_trace */
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

	erlang_stack__walk(c, st, 6, 0x1000, 0, true, &r);
	CHECK_INT("ra frames", 2, r.nframes);
	CHECK_STR("ra frame 0", "app:mid/2", name_of(&r, 0));
	CHECK_STR("ra frame 1", "app:top/0", name_of(&r, 1));
	CHECK_INT("ra end", ESTACK_END_BOTTOM, r.end);
	erlang_stack__walk(c, st, 5, 0x1000, 0, false, &r);
	CHECK_INT("ra partial copy is truncated", ESTACK_END_TRUNCATED, r.end);
	CHECK_INT("ra partial copy keeps frames", 2, r.nframes);
	erlang_stack__walk(c, st, 5, 0x1000, 0, true, &r);
	CHECK_INT("ra without normal_exit", ESTACK_END_NO_BOTTOM, r.end);
	/* The return_trace payload holds an MFA pointer into module code: skipped, not a frame. */
	erlang_stack__walk(c, trace, 6, 0x1000, 0, true, &r);
	CHECK_INT("trace frames skipped", 2, r.nframes);
	CHECK_STR("trace frame 1", "app:top/0", name_of(&r, 1));
	CHECK_INT("trace end", ESTACK_END_BOTTOM, r.end);
	erlang_stack__walk(c, stray, 4, 0x1000, 0, true, &r);
	CHECK_INT("stray aligned word counted", 1, r.unresolved);
	CHECK_INT("stray word spoils validity", ESTACK_END_UNRESOLVED, r.end);
	CHECK_INT("stray word frames kept", 2, r.nframes);
	{
		const uint64_t early[] = {RA_MID, EXIT, RA_TOP, EXIT};

		erlang_stack__walk(c, early, 4, 0x1000, 0, true, &r);
		CHECK_INT("normal_exit above the bottom", ESTACK_END_NO_BOTTOM, r.end);
	}
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
	erlang_stack__walk(c, st, n + 1, 0x1000, 0, true, &r);
	CHECK_INT("deep stack capped", ESTACK_MAX_FRAMES, r.nframes);
	CHECK_INT("deep stack truncated", ESTACK_END_TRUNCATED, r.end);
	free(st);
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
	erlang_stack__walk(c, st, 6, 0x1000, 0x1008, true, &r);
	CHECK_INT("fp frames", 1, r.nframes);
	CHECK_STR("fp frame 0", "app:mid/2", name_of(&r, 0));
	CHECK_INT("fp end", ESTACK_END_BOTTOM, r.end);
	/* At function entry the leaf RA sits at E[0], outside the chain. */
	erlang_stack__walk(c, leaf, 6, 0x1000, 0x1008, true, &r);
	CHECK_INT("fp leaf frames", 2, r.nframes);
	CHECK_STR("fp leaf frame 0", "app:top/0", name_of(&r, 0));
	CHECK_STR("fp leaf frame 1", "app:mid/2", name_of(&r, 1));
	erlang_stack__walk(c, loop, 6, 0x1000, 0x1008, true, &r);
	CHECK_INT("fp chain must go up", ESTACK_END_BAD_CHAIN, r.end);
	erlang_stack__walk(c, st, 6, 0x1000, 0x2000, true, &r);
	CHECK_INT("fp outside the stack", ESTACK_END_BAD_CHAIN, r.end);
	erlang_stack__walk(c, st, 6, 0x1000, 0x1009, true, &r);
	CHECK_INT("fp misaligned", ESTACK_END_BAD_CHAIN, r.end);
	c->frame_layout = XP_LAYOUT_RA;
}

int main(void)
{
	struct jitmap *m = make_map();
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
	test_fp(&c);
	jitmap__free(m);
	return check_done();
}
