/* Finding erts_allctrs_info in an attached VM. See alloc_locate.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "alloc_locate.h"
#include "target.h"

#define ALLOC_SCAN_MAX	(16u << 20) /* bytes of one data section scanned */
#define ALLOC_SCAN_HITS 4

/* The unique array in .data/.bss that the prefilter passes and alloc__check_info confirms. */
static int scan(struct target *t, uint64_t *found)
{
	/* erl_alloc.h declares it ERTS_WRITE_UNLIKELY: in ERTS_LOW_WRITE (B/sys.h 25:206). */
	static const char *const sections[] = {"ERTS_LOW_WRITE", ".data", ".bss"};
	const struct xp_layout *row = t->layout;
	size_t need = (size_t)row->alloc.n_types * (size_t)row->alloc.info_size, s, hits = 0;

	for (s = 0; s < sizeof(sections) / sizeof(sections[0]); s++) {
		uint64_t vaddr, size, off, a;
		uint8_t *buf;

		if (elf_image__section(t->beam, sections[s], &vaddr, &size) || size < need ||
		    size > ALLOC_SCAN_MAX)
			continue;
		buf = malloc(size);
		if (!buf)
			return -ENOMEM;
		if (mem__read(t->mem, t->bias + vaddr, buf, size) == 0) {
			for (off = 0; off + need <= size && hits < ALLOC_SCAN_HITS; off += 8) {
				a = t->bias + vaddr + off;
				if (alloc__info_prefilter(row, buf + off) &&
				    alloc__check_info(t->mem, row, a) == 0) {
					*found = a;
					hits++;
				}
			}
		}
		free(buf);
	}
	return hits == 1 ? 0 : hits ? -EEXIST : -ENOENT;
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
