/* What the two halves of pstack --all share: the listing's counters and caches. pstack_procs.c
 * reads the processes (in batches), pstack_rows.c writes each one's row and the summary.
 * Private to those two files; see pstack.h for the rest of pstack. */
#ifndef XP_PSTACK_LIST_H
#define XP_PSTACK_LIST_H

#include "pstack.h"

enum skip_reason {
	SKIP_UNREADABLE = 0, /* the Process could not be read */
	SKIP_INVALID,	     /* not a plausible live Process */
	SKIP_WRONG_SLOT,     /* its pid does not belong in the slot it was found in */
	SKIP_COUNT
};

struct atom_slot;
struct mfa_slot;

struct listing {
	struct pstack_ctx *c;
	FILE *f;
	struct json *j;
	struct atom_slot *atoms; /* atom texts by term (pstack_rows.c) */
	struct mfa_slot *mfas;	 /* initial calls as shown, by {M, F, A} (pstack_rows.c) */
	uint64_t skipped[SKIP_COUNT];
	uint64_t walked, running, changed, ends[ESTACK_END_COUNT];
	uint64_t pdict[PDICT_RESULT_COUNT]; /* '$initial_call' reads by result */
	bool gone; /* a read found the VM gone: the listing stops there, marked partial */
};

int pstack_rows__init(struct listing *l);
void pstack_rows__free(struct listing *l);
/* One process's row: s as read, stack the status of its stack ("complete", or why not). */
void pstack_rows__emit(struct listing *l, const struct process_snap *s, const char *stack,
		       const struct pstack_frames *fr);
void pstack_rows__summary(struct listing *l, const struct ptab_stats *st, size_t kept, double ms);

#endif /* XP_PSTACK_LIST_H */
