/* The unwinder's state, shared by its walks (unwind.c) and its modules and names
 * (unwind_modules.c), and by nothing else. */
#ifndef XP_UNWIND_INT_H
#define XP_UNWIND_INT_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stdint.h>

#include "proc.h"
#include "unwind.h"

/* 16,384 slots: the return addresses of a workload recur, but a sample's own pc is any
 * instruction of the function it is in, a long tail (4,096 slots missed 2.5 times as often). */
#define FDE_SLOTS_LOG2 14
#define FDE_SLOTS      (1u << FDE_SLOTS_LOG2)
#define VDSO_MAX       (1u << 20)
#define PAGE_MASK_4K   (~(uint64_t)0xfff)

/* DWARF register numbers, x86-64 psABI: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip. */
enum { DW_RBP = 6, DW_RSP = 7, DW_R13 = 13, DW_NREGS = 17 };

enum fde_state { FDE_EMPTY = 0, FDE_NONE, FDE_FOUND, FDE_SIGNAL };

/* How the caller's value of a register is found (the fast path knows these kinds only). */
enum reg_how { HOW_OTHER = 0, HOW_SAME, HOW_UNDEFINED, HOW_AT_CFA };

struct reg_rule {
	uint8_t how;	/* enum reg_how */
	int32_t offset; /* HOW_AT_CFA: saved at CFA + offset */
};

/* Which function (FDE) covers a lookup pc; FDE_NONE when no module or no CFI covers it. With
 * fast set, the CFI row at pc in the plain form the fast path follows. */
struct fde_slot {
	uint64_t pc, start; /* start: runtime address of the FDE's first instruction */
	uint8_t state;	    /* enum fde_state */
	bool fast;
	uint8_t cfa_reg; /* DW_RSP or DW_RBP */
	int32_t cfa_offset;
	struct reg_rule ra, bp, r13;
};

struct unwinder {
	Dwfl *dwfl;
	Dwfl_Callbacks cb; /* libdwfl keeps a pointer to it: lives as long as dwfl */
	char *debuginfo_path;
	pid_t pid;
	struct mem *mem;
	/* The unwind in progress: valid inside unwinder__unwind only. */
	const struct perf_sample *cur;
	/* More of the sample's stack, copied elsewhere at the sample (the in-kernel capture's
	 * copies beyond perf's and below rsp, by UNWIND_EXTRA_*): read before the live memory.
	 * Set for one unwind. */
	struct {
		uint64_t addr;
		const uint8_t *data; /* NULL: the slot is empty */
		size_t len;
	} extra[UNWIND_EXTRAS];
	struct unwind_result *out;
	unwind_is_jit_fn is_jit;
	void *is_jit_ctx;
	bool stopped, read_failed, prev_signal;
	bool no_fast; /* tests: libdwfl only */
	struct unwind_stats stats;
	struct fde_slot fde[FDE_SLOTS];
};

/* unwind_modules.c: libdwfl's module callbacks, reporting the executable mappings of maps
 * (but those whose known[i] is set; known may be NULL), and a module's function starts. */
uint64_t unwinder__func_start(Dwfl_Module *mod, uint64_t pc);
int unwinder__free_starts(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr start,
			  void *arg);
int unwinder__find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		       char **file_name, Elf **elfp);
int unwinder__find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			     Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			     GElf_Word debuglink_crc, char **debuginfo_file_name);
void unwinder__report_maps(struct unwinder *u, const struct proc_maps *maps, const bool *known);
/* unwind.c: the FDE covering pc, through the cache. */
struct fde_slot unwinder__fde(struct unwinder *u, uint64_t pc);

#endif /* XP_UNWIND_INT_H */
