/* What `extrospect alloc` reads and prints: the allocators summed per type and per instance
 * (alloc_cmd.c fills it, alloc_print.c prints it). Types only, owned by no file. Does not own:
 * the Allctr_t reader (vm/alloc.c), smaps (native/smaps.c). */
#ifndef XP_ALLOC_VIEW_H
#define XP_ALLOC_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "alloc.h"
#include "smaps.h"

struct cli_opts;
struct target;

/* The columns --sort accepts. */
enum alloc_col {
	ALLOC_COL_CARRIERS = 0, /* carrier bytes: multiblock + singleblock + pooled */
	ALLOC_COL_BLOCKS,	/* bytes in allocated blocks */
	ALLOC_COL_FREE,		/* multiblock carrier bytes not in blocks */
	ALLOC_COL_LARGEST,	/* the largest free block */
	ALLOC_COL_FRAG,		/* (free - largest free block) / free, in 1/10000 */
	ALLOC_COL_COUNT
};

/* One allocator type (ix < 0: the sum of its instances) or one instance. */
struct alloc_row {
	char name[ALLOC_NAME_MAX];
	int32_t type, ix;
	uint32_t instances;
	struct alloc_stat mbc, sbc, pool;   /* carriers: count, bytes */
	uint64_t mseg, sys;		    /* carriers by where they came from (mbc + sbc) */
	struct alloc_stat blocks;	    /* every block: count, bytes */
	uint64_t free, largest, frag_bytes; /* frag_bytes: free not in the largest free block */
	bool have_largest;
	uint64_t val[ALLOC_COL_COUNT];
};

struct alloc_ctx {
	const struct cli_opts *o;
	struct target *t;
	enum alloc_col sort;
	struct alloc_reading r;
	struct alloc_row *types, *inst; /* sorted by the --sort column */
	size_t ntypes, ninst;
	struct alloc_row total;
	struct smaps_anon anon;
	int anon_err;
	double ms;		      /* the allocators' reading */
	double cpu_ms;		      /* this process's CPU time for the reading, smaps included */
	struct alloc_row *prev_types; /* --watch: the previous reading's type rows */
	size_t nprev;
	double interval_s;
};

#endif /* XP_ALLOC_VIEW_H */
