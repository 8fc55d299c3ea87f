/* What the parts of pstack --all share: the listing's counters and caches, and the index.
 * pstack_index.c reads every Process once for the index, pstack_procs.c reads the processes in
 * batches, pstack_rows.c writes each one's row and the summary. Private to those three files
 * (and test/c/test_pstack_index.c); see pstack.h for the rest of pstack. */
#ifndef XP_PSTACK_LIST_H
#define XP_PSTACK_LIST_H

#include "pstack.h"

enum skip_reason {
	SKIP_UNREADABLE = 0, /* the Process could not be read */
	SKIP_INVALID,	     /* not a plausible live Process */
	SKIP_WRONG_SLOT,     /* its pid does not belong in the slot it was found in */
	SKIP_COUNT
};

#define NOT_IN_SLOT (-EXDEV) /* a read Process whose pid does not belong in its slot */
/* A Process copy whose bounds disagree (taken mid-collection) is read again alone this often. */
#define PSTACK_REREADS 3

/* A process to list, in pid order: 24 bytes, a million of them. */
struct ref {
	uint64_t order; /* the sort key (radix__sort): first */
	uint64_t addr;
	uint32_t ix;
	uint32_t fi; /* its index copy's marks, in firsts[] */
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
	struct pstack_text txt;		    /* the text rows, gathered (pstack_rows.c) */
	bool gone; /* a read found the VM gone: the listing stops there, marked partial */
};

/* pstack_index.c: every Process once, in address order, for its pid and its stack's bounds:
 * *out those to list (*kept), in pid order, *firsts what each said (malloc'd, at each ref's fi),
 * those skipped counted in l. 0 or -ENOMEM. */
int pstack_index__all(struct listing *l, uint32_t *ixs, uint64_t *procs, size_t n, struct ref **out,
		      struct process_marks **firsts, size_t *kept);
/* Count a process skipped by why (rc: NOT_IN_SLOT, -EINVAL, a read error; -ESRCH: l->gone). */
void pstack_index__skip(struct listing *l, int rc);

int pstack_rows__init(struct listing *l);
void pstack_rows__free(struct listing *l);
/* One process's row: s as read, stack the status of its stack ("complete", or why not). */
void pstack_rows__emit(struct listing *l, const struct process_snap *s, const char *stack,
		       const struct pstack_frames *fr);
void pstack_rows__summary(struct listing *l, const struct ptab_stats *st, size_t kept, double ms);

#endif /* XP_PSTACK_LIST_H */
