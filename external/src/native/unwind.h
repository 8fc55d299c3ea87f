/* Native stack unwinding of a sample with libdwfl: from the sampled user registers and the user
 * stack copy (falling back to process_vm_readv beyond it), using each module's CFI (.eh_frame /
 * .debug_frame), until a return address lands in code the caller classifies as JIT code. Also
 * names native code addresses: .symtab, else .dynsym, else the function start from CFI plus an
 * offset ("beam.smp!0x1a2b30+0x14"), with debug symbols found by build-id when installed.
 * Does not own: Erlang frames (erlang_stack.c), reading samples (perf.c). */
#ifndef XP_UNWIND_H
#define XP_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mem.h"
#include "perf.h"
#include "proc.h"

#define UNWIND_MAX_FRAMES 512

enum unwind_stop {
	UNWIND_STOP_JIT = 0, /* reached a return address in JIT code: Erlang frames follow */
	UNWIND_STOP_END,     /* the outermost frame (thread start) */
	UNWIND_STOP_NO_CFI,  /* a pc in a module without CFI, or in no module */
	UNWIND_STOP_MEMORY,  /* a needed stack word was unreadable */
	UNWIND_STOP_DEPTH,   /* UNWIND_MAX_FRAMES reached */
	UNWIND_STOP_ERROR,   /* libdwfl failed otherwise */
	UNWIND_STOP_COUNT
};

struct unwind_frame {
	uint64_t pc;	 /* the sampled ip for frame 0, return addresses after */
	bool activation; /* pc is exact (frame 0); else pc - 1 is inside the call */
};

struct unwind_result {
	struct unwind_frame frames[UNWIND_MAX_FRAMES]; /* innermost first, native frames only */
	size_t nframes;
	enum unwind_stop stop;
	/* When stop == UNWIND_STOP_JIT: the JIT return address and the registers recovered by CFI
	 * at that frame (the state the JIT code had when it called into C). */
	uint64_t jit_pc, jit_sp, jit_bp, jit_r13;
	bool jit_bp_valid, jit_r13_valid;
};

typedef bool (*unwind_is_jit_fn)(uint64_t pc, void *ctx);

struct unwinder;

/* Report every executable file mapping of the target as a libdwfl module, opening files through
 * proc__resolve_path (chroots, containers). 0 or -errno. */
int unwinder__new(struct unwinder **out, pid_t pid, const struct proc_maps *maps, struct mem *mem);
/* Report the executable file mappings that appeared since (a NIF loaded later); known modules
 * stay. Call with fresh maps when pcs land in no module. The number of new modules, or -errno. */
int unwinder__refresh(struct unwinder *u, const struct proc_maps *maps);
/* Unwind one sample (a perf sample of a thread of that pid). Never fails: the result says where
 * and why it stopped. */
void unwinder__unwind(struct unwinder *u, const struct perf_sample *s, unwind_is_jit_fn is_jit,
		      void *ctx, struct unwind_result *out);
/* More of the next sample's stack, copied at the sample elsewhere than perf's copy ([addr, +
 * len): the in-kernel capture's); read before live memory. Two such copies at once, in slots:
 * the C stack beyond perf's copy, and the words just below the stack pointer. Pass len 0 to clear
 * a slot. */
enum { UNWIND_EXTRA_DEEPER = 0, UNWIND_EXTRA_BELOW, UNWIND_EXTRAS };
void unwinder__set_extra(struct unwinder *u, unsigned slot, uint64_t addr, const uint8_t *data,
			 size_t len);
/* Counters since unwinder__new. */
struct unwind_stats {
	uint64_t unwinds, frames;
	uint64_t stops[UNWIND_STOP_COUNT];
	uint64_t read_stack;		  /* stack words served from the sample's stack copy */
	uint64_t read_live;		  /* ... read from the live target (process_vm_readv) */
	uint64_t read_failed;		  /* ... unreadable either way */
	uint64_t fde_lookups, fde_hits;	  /* function-start cache */
	uint64_t fast;			  /* unwinds done by the fast path, not libdwfl */
	uint32_t modules, modules_failed; /* files reported at new / skipped as unopenable */
};

/* Name a native code address into buf: "func" (any module: unwinder__module says which), with
 * "+0x14" when offsets are asked for; for code no symbol names (OTP 28+ beam.smp), the function
 * start from CFI as a link-time address, stable across runs: "beam.smp!0x1a2b30" (+"+0x14");
 * with neither, "beam.smp+0x1a2b44". Returns 0, or -ENOENT when pc is in no module ("0x..."). */
int unwinder__name(struct unwinder *u, uint64_t pc, bool with_offset, char *buf, size_t len);
/* The same for a frame: a return address is looked up at pc - 1 (the call), printed at pc. */
int unwinder__name_frame(struct unwinder *u, const struct unwind_frame *f, bool with_offset,
			 char *buf, size_t len);
/* A key for the frame's name without offset: frames with equal nonzero keys and equal sizes
 * have equal names (the start of the symbol naming it and its size, or the start of its
 * function from CFI and size 0, as runtime addresses, the two kinds apart). 0 when its name
 * depends on the address itself (no module, no function). */
uint64_t unwinder__name_key(struct unwinder *u, const struct unwind_frame *f, uint64_t *size);
const struct unwind_stats *unwinder__stats(const struct unwinder *u);
/* The fast path (on by default); tests compare it with libdwfl alone. */
void unwinder__set_fast(struct unwinder *u, bool on);
/* Module basename for a pc ("beam.smp", "libc.so.6", "crypto.so"), or NULL. */
const char *unwinder__module(struct unwinder *u, uint64_t pc);
const char *unwinder__stop_name(enum unwind_stop stop);
void unwinder__free(struct unwinder *u);

#endif /* XP_UNWIND_H */
