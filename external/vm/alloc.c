/* The allocator instances and their counters. See alloc.h. Layouts: B/erl_alloc.h
 * (ErtsAllocatorInfo_t, ErtsAllocatorThrSpec_t; 25:136-163), B/erl_alloc_util.h (Allctr_t and
 * CarriersStats_t; 25:518-535, 25:648-807), B/erl_ao_firstfit_alloc.c (AOFF_Carrier_t, 25:107):
 * offsets from layout.c's rows. How system_info({allocator, A}) sums the same counters:
 * info_carriers and info_cpool (B/erl_alloc_util.c 25:5027, 25:5167). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

#define NAME_PREFIX_MAX 16

static const char *const drop_names[ALLOC_DROP_COUNT] = {"unreadable", "invalid", "walk"};

const char *alloc__drop_name(enum alloc_drop d)
{
	return (unsigned)d < ALLOC_DROP_COUNT ? drop_names[d] : "?";
}

bool alloc__supported(const struct xp_layout *row)
{
	return row && row->alloc.n_types > 0 && row->alloc.n_types <= ALLOC_MAX_TYPES &&
	       row->alloc.allctr_size > 0 && row->alloc.a_count > 0;
}

static int32_t i32_at(const uint8_t *b, int32_t off)
{
	int32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static uint64_t u64_at(const uint8_t *b, int32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

uint64_t alloc__mbc_free(const struct alloc_inst *a)
{
	uint64_t crr = a->mbc_mseg.size + a->mbc_sys.size + a->pool_carriers.size;
	uint64_t blk = a->mbc_blocks.size + a->pool_blocks.size;

	return crr > blk ? crr - blk : 0; /* racy counters may cross */
}

/* name_prefix ("binary_") + "alloc"; -EINVAL unless [a-z_]+ ending in '_'. */
static int read_name(struct mem *m, uint64_t prefix, char *out)
{
	char buf[NAME_PREFIX_MAX + 1] = {0};
	size_t i, n;

	if (!mem__plausible(prefix) || mem__read(m, prefix, buf, NAME_PREFIX_MAX))
		return -EFAULT;
	n = strnlen(buf, NAME_PREFIX_MAX);
	if (n < 2 || n == NAME_PREFIX_MAX || buf[n - 1] != '_')
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!((buf[i] >= 'a' && buf[i] <= 'z') || buf[i] == '_'))
			return -EINVAL;
	}
	memcpy(out, buf, n);
	memcpy(out + n, "alloc", 6);
	return 0;
}

static struct alloc_stat stat_at(const uint8_t *b, int32_t off)
{
	return (struct alloc_stat){.no = u64_at(b, off), .size = u64_at(b, off + 8)};
}

/* The counters of one Allctr_t copied into b. */
static void parse_stats(const struct xp_alloc_layout *l, const uint8_t *b, struct alloc_inst *a)
{
	int32_t mb = l->allctr_mbcs, sb = l->allctr_sbcs, j;

	a->mbc_mseg = stat_at(b, mb + l->cs_carriers + l->crr_mseg * 16);
	a->mbc_sys = stat_at(b, mb + l->cs_carriers + l->crr_sys * 16);
	a->sbc_mseg = stat_at(b, sb + l->cs_carriers + l->crr_mseg * 16);
	a->sbc_sys = stat_at(b, sb + l->cs_carriers + l->crr_sys * 16);
	for (j = 0; j < l->a_count; j++) {
		struct alloc_stat m = stat_at(b, mb + l->cs_blocks + j * l->bs_size);
		struct alloc_stat s = stat_at(b, sb + l->cs_blocks + j * l->bs_size);

		a->mbc_blocks.no += m.no;
		a->mbc_blocks.size += m.size;
		a->sbc_blocks.no += s.no;
		a->sbc_blocks.size += s.size;
		a->pool_blocks.no += u64_at(b, l->allctr_pool_no_blocks + j * 8);
		a->pool_blocks.size += u64_at(b, l->allctr_pool_blocks_size + j * 8);
	}
	a->pool_carriers.no = u64_at(b, l->allctr_pool_no_carriers);
	a->pool_carriers.size = u64_at(b, l->allctr_pool_carriers_size);
}

/* The largest free block over mbc_list, from each AOFF carrier's tree node (B/erl_ao_firstfit_
 * alloc.c 25:1057 aoff_largest_fblk_in_mbc). Each carrier must name this allocator as its owner
 * (Carrier_t.allctr, flags in the low bits): a carrier freed under the walk stops it. */
static void walk_mbcs(struct mem *m, const struct xp_alloc_layout *l, uint64_t first,
		      struct alloc_inst *a, struct alloc_reading *r)
{
	uint8_t buf[512];
	size_t len = (size_t)l->aoff_crr_largest + 8;
	uint64_t c = first, limit = a->mbc_mseg.no + a->mbc_sys.no + 64;

	if (len > sizeof(buf) || a->strat != (uint32_t)l->strat_aoff)
		return;
	while (c && a->walked < ALLOC_MAX_WALK && a->walked <= limit) {
		if ((c & 7) || !mem__plausible(c) || mem__read(m, c, buf, len) ||
		    (u64_at(buf, l->crr_allctr) & ~7ull) != a->addr) {
			r->drops[ALLOC_DROP_WALK]++;
			return;
		}
		if (u64_at(buf, l->aoff_crr_largest) > a->largest_free)
			a->largest_free = u64_at(buf, l->aoff_crr_largest);
		a->walked++;
		c = u64_at(buf, l->crr_next);
	}
	if (c) {
		r->drops[ALLOC_DROP_WALK]++;
		return;
	}
	a->have_largest = true;
}

/* The largest free block of the pooled carriers a created: the pool is one list per carrier pool
 * through ErtsAlcCPoolData_t.next from the sentinel (cpool_dbg_is_in_pool, B/erl_alloc_util.c
 * 25:3219; the low bits of next are marks); a carrier's cpool.max_size is its largest free block
 * (what cpool_fetch compares, 25:3526). A broken or endless list fails. */
static int pooled_largest(struct mem *m, const struct xp_alloc_layout *l, const uint8_t *b,
			  uint64_t self, uint64_t *out)
{
	uint64_t sentinel = u64_at(b, l->allctr_cpool_sentinel), cpd = sentinel;
	uint8_t buf[64];
	size_t len = (size_t)l->cpd_max_size + 8, n;

	*out = 0;
	if (!sentinel)
		return 0; /* an instance outside the pool (the global instance, 25:6822) */
	if (len > sizeof(buf) || !mem__plausible(sentinel) || mem__read(m, sentinel, buf, len))
		return -EFAULT;
	for (n = 0; n <= ALLOC_MAX_WALK; n++) {
		cpd = u64_at(buf, l->cpd_next) & ~7ull;
		if (cpd == sentinel)
			return 0;
		if (!mem__plausible(cpd) || mem__read(m, cpd, buf, len))
			return -EFAULT;
		if (u64_at(buf, l->cpd_orig_allctr) == self && u64_at(buf, l->cpd_max_size) > *out)
			*out = u64_at(buf, l->cpd_max_size);
	}
	return -ELOOP;
}

/* The largest free block of a's own carriers and of the pooled ones it created. */
static void find_largest(struct mem *m, const struct xp_alloc_layout *l, const uint8_t *b,
			 struct alloc_inst *a, struct alloc_reading *r)
{
	uint64_t pooled;

	walk_mbcs(m, l, u64_at(b, l->allctr_mbc_first), a, r);
	if (!a->have_largest)
		return;
	if (pooled_largest(m, l, b, a->addr, &pooled)) {
		r->drops[ALLOC_DROP_WALK]++;
		a->have_largest = false;
		return;
	}
	if (pooled > a->largest_free)
		a->largest_free = pooled;
}

/* Read the Allctr_t at addr, expected to be instance ix of type t. */
static int read_allctr(struct mem *m, const struct xp_alloc_layout *l, uint64_t addr, int32_t t,
		       int32_t ix, struct alloc_inst *a, uint8_t *b)
{
	memset(a, 0, sizeof(*a));
	a->addr = addr;
	a->type = t;
	a->ix = ix;
	if ((addr & 7) || !mem__plausible(addr) || mem__read(m, addr, b, (size_t)l->allctr_size))
		return -EFAULT;
	if (i32_at(b, l->allctr_alloc_no) != t || i32_at(b, l->allctr_ix) != ix)
		return -EINVAL;
	a->strat = (uint32_t)i32_at(b, l->allctr_strat);
	return read_name(m, u64_at(b, l->allctr_name_prefix), a->name);
}

/* The Allctr_t pointers of one type: thr_spec's allctr[] or the one in extra. */
static int instances(struct mem *m, const struct xp_alloc_layout *l, const uint8_t *info,
		     uint64_t **out, int32_t *n)
{
	uint8_t ts[64];
	uint64_t extra = u64_at(info, l->info_extra), arr;

	*out = NULL;
	*n = 1;
	if (!i32_at(info, l->info_thr_spec)) {
		*out = malloc(sizeof(**out));
		if (!*out)
			return -ENOMEM;
		**out = extra;
		return 0;
	}
	if ((size_t)l->tspec_size > sizeof(ts) || !mem__plausible(extra) ||
	    mem__read(m, extra, ts, (size_t)l->tspec_size))
		return -EFAULT;
	*n = i32_at(ts, l->tspec_n);
	arr = u64_at(ts, l->tspec_allctr);
	if (*n < 1 || *n > ALLOC_MAX_INSTANCES || !mem__plausible(arr))
		return -EINVAL;
	*out = calloc((size_t)*n, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	return mem__read(m, arr, *out, (size_t)*n * 8) ? -EFAULT : 0;
}

static int read_info(struct mem *m, const struct xp_layout *row, uint64_t info, uint8_t **out)
{
	size_t len = (size_t)row->alloc.n_types * (size_t)row->alloc.info_size;

	*out = NULL;
	if (!alloc__supported(row))
		return -EINVAL;
	if (!mem__plausible(info))
		return -EFAULT;
	*out = malloc(len);
	if (!*out)
		return -ENOMEM;
	return mem__read(m, info, *out, len) ? -EFAULT : 0;
}

static bool enabled_au(const struct xp_alloc_layout *l, const uint8_t *e)
{
	return i32_at(e, l->info_alloc_util) && i32_at(e, l->info_enabled) &&
	       u64_at(e, l->info_extra);
}

bool alloc__info_prefilter(const struct xp_layout *row, const uint8_t *b)
{
	const struct xp_alloc_layout *l = &row->alloc;
	int32_t t, au = 0;

	for (t = 0; t < l->n_types; t++) {
		const uint8_t *e = b + (size_t)t * (size_t)l->info_size;
		int32_t u = i32_at(e, l->info_alloc_util), en = i32_at(e, l->info_enabled);
		int32_t ts = i32_at(e, l->info_thr_spec);
		uint64_t x = u64_at(e, l->info_extra);

		if ((u | en) & ~1 || ts < 0 || ts > ALLOC_MAX_INSTANCES || (x & 7) ||
		    (t == 0 && (u || en || x)))
			return false;
		au += u && en && mem__plausible(x);
	}
	return au >= 3;
}

/* What each_type calls for an enabled alloc_util type t, its entry e and a buffer b of
 * allctr_size bytes; a nonzero return stops the iteration. */
typedef int (*type_fn)(struct mem *m, const struct xp_alloc_layout *l, const uint8_t *e, int32_t t,
		       uint8_t *b, void *ctx);

static int each_type(struct mem *m, const struct xp_layout *row, uint64_t info, type_fn fn,
		     void *ctx)
{
	const struct xp_alloc_layout *l = &row->alloc;
	uint8_t *tab = NULL, *b = NULL;
	int32_t t;
	int err;

	if ((err = read_info(m, row, info, &tab)))
		goto cleanup;
	b = malloc((size_t)l->allctr_size);
	if (!b) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (t = 0; t < l->n_types && !err; t++) {
		const uint8_t *e = tab + (size_t)t * (size_t)l->info_size;

		if (enabled_au(l, e))
			err = fn(m, l, e, t, b, ctx);
	}
cleanup:
	free(b);
	free(tab);
	return err;
}

/* check_info: the type's first Allctr_t names the type (*ctx counts the types that do). */
static int check_type(struct mem *m, const struct xp_alloc_layout *l, const uint8_t *e, int32_t t,
		      uint8_t *b, void *ctx)
{
	struct alloc_inst a;
	uint64_t *ptrs;
	int32_t n;
	int err = instances(m, l, e, &ptrs, &n);

	if (!err)
		err = read_allctr(m, l, ptrs[0], t, 0, &a, b);
	free(ptrs);
	*(int *)ctx += !err;
	return err;
}

int alloc__check_info(struct mem *m, const struct xp_layout *row, uint64_t info)
{
	int good = 0, err = each_type(m, row, info, check_type, &good);

	return !err && good < 3 ? -EINVAL : err;
}

struct read_ctx {
	struct alloc_reading *r;
	bool walk;
};

static int add_type(struct mem *m, const struct xp_alloc_layout *l, const uint8_t *e, int32_t t,
		    uint8_t *b, void *ctx)
{
	struct alloc_reading *r = ((struct read_ctx *)ctx)->r;
	uint64_t *ptrs;
	int32_t n, i;
	int err = instances(m, l, e, &ptrs, &n);
	struct alloc_inst *grown;

	if (err) {
		free(ptrs);
		r->drops[ALLOC_DROP_UNREADABLE]++;
		return err == -ENOMEM ? err : 0;
	}
	grown = realloc(r->inst, (r->n + (size_t)n) * sizeof(*grown));
	if (!grown) {
		free(ptrs);
		return -ENOMEM;
	}
	r->inst = grown;
	r->types++;
	for (i = 0; i < n; i++) {
		struct alloc_inst *a = &r->inst[r->n];

		if (!ptrs[i])
			continue; /* an instance never started */
		err = read_allctr(m, l, ptrs[i], t, i, a, b);
		if (err) {
			r->drops[err == -EINVAL ? ALLOC_DROP_INVALID : ALLOC_DROP_UNREADABLE]++;
			continue;
		}
		parse_stats(l, b, a);
		if (((struct read_ctx *)ctx)->walk)
			find_largest(m, l, b, a, r);
		r->n++;
	}
	free(ptrs);
	return 0;
}

int alloc__read(struct mem *m, const struct xp_layout *row, uint64_t info, bool walk,
		struct alloc_reading *out)
{
	struct read_ctx c = {.r = out, .walk = walk};
	int err;

	memset(out, 0, sizeof(*out));
	err = each_type(m, row, info, add_type, &c);
	if (err)
		alloc__reading_free(out);
	return err;
}

void alloc__reading_free(struct alloc_reading *r)
{
	if (!r)
		return;
	free(r->inst);
	r->inst = NULL;
	r->n = 0;
}
