/* Atom text from outside: index the atom table (an IndexTable) with the atom's index and decode
 * the Atom's name, a byte pointer (OTP <= 27) or a literal bitstring (OTP 28+). Every length and
 * pointer is bounded and checked. Does not own: finding the table (discover.c), caching. */
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
};

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
