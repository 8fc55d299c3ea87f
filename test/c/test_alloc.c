/* Unit tests for the allocator reader `alloc` uses (vm/alloc.c): erts_allctrs_info[], a thr_spec
 * table and Allctr_ts laid out with the OTP 25 row in a memory snapshot; the counters summed as
 * system_info({allocator, A}) does, the largest free block from the carrier walk and the carrier
 * pool, a carrier that does not belong stopping the walk (counted, never guessed), and the
 * structural check and prefilter the scans rely on. */
#include <errno.h>
#include <stdlib.h>

#include "alloc.h"
#include "check.h"
#include "layout.h"
#include "mem.h"

#define BASE	 0x100000ull
#define SIZE	 0x500000ull
#define INFO	 0x100000ull
#define TSPEC	 0x110000ull
#define PTRS	 0x120000ull
#define ALLCTR	 0x200000ull /* type t, instance i: ALLCTR + (t * 2 + i) * 0x1000 */
#define NAMES	 0x300000ull
#define CARRIER1 0x400000ull
#define CARRIER2 0x410000ull
#define POOLED	 0x420000ull
#define SENTINEL 0x430000ull
#define BINARY	 10 /* the type with carriers */

struct fixture {
	const struct xp_layout *row;
	const struct xp_alloc_layout *l;
	uint8_t *mem;
};

static void put64(struct fixture *f, uint64_t addr, uint64_t v)
{
	memcpy(f->mem + (addr - BASE), &v, 8);
}

static void put32(struct fixture *f, uint64_t addr, uint32_t v)
{
	memcpy(f->mem + (addr - BASE), &v, 4);
}

static uint64_t allctr(int t, int i)
{
	return ALLCTR + (uint64_t)(t * 2 + i) * 0x1000;
}

static void put_stat(struct fixture *f, uint64_t at, uint64_t no, uint64_t size)
{
	put64(f, at, no);
	put64(f, at + 8, size);
}

/* binary_alloc instance 1: two AOFF carriers (largest free 50000, 70000), one pooled carrier it
 * created (max_size 90000), counters in mbcs, sbcs and the pool. */
static void put_binary(struct fixture *f, uint64_t a)
{
	const struct xp_alloc_layout *l = f->l;
	uint64_t mb = a + (uint64_t)l->allctr_mbcs, sb = a + (uint64_t)l->allctr_sbcs;

	put_stat(f, mb + l->cs_carriers + l->crr_mseg * 16, 1, 1 << 20);
	put_stat(f, mb + l->cs_carriers + l->crr_sys * 16, 1, 256 << 10);
	put_stat(f, mb + l->cs_blocks + 0 * l->bs_size, 10, 100000);
	put_stat(f, mb + l->cs_blocks + 3 * l->bs_size, 2, 5000);
	put_stat(f, sb + l->cs_carriers + l->crr_mseg * 16, 1, 600 << 10);
	put_stat(f, sb + l->cs_blocks + 9 * l->bs_size, 1, 550000);
	put64(f, a + l->allctr_pool_no_carriers, 1);
	put64(f, a + l->allctr_pool_carriers_size, 1 << 20);
	put64(f, a + l->allctr_pool_no_blocks + 9 * 8, 1);
	put64(f, a + l->allctr_pool_blocks_size + 9 * 8, 1000);
	put64(f, a + l->allctr_mbc_first, CARRIER1);
	put64(f, CARRIER1 + l->crr_next, CARRIER2);
	put64(f, CARRIER1 + l->crr_allctr, a | 1); /* flags in the low bits */
	put64(f, CARRIER1 + l->aoff_crr_largest, 50000);
	put64(f, CARRIER2 + l->crr_allctr, a);
	put64(f, CARRIER2 + l->aoff_crr_largest, 70000);
	put64(f, a + l->allctr_cpool_sentinel, SENTINEL);
	put64(f, SENTINEL + l->cpd_next, POOLED);
	put64(f, POOLED + l->cpd_next, SENTINEL | 1); /* a mark bit */
	put64(f, POOLED + l->cpd_orig_allctr, a);
	put64(f, POOLED + l->cpd_max_size, 90000);
}

static void put_type(struct fixture *f, int t, const char *prefix, int thr_spec)
{
	const struct xp_alloc_layout *l = f->l;
	uint64_t e = INFO + (uint64_t)(t * l->info_size), name = NAMES + (uint64_t)t * 32;
	int i, n = thr_spec ? 2 : 1;

	memcpy(f->mem + (name - BASE), prefix, strlen(prefix) + 1);
	put32(f, e + l->info_alloc_util, 1);
	put32(f, e + l->info_enabled, 1);
	put32(f, e + l->info_thr_spec, thr_spec ? 2 : 0);
	put64(f, e + l->info_extra, thr_spec ? TSPEC + (uint64_t)t * 64 : allctr(t, 0));
	if (thr_spec) {
		put32(f, TSPEC + (uint64_t)t * 64 + l->tspec_n, 2);
		put64(f, TSPEC + (uint64_t)t * 64 + l->tspec_allctr, PTRS + (uint64_t)t * 64);
	}
	for (i = 0; i < n; i++) {
		if (thr_spec)
			put64(f, PTRS + (uint64_t)t * 64 + (uint64_t)i * 8, allctr(t, i));
		put64(f, allctr(t, i) + l->allctr_name_prefix, name);
		put32(f, allctr(t, i) + l->allctr_alloc_no, (uint32_t)t);
		put32(f, allctr(t, i) + l->allctr_ix, (uint32_t)i);
		put32(f, allctr(t, i) + l->allctr_strat, (uint32_t)l->strat_aoff);
	}
}

static void fixture_init(struct fixture *f)
{
	f->row = layout__find("13.1.5", XP_FLAVOR_JIT, "x86_64");
	f->l = &f->row->alloc;
	f->mem = calloc(1, SIZE);
	put32(f, INFO + 1 * 24 + 4, 1); /* sys_alloc: enabled, not alloc_util */
	put_type(f, 2, "temp_", 1);
	put_type(f, 6, "eheap_", 1);
	put_type(f, BINARY, "binary_", 1);
	put_type(f, 11, "driver_", 0);
	put_binary(f, allctr(BINARY, 1));
}

static int open_mem(struct fixture *f, struct mem **m)
{
	struct mem_region r = {.addr = BASE, .len = SIZE, .data = f->mem};

	return mem__open_snapshot(m, &r, 1);
}

static const struct alloc_inst *find(const struct alloc_reading *r, const char *name, int ix)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		if (strcmp(r->inst[i].name, name) == 0 && r->inst[i].ix == ix)
			return &r->inst[i];
	}
	return NULL;
}

static void test_read(void)
{
	struct fixture f;
	struct alloc_reading r;
	const struct alloc_inst *a;
	struct mem *m = NULL;

	fixture_init(&f);
	CHECK("alloc__supported(25's row)", alloc__supported(f.row));
	CHECK_INT("snapshot", 0, open_mem(&f, &m));
	CHECK("prefilter accepts erts_allctrs_info", alloc__info_prefilter(f.row, f.mem));
	CHECK_INT("check_info accepts it", 0, alloc__check_info(m, f.row, INFO));
	CHECK_INT("read", 0, alloc__read(m, f.row, INFO, true, &r));
	CHECK_INT("instances: 2 + 2 + 2 thr_spec, 1 plain", 7, (int64_t)r.n);
	CHECK_INT("types", 4, r.types);
	CHECK("driver_alloc #0 (not thr_spec)", find(&r, "driver_alloc", 0) != NULL);
	a = find(&r, "binary_alloc", 1);
	if (!CHECK("binary_alloc #1", a != NULL))
		goto cleanup;
	CHECK_INT("mbc mseg carriers", 1, (int64_t)a->mbc_mseg.no);
	CHECK_INT("mbc sys bytes", 256 << 10, (int64_t)a->mbc_sys.size);
	CHECK_INT("mbc blocks: every type's", 12, (int64_t)a->mbc_blocks.no);
	CHECK_INT("mbc block bytes", 105000, (int64_t)a->mbc_blocks.size);
	CHECK_INT("sbc block bytes", 550000, (int64_t)a->sbc_blocks.size);
	CHECK_INT("pooled carrier bytes", 1 << 20, (int64_t)a->pool_carriers.size);
	CHECK_INT("pooled block bytes", 1000, (int64_t)a->pool_blocks.size);
	CHECK_INT("carriers walked", 2, a->walked);
	CHECK("largest known", a->have_largest);
	CHECK_INT("largest: the pooled carrier's", 90000, (int64_t)a->largest_free);
	CHECK_INT("free: mbc + pool carriers - their blocks",
		  (1 << 20) + (256 << 10) + (1 << 20) - 105000 - 1000, (int64_t)alloc__mbc_free(a));
	CHECK_INT("nothing dropped", 0,
		  (int64_t)(r.drops[0] + r.drops[1] + r.drops[ALLOC_DROP_WALK]));
	alloc__reading_free(&r);
	/* A carrier freed under the walk: the next one names another allocator. */
	put64(&f, CARRIER2 + f.l->crr_allctr, allctr(6, 0));
	mem__free(m);
	m = NULL;
	open_mem(&f, &m);
	CHECK_INT("read with a foreign carrier", 0, alloc__read(m, f.row, INFO, true, &r));
	a = find(&r, "binary_alloc", 1);
	CHECK("largest unknown, not guessed", a && !a->have_largest);
	CHECK_INT("counted as a broken walk", 1, (int64_t)r.drops[ALLOC_DROP_WALK]);
	alloc__reading_free(&r);
cleanup:
	mem__free(m);
	free(f.mem);
}

static void test_check(void)
{
	struct fixture f;
	struct mem *m = NULL;

	fixture_init(&f);
	put32(&f, INFO + 4, 1); /* entry 0, ERTS_ALC_A_INVALID, enabled */
	CHECK("prefilter refuses a used entry 0", !alloc__info_prefilter(f.row, f.mem));
	put32(&f, INFO + 4, 0);
	memcpy(f.mem + (NAMES + 6 * 32 - BASE), "Eheap!", 7);
	open_mem(&f, &m);
	CHECK_INT("check_info refuses a bad name", -EINVAL, alloc__check_info(m, f.row, INFO));
	CHECK_INT("check_info refuses another address", -EINVAL,
		  alloc__check_info(m, f.row, INFO + 24));
	mem__free(m);
	free(f.mem);
}

int main(void)
{
	test_read();
	test_check();
	return check_done();
}
