/* Parsing one perf sample record (see perf.h), untrusted bytes from the ring: every field bounded,
 * the user registers in the order the kernel writes them. Does not own: the rings (perf.c). */
#include "perf.h"
#include "perf_int.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>

/* enum perf_reg (compact) -> the kernel's PERF_REG_X86_* bit. The kernel writes the registers in
 * ascending bit order of sample_regs_user; this table ascends too, so record order == our order. */
static const uint8_t perf_reg_bit[PERF_R_COUNT] = {
    [PERF_R_AX] = PERF_REG_X86_AX,   [PERF_R_BX] = PERF_REG_X86_BX,
    [PERF_R_CX] = PERF_REG_X86_CX,   [PERF_R_DX] = PERF_REG_X86_DX,
    [PERF_R_SI] = PERF_REG_X86_SI,   [PERF_R_DI] = PERF_REG_X86_DI,
    [PERF_R_BP] = PERF_REG_X86_BP,   [PERF_R_SP] = PERF_REG_X86_SP,
    [PERF_R_IP] = PERF_REG_X86_IP,   [PERF_R_R8] = PERF_REG_X86_R8,
    [PERF_R_R9] = PERF_REG_X86_R9,   [PERF_R_R10] = PERF_REG_X86_R10,
    [PERF_R_R11] = PERF_REG_X86_R11, [PERF_R_R12] = PERF_REG_X86_R12,
    [PERF_R_R13] = PERF_REG_X86_R13, [PERF_R_R14] = PERF_REG_X86_R14,
    [PERF_R_R15] = PERF_REG_X86_R15,
};

/* A bounded little-endian reader over one record body. */
struct cursor {
	const uint8_t *p, *end;
};

static bool cursor__u64(struct cursor *c, uint64_t *v)
{
	if ((size_t)(c->end - c->p) < sizeof(*v))
		return false;
	memcpy(v, c->p, sizeof(*v));
	c->p += sizeof(*v);
	return true;
}

uint64_t perf__regs_mask(void)
{
	uint64_t mask = 0;

	for (int i = 0; i < PERF_R_COUNT; i++)
		mask |= 1ull << perf_reg_bit[i];
	return mask;
}

/* abi, then one u64 per mask bit unless abi is NONE (a kernel thread had no user context). */
static bool parse__regs(struct cursor *c, struct perf_sample *out, bool *present)
{
	uint64_t abi;

	*present = false;
	if (!cursor__u64(c, &abi))
		return false;
	if (abi == PERF_SAMPLE_REGS_ABI_NONE)
		return true;
	if (abi != PERF_SAMPLE_REGS_ABI_32 && abi != PERF_SAMPLE_REGS_ABI_64)
		return false;
	for (int i = 0; i < PERF_R_COUNT; i++) {
		if (!cursor__u64(c, &out->regs[i]))
			return false;
	}
	*present = true;
	/* A 32-bit task's registers do not describe an x86-64 BEAM. */
	out->regs_valid = abi == PERF_SAMPLE_REGS_ABI_64;
	return true;
}

/* size, then (when size != 0) size bytes and dyn_size, the bytes the kernel actually copied. */
static bool parse__stack(struct cursor *c, struct perf_sample *out, bool had_regs)
{
	uint64_t size, dyn;
	const uint8_t *data;

	if (!cursor__u64(c, &size))
		return false;
	if (size == 0)
		return true;
	/* Without user registers the kernel writes size 0 and nothing else. */
	if (!had_regs || size % 8 || size > (size_t)(c->end - c->p))
		return false;
	data = c->p;
	c->p += size;
	if (!cursor__u64(c, &dyn) || dyn > size)
		return false;
	out->stack = data;
	out->stack_size = dyn;
	return true;
}

/* rec: the bytes after struct perf_event_header; len: header.size - sizeof(header). The stack
 * pointer in out points into rec. */
int perf__parse_sample(const uint8_t *rec, size_t len, struct perf_sample *out)
{
	struct cursor c = {rec, rec + len};
	uint32_t ids[2];
	uint64_t w;
	bool regs;

	if (!out)
		return -EPROTO;
	memset(out, 0, sizeof(*out));
	if (!rec)
		return -EPROTO;
	if (!cursor__u64(&c, &out->ip) || !cursor__u64(&c, &w))
		goto bad;
	memcpy(ids, &w, sizeof(ids));
	out->pid = ids[0];
	out->tid = ids[1];
	if (!cursor__u64(&c, &out->time) || !cursor__u64(&c, &w))
		goto bad;
	memcpy(ids, &w, sizeof(ids));
	out->cpu = ids[0];
	if (!parse__regs(&c, out, &regs) || !parse__stack(&c, out, regs))
		goto bad;
	if (c.p != c.end) /* trailing bytes: not the layout we asked for */
		goto bad;
	/* Taken in the kernel (x86-64 kernel addresses have the top bit set): the sample is the
	 * user code that entered it, whose registers the kernel saved at entry. */
	if (out->ip >> 63) {
		out->kernel = true;
		out->ip = out->regs_valid ? out->regs[PERF_R_IP] : 0;
	}
	return 0;
bad:
	memset(out, 0, sizeof(*out));
	return -EPROTO;
}
