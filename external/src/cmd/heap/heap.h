/* `extrospect heap`'s reading (heap.c): every process's memory from the process table, the
 * result the printers (heap_print.h) and --watch (heap_watch.h) take.
 * Does not own: the process table (ptab.c), Process fields and their checks (process.c). */
#ifndef XP_HEAP_H
#define XP_HEAP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "json.h"
#include "process.h"
#include "ptab.h"
#include "target.h"

/* The columns --sort accepts, in the order the table prints them. */
enum heap_col {
	HEAP_COL_TOTAL = 0, /* heap + old heap + fragments (process_info total_heap_size) */
	HEAP_COL_HEAP,	    /* the young heap, heap_sz (process_info heap_size) */
	HEAP_COL_OLD,	    /* the old generation's size */
	HEAP_COL_FRAG,	    /* heap and message fragments, mbuf_sz */
	HEAP_COL_STACK,	    /* hend - stop (process_info stack_size) */
	HEAP_COL_BIN,	    /* off-heap binaries referenced: the vheap, young + old */
	HEAP_COL_MSGQ,	    /* message-queue length (OTP 27+) */
	HEAP_COL_REDS,	    /* reductions */
	HEAP_COL_MEMORY,    /* sizeof(Process) + every heap: a lower bound of process_info memory */
	HEAP_COL_COUNT
};

/* Why a process in the table is not listed. */
enum heap_skip {
	HEAP_SKIP_UNREADABLE = 0, /* the Process could not be read */
	HEAP_SKIP_INVALID,	  /* not a plausible live Process */
	HEAP_SKIP_WRONG_SLOT,	  /* its pid does not belong in the slot it was found in */
	HEAP_SKIP_COUNT
};

/* What a row keeps of its Process: identity, state and the raw fields the output shows (a
 * process_snap is 3 KiB with its name buffers: 100,000 of them would be 300 MB). */
struct heap_proc {
	uint64_t addr, pid, i;
	uint64_t heap_used, old_used; /* words: htop - heap, old_htop - old_heap */
	uint64_t vheap_limit;	      /* bytes: bin_vheap_sz * 8 */
	uint64_t reg, mfa[3], dict;   /* the identity as copied (ident_copied), for the names */
	uint32_t state;
	bool have_state, have_i, have_old, have_vheap, have_used, ident_copied;
};

struct heap_row {
	struct heap_proc s;
	uint64_t order;		      /* pid data: the VM's numbering */
	uint64_t val[HEAP_COL_COUNT]; /* in bytes for sizes, counts otherwise */
	uint32_t known;		      /* bit c: val[c] was read and checked */
};

struct heap_ctx {
	const struct cli_opts *o;
	struct target *t;
	volatile sig_atomic_t *stop;
	FILE *out;   /* --watch: where the readings go (stdout, or -o's file) */
	int out_err; /* --watch: the negative errno of a failed write to out, which stops it */
	struct process_reader pr;
	struct ptab ptab;
	struct ptab_stats st;
	enum heap_col sort;
	struct heap_row *rows; /* sorted, rows[0] the largest */
	size_t n;	       /* processes listed: their totals are in sum */
	size_t top;	       /* > 0: rows keeps only the top ones (heap -n N); 0: every row */
	size_t nrows;	       /* rows kept: n, or at most top */
	uint64_t skipped[HEAP_SKIP_COUNT];
	uint64_t faults[SNAP_MEM_FAULT_COUNT]; /* rows whose memory fields were not all shown */
	uint64_t running;		       /* listed while on a scheduler: a moving target */
	uint64_t sum[HEAP_COL_COUNT];
	double ms;
};

/* --sort's name of a column (the reverse, heap__col_of, is in commands.h for cli.c). */
const char *heap__col_name(enum heap_col c);

/* Find the process table and the Process layout for c->t: 0, TARGET_EUNSUPPORTED or -ENOMEM
 * with err set. */
int heap__setup(struct heap_ctx *c, char *err, size_t errlen);
/* One reading of every process into c->rows, sorted (heap.c): 0 or a negative errno. */
int heap__read(struct heap_ctx *c);

/* What a row is called: pid text, registered name and initial call (in v), current function
 * ("" for a running process, whose saved pc is stale). For the rows shown: from the Process's
 * copy when it had no registered name and no dictionary, else read from the VM then. */
struct heap_names {
	char pid[48];
	struct process_view v;
	char cur[1024];
};
void heap__names(const struct heap_ctx *c, const struct heap_row *r, struct heap_names *n);

#endif /* XP_HEAP_H */
