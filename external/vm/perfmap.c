/* The perf map's entries, from the GDB JIT map (see perfmap.h): built, carried over from an
 * earlier map, formatted. Also linked into the agent NIF (c_src/perfmap_nif.c), so the sampler
 * and the agent write the same file the same way: no globals. Names come from the VM: bounded and
 * stripped of control characters. Does not own: the file on disk (perfmap_file.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "perfmap.h"

#define PM_STR_CHUNK (64u << 10)

struct pm_chunk {
	struct pm_chunk *next;
	size_t used, cap;
	char data[];
};

struct perfmap {
	struct perfmap_entry *v;
	size_t n, cap;
	struct pm_chunk *strings;
};

/* A copy of name with the '$' OTP's +JPperf map puts first, cut and made printable. */
static const char *pm_name(struct perfmap *pm, const char *name)
{
	size_t n = strnlen(name, PERFMAP_MAX_NAME);
	struct pm_chunk *c = pm->strings;
	char *dst;

	if (!c || c->cap - c->used < n + 2) {
		c = malloc(sizeof(*c) + PM_STR_CHUNK);
		if (!c)
			return NULL;
		c->next = pm->strings;
		c->used = 0;
		c->cap = PM_STR_CHUNK;
		pm->strings = c;
	}
	dst = c->data + c->used;
	dst[0] = '$';
	for (size_t i = 0; i < n; i++)
		dst[i + 1] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
	dst[n + 1] = '\0';
	c->used += n + 2;
	return dst;
}

static int pm_push(struct perfmap *pm, uint64_t start, uint64_t size, const char *name, bool copy)
{
	struct perfmap_entry *e;

	if (pm->n == pm->cap) {
		size_t ncap = pm->cap ? 2 * pm->cap : 1024;

		e = realloc(pm->v, ncap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		pm->v = e;
		pm->cap = ncap;
	}
	e = &pm->v[pm->n];
	e->start = start;
	e->size = size;
	e->name = copy ? pm_name(pm, name) : name;
	if (!e->name)
		return -ENOMEM;
	pm->n++;
	return 0;
}

static int pm_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Between two consecutive range boundaries the newest covering range is the same everywhere:
 * look it up once per piece and merge pieces of the same range. */
static int pm_sweep(struct perfmap *pm, const struct jitmap *jit, const uint64_t *pts, size_t n)
{
	const struct jit_range *cur = NULL;
	uint64_t cur_start = 0;
	int err;

	for (size_t k = 0; k + 1 < n; k++) {
		const struct jit_range *r = jitmap__lookup(jit, pts[k]);

		if (r == cur)
			continue;
		if (cur && (err = pm_push(pm, cur_start, pts[k] - cur_start, cur->name, true)))
			return err;
		cur = r;
		cur_start = pts[k];
	}
	if (cur && n)
		return pm_push(pm, cur_start, pts[n - 1] - cur_start, cur->name, true);
	return 0;
}

int perfmap__from_jit(const struct jitmap *jit, struct perfmap **out)
{
	size_t nr = jitmap__range_count(jit), n = 0, u = 0;
	struct perfmap *pm;
	uint64_t *pts;
	int err;

	if (!jit || !out)
		return -EINVAL;
	pm = calloc(1, sizeof(*pm));
	pts = malloc((2 * nr + 1) * sizeof(*pts));
	if (!pm || !pts) {
		free(pts);
		free(pm);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr; i++) {
		const struct jit_range *r = jitmap__range(jit, i);

		if (r->start < r->end) {
			pts[n++] = r->start;
			pts[n++] = r->end;
		}
	}
	qsort(pts, n, sizeof(*pts), pm_u64_cmp);
	for (size_t i = 0; i < n; i++)
		if (!u || pts[u - 1] != pts[i])
			pts[u++] = pts[i];
	err = pm_sweep(pm, jit, pts, u);
	free(pts);
	if (err) {
		perfmap__free(pm);
		return err;
	}
	*out = pm;
	return 0;
}

static int pm_entry_cmp(const void *a, const void *b)
{
	const struct perfmap_entry *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

/* Does any entry of the sorted v[0..n) intersect [start, end)? */
static bool pm_overlaps(const struct perfmap_entry *v, size_t n, uint64_t start, uint64_t end)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* first entry starting at or after end */
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].start < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && v[lo - 1].start + v[lo - 1].size > start;
}

int perfmap__carry(struct perfmap *pm, const struct perfmap *prev)
{
	size_t n;
	int err;

	if (!pm)
		return -EINVAL;
	n = pm->n; /* pm's own entries are sorted and disjoint */
	for (size_t i = 0; prev && i < prev->n; i++) {
		const struct perfmap_entry *e = &prev->v[i];

		if (pm_overlaps(pm->v, n, e->start, e->start + e->size))
			continue;
		/* The name without its '$': pm_name adds it again. */
		err = pm_push(pm, e->start, e->size, e->name + 1, true);
		if (err)
			return err;
	}
	if (pm->n > n)
		qsort(pm->v, pm->n, sizeof(*pm->v), pm_entry_cmp);
	return 0;
}

size_t perfmap__count(const struct perfmap *pm)
{
	return pm ? pm->n : 0;
}

const struct perfmap_entry *perfmap__entry(const struct perfmap *pm, size_t i)
{
	return pm && i < pm->n ? &pm->v[i] : NULL;
}

static bool pm_has_start(const struct perfmap *pm, uint64_t start)
{
	size_t lo = 0, hi = pm->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->v[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < pm->n && pm->v[lo].start == start;
}

size_t perfmap__new_since(const struct perfmap *pm, const struct perfmap *prev)
{
	size_t k = 0;

	for (size_t i = 0; pm && i < pm->n; i++)
		k += !prev || !pm_has_start(prev, pm->v[i].start);
	return k;
}

int perfmap__format(const struct perfmap *pm, FILE *f)
{
	if (!pm || !f)
		return -EINVAL;
	fputs(PERFMAP_MARKER "\n", f);
	for (size_t i = 0; i < pm->n; i++)
		fprintf(f, "%" PRIx64 " %" PRIx64 " %s\n", pm->v[i].start, pm->v[i].size,
			pm->v[i].name);
	return fflush(f) || ferror(f) ? -EIO : 0;
}

void perfmap__free(struct perfmap *pm)
{
	if (!pm)
		return;
	while (pm->strings) {
		struct pm_chunk *next = pm->strings->next;

		free(pm->strings);
		pm->strings = next;
	}
	free(pm->v);
	free(pm);
}
