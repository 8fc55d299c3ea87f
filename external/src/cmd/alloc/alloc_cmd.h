/* The parts of `extrospect alloc`: reading the allocators and summing them per type
 * (alloc_cmd.c, which owns the command) and printing one reading as a table or JSON
 * (alloc_print.c). Does not own: the Allctr_t reader (vm/alloc.c), finding it
 * (attach/alloc_locate.c), smaps (native/smaps.c). */
#ifndef XP_ALLOC_CMD_H
#define XP_ALLOC_CMD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "alloc.h"
#include "cli.h"
#include "json.h"
#include "smaps.h"
#include "target.h"

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

const char *alloc__col_name(enum alloc_col c);
int alloc__read_all(struct alloc_ctx *c);
void alloc__ctx_free(struct alloc_ctx *c);

/* alloc_print.c */
void alloc__print_text(const struct alloc_ctx *c, FILE *f);
void alloc__print_json(const struct alloc_ctx *c, struct json *j);

#endif /* XP_ALLOC_CMD_H */
