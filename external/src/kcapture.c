/* In-kernel capture at the sample. See kcapture.h. The program is assembled here from a few dozen
 * instructions (no compiler, no libbpf): read the sampled registers, find the current Process (the
 * scheduler's current_process when the sampler told us where it lives, else r13), copy its bounds
 * span and the top of its stack, and append the lot to a BPF ring buffer. The sampler drains the
 * ring before the perf rings and pairs each capture with its sample by thread, ip, sp and time. */
#include "kcapture.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The program's jump labels. */
enum {
	L_OUT = 0,
	L_HAVE_CP,
	L_EMIT,
	L_LEN_OK,
	L_NATIVE,
	L_FWD_LEN_OK,
	L_TRY_LAST,
	L_IN_GC,
	L_TRY_LAST_GC,
	L_COPIED,
	L_COUNT
};

/* The capture's layout, as the program writes it (byte offsets). */
enum {
	H_PIDTGID = 0,
	H_TIME = 8,
	H_IP = 16,
	H_SP = 24,
	H_CP = 32,
	H_FLAGS = 40,
	H_STACK_ADDR = 48,
	H_STACK_LEN = 56,
	H_SPAN = 64,
	H_STACK = H_SPAN + KCAP_SPAN_MAX,
	H_MAX = H_STACK + KCAP_STACK_MAX,
};

#define F_FROM_SCHEDULER 1u
#define F_SPAN_OK	 2u

/* The capture ring holds what a sampler that wakes every RUN_POLL_MS (50 ms), or a little later,
 * may find: KCAP_RING_SECONDS of full-size captures on every CPU. */
#define KCAP_RING_MIN	  (4u << 20)
#define KCAP_RING_MAX	  (64u << 20)
#define KCAP_RING_SECONDS 0.125
#define KCAP_PENDING	  256 /* captures kept until their sample is read */
/* The ring is sized for captures of this size: most stacks are far smaller; a capture of a deep
 * stack that finds the ring full is lost (its sample is then read without one, and says so). */
#define KCAP_RING_TYPICAL (32u << 10)
#define KCAP_SLOT_BYTES	  (H_STACK + 8192u) /* a pending slot grows to a capture's size */
#define KCAP_MAX_INSNS	  192
#define KCAP_MAX_LABELS	  L_COUNT
#define KCAP_MATCH_NS	  1000000ull /* perf stamps its sample a microsecond or two before */
#define KCAP_WATCH_MAX	  4096	     /* scheduler threads the program looks up */
#define KCAP_LOG_BYTES	  (64u << 10)

/* The sampled registers, as the program sees them (struct bpf_perf_event_data). */
#define PT(field)                                                                                  \
	((int16_t)(offsetof(struct bpf_perf_event_data, regs) +                                    \
		   offsetof(bpf_user_pt_regs_t, field)))

struct slot {
	struct kcap_rec rec;
	uint8_t *buf; /* cap bytes: KCAP_SLOT_BYTES, grown up to H_MAX */
	uint32_t cap;
	bool used;
};

struct kcapture {
	struct kcap_cfg cfg;
	int scratch_fd, watch_fd, ring_fd, prog_fd;
	uint8_t *cons; /* the consumer position page (read-write) */
	uint8_t *prod; /* the producer position page, then the data mapped twice */
	size_t page_size;
	uint32_t ring_bytes; /* a power of two */
	struct slot slots[KCAP_PENDING];
	size_t next; /* the slot the next capture goes into */
	struct kcap_stats st;
};

/* ---- a tiny assembler ------------------------------------------------------------------------ */

struct prog {
	struct bpf_insn insn[KCAP_MAX_INSNS];
	int n;
	int label_at[KCAP_MAX_LABELS];	       /* insn index of each label, -1 until placed */
	int jump_from[KCAP_MAX_INSNS], njumps; /* jumps whose off holds a label number */
	bool overflow;
};

static void emit(struct prog *p, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	if (p->n >= KCAP_MAX_INSNS) {
		p->overflow = true;
		return;
	}
	p->insn[p->n++] =
	    (struct bpf_insn){.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
}

/* A conditional jump to a label placed later; op is BPF_JEQ, BPF_JNE, ... */
static void jump_imm(struct prog *p, uint8_t op, uint8_t dst, int32_t imm, int label)
{
	if (p->n < KCAP_MAX_INSNS)
		p->jump_from[p->njumps++] = p->n;
	emit(p, BPF_JMP | op | BPF_K, dst, 0, (int16_t)label, imm);
}

static void jump_reg(struct prog *p, uint8_t op, uint8_t dst, uint8_t src, int label)
{
	if (p->n < KCAP_MAX_INSNS)
		p->jump_from[p->njumps++] = p->n;
	emit(p, BPF_JMP | op | BPF_X, dst, src, (int16_t)label, 0);
}

static void label(struct prog *p, int l)
{
	p->label_at[l] = p->n;
}

static int resolve_labels(struct prog *p)
{
	for (int i = 0; i < p->njumps; i++) {
		struct bpf_insn *j = &p->insn[p->jump_from[i]];
		int at = p->label_at[j->off];

		if (at < 0)
			return -EINVAL;
		j->off = (int16_t)(at - p->jump_from[i] - 1);
	}
	return p->overflow ? -E2BIG : 0;
}

static void mov_reg(struct prog *p, uint8_t dst, uint8_t src)
{
	emit(p, BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0);
}

static void alu_imm(struct prog *p, uint8_t op, uint8_t dst, int32_t imm)
{
	emit(p, BPF_ALU64 | op | BPF_K, dst, 0, 0, imm);
}

static void ldx(struct prog *p, uint8_t dst, uint8_t src, int16_t off)
{
	emit(p, BPF_LDX | BPF_DW | BPF_MEM, dst, src, off, 0);
}

static void stx(struct prog *p, uint8_t dst, int16_t off, uint8_t src)
{
	emit(p, BPF_STX | BPF_DW | BPF_MEM, dst, src, off, 0);
}

static void st_imm(struct prog *p, uint8_t dst, int16_t off, int32_t imm)
{
	emit(p, BPF_ST | BPF_DW | BPF_MEM, dst, 0, off, imm);
}

static void ld_map(struct prog *p, uint8_t dst, int fd)
{
	emit(p, BPF_LD | BPF_DW | BPF_IMM, dst, BPF_PSEUDO_MAP_FD, 0, fd);
	emit(p, 0, 0, 0, 0, 0);
}

static void call(struct prog *p, int32_t fn)
{
	emit(p, BPF_JMP | BPF_CALL, 0, 0, 0, fn);
}

/* ---- the program ----------------------------------------------------------------------------- */

/* r6 = ctx, r7 = the capture (per-CPU scratch), r8 = cp, r9 = stack bytes. */
static void program_head(struct prog *p, const struct kcapture *k)
{
	mov_reg(p, BPF_REG_6, BPF_REG_1);
	/* A sample taken in the kernel has kernel registers here (perf excludes those anyway). */
	ldx(p, BPF_REG_1, BPF_REG_6, PT(cs));
	alu_imm(p, BPF_AND, BPF_REG_1, 3);
	jump_imm(p, BPF_JNE, BPF_REG_1, 3, L_OUT);
	/* The scratch buffer is this CPU's slot of an array (a per-CPU map's values are limited to
	 * 32 KiB): a perf event's program runs with interrupts off, alone on its CPU. */
	call(p, BPF_FUNC_get_smp_processor_id);
	emit(p, BPF_STX | BPF_W | BPF_MEM, BPF_REG_10, BPF_REG_0, -4, 0);
	mov_reg(p, BPF_REG_2, BPF_REG_10);
	alu_imm(p, BPF_ADD, BPF_REG_2, -4);
	ld_map(p, BPF_REG_1, k->scratch_fd);
	call(p, BPF_FUNC_map_lookup_elem);
	jump_imm(p, BPF_JEQ, BPF_REG_0, 0, L_OUT);
	mov_reg(p, BPF_REG_7, BPF_REG_0);
	call(p, BPF_FUNC_get_current_pid_tgid);
	stx(p, BPF_REG_7, H_PIDTGID, BPF_REG_0);
	emit(p, BPF_STX | BPF_W | BPF_MEM, BPF_REG_10, BPF_REG_0, -8, 0); /* the tid, a map key */
	call(p, BPF_FUNC_ktime_get_ns); /* perf's clock with use_clockid CLOCK_MONOTONIC */
	stx(p, BPF_REG_7, H_TIME, BPF_REG_0);
	ldx(p, BPF_REG_1, BPF_REG_6, PT(rip));
	stx(p, BPF_REG_7, H_IP, BPF_REG_1);
	ldx(p, BPF_REG_1, BPF_REG_6, PT(rsp));
	stx(p, BPF_REG_7, H_SP, BPF_REG_1);
	ldx(p, BPF_REG_8, BPF_REG_6, PT(r13));
	st_imm(p, BPF_REG_7, H_FLAGS, 0);
	st_imm(p, BPF_REG_7, H_STACK_ADDR, 0);
	st_imm(p, BPF_REG_7, H_STACK_LEN, 0);
	/* The scheduler's current_process, when we know where this thread keeps it. */
	mov_reg(p, BPF_REG_2, BPF_REG_10);
	alu_imm(p, BPF_ADD, BPF_REG_2, -8);
	ld_map(p, BPF_REG_1, k->watch_fd);
	call(p, BPF_FUNC_map_lookup_elem);
	jump_imm(p, BPF_JEQ, BPF_REG_0, 0, L_HAVE_CP);
	ldx(p, BPF_REG_3, BPF_REG_0, 0);
	mov_reg(p, BPF_REG_1, BPF_REG_10);
	alu_imm(p, BPF_ADD, BPF_REG_1, -16);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_2, 0, 0, 8);
	call(p, BPF_FUNC_probe_read_user);
	jump_imm(p, BPF_JNE, BPF_REG_0, 0, L_HAVE_CP);
	ldx(p, BPF_REG_8, BPF_REG_10, -16);
	st_imm(p, BPF_REG_7, H_FLAGS, F_FROM_SCHEDULER);
}

/* Copy r9 bytes from r3 on to the capture; on success go to L_COPIED. */
static void copy_at_r3(struct prog *p)
{
	jump_imm(p, BPF_JGT, BPF_REG_9, KCAP_STACK_MAX, L_EMIT); /* for the verifier */
	stx(p, BPF_REG_7, H_STACK_ADDR, BPF_REG_3);
	mov_reg(p, BPF_REG_1, BPF_REG_7);
	alu_imm(p, BPF_ADD, BPF_REG_1, H_STACK);
	mov_reg(p, BPF_REG_2, BPF_REG_9);
	call(p, BPF_FUNC_probe_read_user);
	jump_imm(p, BPF_JEQ, BPF_REG_0, 0, L_COPIED);
}

/* Copy r9 bytes to the capture, the ones below hend (up) or from stop on (!up); on success go to
 * L_COPIED. */
static void try_copy(struct prog *p, const struct kcap_cfg *c, bool up)
{
	if (up) {
		ldx(p, BPF_REG_3, BPF_REG_7, (int16_t)(H_SPAN + c->hend_off - c->span_lo));
		emit(p, BPF_ALU64 | BPF_SUB | BPF_X, BPF_REG_3, BPF_REG_9, 0, 0);
	} else {
		ldx(p, BPF_REG_3, BPF_REG_7, (int16_t)(H_SPAN + c->stop_off - c->span_lo));
	}
	copy_at_r3(p);
}

/* r2 = the bytes of hend's page below hend (up) or of stop's page from stop on (!up), 1..4096,
 * plus extra. */
static void page_part(struct prog *p, const struct kcap_cfg *c, bool up, int32_t extra)
{
	if (up) {
		ldx(p, BPF_REG_2, BPF_REG_7, (int16_t)(H_SPAN + c->hend_off - c->span_lo));
		alu_imm(p, BPF_SUB, BPF_REG_2, 1);
	} else {
		ldx(p, BPF_REG_2, BPF_REG_7, (int16_t)(H_SPAN + c->stop_off - c->span_lo));
		alu_imm(p, BPF_NEG, BPF_REG_2, 0);
		alu_imm(p, BPF_SUB, BPF_REG_2, 1);
	}
	alu_imm(p, BPF_AND, BPF_REG_2, 4095);
	alu_imm(p, BPF_ADD, BPF_REG_2, 1 + extra);
}

/* Copy up to r9 bytes; pages never touched make bpf_probe_read_user fail rather than fault them
 * in: if the whole span fails, try the page at its end (up: hend's) and the next one, then that
 * page alone. */
static void copy_stack(struct prog *p, const struct kcap_cfg *c, bool up, int l_last)
{
	try_copy(p, c, up);
	page_part(p, c, up, 4096);
	jump_reg(p, BPF_JLE, BPF_REG_9, BPF_REG_2, l_last);
	mov_reg(p, BPF_REG_9, BPF_REG_2);
	try_copy(p, c, up);
	label(p, l_last);
	page_part(p, c, up, 0);
	jump_reg(p, BPF_JLE, BPF_REG_9, BPF_REG_2, L_EMIT);
	mov_reg(p, BPF_REG_9, BPF_REG_2);
	try_copy(p, c, up);
	jump_imm(p, BPF_JA, 0, 0, L_EMIT);
}

static void program_copy(struct prog *p, const struct kcapture *k)
{
	const struct kcap_cfg *c = &k->cfg;

	label(p, L_HAVE_CP);
	stx(p, BPF_REG_7, H_CP, BPF_REG_8);
	jump_imm(p, BPF_JEQ, BPF_REG_8, 0, L_EMIT);
	mov_reg(p, BPF_REG_1, BPF_REG_7);
	alu_imm(p, BPF_ADD, BPF_REG_1, H_SPAN);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_2, 0, 0, (int32_t)c->span_len);
	mov_reg(p, BPF_REG_3, BPF_REG_8);
	alu_imm(p, BPF_ADD, BPF_REG_3, (int32_t)c->span_lo);
	call(p, BPF_FUNC_probe_read_user);
	jump_imm(p, BPF_JNE, BPF_REG_0, 0, L_EMIT);
	ldx(p, BPF_REG_1, BPF_REG_7, H_FLAGS);
	alu_imm(p, BPF_OR, BPF_REG_1, F_SPAN_OK);
	stx(p, BPF_REG_7, H_FLAGS, BPF_REG_1);
	/* In a garbage collection stop already points into the new heap while heap and hend
	 * are still the old block's: copy from stop on (the new block's end is not known yet). */
	ldx(p, BPF_REG_1, BPF_REG_7, (int16_t)(H_SPAN + c->stop_off - c->span_lo));
	ldx(p, BPF_REG_2, BPF_REG_7, (int16_t)(H_SPAN + c->heap_off - c->span_lo));
	jump_reg(p, BPF_JLE, BPF_REG_1, BPF_REG_2, L_IN_GC);
	ldx(p, BPF_REG_2, BPF_REG_7, (int16_t)(H_SPAN + c->hend_off - c->span_lo));
	jump_reg(p, BPF_JGE, BPF_REG_1, BPF_REG_2, L_IN_GC);
	/* The stack lies in [htop, hend): htop as stored may lag the live one, never pass E. In
	 * JIT code rsp is E: the stack is [rsp, hend), of which perf copies the first perf_stack
	 * bytes; the program copies on from there (nothing when perf's copy holds it all). */
	ldx(p, BPF_REG_1, BPF_REG_7, (int16_t)(H_SPAN + c->hend_off - c->span_lo));
	ldx(p, BPF_REG_2, BPF_REG_7, (int16_t)(H_SPAN + c->htop_off - c->span_lo));
	jump_reg(p, BPF_JGE, BPF_REG_2, BPF_REG_1, L_EMIT);
	ldx(p, BPF_REG_3, BPF_REG_6, PT(rsp));
	jump_reg(p, BPF_JLE, BPF_REG_3, BPF_REG_2, L_NATIVE);
	jump_reg(p, BPF_JGE, BPF_REG_3, BPF_REG_1, L_NATIVE);
	alu_imm(p, BPF_ADD, BPF_REG_3, (int32_t)c->perf_stack);
	jump_reg(p, BPF_JGE, BPF_REG_3, BPF_REG_1, L_EMIT);
	mov_reg(p, BPF_REG_9, BPF_REG_1);
	emit(p, BPF_ALU64 | BPF_SUB | BPF_X, BPF_REG_9, BPF_REG_3, 0, 0);
	jump_imm(p, BPF_JLE, BPF_REG_9, KCAP_STACK_MAX, L_FWD_LEN_OK);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_9, 0, 0, KCAP_STACK_MAX);
	label(p, L_FWD_LEN_OK);
	copy_at_r3(p);
	jump_imm(p, BPF_JA, 0, 0, L_EMIT);
	/* In native code E is not known here: copy the stack's bottom part, up to hend. */
	label(p, L_NATIVE);
	mov_reg(p, BPF_REG_9, BPF_REG_1);
	emit(p, BPF_ALU64 | BPF_SUB | BPF_X, BPF_REG_9, BPF_REG_2, 0, 0);
	jump_imm(p, BPF_JLE, BPF_REG_9, KCAP_STACK_MAX, L_LEN_OK);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_9, 0, 0, KCAP_STACK_MAX);
	label(p, L_LEN_OK);
	copy_stack(p, c, true, L_TRY_LAST);
	label(p, L_IN_GC);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_9, 0, 0, KCAP_STACK_MAX);
	copy_stack(p, c, false, L_TRY_LAST_GC);
	label(p, L_COPIED);
	stx(p, BPF_REG_7, H_STACK_LEN, BPF_REG_9);
}

static void program_tail(struct prog *p, const struct kcapture *k)
{
	label(p, L_EMIT);
	ldx(p, BPF_REG_3, BPF_REG_7, H_STACK_LEN);
	jump_imm(p, BPF_JGT, BPF_REG_3, KCAP_STACK_MAX, L_OUT);
	alu_imm(p, BPF_ADD, BPF_REG_3, H_STACK);
	ld_map(p, BPF_REG_1, k->ring_fd);
	mov_reg(p, BPF_REG_2, BPF_REG_7);
	/* No wake-up: the sampler drains the ring whenever perf wakes it. */
	emit(p, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, BPF_RB_NO_WAKEUP);
	call(p, BPF_FUNC_ringbuf_output);
	label(p, L_OUT);
	/* Non-zero: perf writes its sample as usual. */
	emit(p, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
	emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

/* ---- maps and loading ------------------------------------------------------------------------ */

static int sys_bpf(int cmd, union bpf_attr *a)
{
	long rc = syscall(SYS_bpf, cmd, a, sizeof(*a));

	return rc < 0 ? -errno : (int)rc;
}

static int map_create(uint32_t type, uint32_t key, uint32_t value, uint32_t entries)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_type = type;
	a.key_size = key;
	a.value_size = value;
	a.max_entries = entries;
	return sys_bpf(BPF_MAP_CREATE, &a);
}

/* Load p; on failure the verifier's last line goes to why (a second load with its log on). */
static int load(const struct prog *p, char *why, size_t whylen)
{
	union bpf_attr a;
	char *log = NULL, *line;
	int fd;

	for (int pass = 0; pass < 2; pass++) {
		memset(&a, 0, sizeof(a));
		a.prog_type = BPF_PROG_TYPE_PERF_EVENT;
		a.insns = (uint64_t)(uintptr_t)p->insn;
		a.insn_cnt = (uint32_t)p->n;
		a.license = (uint64_t)(uintptr_t) "GPL"; /* bpf_probe_read_user is GPL-only */
		if (pass && (log = calloc(1, KCAP_LOG_BYTES))) {
			a.log_buf = (uint64_t)(uintptr_t)log;
			a.log_size = KCAP_LOG_BYTES;
			a.log_level = 1;
		}
		fd = sys_bpf(BPF_PROG_LOAD, &a);
		if (fd >= 0 || fd == -EPERM || !log)
			break;
	}
	if (fd < 0) {
		/* The verifier's last line says why; keep the message one line. */
		while (log && (line = strrchr(log, '\n')) && line[1] == '\0')
			*line = '\0';
		line = log ? strrchr(log, '\n') : NULL;
		snprintf(why, whylen, "the kernel refused the capture program: %s%s%s",
			 strerror(-fd), log && log[0] ? ": " : "",
			 line  ? line + 1
			 : log ? log
			       : "");
	}
	free(log);
	return fd;
}

static int load_program(struct kcapture *k, char *why, size_t whylen)
{
	struct prog p = {.n = 0};
	int fd;

	for (int i = 0; i < KCAP_MAX_LABELS; i++)
		p.label_at[i] = -1;
	program_head(&p, k);
	program_copy(&p, k);
	program_tail(&p, k);
	if (resolve_labels(&p)) {
		snprintf(why, whylen, "the capture program did not assemble");
		return -EINVAL;
	}
	fd = load(&p, why, whylen);
	/* perf_opts.bpf_prog_fd takes 0 for "none" */
	if (fd == 0) {
		int moved = fcntl(0, F_DUPFD_CLOEXEC, 1);

		fd = moved < 0 ? -errno : moved;
		close(0);
	}
	return fd;
}

static uint32_t ring_bytes(const struct kcap_cfg *c)
{
	double want = (double)c->cpus * c->rate_hz * KCAP_RING_SECONDS * KCAP_RING_TYPICAL;
	uint32_t b = KCAP_RING_MIN;

	while (b < KCAP_RING_MAX && b < want)
		b <<= 1;
	return b;
}

static int map_ring(struct kcapture *k)
{
	void *m;

	m = mmap(NULL, k->page_size, PROT_READ | PROT_WRITE, MAP_SHARED, k->ring_fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	k->cons = m;
	m = mmap(NULL, k->page_size + 2 * (size_t)k->ring_bytes, PROT_READ, MAP_SHARED, k->ring_fd,
		 (off_t)k->page_size);
	if (m == MAP_FAILED)
		return -errno;
	k->prod = m;
	return 0;
}

/* The CPU numbers bpf_get_smp_processor_id() may return: 0 .. the highest possible. */
static uint32_t possible_cpus(void)
{
	char buf[256];
	unsigned lo, hi = 0;
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	long n = sysconf(_SC_NPROCESSORS_CONF);

	if (f) {
		const char *s = fgets(buf, sizeof(buf), f);
		const char *last = s ? strrchr(s, ',') : NULL;

		if (s && sscanf(last ? last + 1 : s, "%u-%u", &lo, &hi) < 2 &&
		    sscanf(last ? last + 1 : s, "%u", &hi) < 1)
			hi = 0;
		fclose(f);
	}
	if (n > 0 && (unsigned long)n > hi + 1ul)
		hi = (unsigned)n - 1;
	return hi + 1 < 8192 ? hi + 1 : 8192;
}

static bool cfg_ok(const struct kcap_cfg *c)
{
	return c->span_len && c->span_len <= KCAP_SPAN_MAX && !(c->span_len & 7) &&
	       c->perf_stack <= (1u << 16) && !(c->perf_stack & 7) && c->htop_off >= c->span_lo &&
	       c->htop_off + 8 <= c->span_lo + c->span_len && c->hend_off >= c->span_lo &&
	       c->hend_off + 8 <= c->span_lo + c->span_len && c->stop_off >= c->span_lo &&
	       c->stop_off + 8 <= c->span_lo + c->span_len && c->heap_off >= c->span_lo &&
	       c->heap_off + 8 <= c->span_lo + c->span_len && c->span_lo < (1u << 20);
}

int kcapture__open(struct kcapture **out, const struct kcap_cfg *cfg, char *why, size_t whylen)
{
	struct kcapture *k;
	long page = sysconf(_SC_PAGESIZE);
	int err;

	*out = NULL;
	if (!cfg_ok(cfg) || page <= 0) {
		snprintf(why, whylen, "the Process fields it copies are not known");
		return -EINVAL;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->cfg = *cfg;
	k->page_size = (size_t)page;
	k->ring_bytes = ring_bytes(cfg);
	k->scratch_fd = k->watch_fd = k->ring_fd = k->prog_fd = -1;
	for (size_t i = 0; i < KCAP_PENDING; i++) {
		k->slots[i].cap = KCAP_SLOT_BYTES;
		if (!(k->slots[i].buf = malloc(KCAP_SLOT_BYTES))) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	k->scratch_fd = map_create(BPF_MAP_TYPE_ARRAY, 4, H_MAX, possible_cpus());
	k->watch_fd = map_create(BPF_MAP_TYPE_HASH, 4, 8, KCAP_WATCH_MAX);
	k->ring_fd = map_create(BPF_MAP_TYPE_RINGBUF, 0, 0, k->ring_bytes);
	err = k->scratch_fd < 0 ? k->scratch_fd : k->watch_fd < 0 ? k->watch_fd : k->ring_fd;
	if (err < 0) {
		snprintf(why, whylen, "cannot create BPF maps: %s%s", strerror(-err),
			 err == -EPERM ? " (needs root or CAP_BPF and CAP_PERFMON)" : "");
		goto cleanup;
	}
	if ((err = map_ring(k))) {
		snprintf(why, whylen, "cannot map the capture ring: %s", strerror(-err));
		goto cleanup;
	}
	if ((err = k->prog_fd = load_program(k, why, whylen)) < 0)
		goto cleanup;
	*out = k;
	return 0;
cleanup:
	kcapture__free(k);
	return err;
}

int kcapture__prog_fd(const struct kcapture *k)
{
	return k ? k->prog_fd : -1;
}

int kcapture__watch(struct kcapture *k, pid_t tid, uint64_t current_process_addr)
{
	union bpf_attr a;
	uint32_t key = (uint32_t)tid;
	int rc;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)k->watch_fd;
	a.key = (uint64_t)(uintptr_t)&key;
	a.value = (uint64_t)(uintptr_t)&current_process_addr;
	a.flags = BPF_ANY;
	rc = sys_bpf(BPF_MAP_UPDATE_ELEM, &a);
	return rc < 0 ? rc : 0;
}

/* ---- the ring -------------------------------------------------------------------------------- */

static void keep(struct kcapture *k, const uint8_t *data, uint32_t len)
{
	struct slot *s = &k->slots[k->next];
	struct kcap_rec *r = &s->rec;
	uint64_t v[8], flags;

	k->st.records++;
	if (len < H_STACK || len > H_MAX) {
		k->st.malformed++;
		return;
	}
	if (s->used)
		k->st.unmatched++;
	s->used = false;
	if (len > s->cap) {
		uint8_t *b = realloc(s->buf, len);

		if (!b) {
			k->st.malformed++;
			return;
		}
		s->buf = b;
		s->cap = len;
	}
	memcpy(s->buf, data, len);
	memcpy(v, s->buf, sizeof(v));
	flags = v[H_FLAGS / 8];
	*r = (struct kcap_rec){.tid = (uint32_t)v[H_PIDTGID / 8],
			       .time = v[H_TIME / 8],
			       .ip = v[H_IP / 8],
			       .sp = v[H_SP / 8],
			       .cp = v[H_CP / 8],
			       .from_scheduler = flags & F_FROM_SCHEDULER,
			       .span = flags & F_SPAN_OK ? s->buf + H_SPAN : NULL,
			       .stack_addr = v[H_STACK_ADDR / 8],
			       .stack_len = v[H_STACK_LEN / 8]};
	/* The program bounds stack_len; the record's length bounds it again. */
	if (r->stack_len > len - H_STACK || !r->span)
		r->stack_len = 0;
	r->stack = r->stack_len ? s->buf + H_STACK : NULL;
	s->used = true;
	k->next = (k->next + 1) % KCAP_PENDING;
}

void kcapture__drain(struct kcapture *k, uint64_t upto)
{
	uint64_t cons, prod, mask = k->ring_bytes - 1, time;
	const uint8_t *data;

	if (!k)
		return;
	data = k->prod + k->page_size;
	cons = __atomic_load_n((uint64_t *)k->cons, __ATOMIC_RELAXED);
	prod = __atomic_load_n((uint64_t *)k->prod, __ATOMIC_ACQUIRE);
	while (cons < prod) {
		const uint8_t *h = data + (cons & mask);
		uint32_t len = __atomic_load_n((const uint32_t *)h, __ATOMIC_ACQUIRE);

		if (len & BPF_RINGBUF_BUSY_BIT)
			break; /* still being written: next time */
		if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
			/* Later than the sample being read: it stays in the ring until its own.
			 * The ring holds captures in commit order, which across CPUs is time
			 * order to within microseconds. */
			if (len >= H_TIME + 8) {
				memcpy(&time, h + BPF_RINGBUF_HDR_SZ + H_TIME, sizeof(time));
				if (time > upto + KCAP_MATCH_NS)
					break;
			}
			keep(k, h + BPF_RINGBUF_HDR_SZ, len);
		}
		len &= ~BPF_RINGBUF_DISCARD_BIT;
		cons += ((uint64_t)len + BPF_RINGBUF_HDR_SZ + 7) & ~7ull;
		__atomic_store_n((uint64_t *)k->cons, cons, __ATOMIC_RELEASE);
	}
}

const struct kcap_rec *kcapture__find(struct kcapture *k, uint32_t tid, uint64_t time, uint64_t ip,
				      uint64_t sp)
{
	if (!k)
		return NULL;
	for (size_t i = 0; i < KCAP_PENDING; i++) {
		struct slot *s = &k->slots[i];

		if (!s->used || s->rec.tid != tid || s->rec.ip != ip || s->rec.sp != sp ||
		    (s->rec.time > time ? s->rec.time - time : time - s->rec.time) > KCAP_MATCH_NS)
			continue;
		s->used = false;
		k->st.matched++;
		return &s->rec;
	}
	return NULL;
}

const struct kcap_stats *kcapture__stats(const struct kcapture *k)
{
	return k ? &k->st : NULL;
}

void kcapture__free(struct kcapture *k)
{
	if (!k)
		return;
	if (k->prod)
		munmap(k->prod, k->page_size + 2 * (size_t)k->ring_bytes);
	if (k->cons)
		munmap(k->cons, k->page_size);
	if (k->prog_fd >= 0)
		close(k->prog_fd);
	if (k->ring_fd >= 0)
		close(k->ring_fd);
	if (k->watch_fd >= 0)
		close(k->watch_fd);
	if (k->scratch_fd >= 0)
		close(k->scratch_fd);
	for (size_t i = 0; i < KCAP_PENDING; i++)
		free(k->slots[i].buf);
	free(k);
}
