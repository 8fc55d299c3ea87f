/* The in-kernel capture program (see kcapture.h), run by every perf sample of the VM's scheduler
 * threads in the sampled thread's context: find the running Process (the scheduler's
 * current_process when the sampler told us where it lives, else r13), copy its bounds span and a
 * part of its Erlang stack, and append the lot to a ring buffer. Reads x86-64 user registers, so it
 * is built for __TARGET_ARCH_x86 only. Does not own: loading it, reading the ring (kcapture.c). */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "kcapture_layout.h"

#if !defined(bpf_target_x86)
#error "the capture program reads x86-64 registers: build it with -D__TARGET_ARCH_x86"
#endif
/* The sampled registers are the x86-64 uapi struct pt_regs (asm/ptrace.h), r13 included. */
_Static_assert(sizeof(bpf_user_pt_regs_t) == 21 * 8, "x86-64 struct pt_regs");
_Static_assert(__builtin_offsetof(bpf_user_pt_regs_t, r13) == 2 * 8, "x86-64 struct pt_regs");

#define PAGE	     4096u
#define NATIVE_SLACK 4096u /* copied below c_p->stop for a sample in native code */

/* Set by kcapture.c before load (kcap_cfg); the verifier sees them as constants. */
const volatile __u32 span_lo, span_len;
const volatile __u32 htop_off, hend_off, stop_off, heap_off;
const volatile __u32 perf_stack;
const volatile __u32 state_off; /* Process.state, 0: not read */
/* The VM's heap sizes in words, ascending, 0 after the last; normal_exit, the stack's last word
 * (0: not known, no heap resize is followed). */
const volatile __u64 heap_words[KCAP_HEAP_SIZES];
const volatile __u64 normal_exit;
/* Bytes of unread captures at which a capture wakes the sampler (0: never): a sampler asleep
 * while deep stacks' captures fill the ring would lose the next ones. */
const volatile __u64 wake_bytes;

/* The capture is built in this CPU's slot of an array (a per-CPU map's values are limited to
 * 32 KiB): a perf event's program runs with interrupts off, alone on its CPU. max_entries is the
 * number of possible CPUs, set before load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kcap_raw);
} scratch SEC(".maps");

/* tid -> where its scheduler keeps current_process and registers (kcapture__watch). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KCAP_WATCH_MAX);
	__type(key, __u32);
	__type(value, struct kcap_watch);
} watch SEC(".maps");

/* Sized before load (ring_bytes in kcapture.c). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096 * 1024);
} ring SEC(".maps");

/* A field of the copied Process span (off: its offset in the Process, inside the span). */
static __always_inline __u64 field(const struct kcap_raw *r, __u32 off)
{
	return *(const __u64 *)(r->span + (off - span_lo));
}

/* Copy len bytes from addr on to the capture. */
static __always_inline int copy_at(struct kcap_raw *r, __u64 addr, __u64 len)
{
	if (len > KCAP_STACK_MAX) /* for the verifier */
		return -1;
	r->stack_addr = addr;
	if (bpf_probe_read_user(r->stack, len, (const void *)addr))
		return -1;
	r->stack_len = len;
	return 0;
}

/* Copy len bytes: the ones below edge (up: edge is hend) or from edge on (!up: edge is stop). */
static __always_inline int try_copy(struct kcap_raw *r, __u64 edge, __u64 len, bool up)
{
	return copy_at(r, up ? edge - len : edge, len);
}

/* From edge on (!up): the longest readable span of part + n pages, n found page by page (a byte
 * of each: a page is there or not). A collection's stack copied to its new block ends at that
 * block's end, past which the next pages may be absent. Linear, not halving: the verifier walks
 * each of halving's 2^7 outcomes. Returns n. A global function, as perf_copy_end and
 * remap_end_of: the verifier checks its loop once, on its own; with the registers kept in the
 * scratch value (kcapture), the load went from 5,741 instructions verified in 6.4 ms to 4,100 in
 * 3.5-4.1 ms (issue 27: a tenth of an attach). */
__noinline __u64 pages_from_edge(__u64 edge, __u64 part, __u64 len)
{
	__u64 n = 0;
	__u8 b;

	for (__u32 i = 0; i < KCAP_STACK_MAX / PAGE; i++) {
		if (part + (n + 1) * PAGE > len ||
		    bpf_probe_read_user(&b, 1, (const void *)(edge + part + n * PAGE)))
			break;
		n++;
	}
	return n;
}

static __always_inline void copy_from_edge(struct kcap_raw *r, __u64 edge, __u64 part, __u64 len)
{
	try_copy(r, edge, part + pages_from_edge(edge, part, len) * PAGE, false);
}

/* Copy up to len bytes; pages never touched make bpf_probe_read_user fail rather than fault them
 * in: if the whole span fails, try the page at its end (up: hend's) and the next one, then that
 * page alone; from edge on (!up), the longest span that reads. */
static __always_inline void copy_stack(struct kcap_raw *r, __u64 edge, __u64 len, bool up)
{
	/* The bytes of edge's page below edge (up) or from edge on (!up), 1..PAGE. */
	__u64 part = ((up ? edge - 1 : -edge - 1) & (PAGE - 1)) + 1;

	if (!try_copy(r, edge, len, up))
		return;
	if (!up && len > part) {
		copy_from_edge(r, edge, part, len);
		return;
	}
	if (len > part + PAGE) {
		len = part + PAGE;
		if (!try_copy(r, edge, len, up))
			return;
	}
	if (len > part)
		try_copy(r, edge, part, up);
}

/* The index of the largest heap size of at most words, -1 when none. */
__noinline __s32 largest_heap_size(__u64 words)
{
	__s32 top = -1;

	for (__u32 i = 0; i < KCAP_HEAP_SIZES; i++) {
		if (!heap_words[i] || heap_words[i] > words)
			break;
		top = (__s32)i;
	}
	return top;
}

/* A collection shrinking the heap's block in place (resize_new_heap): it moves the stack down to
 * the new heap's end, then reallocates the block (mremap takes its top pages away), and only then
 * sets stop and hend, which are still the old block's. The new heap ends at heap + 8 * one of the
 * VM's heap sizes, below end and at most slack below it: the largest of them whose last word is
 * normal_exit, the stack's bottom (those above it may be gone already), and that holds the stack's
 * len bytes. Returns that end, 0 when none. Global functions: the verifier checks each once, on
 * its own, not once for every way the program reaches it. Inlined, the table's steps times the
 * rest of the program made the load take 152 ms; one function, 34 ms (48,778 instructions
 * verified: each of the table's 154 possible tops tried its 8 heap sizes again); with
 * the top found by largest_heap_size, which the caller sees as any number, 5 ms (5,741). */
__noinline __u64 remap_end_of(__u64 heap, __u64 end, __u64 slack, __u64 len)
{
	__u64 at, w, top;

	if (!normal_exit || heap >= end)
		return 0;
	top = (__u64)(__s64)largest_heap_size((end - heap) / 8);
	for (__u64 n = 0; n < KCAP_REMAP_TRIES; n++) {
		__u64 i = top - n; /* -1 and below wrap past the table */

		/* A fresh index each try, checked where it is used: the compiler would otherwise
		 * walk a pointer down the table, or zero-extend an unchecked copy, and the verifier
		 * loses the bounds. */
		barrier_var(i);
		if (i >= KCAP_HEAP_SIZES)
			return 0;
		at = heap + 8 * heap_words[i];
		if (end - at > slack || at - heap < len)
			return 0;
		if (!bpf_probe_read_user(&w, sizeof(w), (const void *)(at - 8)) && w == normal_exit)
			return at;
	}
	return 0;
}

/* The stack copied below the end remap_end_of finds (F_REMAP). */
static __always_inline void copy_remapped(struct kcap_raw *r, __u64 end, __u64 slack, __u64 stop,
					  __u64 hend)
{
	__u64 heap = field(r, heap_off), at;

	if (stop <= heap || stop >= hend || hend - stop > KCAP_STACK_MAX)
		return;
	at = remap_end_of(heap, end, slack, hend - stop);
	if (!at || copy_at(r, at - (hend - stop), hend - stop))
		return;
	r->remap_end = at;
	r->flags |= F_REMAP;
}

/* Copy the Process's span and its stack. Returns where to look for a heap shrunk under the sample
 * instead (copy_remapped's end; *slack), 0 when done. */
static __always_inline __u64 copy_process(struct kcap_raw *r, __u64 cp, __u64 rsp,
					  const bpf_user_pt_regs_t *remap, __u64 *slack)
{
	__u64 stop, hend, htop, from;
	__u32 st;

	if (bpf_probe_read_user(r->span, span_len, (const void *)(cp + span_lo)))
		return 0;
	r->flags |= F_SPAN_OK;
	/* The state word as at the sample: a process running a system task on a dirty scheduler, or
	 * in a garbage collection, says so there (ERTS_PSFLG_DIRTY_RUNNING_SYS, ERTS_PSFLG_GC). */
	if (state_off && !bpf_probe_read_user(&st, sizeof(st), (const void *)(cp + state_off)))
		r->flags |= F_STATE_OK | (__u64)st << F_STATE_SHIFT;
	/* r13 with no current process: an exiting process has no Erlang stack to copy, and in the
	 * scheduler's own code (a spinning scheduler) r13 is stale; the span alone names it. */
	if (r->flags & F_SCHED_NONE)
		return 0;
	stop = field(r, stop_off);
	hend = field(r, hend_off);
	/* In the mremap: the block [rdi, rdi + rsi) kept up to rdi + rdx, the heap in it. The pages
	 * at hend may still be there, holding what the move left of the stack: not copied. */
	if (remap && field(r, heap_off) >= remap->rdi && hend > remap->rdi + remap->rdx) {
		*slack = KCAP_REMAP_SLACK;
		return remap->rdi + remap->rdx;
	}
	/* In a garbage collection stop already points into the new heap while heap and hend are
	 * still the old block's: copy from stop on (the new block's end is not known yet). */
	if (stop <= field(r, heap_off) || stop >= hend) {
		copy_stack(r, stop, KCAP_STACK_MAX, false);
		return 0;
	}
	/* The stack lies in [htop, hend): htop as stored may lag the live one, never pass E. */
	htop = field(r, htop_off);
	if (htop >= hend)
		return 0;
	if (rsp <= htop || rsp >= hend) {
		/* In native code E is not known here. It is c_p->stop after a runtime entry that
		 * stores it, else near it (the stack moved by a few frames since one did): copy
		 * from NATIVE_SLACK below stop up to hend, not from htop, which the free heap
		 * between it and E may put far below (copying that cost up to 128 KiB a sample). A
		 * top deeper than that is read later, and checked against this copy at the seam.
		 * The free heap below stop may be pages never touched (a heap just allocated), and
		 * the pages at hend then hold less than the stack: then from stop, whose stack was
		 * written (a dirty scheduler's E is stop). */
		from = stop > htop + NATIVE_SLACK ? stop - NATIVE_SLACK : htop;
		copy_stack(r, hend, hend - from < KCAP_STACK_MAX ? hend - from : KCAP_STACK_MAX,
			   true);
		if (r->stack_len < hend - stop)
			copy_stack(r, hend,
				   hend - stop < KCAP_STACK_MAX ? hend - stop : KCAP_STACK_MAX,
				   true);
		/* Nothing at hend, where the stack's bottom always is: the block was shrunk
		 * under it, and the sample is past the mremap (in realloc's return, or in
		 * resize_new_heap before it sets the new bounds). */
		if (!r->stack_len) {
			*slack = ~0ULL;
			return hend - 8;
		}
		return 0;
	}
	/* In JIT code rsp is E: the stack is [rsp, hend), of which perf copies the first perf_stack
	 * bytes; copy on from there (nothing when perf's copy holds it all). */
	from = rsp + perf_stack;
	if (from >= hend)
		return 0;
	copy_at(r, from, hend - from < KCAP_STACK_MAX ? hend - from : KCAP_STACK_MAX);
	return 0;
}

/* Where perf's copy of the stack from rsp ends: perf_stack bytes on, or before, at the first page
 * that is not present (a large frame's buffer never touched), where perf's copy stops. */
__noinline __u64 perf_copy_end(__u64 rsp)
{
	__u64 end = rsp + perf_stack, at = rsp;
	__u8 probe;

	for (__u32 i = 0; i < 65536 / KCAP_PAGE + 1; i++) {
		if (at >= end)
			break;
		/* perf's copy may stop a little short of the page (its copy's granularity):
		 * overlap it by 256 bytes. */
		if (bpf_probe_read_user(&probe, 1, (const void *)at))
			return at > rsp + 256 ? at - 256 : rsp;
		at = (at & ~(__u64)(KCAP_PAGE - 1)) + KCAP_PAGE;
	}
	return end;
}

/* A sample in C deeper than perf's copy of it: copy the rest of the native stack, up to the
 * runtime stack's top (*registers: where the JIT's calls into C start), after the Erlang stack's
 * copy, so that the sampler unwinds it as it was. Page by page: a page never touched fails to
 * copy and reads as zeros, which is what it holds. */
static __always_inline void copy_native(struct kcap_raw *r, __u64 registers_addr, __u64 rsp)
{
	__u64 top, from, end, at = r->stack_len;

	if (!registers_addr || bpf_probe_read_user(&top, sizeof(top), (const void *)registers_addr))
		return;
	if (top <= rsp || top - rsp > (1u << 20) || at > KCAP_STACK_MAX)
		return;
	/* In C (or a fragment) on the runtime stack: the words just below rsp, where a function
	 * in its epilogue or a leaf's red zone keeps registers its CFI says are saved. */
	if (!bpf_probe_read_user(r->below, KCAP_BELOW_SP, (const void *)(rsp - KCAP_BELOW_SP)))
		r->below_len = KCAP_BELOW_SP;
	from = perf_copy_end(rsp);
	if (top <= from)
		return;
	end = top - from < KCAP_CSTACK_MAX ? top : from + KCAP_CSTACK_MAX;
	for (__u64 a = from, i = 0; i < KCAP_CSTACK_MAX / KCAP_PAGE + 1 && a < end; i++) {
		__u64 off = a - from, n = (a & ~(__u64)(KCAP_PAGE - 1)) + KCAP_PAGE - a;

		if (n > end - a)
			n = end - a;
		if (off >= KCAP_CSTACK_MAX || n > KCAP_PAGE) /* for the verifier */
			break;
		bpf_probe_read_user(r->stack + at + off, n, (const void *)a);
		a += n;
	}
	r->cstack_addr = from;
	r->cstack_len = end - from;
}

/* The user registers of the sampled thread: the interrupted ones, or, for a sample taken in the
 * kernel (a page fault, a syscall), the ones its entry saved (bpf_task_pt_regs, Linux 5.15+). */
static __always_inline int user_regs(struct bpf_perf_event_data *ctx, bpf_user_pt_regs_t *out)
{
	long saved;

	if ((ctx->regs.cs & 3) == 3) {
		*out = ctx->regs;
		return 0;
	}
	saved = bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!saved || bpf_probe_read_kernel(out, sizeof(*out), (const void *)saved))
		return -1;
	return (out->cs & 3) == 3 ? 0 : -1;
}

/* A sample in the kernel inside mremap(2) shrinking a mapping: the registers the syscall's entry
 * saved (its number in orig_rax, its arguments: address, old length, new length), else NULL. */
static __always_inline const bpf_user_pt_regs_t *in_mremap(struct bpf_perf_event_data *ctx,
							   const bpf_user_pt_regs_t *user)
{
	if ((ctx->regs.cs & 3) == 3 || user->orig_rax != 25 /* __NR_mremap, x86-64 */ ||
	    user->rdx >= user->rsi)
		return NULL;
	return user;
}

SEC("perf_event")
int kcapture(struct bpf_perf_event_data *ctx)
{
	bpf_user_pt_regs_t *regs; /* in the scratch value: every state the verifier keeps
				   * holds the program's stack, and these were 168 bytes of it */
	struct kcap_raw *r;
	struct kcap_watch *where;
	__u64 cp, len, end, slack = 0;
	__u32 cpu, tid;

	cpu = bpf_get_smp_processor_id();
	r = bpf_map_lookup_elem(&scratch, &cpu);
	if (!r)
		return 1;
	regs = (bpf_user_pt_regs_t *)r->regs;
	if (user_regs(ctx, regs))
		return 1;
	r->pid_tgid = bpf_get_current_pid_tgid();
	tid = (__u32)r->pid_tgid;
	r->time = bpf_ktime_get_ns(); /* perf's clock with use_clockid CLOCK_MONOTONIC */
	r->ip = PT_REGS_IP(regs);
	r->sp = PT_REGS_SP(regs);
	r->flags = 0;
	r->stack_addr = 0;
	r->stack_len = 0;
	r->cstack_addr = 0;
	r->cstack_len = 0;
	r->remap_end = 0;
	r->below_len = 0;
	cp = regs->r13;
	/* The scheduler's current_process, when we know where this thread keeps it; when it is
	 * NULL, r13's Process span only (an exiting process, or nothing: the sampler decides by
	 * the sample's code). */
	where = bpf_map_lookup_elem(&watch, &tid);
	if (where &&
	    !bpf_probe_read_user(&r->cp, sizeof(r->cp), (const void *)where->current_process)) {
		if (r->cp)
			cp = r->cp;
		r->flags = r->cp ? F_FROM_SCHEDULER : F_SCHED_NONE;
	}
	r->cp = cp;
	if (cp && (end = copy_process(r, cp, PT_REGS_SP(regs), in_mremap(ctx, regs), &slack)))
		copy_remapped(r, end, slack, field(r, stop_off), field(r, hend_off));
	if (where)
		copy_native(r, where->registers, PT_REGS_SP(regs));
	len = r->stack_len + r->cstack_len;
	if (len > KCAP_STACK_MAX + KCAP_CSTACK_MAX)
		return 1;
	/* No wake-up: the sampler drains the ring whenever perf wakes it, or its timeout does;
	 * unless the ring is filling up faster than that (deep stacks), then woken at once. */
	bpf_ringbuf_output(&ring, r, H_STACK + len,
			   wake_bytes && bpf_ringbuf_query(&ring, BPF_RB_AVAIL_DATA) >= wake_bytes
			       ? BPF_RB_FORCE_WAKEUP
			       : BPF_RB_NO_WAKEUP);
	/* Non-zero: perf writes its sample as usual. */
	return 1;
}

char LICENSE[] SEC("license") = "GPL"; /* bpf_probe_read_user is GPL-only */
