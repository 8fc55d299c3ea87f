/* Native unwinding of perf samples with libdwfl, and names for native code. One Dwfl per target,
 * reported once from its maps (every executable file mapping, and the vDSO); libdwfl's thread
 * callbacks read the sample being unwound through u->cur, so nothing is rebuilt per sample.
 * A fast path walks the frames itself when every frame's CFI is the plain kind compilers emit
 * (CFA = rsp or rbp + offset, registers saved at CFA + offset), from rules cached per pc; any
 * other frame sends the whole sample to libdwfl, so both give the same answer.
 * Stops at the first return address the caller calls JIT code (it has no CFI: otp-internals.md
 * §2). Does not own: reading samples (perf.c), what is JIT code (the caller), Erlang frames. */
#include "unwind.h"
#include "symindex.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FDE_SLOTS_LOG2 12 /* 4096 slots: the return addresses of a workload recur */
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
	 * copy beyond perf's): read before the live memory. Set for one unwind. */
	uint64_t extra_addr;
	const uint8_t *extra;
	size_t extra_len;
	struct unwind_result *out;
	unwind_is_jit_fn is_jit;
	void *is_jit_ctx;
	bool stopped, read_failed, prev_signal;
	bool no_fast; /* tests: libdwfl only */
	struct unwind_stats stats;
	struct fde_slot fde[FDE_SLOTS];
};

static const char *const stop_names[UNWIND_STOP_COUNT] = {
    [UNWIND_STOP_JIT] = "jit",	     [UNWIND_STOP_END] = "end",	    [UNWIND_STOP_NO_CFI] = "no_cfi",
    [UNWIND_STOP_MEMORY] = "memory", [UNWIND_STOP_DEPTH] = "depth", [UNWIND_STOP_ERROR] = "error",
};

const char *unwinder__stop_name(enum unwind_stop stop)
{
	return (unsigned)stop < UNWIND_STOP_COUNT ? stop_names[stop] : "?";
}

/* ---- function starts ---- */

/* Function starts of a module: .eh_frame_hdr's search table, sorted by initial location. Built
 * when reported; libdw 0.188 gives no FDE start (dwarf_frame_info's range came back 0..0). */
struct mod_starts {
	const uint8_t *tab; /* n pairs of int32 (initial location, FDE), relative to hdr_vaddr */
	size_t n;
	uint64_t hdr_vaddr, bias;
	struct symindex *syms; /* built on the first name asked of this module */
	bool syms_tried;
};

static int32_t rd_s32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Only the layout Linux linkers write: a 4-byte eh_frame_ptr, fde_count udata4, then entries
 * datarel sdata4. */
static void unwinder__index_starts(Dwfl_Module *mod)
{
	struct mod_starts *ms;
	const uint8_t *raw, *h;
	Dwarf_Addr bias;
	size_t rawlen, n, i, off;
	GElf_Phdr ph;
	void **ud = NULL;
	Elf *elf = dwfl_module_getelf(mod, &bias);

	/* Always present: it also carries the module's symbol index. */
	if (!(ms = calloc(1, sizeof(*ms))))
		return;
	dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	*ud = ms;
	if (!elf || elf_getphdrnum(elf, &n) || !(raw = (const uint8_t *)elf_rawfile(elf, &rawlen)))
		return;
	for (i = 0; i < n; i++) {
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			break;
	}
	if (i == n || ph.p_offset > rawlen || ph.p_filesz > rawlen - ph.p_offset)
		return;
	h = raw + ph.p_offset;
	off = 8; /* version, 3 encodings, eh_frame_ptr */
	if (ph.p_filesz < off + 4 || h[0] != 1 ||
	    ((h[1] & 0x0f) != 0x03 && (h[1] & 0x0f) != 0x0b) || h[2] != 0x03 || h[3] != 0x3b)
		return;
	n = (uint32_t)rd_s32(h + off);
	if (n > (ph.p_filesz - off - 4) / 8)
		return;
	*ms =
	    (struct mod_starts){.tab = h + off + 4, .n = n, .hdr_vaddr = ph.p_vaddr, .bias = bias};
}

/* Runtime start of the function whose FDE covers pc, or 0 when unknown. */
static uint64_t unwinder__func_start(Dwfl_Module *mod, uint64_t pc)
{
	void **ud = NULL;
	const struct mod_starts *ms;
	size_t lo = 0, hi, mid;
	uint64_t vaddr;

	dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	if (!ud || !(ms = *ud) || !ms->n)
		return 0;
	vaddr = pc - ms->bias;
	for (hi = ms->n; lo < hi;) {
		mid = lo + (hi - lo) / 2;
		if (ms->hdr_vaddr + (uint64_t)(int64_t)rd_s32(ms->tab + mid * 8) <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? ms->hdr_vaddr + (uint64_t)(int64_t)rd_s32(ms->tab + (lo - 1) * 8) + ms->bias
		  : 0;
}

static int unwinder__free_starts(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr start,
				 void *arg)
{
	struct mod_starts *ms = *ud;

	if (ms)
		symindex__free(ms->syms);
	free(*ud);
	*ud = NULL;
	return DWARF_CB_OK;
}

/* ---- modules ---- */

/* Every module is reported with its file already open (resolved through proc__resolve_path in
 * unwinder__new), so libdwfl never has to look for one. */
static int unwinder__find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
			      Dwarf_Addr base, char **file_name, Elf **elfp)
{
	*elfp = NULL;
	return -1;
}

/* Installed debug files are found by build-id (then .gnu_debuglink) under /usr/lib/debug, the
 * host's and the target root's. Never debuginfod: a profiler must not go to the network because
 * DEBUGINFOD_URLS happens to be set, and with it set only the build-id search is safe. */
static int unwinder__find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
				    Dwarf_Addr base, const char *file_name,
				    const char *debuglink_file, GElf_Word debuglink_crc,
				    char **debuginfo_file_name)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	if (urls && *urls)
		return dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name,
						    debuglink_file, debuglink_crc,
						    debuginfo_file_name);
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
					    debuglink_crc, debuginfo_file_name);
}

/* Load bias of the ELF open on fd as mapped by the executable mappings with m's path and inode:
 * a mapping's file offset names the PF_X segment it maps (as elf_image__bias does). */
static int unwinder__bias(int fd, const struct proc_maps *maps, const struct proc_map *m,
			  uint64_t *bias)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t i, j, n;
	int err = -ENOEXEC;

	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 || elf_getphdrnum(elf, &n))
		goto cleanup;
	for (i = 0; i < maps->n && err; i++) {
		const struct proc_map *o = &maps->v[i];

		if (!(o->perms & PROC_PERM_X) || o->inode != m->inode || strcmp(o->path, m->path))
			continue;
		for (j = 0; j < n && err; j++) {
			if (!gelf_getphdr(elf, (int)j, &ph) || ph.p_type != PT_LOAD ||
			    !(ph.p_flags & PF_X) || (ph.p_offset & PAGE_MASK_4K) != o->offset)
				continue;
			*bias = o->start - (ph.p_vaddr & PAGE_MASK_4K);
			err = 0;
		}
	}
cleanup:
	elf_end(elf);
	return err;
}

static int unwinder__report_file(struct unwinder *u, const struct proc_maps *maps,
				 const struct proc_map *m)
{
	const char *base = strrchr(m->path, '/');
	char path[PATH_MAX];
	Dwfl_Module *mod;
	uint64_t bias = 0;
	int fd, err;

	if ((err = proc__resolve_path(u->pid, m->path, m->inode, path, sizeof(path))))
		return err;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = unwinder__bias(fd, maps, m, &bias);
	close(fd);
	if (err)
		return err;
	/* add_p_vaddr: base is the bias (libdwfl ignores it for ET_EXEC, whose bias is 0). */
	mod = dwfl_report_elf(u->dwfl, base ? base + 1 : m->path, path, -1, bias, true);
	if (!mod)
		return -ENOEXEC;
	unwinder__index_starts(mod);
	return 0;
}

/* The vDSO has no file: copy its image out of the target into a memfd the module then owns. */
static int unwinder__report_vdso(struct unwinder *u, const struct proc_maps *maps,
				 const struct proc_map *m)
{
	size_t len = m->end - m->start;
	Dwfl_Module *mod;
	uint64_t bias = 0;
	void *buf = NULL;
	int fd = -1, err;

	if (!u->mem || m->end <= m->start || len > VDSO_MAX)
		return -EINVAL;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	if ((err = mem__read(u->mem, m->start, buf, len)))
		goto cleanup;
	fd = memfd_create("xp-vdso", MFD_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (write(fd, buf, len) != (ssize_t)len) {
		err = -EIO;
		goto cleanup;
	}
	if ((err = unwinder__bias(fd, maps, m, &bias)))
		goto cleanup;
	mod = dwfl_report_elf(u->dwfl, "[vdso]", "[vdso]", fd, bias, true);
	if (mod) {
		fd = -1; /* closed with the module */
		unwinder__index_starts(mod);
	} else {
		err = -ENOEXEC;
	}
cleanup:
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}

/* Was the file of mapping i already seen in an earlier executable mapping? */
static bool unwinder__seen(const struct proc_maps *maps, size_t i)
{
	for (size_t j = 0; j < i; j++) {
		const struct proc_map *a = &maps->v[j], *b = &maps->v[i];

		if ((a->perms & PROC_PERM_X) && a->inode == b->inode && !strcmp(a->path, b->path))
			return true;
	}
	return false;
}

/* Report the executable mappings of maps, but those whose known[i] is set. */
static void unwinder__report_maps(struct unwinder *u, const struct proc_maps *maps,
				  const bool *known)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		int err;

		if (!(m->perms & PROC_PERM_X) || (known && known[i]) || unwinder__seen(maps, i))
			continue;
		if (!strcmp(m->path, "[vdso]"))
			err = unwinder__report_vdso(u, maps, m);
		else if (m->path[0] != '/' || m->deleted || !strncmp(m->path, "/memfd:", 7))
			continue; /* anonymous, [vsyscall], JIT code (memfd:vmem), replaced */
		else
			err = unwinder__report_file(u, maps, m);
		if (err)
			u->stats.modules_failed++;
		else
			u->stats.modules++;
	}
}

/* ---- the FDE covering a pc, cached ---- */

static struct reg_rule unwinder__reg_rule(Dwarf_Frame *frame, int regno)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;

	if (dwarf_frame_register(frame, regno, mem, &ops, &nops) != 0)
		return (struct reg_rule){HOW_OTHER, 0};
	if (nops == 0)
		return (struct reg_rule){ops ? HOW_UNDEFINED : HOW_SAME, 0};
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return (struct reg_rule){HOW_OTHER, 0};
	if (nops == 1)
		return (struct reg_rule){HOW_AT_CFA, 0};
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst &&
	    (int64_t)ops[1].number == (int32_t)ops[1].number)
		return (struct reg_rule){HOW_AT_CFA, (int32_t)ops[1].number};
	return (struct reg_rule){HOW_OTHER, 0};
}

/* The row in the plain form: CFA = rsp or rbp + offset, the return address (column 16) saved. */
static void unwinder__fast_rules(Dwarf_Frame *frame, struct fde_slot *s)
{
	Dwarf_Op *ops = NULL;
	size_t nops = 0;

	if (dwarf_frame_info(frame, NULL, NULL, NULL) != DW_NREGS - 1 ||
	    dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops != 1 || ops[0].atom != DW_OP_bregx ||
	    (ops[0].number != DW_RSP && ops[0].number != DW_RBP) ||
	    (int64_t)ops[0].number2 != (int32_t)ops[0].number2)
		return;
	s->cfa_reg = (uint8_t)ops[0].number;
	s->cfa_offset = (int32_t)ops[0].number2;
	s->ra = unwinder__reg_rule(frame, DW_NREGS - 1);
	s->bp = unwinder__reg_rule(frame, DW_RBP);
	s->r13 = unwinder__reg_rule(frame, DW_R13);
	s->fast = (s->ra.how == HOW_AT_CFA || s->ra.how == HOW_UNDEFINED) &&
		  s->bp.how != HOW_OTHER && s->r13.how != HOW_OTHER;
}

static bool unwinder__fde_in(Dwarf_CFI *cfi, Dwarf_Addr bias, uint64_t pc, struct fde_slot *s)
{
	Dwarf_Frame *frame = NULL;
	bool signalp = false;

	if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &frame) != 0)
		return false;
	if (dwarf_frame_info(frame, NULL, NULL, &signalp) >= 0)
		s->state = signalp ? FDE_SIGNAL : FDE_FOUND;
	if (s->state == FDE_FOUND)
		unwinder__fast_rules(frame, s);
	free(frame);
	return s->state != FDE_NONE;
}

static struct fde_slot unwinder__fde(struct unwinder *u, uint64_t pc)
{
	struct fde_slot *s = &u->fde[(pc * 0x9e3779b97f4a7c15ull) >> (64 - FDE_SLOTS_LOG2)];
	Dwfl_Module *mod;
	Dwarf_Addr bias = 0;
	Dwarf_CFI *cfi;

	u->stats.fde_lookups++;
	if (s->state != FDE_EMPTY && s->pc == pc) {
		u->stats.fde_hits++;
		return *s;
	}
	*s = (struct fde_slot){.pc = pc, .state = FDE_NONE};
	mod = dwfl_addrmodule(u->dwfl, pc);
	if (!mod)
		return *s;
	/* Like libdwfl: .eh_frame first, then .debug_frame (which may load debuginfo). */
	cfi = dwfl_module_eh_cfi(mod, &bias);
	if (!unwinder__fde_in(cfi, bias, pc, s)) {
		cfi = dwfl_module_dwarf_cfi(mod, &bias);
		unwinder__fde_in(cfi, bias, pc, s);
	}
	if (s->state != FDE_NONE)
		s->start = unwinder__func_start(mod, pc);
	return *s;
}

/* ---- libdwfl thread callbacks: one thread, the current sample ---- */

static pid_t unwinder__next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct unwinder *u = arg;

	if (*thread_argp || !u->cur)
		return 0;
	*thread_argp = u;
	return (pid_t)u->cur->tid;
}

static bool unwinder__get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct unwinder *u = arg;

	*thread_argp = u;
	return u->cur && (pid_t)u->cur->tid == tid;
}

/* Stack words from the sample's copy when it holds them, else from the live target (outer
 * frames rarely change while a sample is unwound). */
static bool unwinder__read(struct unwinder *u, Dwarf_Addr addr, Dwarf_Word *result)
{
	const struct perf_sample *s = u->cur;
	uint64_t sp = s->regs[PERF_R_SP], v;

	if (s->stack && addr >= sp && addr - sp < s->stack_size &&
	    s->stack_size - (addr - sp) >= 8) {
		memcpy(result, s->stack + (addr - sp), sizeof(*result));
		u->stats.read_stack++;
		return true;
	}
	if (u->extra && addr >= u->extra_addr && addr - u->extra_addr < u->extra_len &&
	    u->extra_len - (addr - u->extra_addr) >= 8) {
		memcpy(result, u->extra + (addr - u->extra_addr), sizeof(*result));
		u->stats.read_stack++;
		return true;
	}
	if (u->mem && mem__read_u64(u->mem, addr, &v) == 0) {
		*result = v;
		u->stats.read_live++;
		return true;
	}
	u->stats.read_failed++;
	u->read_failed = true;
	return false;
}

static bool unwinder__memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	return unwinder__read(arg, addr, result);
}

static bool unwinder__set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct unwinder *u = arg;
	const uint64_t *r = u->cur->regs;
	const Dwarf_Word dw[DW_NREGS] = {
	    r[PERF_R_AX],  r[PERF_R_DX],  r[PERF_R_CX],	 r[PERF_R_BX],	r[PERF_R_SI],
	    r[PERF_R_DI],  r[PERF_R_BP],  r[PERF_R_SP],	 r[PERF_R_R8],	r[PERF_R_R9],
	    r[PERF_R_R10], r[PERF_R_R11], r[PERF_R_R12], r[PERF_R_R13], r[PERF_R_R14],
	    r[PERF_R_R15], r[PERF_R_IP],
	};

	if (!dwfl_thread_state_registers(thread, 0, DW_NREGS, dw))
		return false;
	dwfl_thread_state_register_pc(thread, r[PERF_R_IP]);
	return true;
}

static const Dwfl_Thread_Callbacks unwinder_thread_callbacks = {
    .next_thread = unwinder__next_thread,
    .get_thread = unwinder__get_thread,
    .memory_read = unwinder__memory_read,
    .set_initial_registers = unwinder__set_initial_registers,
};

/* ---- unwinding ---- */

static int unwinder__stop(struct unwinder *u, enum unwind_stop why)
{
	u->out->stop = why;
	u->stopped = true;
	return DWARF_CB_ABORT;
}

/* The registers CFI recovered for the JIT frame: rsp is the CFA of the frame below it. */
static void unwinder__jit_frame(Dwfl_Frame *state, struct unwind_result *r, uint64_t pc)
{
	Dwarf_Word v;

	r->jit_pc = pc;
	if (dwfl_frame_reg(state, DW_RSP, &v) == 0)
		r->jit_sp = v;
	if (dwfl_frame_reg(state, DW_RBP, &v) == 0) {
		r->jit_bp = v;
		r->jit_bp_valid = true;
	}
	if (dwfl_frame_reg(state, DW_R13, &v) == 0) {
		r->jit_r13 = v;
		r->jit_r13_valid = true;
	}
}

/* Activation is computed here, not asked of dwfl_frame_pc: asking makes libdwfl unwind the
 * frame first, which for a JIT pc means a frame-pointer guess through garbage. */
static int unwinder__on_frame(Dwfl_Frame *state, void *arg)
{
	struct unwinder *u = arg;
	struct unwind_result *r = u->out;
	bool act = r->nframes == 0 || u->prev_signal;
	struct fde_slot f;
	Dwarf_Addr pc;
	uint64_t look;

	u->read_failed = false;
	if (!dwfl_frame_pc(state, &pc, NULL))
		return unwinder__stop(u, UNWIND_STOP_ERROR);
	look = act ? pc : pc - 1;
	if (u->is_jit && u->is_jit(look, u->is_jit_ctx)) {
		unwinder__jit_frame(state, r, pc);
		return unwinder__stop(u, UNWIND_STOP_JIT);
	}
	r->frames[r->nframes++] = (struct unwind_frame){.pc = pc, .activation = act};
	/* Checked before libdwfl unwinds it: without CFI it would guess with frame pointers. */
	f = unwinder__fde(u, look);
	if (f.state == FDE_NONE)
		return unwinder__stop(u, UNWIND_STOP_NO_CFI);
	if (r->nframes == UNWIND_MAX_FRAMES)
		return unwinder__stop(u, UNWIND_STOP_DEPTH);
	u->prev_signal = f.state == FDE_SIGNAL;
	return DWARF_CB_OK;
}

void unwinder__set_extra(struct unwinder *u, uint64_t addr, const uint8_t *data, size_t len)
{
	if (!u) /* a replay has no unwinder */
		return;
	u->extra_addr = addr;
	u->extra = len ? data : NULL;
	u->extra_len = len;
}

static void unwinder__walk(struct unwinder *u, const struct perf_sample *s,
			   struct unwind_result *out)
{
	int rc;

	u->cur = s;
	u->out = out;
	u->stopped = u->read_failed = u->prev_signal = false;
	rc = dwfl_getthread_frames(u->dwfl, (pid_t)s->tid, unwinder__on_frame, u);
	/* A return address that could not be read also ends libdwfl's walk with rc 0. */
	if (!u->stopped)
		out->stop = u->read_failed ? UNWIND_STOP_MEMORY
			    : rc == 0	   ? UNWIND_STOP_END
					   : UNWIND_STOP_ERROR;
	u->cur = NULL;
	u->out = NULL;
}

/* A register of the caller's frame by its rule: false when it cannot be had. */
static bool unwinder__fast_reg(struct unwinder *u, const struct reg_rule *r, uint64_t cfa,
			       uint64_t *v, bool *valid)
{
	switch (r->how) {
	case HOW_SAME:
		return true;
	case HOW_UNDEFINED:
		*valid = false;
		return true;
	case HOW_AT_CFA:
		*valid = unwinder__read(u, cfa + (uint64_t)(int64_t)r->offset, v);
		return *valid;
	default:
		return false;
	}
}

/* The libdwfl walk's result for plain frames, without libdwfl: true when done, false when a
 * frame needs libdwfl (a signal frame, an expression, a register it cannot read). */
static bool unwinder__fast(struct unwinder *u, const struct perf_sample *s,
			   struct unwind_result *out)
{
	uint64_t pc = s->regs[PERF_R_IP], sp = s->regs[PERF_R_SP], bp = s->regs[PERF_R_BP];
	uint64_t r13 = s->regs[PERF_R_R13];
	bool act = true, bp_ok = true, r13_ok = true;

	for (;;) {
		uint64_t look = act ? pc : pc - 1, cfa, ra = 0;
		struct fde_slot f;
		bool ra_ok = true;

		if (u->is_jit && u->is_jit(look, u->is_jit_ctx)) {
			out->stop = UNWIND_STOP_JIT;
			out->jit_pc = pc;
			out->jit_sp = sp;
			out->jit_bp = bp_ok ? bp : 0;
			out->jit_r13 = r13_ok ? r13 : 0;
			out->jit_bp_valid = bp_ok;
			out->jit_r13_valid = r13_ok;
			return true;
		}
		out->frames[out->nframes++] = (struct unwind_frame){.pc = pc, .activation = act};
		f = unwinder__fde(u, look);
		if (f.state == FDE_NONE) {
			out->stop = UNWIND_STOP_NO_CFI;
			return true;
		}
		if (out->nframes == UNWIND_MAX_FRAMES) {
			out->stop = UNWIND_STOP_DEPTH;
			return true;
		}
		if (f.state != FDE_FOUND || !f.fast || (f.cfa_reg == DW_RBP && !bp_ok))
			return false;
		cfa = (f.cfa_reg == DW_RSP ? sp : bp) + (uint64_t)(int64_t)f.cfa_offset;
		if (f.ra.how == HOW_UNDEFINED) {
			out->stop = UNWIND_STOP_END;
			return true;
		}
		if (!unwinder__fast_reg(u, &f.ra, cfa, &ra, &ra_ok) ||
		    !unwinder__fast_reg(u, &f.bp, cfa, &bp, &bp_ok) ||
		    !unwinder__fast_reg(u, &f.r13, cfa, &r13, &r13_ok))
			return false;
		if (ra == 0) { /* libdwfl: a zero return address ends the stack */
			out->stop = UNWIND_STOP_END;
			return true;
		}
		sp = cfa;
		pc = ra;
		act = false;
	}
}

void unwinder__set_fast(struct unwinder *u, bool on)
{
	u->no_fast = !on;
}

void unwinder__unwind(struct unwinder *u, const struct perf_sample *s, unwind_is_jit_fn is_jit,
		      void *ctx, struct unwind_result *out)
{
	out->nframes = 0;
	out->stop = UNWIND_STOP_ERROR;
	out->jit_pc = out->jit_sp = out->jit_bp = out->jit_r13 = 0;
	out->jit_bp_valid = out->jit_r13_valid = false;
	u->stats.unwinds++;
	u->is_jit = is_jit;
	u->is_jit_ctx = ctx;
	if (!s || !s->regs_valid || s->tid == 0) {
		/* nothing to unwind from */
	} else if (is_jit && is_jit(s->regs[PERF_R_IP], ctx)) {
		out->stop = UNWIND_STOP_JIT;
		out->jit_pc = s->regs[PERF_R_IP];
		out->jit_sp = s->regs[PERF_R_SP];
		out->jit_bp = s->regs[PERF_R_BP];
		out->jit_r13 = s->regs[PERF_R_R13];
		out->jit_bp_valid = out->jit_r13_valid = true;
	} else {
		bool done = false;

		if (!u->no_fast) {
			u->cur = s;
			done = unwinder__fast(u, s, out);
			u->cur = NULL;
			u->stats.fast += done;
		}
		if (!done) { /* it declines before any JIT frame: only its frames to drop */
			out->nframes = 0;
			unwinder__walk(u, s, out);
		}
	}
	u->stats.stops[out->stop]++;
	u->stats.frames += out->nframes;
}

/* ---- names ---- */

/* A symbol names look when it covers it; a sizeless one (an assembly label) only when no
 * function known from CFI starts between it and look. */
static bool unwinder__sym_covers(const GElf_Sym *sym, GElf_Off off, const struct fde_slot *f,
				 uint64_t look)
{
	if (sym->st_size)
		return off < sym->st_size;
	return !f->start || f->start <= look - off;
}

/* The symbol at or below look, through the module's index (built once); libdw's own lookup
 * when the module has none. */
static const char *unwinder__symbol(Dwfl_Module *mod, uint64_t look, GElf_Off *off, GElf_Sym *sym)
{
	struct mod_starts *ms = NULL;
	struct symindex_hit hit;
	void **ud = NULL;

	dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	if (ud)
		ms = *ud;
	if (!ms)
		return dwfl_module_addrinfo(mod, look, off, sym, NULL, NULL, NULL);
	if (!ms->syms_tried) {
		ms->syms_tried = true;
		symindex__build(mod, &ms->syms);
	}
	memset(sym, 0, sizeof(*sym));
	if (symindex__lookup(ms->syms, look, &hit))
		return NULL;
	*off = look - hit.start;
	sym->st_size = hit.size;
	sym->st_value = hit.start;
	return hit.name;
}

static int unwinder__name_at(struct unwinder *u, uint64_t look, uint64_t pc, bool with_offset,
			     char *buf, size_t len)
{
	Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, look);
	const char *mname, *sname;
	Dwarf_Addr bias = 0;
	struct fde_slot f;
	GElf_Off off = 0;
	GElf_Sym sym;

	if (!mod) {
		snprintf(buf, len, "0x%" PRIx64, pc);
		return -ENOENT;
	}
	mname = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	sname = unwinder__symbol(mod, look, &off, &sym);
	f = unwinder__fde(u, look);
	if (sname && *sname && unwinder__sym_covers(&sym, off, &f, look)) {
		/* .dynsym names come versioned ("__libc_start_main@@GLIBC_2.34"): drop it. */
		int n = (int)strcspn(sname, "@");

		if (with_offset)
			snprintf(buf, len, "%.*s+0x%" PRIx64, n, sname, pc - (look - off));
		else
			snprintf(buf, len, "%.*s", n, sname);
		return 0;
	}
	dwfl_module_getelf(mod, &bias);
	if (!f.start)
		snprintf(buf, len, "%s+0x%" PRIx64, mname, pc - bias);
	else if (with_offset)
		snprintf(buf, len, "%s!0x%" PRIx64 "+0x%" PRIx64, mname, f.start - bias,
			 pc - f.start);
	else
		snprintf(buf, len, "%s!0x%" PRIx64, mname, f.start - bias);
	return 0;
}

int unwinder__name(struct unwinder *u, uint64_t pc, bool with_offset, char *buf, size_t len)
{
	return unwinder__name_at(u, pc, pc, with_offset, buf, len);
}

int unwinder__name_frame(struct unwinder *u, const struct unwind_frame *f, bool with_offset,
			 char *buf, size_t len)
{
	return unwinder__name_at(u, f->activation ? f->pc : f->pc - 1, f->pc, with_offset, buf,
				 len);
}

const char *unwinder__module(struct unwinder *u, uint64_t pc)
{
	Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, pc);

	return mod ? dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL) : NULL;
}

const struct unwind_stats *unwinder__stats(const struct unwinder *u)
{
	return &u->stats;
}

/* ---- lifetime ---- */

int unwinder__new(struct unwinder **out, pid_t pid, const struct proc_maps *maps, struct mem *mem)
{
	struct unwinder *u;
	int err = -ENOMEM;

	if (!out || pid <= 0 || !maps)
		return -EINVAL;
	elf_version(EV_CURRENT);
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->pid = pid;
	u->mem = mem;
	/* "-": no CRC check of debuglink files; the target's root for containers and chroots. */
	if (asprintf(&u->debuginfo_path, "-:.debug:/usr/lib/debug:/proc/%d/root/usr/lib/debug",
		     (int)pid) < 0) {
		u->debuginfo_path = NULL;
		goto cleanup;
	}
	u->cb = (Dwfl_Callbacks){.find_elf = unwinder__find_elf,
				 .find_debuginfo = unwinder__find_debuginfo,
				 .section_address = dwfl_offline_section_address,
				 .debuginfo_path = &u->debuginfo_path};
	u->dwfl = dwfl_begin(&u->cb);
	if (!u->dwfl)
		goto cleanup;
	dwfl_report_begin(u->dwfl);
	unwinder__report_maps(u, maps, NULL);
	err = -ENOEXEC;
	if (dwfl_report_end(u->dwfl, NULL, NULL) != 0 || u->stats.modules == 0)
		goto cleanup;
	if (!dwfl_attach_state(u->dwfl, NULL, pid, &unwinder_thread_callbacks, u))
		goto cleanup;
	*out = u;
	return 0;
cleanup:
	unwinder__free(u);
	return err;
}

int unwinder__refresh(struct unwinder *u, const struct proc_maps *maps)
{
	uint32_t before = u->stats.modules;
	bool *known = calloc(maps->n ? maps->n : 1, sizeof(*known));

	if (!known)
		return -ENOMEM;
	/* Asked before reporting starts: libdwfl rebuilds its address lookup as modules come. */
	for (size_t i = 0; i < maps->n; i++)
		known[i] = dwfl_addrmodule(u->dwfl, maps->v[i].start) != NULL;
	dwfl_report_begin_add(u->dwfl);
	unwinder__report_maps(u, maps, known);
	dwfl_report_end(u->dwfl, NULL, NULL);
	free(known);
	memset(u->fde, 0, sizeof(u->fde)); /* "no module here" may have become wrong */
	return (int)(u->stats.modules - before);
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	if (u->dwfl) {
		dwfl_getmodules(u->dwfl, unwinder__free_starts, NULL, 0);
		dwfl_end(u->dwfl);
	}
	free(u->debuginfo_path);
	free(u);
}
