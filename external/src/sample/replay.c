/* Replaying a capture. See replay.h. A sample's memory reads are served from its own recorded
 * reads first (a recorded failure fails again), then from the pool (reads made outside the
 * samples kept: setup, the JIT map, caches warmed by samples left out). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

#define POOL_BACK 256 /* pool regions looked at below a read's address */

struct replay {
	struct capfile f;
	struct target *t;
	struct agg *agg;
	struct sampler *s;
	struct sampler_opts opts;
	size_t next;
	struct cap_sample *cur; /* the sample being resolved, NULL during setup */
	char line[CAPFILE_MAX_LINE];
};

static const struct cap_read *own_read(struct cap_sample *s, uint64_t addr, size_t len)
{
	struct cap_read *inside = NULL;

	for (size_t i = 0; i < s->nreads; i++) {
		struct cap_read *r = &s->reads[i];

		if (r->addr == addr && r->len == len && !r->used) {
			r->used = true;
			return r;
		}
		if (!inside && r->rc == 0 && addr >= r->addr && addr - r->addr <= r->len &&
		    len <= r->len - (addr - r->addr))
			inside = r;
	}
	return inside;
}

static const struct cap_read *pool_read(const struct capfile *f, uint64_t addr, size_t len)
{
	size_t lo = 0, hi = f->npool, back;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->pool[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (back = 0; lo > 0 && back < POOL_BACK; lo--, back++) {
		const struct cap_read *r = &f->pool[lo - 1];

		if (addr - r->addr <= r->len && len <= r->len - (addr - r->addr))
			return r;
	}
	return NULL;
}

static int serve(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct replay *r = ctx;
	const struct cap_read *hit = r->cur ? own_read(r->cur, addr, len) : NULL;

	if (hit && hit->rc)
		return hit->rc;
	if (!hit)
		hit = pool_read(&r->f, addr, len);
	if (!hit)
		return -EFAULT;
	memcpy(buf, hit->data + (addr - hit->addr), len);
	return 0;
}

static void unwind(void *ctx, const struct perf_sample *ps, struct unwind_result *out)
{
	struct replay *r = ctx;

	if (r->cur && r->cur->ur) {
		*out = *r->cur->ur;
		return;
	}
	out->nframes = 0;
	out->stop = UNWIND_STOP_ERROR; /* live did not unwind this sample */
}

static const struct kcap_rec *capture(void *ctx, const struct perf_sample *ps)
{
	struct replay *r = ctx;

	return r->cur && r->cur->has_kcap ? &r->cur->k : NULL;
}

static int name(void *ctx, const struct unwind_frame *f, char *buf, size_t len)
{
	const struct capfile *cf = &((struct replay *)ctx)->f;

	for (size_t i = 0; i < cf->nnames; i++) {
		const struct cap_name *n = &cf->names[i];

		if (n->pc == f->pc && n->activation == f->activation) {
			snprintf(buf, len, "%s", n->name ? n->name : "");
			return n->rc;
		}
	}
	return -ENOENT;
}

static const char *module(void *ctx, uint64_t pc)
{
	const struct capfile *cf = &((struct replay *)ctx)->f;

	for (size_t i = 0; i < cf->nmodules; i++) {
		if (cf->modules[i].pc == pc)
			return cf->modules[i].name;
	}
	return NULL;
}

/* The target as the sampler saw it at its first sample. */
static int build_target(struct replay *r, char *err, size_t errlen)
{
	const struct capfile *f = &r->f;
	const struct target_value *d = &f->addr[XP_ADDR_JIT_DESCRIPTOR];
	struct target *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return -ENOMEM;
	r->t = t;
	t->pid = (pid_t)f->pid;
	t->frame_layout = f->frame_layout;
	t->flavor = f->flavor;
	snprintf(t->erts_version, sizeof(t->erts_version), "%s", f->erts_version);
	snprintf(t->otp_release, sizeof(t->otp_release), "%s", f->otp_release);
	memcpy(t->off, f->off, sizeof(t->off));
	memcpy(t->addr, f->addr, sizeof(t->addr));
	if (f->has_layout && !(t->layout = layout__find(f->erts_version, f->flavor, "x86_64"))) {
		snprintf(err, errlen, "no built-in layout row for erts %s", f->erts_version);
		return -ENOTSUP;
	}
	t->sched = calloc(f->nsched ? f->nsched : 1, sizeof(*t->sched));
	if (!t->sched)
		return -ENOMEM;
	memcpy(t->sched, f->sched, f->nsched * sizeof(*t->sched));
	t->nsched = f->nsched;
	for (size_t i = 0; i < t->nsched; i++) {
		if (t->sched[i].type < 3)
			t->nsched_by_type[t->sched[i].type]++;
	}
	if ((rc = mem__open_fn(&t->mem, serve, r)))
		return rc;
	if (!d->present || (rc = jitmap__load(t->mem, (uint64_t)d->value, &t->jit))) {
		snprintf(err, errlen, "the JIT map does not load from the capture");
		return d->present ? rc : -EPROTO;
	}
	return 0;
}

static void on_record(const struct sample_record *rec, void *ctx)
{
	struct replay *r = ctx;

	if (!r->line[0])
		capfile__line(r->agg, rec->group, rec->frames, rec->nframes, r->line,
			      sizeof(r->line));
}

int replay__open(const char *path, struct replay **out, char *err, size_t errlen)
{
	struct replay *r = calloc(1, sizeof(*r));
	struct sampler_hooks h = {
	    .unwind = unwind, .capture = capture, .name = name, .module = module};
	int rc;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	h.ctx = r;
	if ((rc = capfile__load(path, &r->f))) {
		snprintf(err, errlen, "%s: %s", path,
			 rc == -EPROTO ? "not a valid capture file" : strerror(-rc));
		goto cleanup;
	}
	if ((rc = build_target(r, err, errlen)) || (rc = agg__new(&r->agg)))
		goto cleanup;
	r->opts = (struct sampler_opts){.include_idle = r->f.include_idle,
					.only_erlang = r->f.only_erlang,
					.lines = r->f.lines,
					.all_threads = r->f.all_threads,
					.name = r->f.name[0] ? r->f.name : NULL,
					.erlang_pid = r->f.erlang_pid[0] ? r->f.erlang_pid : NULL,
					.group = GROUP_PID, /* as capture.c recorded */
					.on_record = on_record,
					.record_ctx = r};
	if ((rc = sampler__new_replay(r->t, &r->opts, r->agg, &h, &r->s, err, errlen)))
		goto cleanup;
	*out = r;
	return 0;
cleanup:
	replay__free(r);
	return rc;
}

const struct capfile *replay__file(const struct replay *r)
{
	return &r->f;
}

int replay__next(struct replay *r, const char **got, const char **expected)
{
	struct cap_sample *s;

	if (r->next >= r->f.nsamples)
		return -ENOENT;
	s = &r->f.samples[r->next++];
	for (size_t i = 0; i < s->nreads; i++)
		s->reads[i].used = false;
	r->line[0] = 0;
	r->cur = s;
	sampler__resolve_one(r->s, &s->ps);
	r->cur = NULL;
	*got = r->line;
	*expected = s->expect ? s->expect : "";
	return 0;
}

void replay__free(struct replay *r)
{
	if (!r)
		return;
	sampler__free(r->s);
	if (r->t) {
		jitmap__free(r->t->jit);
		mem__free(r->t->mem);
		free(r->t->sched);
		free(r->t);
	}
	agg__free(r->agg);
	capfile__free(&r->f);
	free(r);
}
