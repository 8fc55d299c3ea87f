/* pprof's profile.proto (external/third_party/pprof), gzipped, as `go tool pprof`, Pyroscope,
 * Parca and Grafana read it: one Location per aggregate frame (and one per group, the root, as in
 * every other format), Functions by (name, file), a Mapping per native module with its build-id,
 * and per sample the labels the sampler tagged it with (pid, registered_name or initial_call,
 * scheduler). The encoding is
 * libprotobuf-c's over protoc-c's code; this file only fills the messages. Does not own: the
 * aggregate, where the bytes go. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "elfsym.h"
#include "hash.h"
#include "idtab.h"
#include "proc.h"
#include "profile.pb-c.h"
#include "report.h"
#include "sampler.h"
#include "path.h"

typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__ValueType pb_value_type;

#define PPROF_MAX_MAPPINGS 256
#define PPROF_MAX_LABELS   4

/* The string table: index 0 is "", as profile.proto requires. */
struct strtab {
	char **s;
	size_t n, cap;
	struct idtab idx;
};

struct fkey {
	int64_t name, file;
};

struct builder {
	const struct agg *a;
	const struct pprof_meta *m;
	struct strtab st;
	pb_function *fn, **fnp;
	size_t nfn;
	struct idtab fnidx;
	pb_location *loc, **locp;
	pb_line *line, **linep;
	size_t nloc;
	pb_mapping map[PPROF_MAX_MAPPINGS], *mapp[PPROF_MAX_MAPPINGS];
	const char *mod[PPROF_MAX_MAPPINGS]; /* the aggregate's module name of each */
	size_t nmap;
	struct proc_maps *maps; /* the target's, NULL when unreadable (the VM exited) */
	pb_sample *smp, **smpp;
	size_t nsmp;
	uint64_t *locids;
	int64_t *values;
	pb_label *labels, **labelp;
};

/* ---- strings ------------------------------------------------------------------------------- */

static uint64_t str_hash_id(const void *ctx, uint32_t id)
{
	const char *s = ((const struct strtab *)ctx)->s[id];

	return hash__bytes(HASH_INIT, s, strlen(s));
}

static bool str_eq(const void *ctx, uint32_t id, const void *key)
{
	return !strcmp(((const struct strtab *)ctx)->s[id], key);
}

/* A copy that is valid UTF-8 (proto3 strings must be; names are untrusted bytes): each byte
 * that starts no well-formed sequence becomes U+FFFD. */
static char *utf8_copy(const char *s)
{
	size_t n = strlen(s), i = 0, o = 0, k;
	char *d = malloc(3 * n + 1);

	while (d && i < n) {
		k = report__utf8_len(s + i);
		if (k) {
			memcpy(d + o, s + i, k);
			o += k;
			i += k;
		} else {
			memcpy(d + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	if (d)
		d[o] = '\0';
	return d;
}

static int str_intern(struct strtab *t, const char *s, int64_t *out)
{
	char *copy = utf8_copy(s);
	size_t slot, cap = t->cap;
	uint32_t id;
	int err = -ENOMEM;

	if (!copy)
		return -ENOMEM;
	if ((err = idtab__reserve(&t->idx, 256, str_hash_id, t)))
		goto cleanup;
	if (!idtab__find(&t->idx, hash__bytes(HASH_INIT, copy, strlen(copy)), str_eq, t, copy,
			 &slot, &id)) {
		*out = id;
		err = 0;
		goto cleanup;
	}
	if (t->n + 1 > cap) {
		char **p = realloc(t->s, (cap ? cap * 2 : 256) * sizeof(*p));

		err = -ENOMEM;
		if (!p)
			goto cleanup;
		t->s = p;
		t->cap = cap ? cap * 2 : 256;
	}
	t->s[t->n] = copy;
	idtab__insert(&t->idx, slot, (uint32_t)t->n);
	*out = (int64_t)t->n++;
	return 0;
cleanup:
	free(copy);
	return err;
}

static void strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	idtab__free(&t->idx);
}

/* ---- functions, mappings, locations -------------------------------------------------------- */

static uint64_t fn_hash(const struct fkey *k)
{
	return hash__bytes(HASH_INIT, k, sizeof(*k));
}

static uint64_t fn_hash_id(const void *ctx, uint32_t id)
{
	const pb_function *f = &((const struct builder *)ctx)->fn[id];
	struct fkey k = {f->name, f->filename};

	return fn_hash(&k);
}

static bool fn_eq(const void *ctx, uint32_t id, const void *key)
{
	const pb_function *f = &((const struct builder *)ctx)->fn[id];
	const struct fkey *k = key;

	return f->name == k->name && f->filename == k->file;
}

/* The Function named name in file (0: none), created once; *id is its id. */
static int function_of(struct builder *b, const char *name, const char *file, uint64_t *id)
{
	struct fkey k;
	size_t slot;
	uint32_t i;
	int err;

	if ((err = str_intern(&b->st, name, &k.name)) ||
	    (err = str_intern(&b->st, file ? file : "", &k.file)))
		return err;
	if ((err = idtab__reserve(&b->fnidx, 256, fn_hash_id, b)))
		return err;
	if (idtab__find(&b->fnidx, fn_hash(&k), fn_eq, b, &k, &slot, &i)) {
		i = (uint32_t)b->nfn++;
		perftools__profiles__function__init(&b->fn[i]);
		b->fn[i].id = i + 1;
		b->fn[i].name = b->fn[i].system_name = k.name;
		b->fn[i].filename = k.file;
		b->fnp[i] = &b->fn[i];
		idtab__insert(&b->fnidx, slot, i);
	}
	*id = i + 1;
	return 0;
}

/* --lines: "mod:fun/2 (mod.erl:12)" is function "mod:fun/2" of mod.erl at line 12. */
static bool split_line(const char *name, char *fn, size_t fnlen, char *file, size_t filelen,
		       int64_t *line)
{
	const char *open = strrchr(name, '('), *colon;
	size_t n = strlen(name);
	char *end;

	if (!open || open == name || open[-1] != ' ' || n < 2 || name[n - 1] != ')')
		return false;
	colon = strrchr(open, ':');
	if (!colon || colon == open + 1)
		return false;
	*line = strtoll(colon + 1, &end, 10);
	if (end != name + n - 1 || *line <= 0)
		return false;
	snprintf(fn, fnlen, "%.*s", (int)(open - 1 - name), name);
	snprintf(file, filelen, "%.*s", (int)(colon - open - 1), open + 1);
	return true;
}

/* The lowest and highest addresses of the file whose name (or base name) is module in the
 * target's maps; its first mapping. NULL when it is not mapped (unloaded since). */
static const struct proc_map *module_range(const struct proc_maps *maps, const char *module,
					   uint64_t *lo, uint64_t *hi)
{
	const struct proc_map *first = NULL;
	size_t i;

	for (i = 0; maps && i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		if (strcmp(m->path, module) && strcmp(path__base(m->path), module))
			continue;
		if (!first || m->start < *lo)
			*lo = m->start;
		if (!first || m->end > *hi)
			*hi = m->end;
		if (!first || m->start < first->start)
			first = m;
	}
	return first;
}

/* The mapping of a native module (beam.smp, a NIF's .so): its path, address range and build-id
 * as the target's maps and file say now; 0 when there are too many. */
static uint64_t mapping_of(struct builder *b, const char *module)
{
	const struct proc_map *pm;
	struct elf_image *img = NULL;
	char path[4096];
	pb_mapping *mp;
	uint64_t lo = 0, hi = 0;
	size_t i;

	pm = module_range(b->maps, module, &lo, &hi);
	if (pm)
		module = pm->path;
	for (i = 0; i < b->nmap; i++) {
		if (!strcmp(b->mod[i], module))
			return b->map[i].id;
	}
	if (b->nmap >= PPROF_MAX_MAPPINGS)
		return 0;
	mp = &b->map[b->nmap];
	perftools__profiles__mapping__init(mp);
	if (str_intern(&b->st, module, &mp->filename))
		return 0;
	mp->id = b->nmap + 1;
	mp->has_functions = true;
	if (pm) {
		mp->memory_start = lo;
		mp->memory_limit = hi;
		mp->file_offset = pm->offset;
	}
	if (pm && !proc__resolve_path(b->m->pid, pm->path, pm->inode, path, sizeof(path)) &&
	    !elf_image__open(path, &img) && elf_image__build_id(img)[0])
		(void)str_intern(&b->st, elf_image__build_id(img), &mp->build_id);
	elf_image__free(img);
	b->mod[b->nmap] = module; /* the maps' path, or the aggregate's name */
	b->mapp[b->nmap++] = mp;
	return mp->id;
}

static int add_location(struct builder *b, uint64_t fn, int64_t line, uint64_t mapping)
{
	size_t i = b->nloc++;

	perftools__profiles__line__init(&b->line[i]);
	b->line[i].function_id = fn;
	b->line[i].line = line;
	b->linep[i] = &b->line[i];
	perftools__profiles__location__init(&b->loc[i]);
	b->loc[i].id = i + 1;
	b->loc[i].mapping_id = mapping;
	b->loc[i].n_line = 1;
	b->loc[i].line = &b->linep[i];
	b->locp[i] = &b->loc[i];
	return 0;
}

/* Location id f + 1 for frame f, then nframes + g + 1 for group g. */
static int add_locations(struct builder *b)
{
	size_t nf = agg__nframes(b->a), ng = agg__ngroups(b->a), i;
	char fname[1024], file[512];
	uint64_t fn, mapping;
	int64_t line;
	int err;

	/* pprof takes the first mapping for the main binary (beam.smp): the maps' first file. */
	if (b->maps && b->maps->n && b->maps->v[0].path[0] == '/')
		(void)mapping_of(b, b->maps->v[0].path);
	for (i = 0; i < nf; i++) {
		const char *name = agg__frame_name(b->a, (uint32_t)i);
		const char *mod = agg__frame_module(b->a, (uint32_t)i);

		line = 0;
		mapping = 0;
		if (b->m->lines && agg__frame_kind(b->a, (uint32_t)i) == FRAME_ERLANG &&
		    split_line(name, fname, sizeof(fname), file, sizeof(file), &line))
			err = function_of(b, fname, file, &fn);
		else
			err = function_of(b, name, NULL, &fn);
		if (err)
			return err;
		if (mod && agg__frame_kind(b->a, (uint32_t)i) == FRAME_NATIVE)
			mapping = mapping_of(b, mod);
		add_location(b, fn, line, mapping);
	}
	for (i = 0; i < ng; i++) {
		if ((err = function_of(b, agg__group_name(b->a, (uint32_t)i), NULL, &fn)))
			return err;
		add_location(b, fn, 0, 0);
	}
	return 0;
}

/* ---- samples ------------------------------------------------------------------------------- */

static void set_label(struct builder *b, pb_sample *s, const char *key, const char *value)
{
	pb_label *l = s->label[s->n_label];

	perftools__profiles__label__init(l);
	if (str_intern(&b->st, key, &l->key) || str_intern(&b->st, value, &l->str))
		return;
	s->n_label++;
}

/* The stack's label set (its tag - 1): "key=value" pairs, AGG_LABEL_SEP between them. */
static void add_labels(struct builder *b, pb_sample *s, const struct agg_stack *st)
{
	const char *t = st->tag ? agg__labelset_text(b->a, st->tag - 1) : NULL;
	char key[64], value[1024];

	while (t && *t && s->n_label < PPROF_MAX_LABELS) {
		size_t n = strcspn(t, "\x1f"), k = strcspn(t, "=");

		if (k < n && k < sizeof(key) && n - k - 1 < sizeof(value)) {
			snprintf(key, sizeof(key), "%.*s", (int)k, t);
			snprintf(value, sizeof(value), "%.*s", (int)(n - k - 1), t + k + 1);
			set_label(b, s, key, value);
		}
		t += n + (t[n] != '\0');
	}
}

static int add_samples(struct builder *b)
{
	size_t n = agg__nstacks(b->a), i, used = 0, nf = agg__nframes(b->a);
	int nvalues = b->m->period_ns ? 2 : 1;
	struct agg_stack st;

	for (i = 0; i < n; i++) {
		pb_sample *s = &b->smp[i];
		uint32_t k;

		agg__stack(b->a, i, &st);
		perftools__profiles__sample__init(s);
		s->location_id = b->locids + used;
		for (k = st.nframes; k-- > 0;)
			s->location_id[s->n_location_id++] = (uint64_t)st.frames[k] + 1;
		s->location_id[s->n_location_id++] = nf + st.group + 1;
		used += s->n_location_id;
		s->value = b->values + (size_t)nvalues * i;
		s->n_value = (size_t)nvalues;
		s->value[0] = (int64_t)st.count;
		if (nvalues == 2)
			s->value[1] = (int64_t)(st.count * b->m->period_ns);
		s->label = b->labelp + PPROF_MAX_LABELS * i;
		add_labels(b, s, &st);
		b->smpp[i] = s;
	}
	b->nsmp = n;
	return 0;
}

/* ---- the profile --------------------------------------------------------------------------- */

static int builder_alloc(struct builder *b)
{
	size_t nf = agg__nframes(b->a), nl = nf + agg__ngroups(b->a);
	size_t n = agg__nstacks(b->a), nids = 0, i;
	struct agg_stack st;

	for (i = 0; i < n; i++) {
		agg__stack(b->a, i, &st);
		nids += st.nframes + 1;
	}
	b->fn = calloc(nl + 1, sizeof(*b->fn));
	b->fnp = calloc(nl + 1, sizeof(*b->fnp));
	b->loc = calloc(nl + 1, sizeof(*b->loc));
	b->locp = calloc(nl + 1, sizeof(*b->locp));
	b->line = calloc(nl + 1, sizeof(*b->line));
	b->linep = calloc(nl + 1, sizeof(*b->linep));
	b->smp = calloc(n + 1, sizeof(*b->smp));
	b->smpp = calloc(n + 1, sizeof(*b->smpp));
	b->locids = calloc(nids + 1, sizeof(*b->locids));
	b->values = calloc(2 * n + 1, sizeof(*b->values));
	b->labels = calloc(PPROF_MAX_LABELS * n + 1, sizeof(*b->labels));
	b->labelp = calloc(PPROF_MAX_LABELS * n + 1, sizeof(*b->labelp));
	if (!b->fn || !b->fnp || !b->loc || !b->locp || !b->line || !b->linep || !b->smp ||
	    !b->smpp || !b->locids || !b->values || !b->labels || !b->labelp)
		return -ENOMEM;
	for (i = 0; i < PPROF_MAX_LABELS * n; i++)
		b->labelp[i] = &b->labels[i];
	return 0;
}

static void builder_free(struct builder *b)
{
	proc_maps__free(b->maps);
	strtab_free(&b->st);
	idtab__free(&b->fnidx);
	free(b->fn);
	free(b->fnp);
	free(b->loc);
	free(b->locp);
	free(b->line);
	free(b->linep);
	free(b->smp);
	free(b->smpp);
	free(b->locids);
	free(b->values);
	free(b->labels);
	free(b->labelp);
}

static int value_type(struct builder *b, pb_value_type *v, const char *type, const char *unit)
{
	int err;

	perftools__profiles__value_type__init(v);
	if ((err = str_intern(&b->st, type, &v->type)))
		return err;
	return str_intern(&b->st, unit, &v->unit);
}

/* m->notes, a comment a line (records lost, by scheduler and window: perf_loss.h). */
static int add_notes(struct builder *b, Perftools__Profiles__Profile *p, int64_t *comment)
{
	const char *s = b->m->notes, *nl;
	char line[512];
	int err;

	while (s && *s && p->n_comment < PPROF_MAX_COMMENTS) {
		nl = strchr(s, '\n');
		snprintf(line, sizeof(line), "%.*s", (int)(nl ? (size_t)(nl - s) : strlen(s)), s);
		if ((err = str_intern(&b->st, line, &comment[p->n_comment])))
			return err;
		p->n_comment++;
		s = nl ? nl + 1 : NULL;
	}
	return 0;
}

/* The profile's header: sample types, period, times, comments. */
static int fill_header(struct builder *b, Perftools__Profiles__Profile *p, pb_value_type vt[3],
		       pb_value_type *vtp[2], int64_t *comment)
{
	int err;

	if ((err = value_type(b, &vt[0], "samples", "count")))
		return err;
	vtp[0] = &vt[0];
	p->n_sample_type = 1;
	if (b->m->period_ns) {
		if ((err = value_type(b, &vt[1], "cpu", "nanoseconds")) ||
		    (err = value_type(b, &vt[2], "cpu", "nanoseconds")))
			return err;
		vtp[1] = &vt[1];
		p->n_sample_type = 2;
		p->period_type = &vt[2];
		p->period = (int64_t)b->m->period_ns;
		p->default_sample_type = vt[1].type;
	}
	p->sample_type = vtp;
	p->time_nanos = b->m->time_ns;
	p->duration_nanos = b->m->duration_ns;
	p->comment = comment;
	if (b->m->comment && !str_intern(&b->st, b->m->comment, &comment[p->n_comment]))
		p->n_comment++;
	return add_notes(b, p, comment);
}

/* deflate into a gzip stream (windowBits 15 + 16). */
static int gzip_bytes(const uint8_t *in, size_t n, uint8_t **out, size_t *outlen)
{
	z_stream z = {0};
	uLong cap;
	int rc;

	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, (uLong)n) + 32;
	*out = malloc(cap);
	if (!*out) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = *out;
	z.avail_out = (uInt)cap;
	rc = deflate(&z, Z_FINISH);
	*outlen = z.total_out;
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(*out);
		*out = NULL;
		return -EIO;
	}
	return 0;
}

int report__pprof_encode(const struct agg *a, const struct pprof_meta *m, uint8_t **out,
			 size_t *outlen)
{
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct builder b = {.a = a, .m = m};
	pb_value_type vt[3], *vtp[2];
	int64_t empty, comment[PPROF_MAX_COMMENTS];
	uint8_t *raw = NULL;
	size_t n;
	int err;

	*out = NULL;
	if (m->pid > 0)
		(void)proc_maps__load(m->pid, &b.maps);
	if ((err = builder_alloc(&b)) || (err = str_intern(&b.st, "", &empty)) ||
	    (err = fill_header(&b, &p, vt, vtp, comment)) || (err = add_locations(&b)) ||
	    (err = add_samples(&b)))
		goto cleanup;
	p.n_sample = b.nsmp;
	p.sample = b.smpp;
	p.n_mapping = b.nmap;
	p.mapping = b.mapp;
	p.n_location = b.nloc;
	p.location = b.locp;
	p.n_function = b.nfn;
	p.function = b.fnp;
	p.n_string_table = b.st.n;
	p.string_table = b.st.s;
	n = perftools__profiles__profile__get_packed_size(&p);
	err = -ENOMEM;
	raw = malloc(n ? n : 1);
	if (!raw)
		goto cleanup;
	perftools__profiles__profile__pack(&p, raw);
	err = gzip_bytes(raw, n, out, outlen);
cleanup:
	free(raw);
	builder_free(&b);
	return err;
}

int report__pprof(const struct agg *a, const struct pprof_meta *m, FILE *f)
{
	uint8_t *buf;
	size_t n;
	int err;

	if (!a || !m || !f)
		return -EINVAL;
	if ((err = report__pprof_encode(a, m, &buf, &n)))
		return err;
	if (fwrite(buf, 1, n, f) != n)
		err = -EIO;
	free(buf);
	return err ? err : report__finish(f);
}
