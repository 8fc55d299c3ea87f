/* Parsing a capture file (format: capfile.h) into the model, treating it as hostile: every
 * length is bounded, every record must be consumed exactly, records out of place are refused.
 * Also the model's release and the one-line form of a sample's stack. Does not own: writing
 * (capfile_write.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "capfile.h"
#include "capfile_int.h"

struct rbuf {
	const uint8_t *p;
	size_t n, at;
	bool bad;
};

static const void *take(struct rbuf *b, size_t n)
{
	const void *v;

	if (b->bad || n > b->n - b->at) {
		b->bad = true;
		return NULL;
	}
	v = b->p + b->at;
	b->at += n;
	return v;
}

static uint64_t get_n(struct rbuf *b, size_t n)
{
	const void *v = take(b, n);
	uint64_t x = 0;

	if (v)
		memcpy(&x, v, n); /* little-endian host (x86-64) */
	return x;
}

static uint8_t get_u8(struct rbuf *b)
{
	return (uint8_t)get_n(b, 1);
}
static uint32_t get_u32(struct rbuf *b)
{
	return (uint32_t)get_n(b, 4);
}
static uint64_t get_u64(struct rbuf *b)
{
	return get_n(b, 8);
}

static void get_str(struct rbuf *b, char *dst, size_t cap)
{
	size_t n = (size_t)get_n(b, 2);
	const char *s = take(b, n);

	if (!s || n >= cap) {
		b->bad = true;
		dst[0] = 0;
		return;
	}
	memcpy(dst, s, n);
	dst[n] = 0;
}

/* The rest of the record, copied (NUL-terminated for text); NULL when empty and not text. */
static uint8_t *get_rest(struct rbuf *b, size_t *len, bool text)
{
	size_t n = b->n - b->at;
	const void *v = take(b, n);
	uint8_t *p;

	*len = n;
	if (!v || (!n && !text))
		return NULL;
	if (!(p = malloc(n + 1))) {
		b->bad = true;
		return NULL;
	}
	memcpy(p, v, n);
	p[n] = 0;
	return p;
}

static void get_values(struct rbuf *b, struct target_value *v, uint32_t want)
{
	uint32_t n = get_u32(b);

	/* Ids are append-only (extrospect_abi.h): a capture made before the last ones were added
	 * has a prefix of them, the rest absent. More than we know is another build's numbering. */
	memset(v, 0, sizeof(*v) * want);
	if (n > want) {
		b->bad = true;
		return;
	}
	for (uint32_t i = 0; i < n && !b->bad; i++) {
		v[i].value = (int64_t)get_u64(b);
		v[i].source = get_u8(b);
		v[i].present = get_u8(b) != 0;
		v[i].verified = get_u8(b) != 0;
		if (v[i].source > TSRC_INSTALL)
			b->bad = true;
	}
}

static void parse_target(struct rbuf *b, struct capfile *f)
{
	f->pid = get_u32(b);
	f->frame_layout = get_u32(b);
	f->flavor = get_u32(b);
	f->has_layout = get_u32(b) != 0;
	get_str(b, f->erts_version, sizeof(f->erts_version));
	get_str(b, f->otp_release, sizeof(f->otp_release));
	get_values(b, f->off, XP_OFF_COUNT);
	get_values(b, f->addr, XP_ADDR_COUNT);
	f->include_idle = get_u8(b);
	f->only_erlang = get_u8(b);
	f->lines = get_u8(b);
	f->all_threads = get_u8(b);
	get_str(b, f->name, sizeof(f->name));
	get_str(b, f->erlang_pid, sizeof(f->erlang_pid));
}

static int parse_sched(struct rbuf *b, struct capfile *f)
{
	struct target_sched *s, *v;

	if (f->nsched >= CAPFILE_MAX_SCHEDS)
		return -EPROTO;
	if (!(v = realloc(f->sched, (f->nsched + 1) * sizeof(*v))))
		return -ENOMEM;
	f->sched = v;
	s = &v[f->nsched++];
	memset(s, 0, sizeof(*s));
	s->type = get_u32(b);
	s->number = get_u32(b);
	s->tid = (pid_t)get_u32(b);
	s->esdp = get_u64(b);
	s->esdp_checked = get_u8(b);
	s->from_stride = get_u8(b);
	get_str(b, s->comm, sizeof(s->comm));
	return 0;
}

static int parse_read(struct rbuf *b, struct cap_read **v, size_t *n, size_t *cap, bool pool)
{
	uint64_t addr = get_u64(b);
	uint32_t len = pool ? (uint32_t)(b->n - b->at) : get_u32(b);
	int32_t rc = pool ? 0 : (int32_t)get_u32(b);
	const void *data = rc == 0 ? take(b, len) : NULL;

	if (b->bad || !len || len > MEM_MAX_READ || rc > 0 || len - 1 > UINT64_MAX - addr)
		return -EPROTO;
	return capfile__add_read(v, n, cap, addr, data, len, rc);
}

static int parse_name(struct rbuf *b, struct capfile *f, bool module)
{
	uint64_t pc = get_u64(b);
	uint8_t flag = get_u8(b);
	int32_t rc = module ? 0 : (int32_t)get_u32(b);
	size_t len;
	char *name = (char *)get_rest(b, &len, true);
	int err;

	if (b->bad || len > 4096) {
		free(name);
		return -EPROTO;
	}
	err = module ? capfile__add_name(&f->modules, &f->nmodules, &f->modules_cap, pc, false, 0,
					 flag ? name : NULL)
		     : capfile__add_name(&f->names, &f->nnames, &f->names_cap, pc, flag, rc, name);
	free(name);
	return err;
}

static int parse_sample(struct rbuf *b, struct capfile *f)
{
	struct cap_sample *s, *v;
	size_t len;
	uint8_t flags;

	if (f->nsamples >= CAPFILE_MAX_SAMPLES)
		return -EPROTO;
	if (f->nsamples == f->samples_cap) {
		size_t want = f->samples_cap ? f->samples_cap * 2 : 64;

		if (!(v = realloc(f->samples, want * sizeof(*v))))
			return -ENOMEM;
		f->samples = v;
		f->samples_cap = want;
	}
	s = &f->samples[f->nsamples++];
	memset(s, 0, sizeof(*s));
	s->ps.ip = get_u64(b);
	s->ps.time = get_u64(b);
	s->ps.pid = get_u32(b);
	s->ps.tid = get_u32(b);
	s->ps.cpu = get_u32(b);
	/* bit 0: the user registers are valid; bit 1: taken in the kernel (older files: 0). */
	flags = get_u8(b);
	if (flags > 3)
		return -EPROTO;
	s->ps.regs_valid = flags & 1;
	s->ps.kernel = flags >> 1;
	if (get_u32(b) != PERF_R_COUNT)
		return -EPROTO;
	for (int i = 0; i < PERF_R_COUNT; i++)
		s->ps.regs[i] = get_u64(b);
	s->stack = get_rest(b, &len, false);
	if (b->bad || len > (1u << 20))
		return -EPROTO;
	s->ps.stack = s->stack;
	s->ps.stack_size = len;
	return 0;
}

static int parse_kcap(struct rbuf *b, struct cap_sample *s)
{
	struct kcap_rec *k = &s->k;
	uint32_t span_len;
	const void *v;
	uint8_t flags;

	if (s->has_kcap)
		return -EPROTO;
	s->has_kcap = true;
	k->tid = get_u32(b);
	k->time = get_u64(b);
	k->ip = get_u64(b);
	k->sp = get_u64(b);
	k->cp = get_u64(b);
	flags = get_u8(b);
	k->from_scheduler = flags & 1;
	k->sched_none = flags & 2;
	k->state_known = flags & 4;
	k->stack_addr = get_u64(b);
	span_len = get_u32(b);
	if (span_len && span_len != KCAP_SPAN_MAX)
		return -EPROTO;
	if (span_len && (v = take(b, span_len)) && (s->span = malloc(span_len)))
		memcpy(s->span, v, span_len);
	k->stack_len = get_u32(b);
	if (k->stack_len > KCAP_STACK_MAX || (span_len && !s->span))
		return b->bad ? -EPROTO : -ENOMEM;
	if (get_u8(b) && k->stack_len && (v = take(b, k->stack_len))) {
		if (!(s->kstack = malloc(k->stack_len)))
			return -ENOMEM;
		memcpy(s->kstack, v, k->stack_len);
	}
	if (k->state_known)
		k->state = get_u32(b);
	k->span = s->span;
	k->stack = s->kstack;
	if (!k->stack)
		k->stack_len = 0;
	return b->bad ? -EPROTO : 0;
}

static int parse_unwind(struct rbuf *b, struct cap_sample *s)
{
	struct unwind_result *ur;

	if (s->ur || !(s->ur = ur = calloc(1, sizeof(*ur))))
		return s->ur ? -EPROTO : -ENOMEM;
	ur->stop = get_u32(b);
	ur->nframes = get_u32(b);
	if (ur->stop >= UNWIND_STOP_COUNT || ur->nframes > UNWIND_MAX_FRAMES)
		return -EPROTO;
	ur->jit_pc = get_u64(b);
	ur->jit_sp = get_u64(b);
	ur->jit_bp = get_u64(b);
	ur->jit_r13 = get_u64(b);
	ur->jit_bp_valid = get_u8(b);
	ur->jit_r13_valid = get_u8(b);
	for (size_t i = 0; i < ur->nframes; i++) {
		ur->frames[i].pc = get_u64(b);
		ur->frames[i].activation = get_u8(b);
	}
	return b->bad ? -EPROTO : 0;
}

/* One record. The target comes first; a sample's own records follow its SAMPLE. */
static int parse_record(struct rbuf *b, uint8_t tag, struct capfile *f, bool *have_target)
{
	struct cap_sample *s = f->nsamples ? &f->samples[f->nsamples - 1] : NULL;
	size_t len;

	if (!*have_target && tag != CAPREC_TARGET)
		return -EPROTO;
	switch (tag) {
	case CAPREC_TARGET:
		if (*have_target)
			return -EPROTO;
		*have_target = true;
		parse_target(b, f);
		return 0;
	case CAPREC_SCHED:
		return parse_sched(b, f);
	case CAPREC_POOL:
		return parse_read(b, &f->pool, &f->npool, &f->pool_cap, true);
	case CAPREC_NAME:
	case CAPREC_MODULE:
		return parse_name(b, f, tag == CAPREC_MODULE);
	case CAPREC_SAMPLE:
		return parse_sample(b, f);
	}
	if (!s)
		return -EPROTO;
	switch (tag) {
	case CAPREC_KCAP:
		return parse_kcap(b, s);
	case CAPREC_UNWIND:
		return parse_unwind(b, s);
	case CAPREC_READ:
		if (s->nreads >= CAPFILE_MAX_READS)
			return -EPROTO;
		return parse_read(b, &s->reads, &s->nreads, &s->reads_cap, false);
	case CAPREC_EXPECT:
		if (s->expect || b->n > CAPFILE_MAX_LINE)
			return -EPROTO;
		s->expect = (char *)get_rest(b, &len, true);
		return s->expect && !memchr(s->expect, 0, len) ? 0 : -EPROTO;
	}
	return -EPROTO;
}

static int parse_all(const uint8_t *p, size_t n, struct capfile *f)
{
	struct rbuf file = {.p = p, .n = n};
	const void *magic = take(&file, 8);
	bool have_target = false;
	int rc = 0;

	if (!magic || memcmp(magic, CAPFILE_MAGIC, 8) || get_u32(&file) != CAPFILE_VERSION)
		return -EPROTO;
	while (!rc && file.at < file.n) {
		uint8_t tag = get_u8(&file);
		uint32_t len = get_u32(&file);
		struct rbuf rec = {.p = take(&file, len), .n = len};

		if (file.bad || len > CAPFILE_MAX_RECORD)
			return -EPROTO;
		rc = parse_record(&rec, tag, f, &have_target);
		if (!rc && (rec.bad || rec.at != rec.n))
			rc = -EPROTO;
	}
	return rc ? rc : have_target ? 0 : -EPROTO;
}

static int pool_cmp(const void *a, const void *b)
{
	const struct cap_read *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->len < y->len ? -1 : x->len > y->len;
}

static int read_file(const char *path, uint8_t **out, size_t *n)
{
	gzFile g = gzopen(path, "rb");
	size_t cap = 1 << 20;
	uint8_t *p = malloc(cap), *q;
	int got, rc = 0;

	*n = 0;
	if (!g || !p) {
		rc = !g ? (errno ? -errno : -ENOENT) : -ENOMEM;
		goto cleanup;
	}
	while ((got = gzread(g, p + *n, (unsigned)(cap - *n))) > 0) {
		*n += (size_t)got;
		if (*n < cap)
			continue;
		if (cap >= CAPFILE_MAX_BYTES || !(q = realloc(p, cap * 2))) {
			rc = cap >= CAPFILE_MAX_BYTES ? -EFBIG : -ENOMEM;
			goto cleanup;
		}
		p = q;
		cap *= 2;
	}
	if (got < 0)
		rc = -EPROTO;
cleanup:
	if (g)
		gzclose(g);
	if (rc)
		free(p);
	*out = rc ? NULL : p;
	return rc;
}

int capfile__parse(const uint8_t *p, size_t n, struct capfile *f)
{
	int rc;

	memset(f, 0, sizeof(*f));
	rc = parse_all(p, n, f);
	if (rc) {
		capfile__free(f);
		return rc;
	}
	if (f->npool)
		qsort(f->pool, f->npool, sizeof(*f->pool), pool_cmp);
	return 0;
}

int capfile__load(const char *path, struct capfile *f)
{
	uint8_t *p;
	size_t n;
	int rc;

	memset(f, 0, sizeof(*f));
	if ((rc = read_file(path, &p, &n)))
		return rc;
	rc = capfile__parse(p, n, f);
	free(p);
	return rc;
}

static void free_reads(struct cap_read *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].data);
	free(v);
}

void capfile__free_sample(struct cap_sample *s)
{
	free(s->stack);
	free(s->span);
	free(s->kstack);
	free(s->ur);
	free_reads(s->reads, s->nreads);
	free(s->expect);
	memset(s, 0, sizeof(*s));
}

void capfile__free(struct capfile *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->nsamples; i++)
		capfile__free_sample(&f->samples[i]);
	free(f->samples);
	free_reads(f->pool, f->npool);
	for (i = 0; i < f->nnames; i++)
		free(f->names[i].name);
	for (i = 0; i < f->nmodules; i++)
		free(f->modules[i].name);
	free(f->names);
	free(f->modules);
	free(f->sched);
	memset(f, 0, sizeof(*f));
}

/* As report/collapsed.c writes names: '%', ';', '\n', '\r' percent-encoded. */
static size_t put_name(char *buf, size_t at, size_t len, const char *s)
{
	for (; *s && at < len; s++) {
		const char *e = *s == '%'    ? "%25"
				: *s == ';'  ? "%3B"
				: *s == '\n' ? "%0A"
				: *s == '\r' ? "%0D"
					     : NULL;

		if (!e)
			buf[at++] = *s;
		else
			at += (size_t)snprintf(buf + at, len - at, "%s", e);
	}
	return at;
}

int capfile__line(const struct agg *a, uint32_t group, const uint32_t *frames, uint32_t n,
		  char *buf, size_t len)
{
	size_t at = put_name(buf, 0, len, agg__group_name(a, group));

	for (uint32_t i = 0; i < n && at < len; i++) {
		buf[at++] = ';';
		at = put_name(buf, at, len, agg__frame_name(a, frames[i]));
	}
	if (at >= len) {
		buf[len - 1] = 0;
		return -ENOSPC;
	}
	buf[at] = 0;
	return 0;
}
