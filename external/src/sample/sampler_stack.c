/* The sampler's reading of one sample's Erlang stack (see sampler_int.h): where E is for a sample
 * in native code (the call site's kind, from its code bytes: otp-internals.md §2), and the stack's
 * words from the sample's own copy, the in-kernel capture, and what neither holds read live and
 * checked at its seams. Does not own: walking the words (erlang_stack.c), which process
 * (sampler.c). */
#include <errno.h>
#include <string.h>

#include "sampler_int.h"

/* RA layout, native sample: does the call site at ra keep E in rbp (plain) or in c_p->stop
 * (eStack)? A plain site is `mov rbp,rsp` [+ an fcalls store] + `lea rsp,[rbx-X]` + call. */
static enum site_kind classify_site(struct sampler *s, uint64_t ra)
{
	struct site *slot = &s->sites[(ra >> 2) % SITE_SLOTS];
	uint8_t code[64];
	int i;

	if (slot->ra == ra)
		return slot->kind;
	slot->ra = ra;
	slot->kind = SITE_UNKNOWN;
	if (mem__read(s->t->mem, ra - sizeof(code), code, sizeof(code)))
		return SITE_UNKNOWN;
	for (i = (int)sizeof(code) - 4; i >= 0; i--) {
		int j = i;

		if (code[i] != 0x48 || code[i + 1] != 0x8d || code[i + 2] != 0x63 ||
		    code[i + 3] != s->lea_disp)
			continue;
		/* mov [r13+disp8], r14 / r14d: the optional reductions store. */
		if (j >= 4 && (code[j - 4] == 0x4d || code[j - 4] == 0x45) && code[j - 3] == 0x89 &&
		    code[j - 2] == 0x75)
			j -= 4;
		slot->kind =
		    j >= 3 && code[j - 3] == 0x48 && code[j - 2] == 0x89 && code[j - 1] == 0xe5
			? SITE_PLAIN
			: SITE_ESTACK;
		break;
	}
	return slot->kind;
}

/* Does [base, base + len) hold at? */
static bool holds_start(uint64_t base, const uint8_t *data, uint64_t len, uint64_t at)
{
	return data && at >= base && at - base < len;
}

/* Copy what [base, base + len) holds of [at, at + want) to dst, when it holds its start. */
static uint64_t copy_from(uint64_t base, const uint8_t *data, uint64_t len, uint64_t at,
			  uint8_t *dst, uint64_t want)
{
	uint64_t n;

	if (!holds_start(base, data, len, at))
		return 0;
	n = len - (at - base) < want ? len - (at - base) : want;
	memcpy(dst, data + (at - base), n);
	return n;
}

/* The words [at, at + want) where one copy, [base, base + len), holds them all, at an 8-byte
 * aligned place: read there, not copied (a compiler's stack is ~1.5 KiB a sample, and the copy was
 * ~4 % of a record's CPU, issue 27). NULL otherwise. */
static const uint64_t *held_whole(uint64_t base, const uint8_t *data, uint64_t len, uint64_t at,
				  uint64_t want)
{
	if (!want || !holds_start(base, data, len, at) || len - (at - base) < want ||
	    (uintptr_t)(data + (at - base)) % 8)
		return NULL;
	return (const uint64_t *)(const void *)(data + (at - base));
}

/* Read [at, at + len) live into dst, with SEAM_BYTES of the copied words beside it (before it
 * when seam_before, else after) read again and compared: a process that returned past the
 * copy's edge since the sample, or was garbage collected (its stack moved, the old block
 * reused), no longer holds there what was copied, and its live words are not the sample's. */
static int read_live_checked(struct sampler *s, uint64_t at, uint8_t *dst, uint64_t len,
			     bool seam_before)
{
	uint8_t again[SEAM_BYTES];
	uint64_t seam = seam_before ? at - SEAM_BYTES : at + len;
	const uint8_t *copied = seam_before ? dst - SEAM_BYTES : dst + len;

	if (mem__read(s->t->mem, at, dst, len))
		return -EFAULT;
	if (mem__read(s->t->mem, seam, again, SEAM_BYTES) || memcmp(again, copied, SEAM_BYTES) != 0)
		return -ESTALE;
	return 0;
}

/* [e, hend) as words: from the sample's stack copy where it covers its top, then from the
 * in-kernel capture, which may also hold the bottom part of a stack too deep for it; only what
 * neither holds is read live, and checked at its seams with the copies. A live part that fails
 * the check is not walked: the stack is cut where the copy ends, and says so. */
int sampler_stack__read_at(struct sampler *s, const struct perf_sample *ps, uint64_t e,
			   uint64_t hend, size_t *nwords, bool *complete)
{
	const struct kcap_rec *k = s->cap;
	uint64_t want = hend - e, have, live_end;
	uint8_t *w = (uint8_t *)s->words;
	bool tail = false;
	int rc = 0;

	*complete = want <= STACK_CAP_BYTES;
	if (want > STACK_CAP_BYTES)
		want = STACK_CAP_BYTES;
	s->stack_e = e;
	s->top_live = s->live_read = false;
	*nwords = want / 8;
	/* As the copies below would leave it when the first that holds any holds all. */
	if ((s->sw = held_whole(ps->regs[PERF_R_SP], ps->stack, ps->stack_size, e, want))) {
		s->stack_used = e - ps->regs[PERF_R_SP] + want;
		return 0;
	}
	if (k && !holds_start(ps->regs[PERF_R_SP], ps->stack, ps->stack_size, e) &&
	    (s->sw = held_whole(k->stack_addr, k->stack, k->stack_len, e, want))) {
		s->stack_used = 0;
		return 0;
	}
	s->sw = s->words;
	have = copy_from(ps->regs[PERF_R_SP], ps->stack, ps->stack_size, e, w, want);
	s->stack_used = have ? e - ps->regs[PERF_R_SP] + have : 0;
	if (k && have < want)
		have += copy_from(k->stack_addr, k->stack, k->stack_len, e + have, w + have,
				  want - have);
	live_end = want;
	if (k && k->stack && have < want && k->stack_addr > e + have && k->stack_addr < e + want &&
	    !(k->stack_addr & 7) && k->stack_addr + k->stack_len >= e + want) {
		live_end = k->stack_addr - e;
		copy_from(k->stack_addr, k->stack, k->stack_len, k->stack_addr, w + live_end,
			  want - live_end);
		tail = live_end + SEAM_BYTES <= want;
	}
	s->top_live = have == 0;
	s->live_read = have < live_end;
	if (have >= live_end)
		return 0;
	if (have >= SEAM_BYTES)
		rc = read_live_checked(s, e + have, w + have, live_end - have, true);
	else if (tail)
		rc = read_live_checked(s, e + have, w + have, live_end - have, false);
	else if (mem__read(s->t->mem, e + have, w + have, live_end - have))
		rc = -EFAULT;
	if (rc == -ESTALE && have) {
		s->st.deep_stale++;
		*nwords = have / 8;
		*complete = false;
		return 0;
	}
	return rc;
}

/* Where E is for a sample taken in native code below a JIT call. */
static uint64_t native_e(struct sampler *s, const struct unwind_result *ur,
			 const struct process_view *p)
{
	if (s->t->frame_layout == XP_LAYOUT_FP)
		return p->stop;
	switch (classify_site(s, ur->jit_pc)) {
	case SITE_PLAIN:
		return ur->jit_bp;
	case SITE_ESTACK:
		return p->stop;
	default:
		/* rbp is zeroed at every context switch: a plausible rbp is E_saved. */
		return ur->jit_bp_valid && ur->jit_bp > p->heap && ur->jit_bp < p->hend ? ur->jit_bp
											: p->stop;
	}
}

/* A copy (the sample's, or the capture's) of a stack that ends inside the copy: the words from E to
 * the stack bottom, normal_exit (in FP layout after a zero frame pointer), which is the last word
 * below hend (otp-internals.md "Design implications", check 4). */
static bool stack_from_copy(struct sampler *s, const uint8_t *data, size_t len, size_t *nwords)
{
	size_t n = len / 8, i;
	uint64_t w, prev = 1;

	if (n > STACK_CAP_BYTES / 8)
		n = STACK_CAP_BYTES / 8;
	/* Found in the copy first: only the words up to the bottom are copied (a capture may hold
	 * far more than the stack). */
	for (i = 0; s->ecfg.normal_exit && i < n; i++, prev = w) {
		memcpy(&w, data + i * 8, 8);
		if (w != s->ecfg.normal_exit)
			continue;
		if (s->t->frame_layout == XP_LAYOUT_FP && (i == 0 || prev != 0))
			continue;
		memcpy(s->words, data, (i + 1) * 8);
		s->sw = s->words;
		*nwords = i + 1;
		return true;
	}
	return false;
}

/* Captured in an mremap shrinking the heap's block in place (k->remap_end), a collection resizing
 * the new heap (B/erl_gc.c resize_new_heap, otp-internals.md): the stack already moved down to the
 * new heap's end, which the program found (heap + 8 * one of the VM's heap sizes, holding
 * normal_exit) and copied the stack below; stop, hend and the frame pointers saved in the stack
 * are still the old block's. The moved words are the same words: walked as if still at
 * [stop, hend), from E = stop (where a collection has it). Taken only when they end at
 * normal_exit there and nowhere before. */
static int remapped_stack(struct sampler *s, const struct process_view *p, uint64_t *e,
			  uint64_t *fp, size_t *nwords, bool *complete)
{
	const struct kcap_rec *k = s->cap;
	uint64_t len = p->hend - p->stop, end = k->remap_end;
	size_t n;

	if (!k->stack || end <= p->heap || p->stop <= p->heap || p->stop >= p->hend ||
	    (p->stop & 7) || len > STACK_CAP_BYTES || end - p->heap < len ||
	    !process__is_heap_size((end - p->heap) / 8) || k->stack_addr != end - len ||
	    k->stack_len != len)
		return -EFAULT;
	if (!stack_from_copy(s, k->stack, len, &n) || n != len / 8)
		return -EFAULT;
	*e = p->stop;
	*nwords = n;
	*complete = true;
	if (s->t->frame_layout == XP_LAYOUT_FP && p->frame_pointer >= p->stop &&
	    p->frame_pointer < p->hend && !(p->frame_pointer & 7))
		*fp = p->frame_pointer;
	s->st.gc_remapped++;
	return 0;
}

/* E and the stack words from E to hend. *e is rsp for a sample in JIT code, 0 for a sample in
 * native code (E is then found from the call site). */
int sampler_stack__read(struct sampler *s, const struct perf_sample *ps,
			const struct unwind_result *ur, const struct process_view *p, uint64_t *e,
			uint64_t *fp, size_t *nwords, bool *complete)
{
	uint64_t len;

	s->live_read = s->heap_moved = s->top_live = false;
	s->stack_used = s->stack_e = 0;
	if ((!*e || *e == p->stop) && s->cap && s->cap->remap_end)
		return remapped_stack(s, p, e, fp, nwords, complete);
	if ((!*e || *e == p->stop) && s->cap && (p->stop <= p->heap || p->stop >= p->hend)) {
		/* Captured in a garbage collection, from stop on: the stack already copied to the
		 * new heap, whose end is not known yet; it ends at normal_exit. A native sample's
		 * (E from the call site) or a parked process's (dirty, system task: E is stop). */
		*e = p->stop;
		if (s->cap->stack_addr != p->stop || (*e & 7) ||
		    !stack_from_copy(s, s->cap->stack, s->cap->stack_len, nwords))
			return -EFAULT;
		*complete = true;
		/* FP layout: the saved frame pointer is the new copy's, or still the old block's
		 * (then the copy is walked as if it were still there, ending at the old hend). */
		len = *nwords * 8;
		if (s->t->frame_layout == XP_LAYOUT_FP && p->frame_pointer >= p->stop &&
		    p->frame_pointer < p->stop + len) {
			*fp = p->frame_pointer;
		} else if (s->t->frame_layout == XP_LAYOUT_FP && p->frame_pointer < p->hend &&
			   p->frame_pointer >= p->hend - len) {
			*e = p->hend - len;
			*fp = p->frame_pointer;
		}
		return 0;
	} else if (!*e) {
		*e = native_e(s, ur, p);
		/* E from the call site, outside the heap read now: a GC moved the stack since the
		 * call (the fragment's own, or one after the sample). c_p->stop is where it went;
		 * call_site_agrees() then tells whether it still holds the sampled call. */
		if ((*e <= p->heap || *e >= p->hend) && p->stop > p->heap && p->stop < p->hend) {
			*e = p->stop;
			s->heap_moved = true;
		}
	} else if (*e <= p->heap || *e >= p->hend) {
		/* rsp is outside the heap block read now. Either the process was garbage collected
		 * since the sample and its heap moved (the sample's copy still holds the stack as
		 * it was: reading [E, hend) live would mix in the process's current frames), or JIT
		 * code runs on the scheduler's C stack between entering the runtime and the call,
		 * with E parked in rbp (plain) or c_p->stop (otp-internals.md §2). With a capture,
		 * p is as the sample saw it: only the second can be. */
		if (!s->cap && !(*e & 7) && stack_from_copy(s, ps->stack, ps->stack_size, nwords)) {
			s->stack_used = *nwords * 8;
			*complete = true;
			s->heap_moved = true;
			return 0;
		}
		*e = *fp > p->heap && *fp < p->hend && !(*fp & 7) ? *fp : p->stop;
	}
	if (*e <= p->heap || *e >= p->hend || (*e & 7))
		return -EFAULT;
	return sampler_stack__read_at(s, ps, *e, p->hend, nwords, complete);
}
