/* The VM's memory allocators read from outside (or by the agent, from inside): every alloc_util
 * allocator instance reached from erts_allctrs_info[] (B/erl_alloc.c), its carrier and block
 * counters (Allctr_t.mbcs/sbcs, the carrier pool) and, for the AOFF strategies, the largest free
 * block of each multiblock carrier and of the pooled carriers it created. Nothing is written and no
 * lock is taken: counters are read racily, each instance in one read. Does not own: finding
 * erts_allctrs_info (the agent, .dynsym, attach's scan), printing (cmd/alloc*.c), the offsets
 * (layout.c). */
#ifndef XP_ALLOC_H
#define XP_ALLOC_H

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"
#include "mem.h"

#define ALLOC_MAX_TYPES	    32	 /* erts_allctrs_info[] entries accepted */
#define ALLOC_MAX_INSTANCES 1025 /* per type: schedulers (<= 1024) + the global instance */
#define ALLOC_MAX_WALK	    4096 /* multiblock carriers walked per instance */
#define ALLOC_NAME_MAX	    24	 /* "binary_alloc" */

struct alloc_stat {
	uint64_t no, size; /* count, bytes */
};

/* One Allctr_t. Blocks are those in the carriers it employs, of every allocator type (carriers
 * migrate between instances of different types through the pool), as system_info reports them. */
struct alloc_inst {
	uint64_t addr;
	char name[ALLOC_NAME_MAX]; /* name_prefix + "alloc", as OTP names it */
	int32_t type;		   /* its erts_allctrs_info[] index (ERTS_ALC_A_*) */
	int32_t ix;		   /* instance: 0 the global one, N scheduler N's */
	uint32_t strat;		   /* ERTS_ALC_S_* */
	struct alloc_stat mbc_mseg, mbc_sys, sbc_mseg, sbc_sys; /* carriers */
	struct alloc_stat mbc_blocks, sbc_blocks;
	struct alloc_stat pool_carriers, pool_blocks; /* pooled carriers it created */
	uint64_t largest_free; /* bytes: the largest free block, its carriers and pooled ones */
	uint32_t walked;       /* multiblock carriers walked for largest_free */
	bool have_largest;     /* an AOFF strategy, every carrier of mbc_list walked and the
				* pooled carriers' tree read */
};

enum alloc_drop {
	ALLOC_DROP_UNREADABLE = 0, /* an Allctr_t or thr_spec table could not be read */
	ALLOC_DROP_INVALID,	   /* an Allctr_t whose alloc_no, ix or name does not fit */
	ALLOC_DROP_WALK,	   /* a carrier walk broken or too long: largest free unknown */
	ALLOC_DROP_COUNT
};

struct alloc_reading {
	struct alloc_inst *inst; /* malloc'd, in erts_allctrs_info order then instance */
	size_t n;
	uint32_t types; /* alloc_util allocator types found enabled */
	uint64_t drops[ALLOC_DROP_COUNT];
};

/* Does the row describe the allocators? (Rows without .alloc have n_types 0.) */
bool alloc__supported(const struct xp_layout *row);

/* Is info an erts_allctrs_info[] array? At least three enabled alloc_util types whose first
 * Allctr_t has that type's alloc_no and a plausible name_prefix. 0, or -EINVAL / -EFAULT. */
int alloc__check_info(struct mem *m, const struct xp_layout *row, uint64_t info);

/* A cheap look at row->alloc.n_types * info_size bytes b in place: could they be
 * erts_allctrs_info[]? Entry 0 (ERTS_ALC_A_INVALID) empty, flags 0 or 1, pointers aligned, at
 * least three enabled alloc_util types. A scan's prefilter; alloc__check_info confirms. */
bool alloc__info_prefilter(const struct xp_layout *row, const uint8_t *b);

/* Every instance of every enabled alloc_util allocator. 0 (drops counted in out), or -ENOMEM,
 * -EFAULT when erts_allctrs_info itself cannot be read. */
int alloc__read(struct mem *m, const struct xp_layout *row, uint64_t info, bool walk,
		struct alloc_reading *out);
void alloc__reading_free(struct alloc_reading *r);

/* Free bytes of an instance's multiblock carriers (its own and its pooled ones): carrier bytes
 * not in blocks, headers included. */
uint64_t alloc__mbc_free(const struct alloc_inst *a);

const char *alloc__drop_name(enum alloc_drop d);

#endif /* XP_ALLOC_H */
