/* The in-kernel capture's record, shared by the BPF program (kcapture.bpf.c) and its reader
 * (kcapture.c): the bounds of what it copies and the byte offset of each field. Plain constants
 * and fixed-width types only, so that both the BPF target and the host compile it. Does not own:
 * what the copied bytes mean (process.c, sampler.c). */
#ifndef XP_KCAPTURE_LAYOUT_H
#define XP_KCAPTURE_LAYOUT_H

#include <linux/types.h>

#define KCAP_SPAN_MAX 512u /* Process bytes copied: process_reader's bounds span */
/* Stack bytes copied at most: with perf's own copy, a stack of 136 KiB (17,000 words, some 5,000
 * frames of a deep non-tail recursion) is walked as it was at the sample. The copy is as long as
 * the stack, so only deep stacks pay for it: about 10 us per sample at this bound. */
#define KCAP_STACK_MAX (128u * 1024)

/* Native stack bytes copied at most beyond perf's own copy, up to the runtime stack's top (the
 * scheduler's registers block, where every call from JIT code into C starts): a BIF whose frame
 * is larger than perf's copy (binary_to_term's is 16 KiB, mostly a buffer never touched) is
 * unwound as it was at the sample. Copied page by page from where perf's copy ends, which is
 * its first page never touched when there is one (perf stops there), a page never touched
 * reading as the zeros it holds; only when the C stack is deeper than perf's copy. */
#define KCAP_CSTACK_MAX (32u * 1024)
#define KCAP_PAGE	4096u

/* Bytes copied from just below the stack pointer, for a sample in C on the runtime stack: a
 * function in its epilogue has popped the registers it saved, yet its CFI still finds them there
 * (compilers do not restore the rule at a pop), and a leaf function may keep them in the red
 * zone (128 bytes, x86-64 psABI 3.2.2). perf's copy starts at the stack pointer, and the live
 * memory there is overwritten by the next call long before the sampler could read it. */
#define KCAP_BELOW_SP 128u

#define KCAP_WATCH_MAX 4096 /* scheduler threads the program looks up */

/* A watched scheduler thread: where its scheduler data keeps current_process and registers. */
struct kcap_watch {
	__u64 current_process; /* address of esdp->current_process */
	__u64 registers;       /* address of esdp->registers, 0 when unknown */
};

#define F_FROM_SCHEDULER 1u /* cp is the scheduler's current_process, not r13 */
#define F_SPAN_OK	 2u /* span holds the Process bytes */
/* The scheduler's current_process was NULL at the sample, and cp is r13, of which only the span
 * is copied: a process whose exit the scheduler continues in JIT code (erts_continue_exit_process
 * clears current_process before beam_continue_exit runs: B/erl_process.c 25:14352, 27:14594),
 * or no process at all (r13 stale in the scheduler's own code). */
#define F_SCHED_NONE 4u
/* The Process's state word (Process.state, XP_PSFLG_*) was read at the sample: it is in the upper
 * 32 bits of flags (state_off set, the read did not fault). */
#define F_STATE_OK    8u
#define F_STATE_SHIFT 32
/* The sample interrupted an mremap(2) shrinking the block that holds the Process's heap in place,
 * or came after it before the new bounds were set
 * (a collection resizing the new heap: B/erl_gc.c resize_new_heap, which moved the stack down to
 * the new heap's end before the realloc, leaving stop and hend the old block's until it returns).
 * remap_end is that new end, found by the program (heap + 8 * one of the VM's heap sizes, where
 * the stack's last word, normal_exit, is), and the stack's copy is [remap_end - (hend - stop),
 * remap_end). */
#define F_REMAP 16u
/* How far below the block's new end the heap's may be: the carrier past the heap, rounded up to
 * a page (mseg) or to the sys_alloc carrier size (+MYycs, 1 MiB by default, then malloc's
 * page): B/erl_alloc_util.c realloc_sbc. */
#define KCAP_REMAP_SLACK (2u << 20)
#define KCAP_REMAP_TRIES 8   /* heap sizes tried, the largest first */
#define KCAP_HEAP_SIZES	 154 /* the VM's heap sizes at most (B/erl_gc.c MAX_HEAP_SIZES) */

/* One capture as the program writes it; the ring gets its first H_STACK + stack_len bytes. */
struct kcap_raw {
	__u64 pid_tgid;
	__u64 time; /* bpf_ktime_get_ns: CLOCK_MONOTONIC, perf's clock */
	__u64 ip, sp;
	__u64 cp;
	__u64 flags; /* F_*, and the state word above F_STATE_SHIFT (F_STATE_OK) */
	__u64 stack_addr, stack_len;
	__u64 cstack_addr, cstack_len; /* the native stack's part beyond perf's copy */
	__u64 remap_end;	       /* F_REMAP: the heap's new end, the stack moved below it */
	__u64 below_len;	       /* 0, or KCAP_BELOW_SP: below holds [sp - below_len, sp) */
	__u8 below[KCAP_BELOW_SP];
	__u8 span[KCAP_SPAN_MAX];
	/* The Erlang stack's copy, then (at stack + stack_len) the native one's; a page of slack
	 * bounds the program's page-sized copies for the verifier. */
	__u8 stack[KCAP_STACK_MAX + KCAP_CSTACK_MAX + KCAP_PAGE];
	/* The program's own: the sampled thread's user registers (never written to the ring). */
	__u64 regs[21];
};

/* The same layout as byte offsets, for the reader. */
enum {
	H_PIDTGID = 0,
	H_TIME = 8,
	H_IP = 16,
	H_SP = 24,
	H_CP = 32,
	H_FLAGS = 40,
	H_STACK_ADDR = 48,
	H_STACK_LEN = 56,
	H_CSTACK_ADDR = 64,
	H_CSTACK_LEN = 72,
	H_REMAP_END = 80,
	H_BELOW_LEN = 88,
	H_BELOW = 96,
	H_SPAN = H_BELOW + KCAP_BELOW_SP,
	H_STACK = H_SPAN + KCAP_SPAN_MAX,
	H_MAX = H_STACK + KCAP_STACK_MAX + KCAP_CSTACK_MAX + KCAP_PAGE,
};

_Static_assert(__builtin_offsetof(struct kcap_raw, time) == H_TIME, "kcap_raw layout");
_Static_assert(__builtin_offsetof(struct kcap_raw, flags) == H_FLAGS, "kcap_raw layout");
_Static_assert(__builtin_offsetof(struct kcap_raw, stack_len) == H_STACK_LEN, "kcap_raw layout");
_Static_assert(__builtin_offsetof(struct kcap_raw, cstack_len) == H_CSTACK_LEN, "kcap_raw layout");
_Static_assert(__builtin_offsetof(struct kcap_raw, remap_end) == H_REMAP_END, "kcap_raw layout");
_Static_assert(__builtin_offsetof(struct kcap_raw, below_len) == H_BELOW_LEN, "kcap_raw layout");
_Static_assert(__builtin_offsetof(struct kcap_raw, below) == H_BELOW, "kcap_raw layout");
_Static_assert(__builtin_offsetof(struct kcap_raw, span) == H_SPAN, "kcap_raw layout");
_Static_assert(__builtin_offsetof(struct kcap_raw, stack) == H_STACK, "kcap_raw layout");
_Static_assert(__builtin_offsetof(struct kcap_raw, regs) == H_MAX, "kcap_raw layout");

#endif /* XP_KCAPTURE_LAYOUT_H */
