/* The module ranges table of ERTS (B/beam_ranges.c `r[]`, otp-internals.md §3.1): the live one,
 * r[the_active_code_index], read with bounded, validated reads from outside or inside, and
 * compared with the GDB JIT map (every live module range should be one JIT module's code). Does
 * not own: finding the two addresses (the agent, c_src/calib/calib_codeix.c), the layout
 * (layout.c). */
#ifndef XP_CODERANGES_H
#define XP_CODERANGES_H

#include <stdbool.h>
#include <stdint.h>

#include "jitmap.h"
#include "layout.h"
#include "mem.h"

#define CODERANGES_MAX (1u << 18) /* a table with more ranges than this is garbage (4 MiB) */

struct code_range {
	uint64_t start, end; /* [start, end); end == start for a module purged since the commit */
};

struct code_ranges {
	uint32_t code_ix;      /* the active code index the table was read for */
	uint64_t table;	       /* &r[code_ix] */
	uint64_t n, allocated; /* its counts */
	struct code_range *r;  /* malloc'd, n entries, sorted by start */
};

/* A cheap look at row->ranges.code_ix_count * size bytes b in place: could they be r[]? Every
 * struct holds an aligned, plausible array (or none and no ranges), n <= allocated <= the cap. */
bool coderanges__prefilter(const struct xp_layout *row, const uint8_t *b);

/* Read r[ix] at table_addr and its ranges: n <= allocated <= CODERANGES_MAX, the array aligned
 * and plausible, mid inside it, each start <= end, sorted by start and disjoint. 0, -EINVAL (it
 * is not such a table), -EFAULT, -ENOMEM. out->r is NULL when n is 0. */
int coderanges__read_table(struct mem *m, const struct xp_layout *row, uint64_t ranges_addr,
			   uint32_t ix, struct code_ranges *out);

/* Read the_active_code_index at ix_addr (< code_ix_count), then r[ix], then the index again:
 * -EAGAIN when it changed meanwhile (code was loaded: read again), else as read_table. */
int coderanges__read(struct mem *m, const struct xp_layout *row, uint64_t ix_addr,
		     uint64_t ranges_addr, struct code_ranges *out);

/* Does the table hold exactly [start, end)? (Binary search.) */
bool coderanges__contains(const struct code_ranges *cr, uint64_t start, uint64_t end);
void coderanges__free(struct code_ranges *cr);

#define CODERANGES_NAMES 4 /* unexplained JIT modules named in the result */

/* The table against the JIT map. JIT modules are its module entries, the emulator's aside. */
struct coderanges_jit {
	uint64_t ranges, purged; /* in the table; of them purged (end == start) */
	uint64_t matched;	 /* live ranges equal to a JIT module's [base, base + code_size) */
	uint64_t unmatched;	 /* live ranges no JIT module has */
	uint64_t first_unmatched;
	uint64_t jit_modules;	   /* JIT module entries */
	uint64_t jit_not_in_table; /* of them, not the newest entry of a live range of the table */
	uint64_t jit_old;   /* ... of a module name the table has: old or purged code (OTP 25 never
			     * unregisters it; a later load may even reuse its memory) */
	uint64_t jit_other; /* ... the rest: deleted modules, the JIT's own (erts_beamasm) */
	const char *other_names[CODERANGES_NAMES]; /* some of the rest, names in map */
};
/* 0, or -ENOMEM. */
int coderanges__check_jit(const struct code_ranges *cr, const struct jitmap *map,
			  struct coderanges_jit *out);

#endif /* XP_CODERANGES_H */
