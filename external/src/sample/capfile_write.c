/* Building and writing a capture file (format: capfile.h): the model's appenders, the target
 * facts, one record at a time through a growing buffer into gzip. Does not own: parsing
 * (capfile.c), deciding what to record (capture.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "capfile.h"
#include "capfile_int.h"

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t want = *cap ? *cap * 2 : 16;
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*v, want * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = want;
	return 0;
}

int capfile__add_read(struct cap_read **v, size_t *n, size_t *cap, uint64_t addr, const void *data,
		      uint32_t len, int32_t rc)
{
	struct cap_read *r;

	if (grow((void **)v, cap, *n, sizeof(**v)))
		return -ENOMEM;
	r = &(*v)[*n];
	*r = (struct cap_read){.addr = addr, .len = len, .rc = rc};
	if (rc == 0) {
		r->data = malloc(len ? len : 1);
		if (!r->data)
			return -ENOMEM;
		memcpy(r->data, data, len);
	}
	(*n)++;
	return 0;
}

int capfile__add_name(struct cap_name **v, size_t *n, size_t *cap, uint64_t pc, bool activation,
		      int32_t rc, const char *name)
{
	if (grow((void **)v, cap, *n, sizeof(**v)))
		return -ENOMEM;
	(*v)[*n] = (struct cap_name){.pc = pc, .activation = activation, .rc = rc};
	if (name && !((*v)[*n].name = strdup(name)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

void capfile__set_target(struct capfile *f, const struct target *t, const struct sampler_opts *o)
{
	f->pid = (uint32_t)t->pid;
	f->frame_layout = t->frame_layout;
	f->flavor = t->flavor;
	f->has_layout = t->layout != NULL;
	snprintf(f->erts_version, sizeof(f->erts_version), "%s", t->erts_version);
	snprintf(f->otp_release, sizeof(f->otp_release), "%s", t->otp_release);
	memcpy(f->off, t->off, sizeof(f->off));
	memcpy(f->addr, t->addr, sizeof(f->addr));
	f->include_idle = o->include_idle;
	f->only_erlang = o->only_erlang;
	f->lines = o->lines;
	f->all_threads = o->all_threads;
	snprintf(f->name, sizeof(f->name), "%s", o->name ? o->name : "");
	snprintf(f->erlang_pid, sizeof(f->erlang_pid), "%s", o->erlang_pid ? o->erlang_pid : "");
}

/* One record's payload. */
struct wbuf {
	uint8_t *p;
	size_t n, cap;
	int err;
};

static void put(struct wbuf *b, const void *v, size_t n)
{
	if (b->err)
		return;
	if (b->n + n > b->cap) {
		size_t want = b->cap ? b->cap : 4096;
		uint8_t *p;

		while (want < b->n + n)
			want *= 2;
		if (!(p = realloc(b->p, want))) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = want;
	}
	if (n)
		memcpy(b->p + b->n, v, n);
	b->n += n;
}

/* x86-64 only (README): integers are written in host order, which is little-endian. */
static void put_u8(struct wbuf *b, uint8_t v)
{
	put(b, &v, 1);
}
static void put_u32(struct wbuf *b, uint32_t v)
{
	put(b, &v, 4);
}
static void put_u64(struct wbuf *b, uint64_t v)
{
	put(b, &v, 8);
}

static void put_str(struct wbuf *b, const char *s)
{
	size_t n = strlen(s) > UINT16_MAX ? UINT16_MAX : strlen(s);
	uint16_t l = (uint16_t)n;

	put(b, &l, 2);
	put(b, s, n);
}

/* Write the record in b (then emptied). */
static int flush(gzFile g, struct wbuf *b, uint8_t tag)
{
	uint32_t len = (uint32_t)b->n;

	if (b->err)
		return b->err;
	if (b->n > CAPFILE_MAX_RECORD)
		return -E2BIG;
	if (gzwrite(g, &tag, 1) != 1 || gzwrite(g, &len, 4) != 4 ||
	    (len && gzwrite(g, b->p, len) != (int)len))
		return -EIO;
	b->n = 0;
	return 0;
}

static void put_values(struct wbuf *b, const struct target_value *v, uint32_t n)
{
	put_u32(b, n);
	for (uint32_t i = 0; i < n; i++) {
		put_u64(b, (uint64_t)v[i].value);
		put_u8(b, (uint8_t)v[i].source);
		put_u8(b, v[i].present);
		put_u8(b, v[i].verified);
	}
}

static int write_target(gzFile g, struct wbuf *b, const struct capfile *f)
{
	int rc;

	put_u32(b, f->pid);
	put_u32(b, f->frame_layout);
	put_u32(b, f->flavor);
	put_u32(b, f->has_layout);
	put_str(b, f->erts_version);
	put_str(b, f->otp_release);
	put_values(b, f->off, XP_OFF_COUNT);
	put_values(b, f->addr, XP_ADDR_COUNT);
	put_u8(b, f->include_idle);
	put_u8(b, f->only_erlang);
	put_u8(b, f->lines);
	put_u8(b, f->all_threads);
	put_str(b, f->name);
	put_str(b, f->erlang_pid);
	if ((rc = flush(g, b, CAPREC_TARGET)))
		return rc;
	for (size_t i = 0; i < f->nsched; i++) {
		const struct target_sched *s = &f->sched[i];

		put_u32(b, s->type);
		put_u32(b, s->number);
		put_u32(b, (uint32_t)s->tid);
		put_u64(b, s->esdp);
		put_u8(b, s->esdp_checked);
		put_u8(b, s->from_stride);
		put_str(b, s->comm);
		if ((rc = flush(g, b, CAPREC_SCHED)))
			return rc;
	}
	return 0;
}

static int write_names(gzFile g, struct wbuf *b, const struct cap_name *v, size_t n, uint8_t tag)
{
	int rc;

	for (size_t i = 0; i < n; i++) {
		put_u64(b, v[i].pc);
		if (tag == CAPREC_NAME) {
			put_u8(b, v[i].activation);
			put_u32(b, (uint32_t)v[i].rc);
		} else {
			put_u8(b, v[i].name != NULL);
		}
		if (v[i].name)
			put(b, v[i].name, strlen(v[i].name));
		if ((rc = flush(g, b, tag)))
			return rc;
	}
	return 0;
}

static int write_kcap(gzFile g, struct wbuf *b, const struct kcap_rec *k)
{
	put_u32(b, k->tid);
	put_u64(b, k->time);
	put_u64(b, k->ip);
	put_u64(b, k->sp);
	put_u64(b, k->cp);
	put_u8(b, (uint8_t)(k->from_scheduler | k->sched_none << 1 | k->state_known << 2));
	put_u64(b, k->stack_addr);
	put_u32(b, k->span ? KCAP_SPAN_MAX : 0);
	if (k->span)
		put(b, k->span, KCAP_SPAN_MAX);
	put_u32(b, (uint32_t)k->stack_len);
	put_u8(b, k->stack != NULL);
	if (k->stack)
		put(b, k->stack, k->stack_len);
	if (k->state_known) /* last: a file without it parses as before */
		put_u32(b, k->state);
	return flush(g, b, CAPREC_KCAP);
}

static int write_unwind(gzFile g, struct wbuf *b, const struct unwind_result *ur)
{
	put_u32(b, ur->stop);
	put_u32(b, (uint32_t)ur->nframes);
	put_u64(b, ur->jit_pc);
	put_u64(b, ur->jit_sp);
	put_u64(b, ur->jit_bp);
	put_u64(b, ur->jit_r13);
	put_u8(b, ur->jit_bp_valid);
	put_u8(b, ur->jit_r13_valid);
	for (size_t i = 0; i < ur->nframes; i++) {
		put_u64(b, ur->frames[i].pc);
		put_u8(b, ur->frames[i].activation);
	}
	return flush(g, b, CAPREC_UNWIND);
}

static int write_read(gzFile g, struct wbuf *b, const struct cap_read *r, uint8_t tag)
{
	put_u64(b, r->addr);
	if (tag == CAPREC_READ) {
		put_u32(b, r->len);
		put_u32(b, (uint32_t)r->rc);
	}
	if (r->rc == 0)
		put(b, r->data, r->len);
	return flush(g, b, tag);
}

static int write_sample(gzFile g, struct wbuf *b, const struct cap_sample *s)
{
	int rc;

	put_u64(b, s->ps.ip);
	put_u64(b, s->ps.time);
	put_u32(b, s->ps.pid);
	put_u32(b, s->ps.tid);
	put_u32(b, s->ps.cpu);
	put_u8(b, (uint8_t)(s->ps.regs_valid | s->ps.kernel << 1));
	put_u32(b, PERF_R_COUNT);
	put(b, s->ps.regs, sizeof(s->ps.regs));
	put(b, s->stack, s->ps.stack_size);
	if ((rc = flush(g, b, CAPREC_SAMPLE)))
		return rc;
	if (s->has_kcap && (rc = write_kcap(g, b, &s->k)))
		return rc;
	if (s->ur && (rc = write_unwind(g, b, s->ur)))
		return rc;
	for (size_t i = 0; i < s->nreads; i++) {
		if ((rc = write_read(g, b, &s->reads[i], CAPREC_READ)))
			return rc;
	}
	if (s->expect) {
		put(b, s->expect, strlen(s->expect));
		rc = flush(g, b, CAPREC_EXPECT);
	}
	return rc;
}

static int write_all(gzFile g, const struct capfile *f)
{
	static const char magic[8] = CAPFILE_MAGIC;
	struct wbuf b = {0};
	uint32_t version = CAPFILE_VERSION;
	size_t i;
	int rc;

	if (gzwrite(g, magic, 8) != 8 || gzwrite(g, &version, 4) != 4)
		return -EIO;
	rc = write_target(g, &b, f);
	for (i = 0; !rc && i < f->npool; i++)
		rc = write_read(g, &b, &f->pool[i], CAPREC_POOL);
	if (!rc)
		rc = write_names(g, &b, f->names, f->nnames, CAPREC_NAME);
	if (!rc)
		rc = write_names(g, &b, f->modules, f->nmodules, CAPREC_MODULE);
	for (i = 0; !rc && i < f->nsamples; i++)
		rc = write_sample(g, &b, &f->samples[i]);
	free(b.p);
	return rc;
}

/* Never through a symbolic link at path (SECURITY.md), as report__open_output. */
int capfile__write(const struct capfile *f, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644), rc;
	gzFile g;

	if (fd < 0)
		return -errno;
	g = gzdopen(fd, "wb9");
	if (!g) {
		close(fd);
		return -ENOMEM;
	}
	rc = write_all(g, f);
	if (gzclose(g) != Z_OK && !rc)
		rc = -EIO;
	return rc;
}
