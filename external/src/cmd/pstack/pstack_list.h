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

/* A process to list, in pid order: 16 bytes, a million of them (the radix sort moves them). */
struct ref {
	uint64_t order; /* the sort key (radix__sort): first */
	uint64_t at;	/* its Process's place in the index's arrays (address order) */
};

/* What the index keeps of its copy of one Process for the listing: the stack's bounds, and a
 * digest of the rest of what tells that a process moved (its pid, frame pointer, resume point
 * and reductions). 32 bytes, not the 64 of its marks: a million of them are fresh pages, and a
 * fresh page's first touch cost up to 10 us in the guests of issue 27. */
struct index_mark {
	uint64_t stop, heap, hend;
	uint64_t digest; /* bit 0: the index found it walkable (not running, collecting or free) */
};

/* The index: those to list in pid order (v, kept of them), each naming its place in the
 * address-ordered arrays procs and ixs (the caller's, from ptab__collect) and marks. */
struct pstack_index {
	struct ref *v;
	size_t kept;
	const uint64_t *procs;
	const uint32_t *ixs;
	struct index_mark *marks; /* bigmem.h, nmarks of them */
	size_t nmarks;
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
 * out->v those to list, in pid order (malloc'd, as is out->marks; pstack_index__free), those
 * skipped counted in l. procs and ixs are sorted by address here and stay the caller's. 0 or
 * -ENOMEM. */
int pstack_index__all(struct listing *l, uint32_t *ixs, uint64_t *procs, size_t n,
		      struct pstack_index *out);
void pstack_index__free(struct pstack_index *x);
/* Whether the process the index read as m is, in its copy now, where it was: the same stack
 * bounds and the same digest (a process that moved passes only if the rest hashes alike,
 * one chance in 2^63). */
bool pstack_index__same(const struct index_mark *m, const struct process_marks *now);
static inline bool pstack_index__walkable(const struct index_mark *m)
{
	return m->digest & 1;
}
/* pstack_procs.c: why a process in this state is not walked, or NULL to walk it. */
const char *pstack_procs__not_walked(bool have_state, uint32_t state);
/* Count a process skipped by why (rc: NOT_IN_SLOT, -EINVAL, a read error; -ESRCH: l->gone). */
void pstack_index__skip(struct listing *l, int rc);

int pstack_rows__init(struct listing *l);
void pstack_rows__free(struct listing *l);
/* One process's row: s as read, stack the status of its stack ("complete", or why not). */
void pstack_rows__emit(struct listing *l, const struct process_snap *s, const char *stack,
		       const struct pstack_frames *fr);
void pstack_rows__summary(struct listing *l, const struct ptab_stats *st, size_t kept, double ms);

#endif /* XP_PSTACK_LIST_H */
