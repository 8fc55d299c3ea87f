/* The structural scan for erts_atom_table. See atomtab.h. A candidate is first checked in place
 * (it lies in our own .data/.bss), then confirmed by decoding every wanted atom through the vm
 * atom reader over a self-reading struct mem, so a wrong guess reads -EFAULT, never crashes. */
#include <errno.h>
#include <string.h>

#include "atom.h"
#include "atomtab.h"
#include "mem.h"

#define MAX_ATOM_ENTRIES (1u << 28)

struct scan_ctx {
	struct atom_reader r; /* r.table is the candidate */
	const struct atomtab_want *want;
	unsigned nwant;
	uint64_t min_entries;
};

/* Cheap test on the directly readable section bytes before any syscall. */
static int prefilter(uint64_t a, void *ctx)
{
	const struct scan_ctx *x = ctx;
	uint32_t entries;
	uint64_t seg;

	memcpy(&entries, (const void *)(uintptr_t)(a + (uint64_t)x->r.off_entries), 4);
	memcpy(&seg, (const void *)(uintptr_t)(a + (uint64_t)x->r.off_seg_table), 8);
	return entries >= x->min_entries && entries <= MAX_ATOM_ENTRIES && (seg & 7) == 0 &&
	       mem__plausible(seg);
}

static int confirm(uint64_t a, void *ctx)
{
	struct scan_ctx *x = ctx;
	char buf[XP_ATOM_MAX_BYTES + 1];
	unsigned i;

	x->r.table = a;
	for (i = 0; i < x->nwant; i++) {
		if (atom__text(&x->r, x->want[i].term, buf, sizeof(buf)) ||
		    strcmp(buf, x->want[i].text) != 0)
			return 0;
	}
	return 1;
}

int atomtab__scan(const struct selfelf *se, const struct xp_layout *row,
		  const struct atomtab_want *want, unsigned nwant, uint64_t *addr,
		  unsigned *candidates)
{
	struct scan_ctx x = {.want = want, .nwant = nwant};
	uint64_t span;
	unsigned i;
	int err;

	err = atom__reader_from_row(&x.r, NULL, row);
	if (err)
		return err;
	for (i = 0; i < nwant; i++)
		if ((want[i].term >> XP_ATOM_INDEX_SHIFT) + 1 > x.min_entries)
			x.min_entries = (want[i].term >> XP_ATOM_INDEX_SHIFT) + 1;
	span = (uint64_t)(x.r.off_entries > x.r.off_seg_table ? x.r.off_entries + 4
							      : x.r.off_seg_table + 8);
	err = mem__open_self(&x.r.mem);
	if (err)
		return err;
	err = selfelf__scan_unique(se, span, prefilter, confirm, &x, addr, candidates);
	mem__free(x.r.mem);
	return err;
}
