/* Atom text from outside: index the atom table (an IndexTable) with the atom's index and decode
 * the Atom's name, a byte pointer (OTP <= 27) or a literal bitstring (OTP 28+). Every length and
 * pointer is bounded and checked. A reader may cache texts by index (atom__cache_on): atoms are
 * never freed and their text never changes. Does not own: finding the table (discover.c). */
#ifndef XP_ATOM_H
#define XP_ATOM_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "mem.h"

struct atom_reader {
	struct mem *mem;
	uint64_t table; /* the IndexTable */
	int32_t off_entries, off_seg_table, off_len, off_name;
	enum xp_atom_name_mode mode;
	/* NULL, or texts read so far by index (atom__cache_on): a million rows of `heap -n all`
	 * name a few hundred atoms, at 7 reads each. Not for a reader used by two threads. */
	struct atom_cache *cache;
};

/* Cache r's texts from now on (copies of r made after this share the cache): 0 or -ENOMEM.
 * atom__cache_off frees it; r and its copies must not use it after. Failed reads are never
 * cached (a torn read is read again next time). */
int atom__cache_on(struct atom_reader *r);
void atom__cache_off(struct atom_reader *r);

/* A reader over m with the atom offsets and name mode of a layout row (table left 0). 0, or
 * -ENOENT when the row lacks one of the offsets. */
int atom__reader_from_row(struct atom_reader *r, struct mem *m, const struct xp_layout *row);

/* Text of atom term into buf (NUL-terminated). 0, -EINVAL (not an atom term, index out of range,
 * bad length), -EPROTO (inconsistent bitstring), or a read error. */
int atom__text(const struct atom_reader *r, uint64_t term, char *buf, size_t len);

/* Text of the atom with this index (term = index << 6 | 0x0b). */
int atom__text_by_index(const struct atom_reader *r, uint32_t index, char *buf, size_t len);

/* Structural scan for the atom table in [start, start + len) (beam.smp .bss on OTP 28+): an
 * IndexTable whose atoms 0 and 1 read 'false' and 'true' (B/atom.names puts them first).
 * r gives the offsets; r->table is ignored. 0 with *out set, -ENOENT, or -EEXIST (ambiguous). */
int atom__scan_table(const struct atom_reader *r, uint64_t start, uint64_t len, uint64_t *out);

#endif /* XP_ATOM_H */
