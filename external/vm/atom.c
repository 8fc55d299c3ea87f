/* Atom table reads. See atom.h. The seg_table is allocated at its maximum size and pages are
 * never freed (B/index.c), so a slot read once stays valid; the text itself is immutable. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "atom.h"

static int read_bitstring_text(const struct atom_reader *r, uint64_t bin, int16_t n, char *buf)
{
	uint64_t p = bin & ~(uint64_t)7, w[4];
	int err;

	if ((err = mem__read(r->mem, p, w, sizeof(w))))
		return err;
	if ((w[0] & XP_BITS_HDR_MASK) == XP_BITS_HDR_HEAP) {
		if (w[1] != (uint64_t)n * 8)
			return -EPROTO;
		return mem__read(r->mem, p + 16, buf, (size_t)n);
	}
	if ((w[0] & XP_BITS_HDR_MASK) == XP_BITS_HDR_SUB) {
		if (w[3] < w[2] || w[3] - w[2] != (uint64_t)n * 8 || (w[2] & 7))
			return -EPROTO;
		return mem__read(r->mem, (w[1] & ~(uint64_t)3) + w[2] / 8, buf, (size_t)n);
	}
	return -EPROTO;
}

#define CACHE_SLOTS 4096 /* direct-mapped by index */

struct atom_cache {
	struct {
		uint32_t index1; /* index + 1, 0: empty */
		char *text;
	} slot[CACHE_SLOTS];
};

int atom__cache_on(struct atom_reader *r)
{
	if (!r->cache && !(r->cache = calloc(1, sizeof(*r->cache))))
		return -ENOMEM;
	return 0;
}

void atom__cache_off(struct atom_reader *r)
{
	size_t i;

	for (i = 0; r->cache && i < CACHE_SLOTS; i++)
		free(r->cache->slot[i].text);
	free(r->cache);
	r->cache = NULL;
}

/* The text of atom index, from the table's seg_table pointer on: its page, the atom's pointer,
 * the atom's length and name (one read where the two lie within ATOM_SPAN bytes, as in every
 * layout known), then the text. */
#define ATOM_SPAN 64
static int text_via_seg(const struct atom_reader *r, uint64_t seg, uint32_t index, char *buf,
			size_t len)
{
	uint64_t page, atom, name;
	long lo = r->off_len < r->off_name ? r->off_len : r->off_name;
	long hi = r->off_len + 2 > r->off_name + 8 ? r->off_len + 2 : r->off_name + 8;
	uint8_t span[ATOM_SPAN];
	int16_t n;
	int err;

	if ((err =
		 mem__read_u64(r->mem, seg + 8 * (uint64_t)(index >> XP_INDEX_PAGE_SHIFT), &page)))
		return err;
	/* A page and an atom are malloc'd: aligned user addresses. Anything else is not read (the
	 * atom table's scan meets ~260 such words in an OTP 29 .bss, a failed read each). */
	if (!mem__plausible(page) || (page & 7) ||
	    (err = mem__read_u64(r->mem, page + 8 * (uint64_t)(index & 1023u), &atom)))
		return err ? err : -EFAULT;
	if (!mem__plausible(atom) || (atom & 7))
		return -EFAULT;
	/* The two apart when the span is unreadable: a capture file (capfile.h) holds the bytes
	 * that were read when it was made, which were the two fields alone before. */
	if (hi - lo <= ATOM_SPAN &&
	    mem__read(r->mem, atom + (uint64_t)lo, span, (size_t)(hi - lo)) == 0) {
		memcpy(&n, span + (r->off_len - lo), sizeof(n));
		memcpy(&name, span + (r->off_name - lo), sizeof(name));
	} else if ((err = mem__read(r->mem, atom + (uint64_t)r->off_len, &n, sizeof(n))) ||
		   (err = mem__read_u64(r->mem, atom + (uint64_t)r->off_name, &name))) {
		return err;
	}
	if (n < 0 || n > XP_ATOM_MAX_BYTES || (size_t)n >= len)
		return -EINVAL;
	if (r->mode == XP_ATOM_NAME_BITSTRING)
		err = read_bitstring_text(r, name, n, buf);
	else
		err = n ? mem__read(r->mem, name, buf, (size_t)n) : 0;
	if (err) {
		buf[0] = '\0';
		return err;
	}
	buf[n] = '\0';
	if (strlen(buf) != (size_t)n) {
		buf[0] = '\0';
		return -EPROTO; /* atom text never holds NUL */
	}
	return 0;
}

static int read_text(const struct atom_reader *r, uint32_t index, char *buf, size_t len)
{
	uint64_t seg;
	uint32_t entries;
	int err;

	if (len == 0)
		return -EINVAL;
	buf[0] = '\0';
	if ((err = mem__read_u32(r->mem, r->table + (uint64_t)r->off_entries, &entries)))
		return err;
	if (index >= entries)
		return -EINVAL;
	if ((err = mem__read_u64(r->mem, r->table + (uint64_t)r->off_seg_table, &seg)))
		return err;
	return text_via_seg(r, seg, index, buf, len);
}

int atom__text_by_index(const struct atom_reader *r, uint32_t index, char *buf, size_t len)
{
	struct atom_cache *c = r->cache;
	size_t k = index % CACHE_SLOTS, n;
	char *copy;
	int err;

	if (len == 0)
		return -EINVAL;
	if (c && c->slot[k].text && c->slot[k].index1 == index + 1) {
		n = strlen(c->slot[k].text);
		if (n >= len) {
			buf[0] = '\0';
			return -EINVAL; /* as a read into too small a buffer */
		}
		memcpy(buf, c->slot[k].text, n + 1);
		return 0;
	}
	if ((err = read_text(r, index, buf, len)) || !c || !(copy = strdup(buf)))
		return err;
	free(c->slot[k].text);
	c->slot[k].index1 = index + 1;
	c->slot[k].text = copy;
	return 0;
}

int atom__reader_from_row(struct atom_reader *r, struct mem *m, const struct xp_layout *row)
{
	*r = (struct atom_reader){.mem = m,
				  .off_entries = row->off[XP_OFF_ITAB_ENTRIES],
				  .off_seg_table = row->off[XP_OFF_ITAB_SEG_TABLE],
				  .off_len = row->off[XP_OFF_ATOM_LEN],
				  .off_name = row->off[XP_OFF_ATOM_NAME],
				  .mode = row->atom_name_mode};
	if (r->off_entries < 0 || r->off_seg_table < 0 || r->off_len < 0 || r->off_name < 0)
		return -ENOENT;
	return 0;
}

int atom__text(const struct atom_reader *r, uint64_t term, char *buf, size_t len)
{
	if ((term & XP_TAG_IMMED2_MASK) != XP_TAG_ATOM || (term >> 32) != 0)
		return -EINVAL;
	return atom__text_by_index(r, (uint32_t)(term >> XP_ATOM_INDEX_SHIFT), buf, len);
}

#define SCAN_CHUNK	 (64u * 1024)
#define SCAN_MAX_ENTRIES (1u << 26) /* atom indexes fit 26 bits on 64-bit */

static bool plausible_table(const struct atom_reader *r, const uint8_t *p)
{
	uint32_t entries;
	uint64_t seg;

	memcpy(&entries, p + r->off_entries, sizeof(entries));
	memcpy(&seg, p + r->off_seg_table, sizeof(seg));
	return entries >= 2 && entries <= SCAN_MAX_ENTRIES && seg && !(seg & 7);
}

/* Are atoms 0 and 1 of the table whose seg_table is seg "false" and "true"? Read from seg, which
 * the scan has (entries, at least 2, too), and past any cache (it is keyed by index alone). */
static bool is_atom_table(const struct atom_reader *r, uint64_t seg)
{
	char t0[8], t1[8];

	t0[0] = t1[0] = '\0';
	return text_via_seg(r, seg, 0, t0, sizeof(t0)) == 0 && strcmp(t0, "false") == 0 &&
	       text_via_seg(r, seg, 1, t1, sizeof(t1)) == 0 && strcmp(t1, "true") == 0;
}

/* The seg_table pointers whose table was checked and was not the atom table: a candidate with one
 * of them is not checked again. In an OTP 29 .bss 2,924 candidates held 388 distinct pointers
 * (1,732 the same one), and a check reads four words an atom (seven before 6 December 2026). Open
 * addressing; full, it keeps no more. */
#define REJECTED_SLOTS 2048

static bool rejected(uint64_t *set, uint64_t seg, bool add)
{
	size_t i = (size_t)((seg >> 3) * 0x9e3779b97f4a7c15ull >> 53) & (REJECTED_SLOTS - 1);

	for (size_t k = 0; k < REJECTED_SLOTS / 2; k++, i = (i + 1) & (REJECTED_SLOTS - 1)) {
		if (set[i] == seg)
			return true;
		if (!set[i]) {
			if (add)
				set[i] = seg;
			return false;
		}
	}
	return false;
}

int atom__scan_table(const struct atom_reader *r, uint64_t start, uint64_t len, uint64_t *out)
{
	size_t span =
	    (size_t)(r->off_seg_table > r->off_entries ? r->off_seg_table : r->off_entries) + 8;
	uint64_t found = 0, off, seg, *set;
	uint8_t *buf;
	int err = 0;

	if (r->off_entries < 0 || r->off_seg_table < 0 || len < span)
		return -EINVAL;
	buf = malloc(SCAN_CHUNK + span);
	set = calloc(REJECTED_SLOTS, sizeof(*set));
	if (!buf || !set) {
		free(buf);
		free(set);
		return -ENOMEM;
	}
	/* Chunks overlap by span bytes so that no candidate straddles two reads. */
	for (off = 0; off + span <= len && !err; off += SCAN_CHUNK) {
		size_t n = len - off < SCAN_CHUNK + span ? (size_t)(len - off) : SCAN_CHUNK + span;
		size_t i;

		if (mem__read(r->mem, start + off, buf, n))
			continue;
		for (i = 0; i + span <= n && i < SCAN_CHUNK; i += 8) {
			if (!plausible_table(r, buf + i))
				continue;
			memcpy(&seg, buf + i + r->off_seg_table, sizeof(seg));
			if (rejected(set, seg, false))
				continue;
			if (!is_atom_table(r, seg)) {
				rejected(set, seg, true);
				continue;
			}
			if (found && found != start + off + i)
				err = -EEXIST;
			found = start + off + i;
		}
	}
	free(buf);
	free(set);
	if (err)
		return err;
	if (!found)
		return -ENOENT;
	*out = found;
	return 0;
}
