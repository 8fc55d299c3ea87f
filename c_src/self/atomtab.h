/* Finding erts_atom_table from inside, by a structural scan of beam.smp's .data/.bss (no symbol
 * needed): the unique IndexTable whose atoms decode to texts we know. Decoding is the vm
 * library's atom reader (external/vm/atom.c) over guarded self-reads. Does not own: the offsets
 * (layout.c), reading atoms (atom.c). */
#ifndef XP_ATOMTAB_H
#define XP_ATOMTAB_H

#include <stdint.h>

#include "layout.h"
#include "selfelf.h"

struct atomtab_want {
	uint64_t term; /* an atom Eterm the caller made itself */
	const char *text;
};

/* Scan the ranges for an IndexTable that decodes every wanted atom to its text through row's atom
 * layout. 0 with *addr, -ENOENT (none, or the row lacks an atom offset), -EEXIST (several:
 * ambiguous), -ENOMEM. *candidates counts pre-filter survivors. */
int atomtab__scan(const struct selfelf *se, const struct xp_layout *row,
		  const struct atomtab_want *want, unsigned nwant, uint64_t *addr,
		  unsigned *candidates);

#endif /* XP_ATOMTAB_H */
