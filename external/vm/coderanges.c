/* The module ranges table, read and checked against the JIT map. See coderanges.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coderanges.h"

static uint64_t word(const uint8_t *b, int32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

bool coderanges__prefilter(const struct xp_layout *row, const uint8_t *b)
{
	const struct xp_ranges_layout *L = &row->ranges;
	int32_t i, live = 0;

	for (i = 0; i < L->code_ix_count; i++) {
		const uint8_t *s = b + (size_t)i * (size_t)L->size;
		uint64_t mods = word(s, L->modules), n = word(s, L->n),
			 alloc = word(s, L->allocated), mid = word(s, L->mid);

		if (n > CODERANGES_MAX || alloc > CODERANGES_MAX || (mods & 7) || (mid & 7))
			return false;
		if (!mods && (n || alloc))
			return false;
		if (mods && (!mem__plausible(mods) || !alloc || (mid && !mem__plausible(mid))))
			return false;
		live += mods && n;
	}
	return live > 0;
}

/* Sorted by start, each start <= end, and disjoint. */
static bool sorted(const struct code_range *r, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		if (r[i].start > r[i].end || !mem__plausible(r[i].start))
			return false;
		if (i && (r[i - 1].start >= r[i].start || r[i - 1].end > r[i].start))
			return false;
	}
	return true;
}

static int read_ranges(struct mem *m, const struct xp_ranges_layout *L, uint64_t mods,
		       struct code_ranges *out)
{
	uint8_t *raw;
	uint64_t i;
	int err;

	out->r = malloc(out->n * sizeof(*out->r));
	raw = malloc(out->n * (uint64_t)L->range_size);
	err = out->r && raw ? 0 : -ENOMEM;
	if (!err)
		err = mem__read(m, mods, raw, out->n * (uint64_t)L->range_size);
	for (i = 0; !err && i < out->n; i++) {
		out->r[i].start = word(raw + i * (uint64_t)L->range_size, L->range_start);
		out->r[i].end = word(raw + i * (uint64_t)L->range_size, L->range_end);
	}
	if (!err && !sorted(out->r, out->n))
		err = -EINVAL;
	free(raw);
	return err;
}

int coderanges__read_table(struct mem *m, const struct xp_layout *row, uint64_t ranges_addr,
			   uint32_t ix, struct code_ranges *out)
{
	const struct xp_ranges_layout *L = row ? &row->ranges : NULL;
	uint8_t s[64];
	uint64_t mods, mid;
	int err;

	memset(out, 0, sizeof(*out));
	if (!L || L->size <= 0 || L->size > (int32_t)sizeof(s) || ix >= (uint32_t)L->code_ix_count)
		return -EINVAL;
	out->code_ix = ix;
	out->table = ranges_addr + (uint64_t)ix * (uint64_t)L->size;
	err = mem__read(m, out->table, s, (size_t)L->size);
	if (err)
		return err;
	mods = word(s, L->modules);
	out->n = word(s, L->n);
	out->allocated = word(s, L->allocated);
	mid = word(s, L->mid);
	if (out->n > out->allocated || out->allocated > CODERANGES_MAX)
		return -EINVAL;
	if (!out->n)
		return 0;
	/* mid caches the last lookup: one of the n ranges (B/beam_ranges.c find_range). */
	if ((mods & 7) || !mem__plausible(mods) || mid < mods ||
	    mid >= mods + out->n * (uint64_t)L->range_size ||
	    (mid - mods) % (uint64_t)L->range_size)
		return -EINVAL;
	err = read_ranges(m, L, mods, out);
	if (err)
		coderanges__free(out);
	return err;
}

int coderanges__read(struct mem *m, const struct xp_layout *row, uint64_t ix_addr,
		     uint64_t ranges_addr, struct code_ranges *out)
{
	uint32_t ix, again;
	int err;

	memset(out, 0, sizeof(*out));
	if (!row)
		return -EINVAL;
	err = mem__read_u32(m, ix_addr, &ix);
	if (err)
		return err;
	if (ix >= (uint32_t)row->ranges.code_ix_count)
		return -EINVAL;
	err = coderanges__read_table(m, row, ranges_addr, ix, out);
	if (!err && (err = mem__read_u32(m, ix_addr, &again)) == 0 && again != ix)
		err = -EAGAIN;
	if (err)
		coderanges__free(out);
	return err;
}

bool coderanges__contains(const struct code_ranges *cr, uint64_t start, uint64_t end)
{
	uint64_t lo = 0, hi = cr->n;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (cr->r[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < cr->n && cr->r[lo].start == start && cr->r[lo].end == end;
}

void coderanges__free(struct code_ranges *cr)
{
	free(cr->r);
	cr->r = NULL;
	cr->n = 0;
}

/* A JIT module entry: its code, its position in the walk (newest first) and name. */
struct entry {
	struct code_range code;
	size_t index;
	const char *name;
	bool in_table;
};

static int code_cmp(const struct code_range *x, const struct code_range *y)
{
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

static int by_code(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = code_cmp(&x->code, &y->code);

	return c ? c : (x->index > y->index) - (x->index < y->index);
}

static int by_name(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* Entries sorted by code: is want some entry's code? */
static bool entries_hold(const struct entry *e, size_t n, const struct code_range *want)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (code_cmp(&e[mid].code, want) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && code_cmp(&e[lo].code, want) == 0;
}

/* Sorted by code: only the newest of entries with the same code can be the table's (OTP 25 keeps
 * purged modules' entries, and a new load may reuse their memory). */
static void mark_in_table(const struct code_ranges *cr, struct entry *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		e[i].in_table = (i == 0 || code_cmp(&e[i - 1].code, &e[i].code) != 0) &&
				coderanges__contains(cr, e[i].code.start, e[i].code.end);
}

/* Sorted by name: an entry not in the table is old code when one of its name is. */
static void classify(struct entry *e, size_t n, struct coderanges_jit *out)
{
	size_t i, j, k;

	for (i = 0; i < n; i = j) {
		bool any = false;

		for (j = i; j < n && strcmp(e[j].name, e[i].name) == 0; j++)
			any |= e[j].in_table;
		for (k = i; k < j; k++) {
			if (e[k].in_table)
				continue;
			out->jit_not_in_table++;
			if (any) {
				out->jit_old++;
				continue;
			}
			if (out->jit_other < CODERANGES_NAMES)
				out->other_names[out->jit_other] = e[k].name;
			out->jit_other++;
		}
	}
}

int coderanges__check_jit(const struct code_ranges *cr, const struct jitmap *map,
			  struct coderanges_jit *out)
{
	size_t nm = jitmap__module_count(map), n = 0, i;
	struct entry *e = malloc((nm + 1) * sizeof(*e));

	memset(out, 0, sizeof(*out));
	if (!e)
		return -ENOMEM;
	out->ranges = cr->n;
	for (i = 0; i < nm; i++) {
		const struct jit_module_info *mi = jitmap__module(map, (uint32_t)i);

		if (mi->name[0]) /* not the emulator entry */
			e[n++] = (struct entry){
			    {mi->base, mi->base + mi->code_size}, i, mi->name, false};
	}
	out->jit_modules = n;
	qsort(e, n, sizeof(*e), by_code);
	mark_in_table(cr, e, n);
	for (i = 0; i < cr->n; i++) {
		if (cr->r[i].start == cr->r[i].end)
			out->purged++;
		else if (entries_hold(e, n, &cr->r[i]))
			out->matched++;
		else if (out->unmatched++ == 0)
			out->first_unmatched = cr->r[i].start;
	}
	qsort(e, n, sizeof(*e), by_name);
	classify(e, n, out);
	free(e);
	return 0;
}
