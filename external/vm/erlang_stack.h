/* Walking one Erlang process stack, out of process (otp-internals.md §1.3-1.5): RA layout by
 * scanning [E, hend) for return addresses, FP layout by following the rbp chain, with the
 * trace-frame rules, ending at normal_exit. The caller supplies the stack words (perf's copy, or
 * reads up to hend). Does not own: choosing E (sampler.c), reading memory, naming frames beyond the
 * JIT map. */
#ifndef XP_ERLANG_STACK_H
#define XP_ERLANG_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jitmap.h"
#include "layout.h"

/* The deepest stack walked frame by frame; a deeper one is cut at the root, and says how many
 * frames were left out. 16384 frames is a non-tail recursion 16384 deep: at 16 bytes a frame,
 * the result is 256 KiB, kept in the walker's caller (never on a small stack). */
#define ESTACK_MAX_FRAMES 16384
/* Shared fragments called from fragments, followed at the top of a stack. */
#define ESTACK_TOP_FRAGMENTS 4

/* Trace frames: a CP that is one of these is followed by extra words to skip (otp-internals.md
 * §1.4). */
enum estack_trace {
	ESTACK_TRACE_RETURN = 0,
	ESTACK_TRACE_EXCEPTION,
	ESTACK_TRACE_RETURN_TO,
	ESTACK_TRACE_TIME_OR_CALL,
	ESTACK_TRACE_COUNT
};

/* Is ra the return address of a call (direct, or through a veneer or an address table) to the
 * code of callee? Reads code bytes: the sampler's call-site check (callsite.c). */
typedef bool (*estack_returns_from_fn)(void *ctx, uint64_t ra, const struct jit_range *callee);

struct estack_cfg {
	const struct jitmap *jit;
	estack_returns_from_fn returns_from; /* NULL: unaligned return addresses are never taken */
	void *returns_ctx;
	uint32_t frame_layout; /* XP_LAYOUT_RA or XP_LAYOUT_FP */
	uint64_t normal_exit;
	uint64_t trace_cp[ESTACK_TRACE_COUNT]; /* 0 when unknown */
	uint32_t trace_words[ESTACK_TRACE_COUNT];
	uint32_t push_words; /* a fragment's own words above its return address (the row's) */
	uint64_t epoch;	     /* new at each erlang_stack__cfg: names what a memo was made with */
};

enum estack_end {
	ESTACK_END_BOTTOM = 0, /* reached normal_exit at the stack bottom: a validated full stack */
	ESTACK_END_TRUNCATED,  /* the words given stop before hend, or ESTACK_MAX_FRAMES reached */
	ESTACK_END_UNRESOLVED, /* an aligned word is no known return address */
	ESTACK_END_BAD_CHAIN,  /* FP layout: a frame pointer outside (previous, hend) */
	ESTACK_END_NO_BOTTOM,  /* the words end without normal_exit */
	ESTACK_END_MOVED_ON,   /* read after the sample, its top no longer calls the sampled code */
	ESTACK_END_CALL_MISMATCH, /* copied at the sample, yet its top does not call the sampled
				   * code: the sample's E was not where the call left it */
	ESTACK_END_COPY_SHORT,	  /* like MOVED_ON, with a capture that did not reach its top */
	ESTACK_END_UNVERIFIED,	  /* read after the sample, and its top cannot be checked against
				   * the sampled call (a tail call no scan can follow) */
	ESTACK_END_NOT_CAPTURED,  /* like MOVED_ON, though the in-kernel capture was on: it held
				   * no copy of the sample's process (no record: a full ring or a
				   * failed copy; or a copy of another process) */
	ESTACK_END_COUNT
};

struct estack_frame {
	uint64_t ra;
	const struct jit_range *fn; /* the function the RA returns into */
};

struct estack_result {
	struct estack_frame frames[ESTACK_MAX_FRAMES]; /* innermost first */
	size_t nframes;
	enum estack_end end;
	uint32_t unresolved; /* aligned words that named no function */
	/* The first of them on the way down; 0 when none, when they were taken from the walk
	 * before (erlang_stack__walk_memo), or when that word was 0. */
	uint64_t unresolved_ra;
	/* A stack cut (ESTACK_END_TRUNCATED): the frames left out beyond frames[], counted from the
	 * words given; more_unknown when the words themselves stop before the stack bottom. */
	uint32_t more;
	bool more_unknown;
	uint32_t top_unaligned; /* frames taken from unaligned return addresses at the top */
	uint32_t top_pushed;	/* words a fragment at the top pushed above its return address */
	bool rescanned;		/* FP layout: the chain broke, the scan past saved fps is whole */
};

/* The trace CPs are JIT code in module erts_beamasm (return_trace/0 ...); the extra word counts
 * come from the layout row. */
void erlang_stack__cfg(struct estack_cfg *c, const struct jitmap *jit, uint32_t frame_layout,
		       uint64_t normal_exit, const struct xp_layout *row);

/* Walk words[0..nwords) = the stack from E up; complete is true when the words reach hend.
 * fp is the frame pointer (FP layout only; 0 otherwise). leaf is the JIT code the sample was in
 * or returned into (NULL: unknown). When it is a shared fragment, the code that called it may
 * have done so without aligning its return address (OTP's safe_fragment_call: arithmetic,
 * length/1, map lookups, comparisons, binary matching...), which the plain scan takes for a
 * term: such a word at the top of the stack is taken as a frame when c->returns_from confirms
 * that it follows a call to leaf (then, fragment by fragment, to the one it returns into). */
void erlang_stack__walk(const struct estack_cfg *c, const uint64_t *words, size_t nwords,
			uint64_t e, uint64_t fp, bool complete, const struct jit_range *leaf,
			struct estack_result *out);

/* The last RA-layout walk: its words and what each of its frames was taken from, kept
 * right-aligned (the words end at words + cap_words, the frames' records at ESTACK_MAX_FRAMES),
 * so that the part of it the next walk takes stays where it is: only what that walk found anew
 * is written. */
struct estack_memo_side {
	uint64_t *words; /* [cap_words - nwords, cap_words) */
	size_t nwords, cap_words;
	/* Per frame, innermost first, in [ESTACK_MAX_FRAMES - nframes, ESTACK_MAX_FRAMES); counted
	 * from the stack's end, so that a walk taking them uses them as they are: how far from the
	 * end its word is (nwords - index), and the unresolved words from there to the end. */
	struct estack_frame *frames;
	uint32_t *to_end, *unres_from;
	size_t nframes;
	size_t top_to_end;  /* how far from the end the plain scan started (after the top's
			     * fragment frames) */
	size_t stop_to_end; /* ... it stopped (at normal_exit), 0 when it ran to the end */
	enum estack_end end;
	bool more_unknown, complete;
	uint64_t epoch; /* the cfg's; 0: nothing usable */
};

/* The last walk, for the next one to take the bottom of its stack from (erlang_stack__walk_memo):
 * consecutive samples of a deep stack share most of it, and naming every word again (a JIT map
 * lookup a word) was most of a deep sample's cost. Owned by one walker; zero-initialised. */
struct estack_memo {
	struct estack_memo_side last;
	/* A walk's own frames' records (to_end, unres_from), until it is kept in last. */
	uint32_t *fresh_to_end, *fresh_unres;
	size_t last_taken; /* the last walk's frames taken from the one before: its last ones */
	uint64_t walks, reused, frames_reused;
};

/* erlang_stack__walk, the same result, taking the frames of the part of the stack from the
 * first frame both walks have at the same distance from the end, below the words that differ
 * (the same word, or two terms, are alike to the scan), from memo's last walk (same cfg, same
 * completeness, no trace frame skipped, not cut), instead of naming its words again; then keeps
 * this walk in memo. RA layout only (FP layout: erlang_stack__walk). When memo cannot keep a walk
 * (out of memory) it is emptied, and the walk is plain. */
void erlang_stack__walk_memo(const struct estack_cfg *c, struct estack_memo *memo,
			     const uint64_t *words, size_t nwords, uint64_t e, uint64_t fp,
			     bool complete, const struct jit_range *leaf,
			     struct estack_result *out);
void erlang_stack__memo_free(struct estack_memo *memo);

/* A process with no Erlang frames left (exiting): no frames, complete. */
void erlang_stack__none(struct estack_result *out);
/* Is this range a shared fragment (global::...), code that is no Erlang function? */
bool erlang_stack__is_fragment(const struct jit_range *r);

/* Is this range an Erlang function body (not a prologue, header or footer)? */
bool erlang_stack__is_function(const struct jit_range *r);
const char *erlang_stack__end_name(enum estack_end end);
/* The label at the root of a stack whose walk ended this way with its Erlang callers unknown
 * ("[Erlang callers unknown: ...]", one per cause, so that a flame graph never merges such a
 * stack under a wrong root), or NULL: a whole stack (bottom), one whose walk passed over a word
 * that named no function and went on (unresolved: every frame kept is the stack's), or a cut
 * one (truncated: its label says how much was cut, which the caller knows). */
const char *erlang_stack__root_label(enum estack_end end);

#endif /* XP_ERLANG_STACK_H */
