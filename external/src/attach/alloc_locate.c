/* Finding erts_allctrs_info in an attached VM. See alloc_locate.h. */
#include <errno.h>
#include <stdio.h>

#include "alloc.h"
#include "alloc_locate.h"
#include "readers.h"
#include "target.h"

static bool candidate(struct target *t, uint64_t addr, const uint8_t *b, void *ctx)
{
	(void)ctx;
	return alloc__info_prefilter(t->layout, b) &&
	       alloc__check_info(t->mem, t->layout, addr) == 0;
}

/* The unique array in beam.smp's data that the prefilter passes and alloc__check_info confirms.
 * erl_alloc.h declares it ERTS_WRITE_UNLIKELY: in ERTS_LOW_WRITE (B/sys.h 25:206). */
static int scan(struct target *t, uint64_t *found)
{
	static const char *const sections[] = {"ERTS_LOW_WRITE", ".data", ".bss"};
	const struct xp_layout *row = t->layout;

	return target__scan_data(t, sections, 3,
				 (size_t)row->alloc.n_types * (size_t)row->alloc.info_size,
				 candidate, NULL, found);
}

int alloc__locate(struct target *t, char *why, size_t whylen)
{
	struct target_value *a = &t->addr[XP_ADDR_ALLCTRS_INFO];
	uint64_t found;
	int err;

	if (!alloc__supported(t->layout)) {
		snprintf(why, whylen,
			 "no allocator layout for this VM (erts %s): the allocators "
			 "cannot be read",
			 t->erts_version[0] ? t->erts_version : "unknown");
		return -ENOTSUP;
	}
	if (!a->present) {
		err = scan(t, &found);
		if (err == -ENOMEM)
			return err;
		if (err == 0)
			*a = (struct target_value){
			    .value = (int64_t)found, .source = TSRC_SCAN, .present = true};
	}
	if (!a->present) {
		snprintf(why, whylen,
			 "the allocator table (erts_allctrs_info) was not found: no agent, no "
			 "symbol, and no unique match in beam.smp's data");
		return -ENOENT;
	}
	err = alloc__check_info(t->mem, t->layout, (uint64_t)a->value);
	if (err) {
		snprintf(why, whylen,
			 "the allocator table at 0x%llx (from %s) does not check: its allocators "
			 "do not name their own types",
			 (unsigned long long)a->value, target__src_name(a->source));
		return err == -ENOMEM ? err : -ENOENT;
	}
	a->verified = true;
	return 0;
}
