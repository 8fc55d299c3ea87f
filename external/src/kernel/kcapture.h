/* In-kernel capture: a small BPF program attached to every perf event copies, at the moment of the
 * sample and in the sampled thread's context, the running Process's stack bounds and its Erlang
 * stack (at most KCAP_STACK_MAX bytes), so that a sample taken in native code is walked
 * as it was, not as it is when the sampler gets to it (a runtime call returns within microseconds;
 * a garbage collection moves the stack). The program only reads (bpf_probe_read_user never faults
 * a page in) and writes to its own ring buffer. Owns the program, its maps and the ring consumer.
 * Does not own: what the bytes mean (process.c, sampler.c), the perf events (perf.c). */
#ifndef XP_KCAPTURE_H
#define XP_KCAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kcapture_layout.h" /* KCAP_SPAN_MAX, KCAP_STACK_MAX */

/* What to copy: the Process bytes [cp + span_lo, cp + span_lo + span_len), and from them the
 * offsets (inside the Process) of the fields that bound the stack. All from the layout (layout.c
 * or the agent), never fixed here. */
struct kcap_cfg {
	uint32_t span_lo, span_len;
	uint32_t htop_off, hend_off, stop_off, heap_off;
	uint32_t cpus, rate_hz; /* size the ring (0: its smallest, 4 MiB) */
	/* The user stack bytes perf copies at each sample from rsp: for a sample in JIT code (rsp
	 * is E) the program copies what lies beyond, so that perf's copy and the capture together
	 * hold a stack of perf_stack + KCAP_STACK_MAX bytes as it was at the sample. */
	uint32_t perf_stack;
	uint32_t state_off; /* Process.state, read at the sample; 0: not read */
	/* A heap shrunk in place under the sample (F_REMAP) is found from these: the VM's heap
	 * sizes in words, ascending (0 after the last; process__heap_sizes), and normal_exit, the
	 * stack's last word (0: not followed). */
	uint64_t heap_words[KCAP_HEAP_SIZES];
	uint64_t normal_exit;
};

/* One capture, as the BPF program wrote it. */
struct kcap_rec {
	uint32_t tid;
	uint64_t time; /* CLOCK_MONOTONIC, like perf's sample time */
	uint64_t ip, sp;
	uint64_t cp;	     /* the Process copied: the scheduler's current_process, else r13 */
	bool from_scheduler; /* cp is the scheduler's current_process */
	/* The scheduler's current_process was NULL at the sample; cp is r13 (F_SCHED_NONE). */
	bool sched_none;
	/* The Process's state word at the sample (XP_PSFLG_*), when state_known. */
	bool state_known;
	uint32_t state;
	const uint8_t *span; /* span_len bytes, NULL when the Process could not be read */
	/* The stack copy [stack_addr, stack_addr + stack_len): for a sample in JIT code it starts
	 * where perf's copy of the sample's stack ends (none when perf's holds it all); else it
	 * ends at hend, or (in a garbage collection, stop outside [heap, hend)) starts at stop. */
	uint64_t stack_addr;
	const uint8_t *stack; /* NULL when nothing was copied */
	size_t stack_len;
	/* Non-zero (F_REMAP): a collection was shrinking the Process's heap in place at the sample
	 * (in mremap, or past it before the new bounds were set); its heap now ends here, and the
	 * copy is the stack moved below it, [remap_end - (hend - stop), remap_end), stop and hend
	 * still the old block's. */
	uint64_t remap_end;
	/* The native stack beyond perf's copy of it, [cstack_addr, + cstack_len): it starts where
	 * perf's copy ends, and ends at the runtime stack's top or after KCAP_CSTACK_MAX bytes. */
	uint64_t cstack_addr;
	const uint8_t *cstack; /* NULL when not copied (perf's copy held it, or not watched) */
	size_t cstack_len;
	/* The KCAP_BELOW_SP bytes below sp, [sp - KCAP_BELOW_SP, sp), as they were at the sample: a
	 * sample in C on a watched scheduler's runtime stack. NULL when not copied. */
	const uint8_t *below;
};

struct kcap_stats {
	uint64_t records;   /* captures read from the ring */
	uint64_t matched;   /* captures paired with their perf sample */
	uint64_t unmatched; /* captures no sample claimed (lost perf records, exited threads) */
	uint64_t malformed; /* captures too short for their header */
	/* A drain found a capture of the sample's time still being copied into the ring and waited
	 * for it; it was still being copied after KCAP_BUSY_WAIT_NS (then drained later). */
	uint64_t busy_waits, busy_given_up;
};

struct kcapture;

/* Load the program. 0, or a negative errno with a one-line reason in why (no CAP_BPF, a kernel
 * without ring buffers or bpf_probe_read_user, the verifier refused). */
int kcapture__open(struct kcapture **out, const struct kcap_cfg *cfg, char *why, size_t whylen);
/* A kcapture with no program over a ring laid out by the caller (tests): cons, the consumer
 * position's page (page_size bytes), and prod, the producer position's page followed by the data
 * (page_size + 2 * ring_bytes bytes), each from mmap; kcapture__free unmaps them. */
int kcapture__adopt_ring(struct kcapture **out, uint8_t *cons, uint8_t *prod, size_t page_size,
			 uint32_t ring_bytes);
/* The program fd to attach to a perf event (PERF_EVENT_IOC_SET_BPF). */
int kcapture__prog_fd(const struct kcapture *k);
/* Tell the program where thread tid's scheduler keeps its current process (the address of
 * esdp->current_process): exact at the sample, where r13 may be a native function's scratch. */
int kcapture__watch(struct kcapture *k, pid_t tid, uint64_t current_process_addr,
		    uint64_t registers_addr);
/* Move the captures written so far, up to those taken a little after time upto (perf's clock),
 * out of the kernel's ring. Call with each sample's time before kcapture__find, reading the
 * samples in time order (perf_session__poll does): a capture reaches its ring before its sample
 * reaches perf's (stamped a microsecond or two after it), so the sample finds it, and captures
 * of samples not read yet stay in the ring instead of crowding the few pending slots. */
void kcapture__drain(struct kcapture *k, uint64_t upto);
/* The capture of the sample (tid, time, ip, sp), or NULL. Valid until the next drain. */
const struct kcap_rec *kcapture__find(struct kcapture *k, uint32_t tid, uint64_t time, uint64_t ip,
				      uint64_t sp);
/* An fd that polls readable (edge-triggered: EPOLLET) when a capture finds its ring half full,
 * for a sampler that otherwise reads the ring only when perf wakes it; -1 without one. */
int kcapture__wake_fd(const struct kcapture *k);
const struct kcap_stats *kcapture__stats(const struct kcapture *k);
void kcapture__free(struct kcapture *k);

#endif /* XP_KCAPTURE_H */
