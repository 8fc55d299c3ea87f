/* Recording a live run. See capture.h. A sample is recorded from its begin hook to its end hook;
 * reads outside any sample (attach, the JIT map, sampler setup) go to the pool, and so do the
 * reads of samples not kept. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capfile.h"
#include "capture.h"
#include "capture_int.h"

#define CAPTURE_POOL_MAX (256u << 20) /* pool bytes kept at most */

struct capture {
	struct target *t;
	struct sampler_opts opts;
	struct agg *agg;
	size_t max;
	struct capfile f;
	struct cap_sample cur;
	bool in_sample, have_target;
	uint64_t pool_bytes;
	int err; /* first failure: the file is not written */
};

static void tap(void *ctx, uint64_t addr, const void *buf, size_t len, int rc)
{
	struct capture *c = ctx;
	int err;

	if (len > UINT32_MAX)
		return;
	if (c->in_sample) {
		err = capfile__add_read(&c->cur.reads, &c->cur.nreads, &c->cur.reads_cap, addr, buf,
					(uint32_t)len, rc);
	} else if (rc == 0 && c->pool_bytes + len <= CAPTURE_POOL_MAX) {
		c->pool_bytes += len;
		err = capfile__add_read(&c->f.pool, &c->f.npool, &c->f.pool_cap, addr, buf,
					(uint32_t)len, 0);
	} else {
		return;
	}
	if (err && !c->err)
		c->err = err;
}

int capture__new(struct target *t, const struct sampler_opts *o, struct agg *agg, size_t max,
		 struct capture **out)
{
	const struct target_value *d = &t->addr[XP_ADDR_JIT_DESCRIPTOR];
	struct capture *c = calloc(1, sizeof(*c));
	struct jitmap *m = NULL;
	int rc = -ENOTSUP;

	if (!c)
		return -ENOMEM;
	c->t = t;
	c->opts = *o;
	c->agg = agg;
	c->max = max;
	mem__set_tap(t->mem, tap, c);
	if (!d->present || (rc = jitmap__load(t->mem, (uint64_t)d->value, &m))) {
		capture__free(c);
		return d->present ? rc : -ENOTSUP;
	}
	jitmap__free(t->jit);
	t->jit = m;
	*out = c;
	return 0;
}

static void begin(void *ctx, const struct perf_sample *ps)
{
	struct capture *c = ctx;

	if (!c->have_target) {
		/* After run.c's and the sampler's setup, before any sample taught it more. */
		capfile__set_target(&c->f, c->t, &c->opts);
		c->f.sched = calloc(c->t->nsched ? c->t->nsched : 1, sizeof(*c->f.sched));
		if (!c->f.sched)
			c->err = -ENOMEM;
		else
			memcpy(c->f.sched, c->t->sched, c->t->nsched * sizeof(*c->f.sched));
		c->f.nsched = c->f.sched ? c->t->nsched : 0;
		c->have_target = true;
	}
	memset(&c->cur, 0, sizeof(c->cur));
	c->cur.ps = *ps;
	c->cur.ps.stack = NULL;
	if (ps->stack_size && (c->cur.stack = malloc(ps->stack_size)))
		memcpy(c->cur.stack, ps->stack, ps->stack_size);
	else
		c->cur.ps.stack_size = 0;
	c->in_sample = true;
}

/* A sample left out: its reads may have warmed a cache the samples kept rely on. */
static void to_pool(struct capture *c, struct cap_sample *s)
{
	c->in_sample = false;
	for (size_t i = 0; i < s->nreads; i++) {
		if (s->reads[i].rc == 0)
			tap(c, s->reads[i].addr, s->reads[i].data, s->reads[i].len, 0);
	}
	capfile__free_sample(s);
}

static void end(void *ctx, const struct sampler *s)
{
	struct capture *c = ctx;
	struct cap_sample *v;
	uint64_t used = sampler__stack_used(s);

	c->in_sample = false;
	if (!c->cur.expect || c->f.nsamples >= c->max) {
		to_pool(c, &c->cur);
		return;
	}
	if (c->f.nsamples == c->f.samples_cap) {
		size_t want = c->f.samples_cap ? c->f.samples_cap * 2 : 64;

		if (!(v = realloc(c->f.samples, want * sizeof(*v)))) {
			c->err = -ENOMEM;
			to_pool(c, &c->cur);
			return;
		}
		c->f.samples = v;
		c->f.samples_cap = want;
	}
	/* Only what the Erlang stack took from perf's copy is replayed: the unwinder's part is
	 * replaced by its result. */
	if (used < c->cur.ps.stack_size)
		c->cur.ps.stack_size = used;
	capture__trim_kstack_front(&c->cur, sampler__stack_e(s));
	c->cur.ps.stack = c->cur.stack;
	c->f.samples[c->f.nsamples++] = c->cur;
	memset(&c->cur, 0, sizeof(c->cur));
}

static void saw_unwind(void *ctx, const struct unwind_result *ur)
{
	struct capture *c = ctx;

	if (!c->cur.ur && !(c->cur.ur = malloc(sizeof(*ur)))) {
		c->err = -ENOMEM;
		return;
	}
	*c->cur.ur = *ur;
}

static void saw_capture(void *ctx, const struct kcap_rec *k)
{
	struct capture *c = ctx;
	struct cap_sample *s = &c->cur;

	if (!k)
		return;
	s->has_kcap = true;
	s->k = *k;
	s->k.span = s->k.stack = NULL;
	if (k->span && (s->span = malloc(KCAP_SPAN_MAX)))
		memcpy(s->span, k->span, KCAP_SPAN_MAX);
	if (k->stack && k->stack_len && (s->kstack = malloc(k->stack_len)))
		memcpy(s->kstack, k->stack, k->stack_len);
	if ((k->span && !s->span) || (k->stack && k->stack_len && !s->kstack))
		c->err = -ENOMEM;
	s->k.span = s->span;
	s->k.stack = s->kstack;
	if (!s->kstack)
		s->k.stack_len = 0;
}

static bool known(const struct cap_name *v, size_t n, uint64_t pc, bool activation)
{
	for (size_t i = n; i-- > 0;) {
		if (v[i].pc == pc && v[i].activation == activation)
			return true;
	}
	return false;
}

static void saw_name(void *ctx, const struct unwind_frame *f, int rc, const char *name)
{
	struct capture *c = ctx;

	if (!known(c->f.names, c->f.nnames, f->pc, f->activation) &&
	    capfile__add_name(&c->f.names, &c->f.nnames, &c->f.names_cap, f->pc, f->activation, rc,
			      rc ? "" : name))
		c->err = -ENOMEM;
}

static void saw_module(void *ctx, uint64_t pc, const char *module)
{
	struct capture *c = ctx;

	if (!known(c->f.modules, c->f.nmodules, pc, false) &&
	    capfile__add_name(&c->f.modules, &c->f.nmodules, &c->f.modules_cap, pc, false, 0,
			      module))
		c->err = -ENOMEM;
}

void capture__hooks(struct capture *c, struct sampler_hooks *h)
{
	*h = (struct sampler_hooks){.ctx = c,
				    .saw_unwind = saw_unwind,
				    .saw_capture = saw_capture,
				    .saw_name = saw_name,
				    .saw_module = saw_module,
				    .begin = begin,
				    .end = end};
}

void capture__on_record(const struct sample_record *r, void *ctx)
{
	struct capture *c = ctx;
	char line[CAPFILE_MAX_LINE];

	if (!c->in_sample || c->cur.expect)
		return;
	if (capfile__line(c->agg, r->group, r->frames, r->nframes, line, sizeof(line)) == 0 &&
	    !(c->cur.expect = strdup(line)))
		c->err = -ENOMEM;
}

size_t capture__nsamples(const struct capture *c)
{
	return c->f.nsamples;
}

int capture__write(struct capture *c, const char *path)
{
	int rc;

	if (c->err)
		return c->err;
	if (!c->have_target)
		return -ENODATA;
	const char *no = getenv("XP_CAPTURE_NO_TRIM"); /* "jit", "kstack": for debugging */

	for (size_t i = 0; (!no || !strstr(no, "kstack")) && i < c->f.nsamples; i++)
		capture__trim_kstack(&c->f.samples[i],
				     (uint64_t)c->t->addr[XP_ADDR_NORMAL_EXIT].value,
				     c->t->frame_layout == XP_LAYOUT_FP);
	if ((!no || !strstr(no, "jit")) && (rc = capture__trim_jit(&c->f, c->t->jit)))
		return rc;
	return capfile__write(&c->f, path);
}

void capture__free(struct capture *c)
{
	if (!c)
		return;
	mem__set_tap(c->t->mem, NULL, NULL);
	capfile__free_sample(&c->cur);
	capfile__free(&c->f);
	free(c);
}
