/* The atom table from inside: decode an atom term's text through an IndexTable (otp-internals.md
 * §6), and find erts_atom_table by a structural scan of beam.smp's .data/.bss (no symbol needed).
 * Every pointer on the way is read through saferead. Does not own: the offsets (layout.c). */
#ifndef XP_ATOMTAB_H
#define XP_ATOMTAB_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "selfelf.h"

#define ATOMTAB_MAX_TEXT 1024 /* 255 characters of up to 4 UTF-8 bytes */

struct atomtab_layout {
	int32_t itab_entries, itab_seg_table, atom_len, atom_name;
	enum xp_atom_name_mode mode;
};

struct atomtab_want {
	uint64_t term; /* an atom Eterm the caller made itself */
	const char *text;
};

/* The layout part of a row, or -ENOENT when the row lacks an offset. */
int atomtab__layout(const struct xp_layout *row, struct atomtab_layout *out);

/* Text of atom term through the table at addr. 0, -EINVAL (not an atom, index out of range),
 * -EFAULT (unreadable), -EPROTO (malformed Atom or name). *len excludes the NUL added. */
int atomtab__decode(uint64_t table, const struct atomtab_layout *al, uint64_t term, char *buf,
		    size_t cap, size_t *len);

/* Scan the ranges for an IndexTable that decodes every wanted atom to its text. 0 with *addr,
 * -ENOENT (none), -EEXIST (several: ambiguous). *candidates counts pre-filter survivors. */
int atomtab__scan(const struct selfelf *se, const struct atomtab_layout *al,
		  const struct atomtab_want *want, unsigned nwant, uint64_t *addr,
		  unsigned *candidates);

#endif /* XP_ATOMTAB_H */
