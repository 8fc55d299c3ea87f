/* The sampler's sources beside the VM's memory: the native unwind, the in-kernel capture, native
 * frame names and the module of a pc. Live from the unwinder and kcapture; replaced by a replay's
 * hooks (replay.c), or reported to a capture's (capture.c). Does not own: what they mean. */
#include <string.h>

#include "sampler_int.h"

void sampler__set_hooks(struct sampler *s, const struct sampler_hooks *h)
{
	s->hooks = h ? *h : (struct sampler_hooks){0};
}

uint64_t sampler__stack_used(const struct sampler *s)
{
	return s->stack_used > s->runtime_used ? s->stack_used : s->runtime_used;
}

uint64_t sampler__stack_e(const struct sampler *s)
{
	return s->stack_e;
}

void sampler_src__unwind(struct sampler *s, const struct perf_sample *ps, unwind_is_jit_fn is_jit,
			 struct unwind_result *ur)
{
	const struct sampler_hooks *h = &s->hooks;

	if (h->unwind) {
		h->unwind(h->ctx, ps, ur);
		return;
	}
	unwinder__unwind(s->unw, ps, is_jit, s, ur);
	if (h->saw_unwind)
		h->saw_unwind(h->ctx, ur);
}

/* The sample's in-kernel capture. The capture reaches its ring before the sample reaches perf's:
 * draining the ring up to the sample's time now finds it (two loads when the ring is empty). */
const struct kcap_rec *sampler_src__capture(struct sampler *s, const struct perf_sample *ps)
{
	const struct sampler_hooks *h = &s->hooks;
	const struct kcap_rec *k;

	if (h->capture)
		return h->capture(h->ctx, ps);
	if (!s->kc)
		return NULL;
	kcapture__drain(s->kc, ps->time);
	k = kcapture__find(s->kc, ps->tid, ps->time, ps->regs[PERF_R_IP], ps->regs[PERF_R_SP]);
	if (h->saw_capture)
		h->saw_capture(h->ctx, k);
	return k;
}

int sampler_src__name(struct sampler *s, const struct unwind_frame *f, char *buf, size_t len)
{
	const struct sampler_hooks *h = &s->hooks;
	int rc;

	if (h->name)
		return h->name(h->ctx, f, buf, len);
	rc = unwinder__name_frame(s->unw, f, false, buf, len);
	if (h->saw_name)
		h->saw_name(h->ctx, f, rc, buf);
	return rc;
}

const char *sampler_src__module(struct sampler *s, uint64_t pc)
{
	const struct sampler_hooks *h = &s->hooks;
	const char *m;

	if (h->module)
		return h->module(h->ctx, pc);
	m = unwinder__module(s->unw, pc);
	if (h->saw_module)
		h->saw_module(h->ctx, pc, m);
	return m;
}
