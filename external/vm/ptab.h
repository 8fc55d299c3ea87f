/* The process table (erts_proc, an ErtsPTab) read from outside: where it is (the agent, .dynsym
 * on OTP <= 27, or a structural scan of beam.smp's data on 28+ without the agent), its geometry
 * checked, and one pass over its slots in large reads. Does not own: reading the Processes the
 * slots point to (process.c), pid text (process.c). */
#ifndef XP_PTAB_H
#define XP_PTAB_H

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"
#include "mem.h"
#include "process.h"
#include "provenance.h"

struct ptab {
	uint64_t addr;	  /* the ErtsPTab */
	uint64_t tab;	  /* r.o.tab: max slots of Process * */
	uint64_t invalid; /* r.o.invalid_element: a reserved slot, not a process */
	uint32_t max;	  /* r.o.max: a power of 2 */
	enum target_src source;
};

struct ptab_stats {
	uint64_t slots;		   /* slots read */
	uint64_t used;		   /* slots holding a Process * */
	uint64_t reserved;	   /* slots holding the invalid element (a process being created) */
	uint64_t bad;		   /* slots holding a misaligned word */
	uint64_t unreadable_slots; /* slots in chunks that could not be read */
};

/* The geometry of a candidate ErtsPTab from its bytes b (at least row->ptab_element_size + 8 of
 * them): true when tab, max and invalid_element are plausible and the element size is p_sizeof
 * (sizeof(Process); <= 0: not checked). Finding the table in a live VM: ptab__locate
 * (attach/readers.h). */
bool ptab__geometry(const struct xp_layout *row, int64_t p_sizeof, const uint8_t *b,
		    struct ptab *out);

/* The n entries ptab__collect gave, in address order: reading the Processes in this order lets
 * mem__read_many copy neighbours in one range (the table's order is scrambled across cache
 * lines). 0, or -ENOMEM with the order left as it was. */
int ptab__by_address(uint32_t *ixs, uint64_t *procs, size_t n);

/* Every slot holding a Process *: index and address, in table order. *procs is malloc'd. */
int ptab__collect(const struct ptab *pt, struct mem *m, uint32_t **ixs, uint64_t **procs, size_t *n,
		  struct ptab_stats *st);

/* Does this pid term belong in slot ix (erts_ptab_id2pix, B/erl_ptab.h 25:311, 27/29)? False
 * when the encoding is unknown. */
bool ptab__pid_in_slot(const struct pid_format *f, uint64_t pid, uint32_t ix);

#endif /* XP_PTAB_H */
