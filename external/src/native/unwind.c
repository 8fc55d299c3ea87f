/* Native unwinding of perf samples with libdwfl, and names for native code. One Dwfl per target,
 * reported once from its maps (every executable file mapping, and the vDSO); libdwfl's thread
 * callbacks read the sample being unwound through u->cur, so nothing is rebuilt per sample.
 * A fast path walks the frames itself when every frame's CFI is the plain kind compilers emit
 * (CFA = rsp or rbp + offset, registers saved at CFA + offset), from rules cached per pc; any
 * other frame sends the whole sample to libdwfl, so both give the same answer.
 * Stops at the first return address the caller calls JIT code (it has no CFI: otp-internals.md
 * §2). This file: the FDE cache, the walks, the unwinder's lifetime; unwind_modules.c: the
 * modules reported to libdwfl, function starts and native names. Does not own: reading samples
 * (perf.c), what is JIT code (the caller), Erlang frames. */
#include "unwind.h"
#include "unwind_int.h"

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

static const char *const stop_names[UNWIND_STOP_COUNT] = {
    [UNWIND_STOP_JIT] = "jit",	     [UNWIND_STOP_END] = "end",	    [UNWIND_STOP_NO_CFI] = "no_cfi",
    [UNWIND_STOP_MEMORY] = "memory", [UNWIND_STOP_DEPTH] = "depth", [UNWIND_STOP_ERROR] = "error",
};

const char *unwinder__stop_name(enum unwind_stop stop)
{
	return (unsigned)stop < UNWIND_STOP_COUNT ? stop_names[stop] : "?";
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

struct fde_slot unwinder__fde(struct unwinder *u, uint64_t pc)
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
	for (unsigned i = 0; i < UNWIND_EXTRAS; i++) {
		const uint64_t at = u->extra[i].addr, n = u->extra[i].len;

		if (u->extra[i].data && addr >= at && addr - at < n && n - (addr - at) >= 8) {
			memcpy(result, u->extra[i].data + (addr - at), sizeof(*result));
			u->stats.read_stack++;
			return true;
		}
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

void unwinder__set_extra(struct unwinder *u, unsigned slot, uint64_t addr, const uint8_t *data,
			 size_t len)
{
	if (!u || slot >= UNWIND_EXTRAS) /* a replay has no unwinder */
		return;
	u->extra[slot].addr = addr;
	u->extra[slot].data = len ? data : NULL;
	u->extra[slot].len = len;
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
