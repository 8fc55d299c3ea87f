/* Atom text through an IndexTable, and the structural scan for erts_atom_table. See atomtab.h.
 * Term and bitstring tags: erl_term.h (atom tag 0x0B, _TAG_IMMED2_SIZE 6), erl_bits.h of OTP 28+
 * (HEAP_BITS header subtag 0x20, SUB_BITS 0x24), index.h (INDEX_PAGE_SHIFT 10). */
#include <errno.h>
#include <string.h>

#include "atomtab.h"
#include "saferead.h"

#define ATOM_TAG_MASK	 0x3fu
#define ATOM_TAG	 0x0bu
#define ATOM_IX_SHIFT	 6
#define INDEX_PAGE_SHIFT 10
#define INDEX_PAGE_MASK	 ((1u << INDEX_PAGE_SHIFT) - 1)
#define MAX_ATOM_ENTRIES (1u << 28)
#define BOXED_TAG	 0x2u
#define HDR_SUBTAG_MASK	 0x3fu
#define HDR_HEAP_BITS	 0x20u
#define HDR_SUB_BITS	 0x24u

int atomtab__layout(const struct xp_layout *row, struct atomtab_layout *out)
{
	out->itab_entries = row->off[XP_OFF_ITAB_ENTRIES];
	out->itab_seg_table = row->off[XP_OFF_ITAB_SEG_TABLE];
	out->atom_len = row->off[XP_OFF_ATOM_LEN];
	out->atom_name = row->off[XP_OFF_ATOM_NAME];
	out->mode = row->atom_name_mode;
	if (out->itab_entries < 0 || out->itab_seg_table < 0 || out->atom_len < 0 ||
	    out->atom_name < 0)
		return -ENOENT;
	return 0;
}

/* OTP 28+: Atom.u.bin is a literal bitstring term; find where its bytes are. */
static int bitstring_text(uint64_t bin, size_t len, uint64_t *text)
{
	uint64_t w[4];

	if ((bin & 3) != BOXED_TAG)
		return -EPROTO;
	if (saferead__bytes(bin & ~3ull, w, sizeof(w)))
		return -EFAULT;
	if ((w[0] & HDR_SUBTAG_MASK) == HDR_HEAP_BITS) {
		/* ErlHeapBits: {thing_word, size in bits, data...} */
		if (w[1] != len * 8)
			return -EPROTO;
		*text = (bin & ~3ull) + 16;
		return 0;
	}
	if ((w[0] & HDR_SUBTAG_MASK) == HDR_SUB_BITS) {
		/* ErlSubBits: {thing_word, base_flags, start, end, orig}, start/end in bits */
		if (w[2] % 8 || w[3] < w[2] || w[3] - w[2] != len * 8)
			return -EPROTO;
		*text = (w[1] & ~3ull) + w[2] / 8;
		return 0;
	}
	return -EPROTO;
}

static int atom_ptr(uint64_t table, const struct atomtab_layout *al, uint64_t term, uint64_t *atom)
{
	uint64_t ix, seg_table, page;
	uint32_t entries;

	if ((term & ATOM_TAG_MASK) != ATOM_TAG)
		return -EINVAL;
	ix = term >> ATOM_IX_SHIFT;
	if (saferead__u32(table + (uint64_t)al->itab_entries, &entries) ||
	    saferead__u64(table + (uint64_t)al->itab_seg_table, &seg_table))
		return -EFAULT;
	if (ix >= entries || entries > MAX_ATOM_ENTRIES)
		return -EINVAL;
	if (saferead__u64(seg_table + (ix >> INDEX_PAGE_SHIFT) * 8, &page) ||
	    saferead__u64(page + (ix & INDEX_PAGE_MASK) * 8, atom))
		return -EFAULT;
	return 0;
}

int atomtab__decode(uint64_t table, const struct atomtab_layout *al, uint64_t term, char *buf,
		    size_t cap, size_t *len)
{
	uint64_t atom, name, text;
	int16_t alen;
	int err;

	err = atom_ptr(table, al, term, &atom);
	if (err)
		return err;
	if (saferead__bytes(atom + (uint64_t)al->atom_len, &alen, sizeof(alen)) ||
	    saferead__u64(atom + (uint64_t)al->atom_name, &name))
		return -EFAULT;
	if (alen < 0 || (size_t)alen >= cap || (size_t)alen > ATOMTAB_MAX_TEXT)
		return -EPROTO;
	if (al->mode == XP_ATOM_NAME_BITSTRING) {
		err = bitstring_text(name, (size_t)alen, &text);
		if (err)
			return err;
	} else {
		text = name;
	}
	if (alen > 0 && saferead__bytes(text, buf, (size_t)alen))
		return -EFAULT;
	buf[alen] = '\0';
	*len = (size_t)alen;
	return 0;
}

static int decodes_all(uint64_t table, const struct atomtab_layout *al,
		       const struct atomtab_want *want, unsigned nwant)
{
	char buf[ATOMTAB_MAX_TEXT + 1];
	size_t len;
	unsigned i;

	for (i = 0; i < nwant; i++) {
		if (atomtab__decode(table, al, want[i].term, buf, sizeof(buf), &len) ||
		    len != strlen(want[i].text) || memcmp(buf, want[i].text, len) != 0)
			return 0;
	}
	return 1;
}

struct scan_ctx {
	const struct atomtab_layout *al;
	const struct atomtab_want *want;
	unsigned nwant;
	uint64_t min_entries;
};

/* Cheap test on the directly readable section bytes before any syscall. */
static int prefilter(uint64_t a, void *ctx)
{
	const struct scan_ctx *x = ctx;
	const struct atomtab_layout *al = x->al;
	uint64_t min_entries = x->min_entries;
	uint32_t entries;
	uint64_t seg;

	memcpy(&entries, (const void *)(uintptr_t)(a + (uint64_t)al->itab_entries), 4);
	memcpy(&seg, (const void *)(uintptr_t)(a + (uint64_t)al->itab_seg_table), 8);
	return entries >= min_entries && entries <= MAX_ATOM_ENTRIES && (seg & 7) == 0 &&
	       saferead__plausible(seg);
}

static int confirm(uint64_t a, void *ctx)
{
	const struct scan_ctx *x = ctx;

	return decodes_all(a, x->al, x->want, x->nwant);
}

int atomtab__scan(const struct selfelf *se, const struct atomtab_layout *al,
		  const struct atomtab_want *want, unsigned nwant, uint64_t *addr,
		  unsigned *candidates)
{
	struct scan_ctx x = {.al = al, .want = want, .nwant = nwant};
	uint64_t span;
	unsigned i;

	for (i = 0; i < nwant; i++)
		if ((want[i].term >> ATOM_IX_SHIFT) + 1 > x.min_entries)
			x.min_entries = (want[i].term >> ATOM_IX_SHIFT) + 1;
	span = (uint64_t)(al->itab_entries > al->itab_seg_table ? al->itab_entries + 4
								: al->itab_seg_table + 8);
	return selfelf__scan_unique(se, span, prefilter, confirm, &x, addr, candidates);
}
