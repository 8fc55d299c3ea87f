/* `info`'s check of the JIT map against the VM's module ranges table: the active code index and
 * r[] the agent published, r[active] read and validated, every live module range matched with a
 * JIT module. Does not own: the reader and the comparison (vm/coderanges.c), rendering (info.c). */
#ifndef XP_CODEIX_H
#define XP_CODEIX_H

#include <stddef.h>
#include <stdint.h>

#include "coderanges.h"

struct target;

enum codeix_status {
	CODEIX_NOT_RUN = 0,
	CODEIX_OK,	   /* every live range is a JIT module's code */
	CODEIX_MISMATCH,   /* some live range has no JIT module (after a fresh JIT map) */
	CODEIX_NO_INDEX,   /* the active code index's address is unknown */
	CODEIX_NO_TABLE,   /* the ranges table's address is unknown */
	CODEIX_NO_LAYOUT,  /* no layout row describes the table */
	CODEIX_NO_JIT,	   /* no JIT map to compare with */
	CODEIX_INVALID,	   /* what is at the addresses is not a valid index and table: refused */
	CODEIX_UNREADABLE, /* the reads failed */
	CODEIX_CHANGING,   /* the index changed under every read (code loading) */
};

struct target_codeix {
	enum codeix_status status;
	uint32_t code_ix;      /* the active code index read */
	uint32_t agent_reason; /* enum xp_reason the agent gave for publishing no table */
	uint32_t index_reason; /* ... and no index */
	uint32_t jit_reloads;  /* JIT maps loaded again because a range had no JIT module */
	int err;	       /* the read's errno when INVALID or UNREADABLE */
	struct coderanges_jit jit;
	char other_names[CODERANGES_NAMES][48]; /* some unexplained JIT modules */
};

/* Run the check once, into t->codeix, and record it in t->checks ("code_ranges"). */
void target__check_codeix(struct target *t);
const char *codeix__status_str(enum codeix_status s);
/* The one-line verdict: "pass: ..." / "FAIL: ..." / "skipped: ...". */
void codeix__verdict(const struct target_codeix *c, char *buf, size_t len);

#endif /* XP_CODEIX_H */
