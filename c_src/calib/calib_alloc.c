/* Where the allocators are, for `extrospect alloc`: erts_allctrs_info[] by dlsym (OTP <= 27
 * export it) or, on 28+ which hide it, the unique array in beam.smp's .data/.bss that the vm
 * library's check accepts (each enabled alloc_util type's first Allctr_t names its own type and
 * a plausible allocator name). Runs in calib__scan, on a dirty scheduler. Does not own: the
 * check and the allocator layout (external/vm/alloc.c, layout.c). */
#include <dlfcn.h>
#include <errno.h>

#include "alloc.h"
#include "calib_scan.h"
#include "mem.h"
#include "selfelf.h"

struct find_ctx {
	const struct xp_layout *row;
	struct mem *self;
};

static int prefilter(uint64_t a, void *arg)
{
	const struct find_ctx *f = arg;

	return alloc__info_prefilter(f->row, (const uint8_t *)(uintptr_t)a);
}

static int confirm(uint64_t a, void *arg)
{
	const struct find_ctx *f = arg;

	return alloc__check_info(f->self, f->row, a) == 0;
}

void calib__find_allctrs(const struct agent *a, struct calib *c, const struct selfelf *se)
{
	struct addr_obs *o = &c->addr[XP_ADDR_ALLCTRS_INFO];
	struct find_ctx f = {.row = a->row};
	uint64_t sym = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "erts_allctrs_info"), found = 0;
	unsigned cand = 0;
	int err;

	o->dynsym = sym;
	if (!alloc__supported(a->row)) {
		*o = (struct addr_obs){.reason = XP_WHY_UNSUPPORTED,
				       .note = "no allocator layout for this release",
				       .dynsym = sym};
		return;
	}
	if (mem__open_self(&f.self)) {
		*o = (struct addr_obs){.reason = XP_WHY_NOT_FOUND, .dynsym = sym};
		return;
	}
	if (sym) {
		err = alloc__check_info(f.self, a->row, sym);
		found = sym;
	} else {
		err = selfelf__scan_unique(
		    se, (uint64_t)a->row->alloc.n_types * (uint64_t)a->row->alloc.info_size,
		    prefilter, confirm, &f, &found, &cand);
	}
	mem__free(f.self);
	o->value = err ? 0 : found;
	o->source = sym ? XP_SRC_DYNSYM : XP_SRC_SCAN;
	o->flags = err ? 0 : XP_VAL_PRESENT | XP_VAL_VERIFIED;
	o->reason = !err ? XP_WHY_NONE : err == -EEXIST ? XP_WHY_AMBIGUOUS : XP_WHY_NOT_FOUND;
	o->note = !err
		      ? "erts_allctrs_info: every enabled alloc_util type's Allctr_t names its type"
		      : "no unique erts_allctrs_info whose Allctr_ts name their types";
}
