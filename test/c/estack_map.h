/* The synthetic JIT map the stack walker's tests and its fuzz target share: module app (three
 * functions, each behind its CodeInfoPrologue) at BASE_APP, and at BASE_ASM erts_beamasm's
 * normal_exit/0 and return_trace/0 and two shared fragments (times_body_shared jumps on to
 * mul_add_body_shared in OTP 26+). Does not own: the stack words (each test builds its own). */
#ifndef XP_TEST_ESTACK_MAP_H
#define XP_TEST_ESTACK_MAP_H

#include "jitmap.h"
#include "symfile.h"

#define BASE_APP 0x7f0000100000ULL
#define BASE_ASM 0x7f0000200000ULL

static inline struct jitmap *estack_map__new(void)
{
	static const struct symfile_range app[] = {
	    {0x000, 0x030, "app:leaf/1-CodeInfoPrologue"}, {0x030, 0x100, "app:leaf/1"},
	    {0x100, 0x130, "app:mid/2-CodeInfoPrologue"},  {0x130, 0x200, "app:mid/2"},
	    {0x200, 0x230, "app:top/0-CodeInfoPrologue"},  {0x230, 0x300, "app:top/0"},
	};
	static const struct symfile_range asmr[] = {
	    {0x000, 0x040, "erts_beamasm:normal_exit/0"},
	    {0x040, 0x080, "erts_beamasm:return_trace/0"},
	    {0x080, 0x0c0, "global::times_body_shared"},
	    {0x0c0, 0x100, "global::mul_add_body_shared"},
	};
	static uint8_t blob[4096];
	struct jitmap *m = NULL;

	if (jitmap__new(&m))
		return NULL;
	jitmap__add_symfile(m, blob, symfile_build(blob, "app", BASE_APP, app[5].end, app, 6), 0x10,
			    0);
	jitmap__add_symfile(
	    m, blob, symfile_build(blob, "erts_beamasm", BASE_ASM, asmr[3].end, asmr, 4), 0x20, 1);
	jitmap__finish(m);
	return m;
}

#endif /* XP_TEST_ESTACK_MAP_H */
