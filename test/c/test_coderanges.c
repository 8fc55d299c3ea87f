/* Unit tests for coderanges.c: the active code index and r[] laid out as OTP 25-29 lay them out
 * (the layout row's offsets), served by the mem snapshot backend; every corruption a hostile or
 * racing VM could show is refused; the comparison with a JIT map built from symfiles counts
 * matched, unmatched, old and other modules. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "coderanges.h"
#include "symfile.h"

#define BASE   0x100000ull /* the snapshot: the index word, r[], then the ranges arrays */
#define SIZE   0x10000u
#define IX     (BASE + 0x10)
#define R      (BASE + 0x100)
#define ARR    (BASE + 0x1000) /* r[1]'s ranges */
#define CODE   0x7f0000000000ull
#define NRANGE 4

struct fixture {
	const struct xp_layout *row;
	uint8_t *mem;
};

static void put64(struct fixture *f, uint64_t addr, uint64_t v)
{
	memcpy(f->mem + (addr - BASE), &v, 8);
}

static uint64_t slot(const struct fixture *f, uint32_t ix, int32_t field)
{
	return R + (uint64_t)ix * (uint64_t)f->row->ranges.size + (uint64_t)field;
}

/* Active index 1; r[1] holds four modules [CODE + 0x1000 k, + 0x800); r[0], r[2] one each. */
static void fixture_init(struct fixture *f)
{
	const struct xp_ranges_layout *L;
	uint32_t ix = 1, i;

	f->row = layout__find("13.1.5", XP_FLAVOR_JIT, "x86_64");
	L = &f->row->ranges;
	f->mem = calloc(1, SIZE);
	memcpy(f->mem + (IX - BASE), &ix, 4);
	for (i = 0; i < 3; i++) {
		uint64_t arr = i == 1 ? ARR : ARR + (i ? 0x2000ull : 0x1000ull),
			 n = i == 1 ? NRANGE : 1;

		put64(f, slot(f, i, L->modules), arr);
		put64(f, slot(f, i, L->n), n);
		put64(f, slot(f, i, L->allocated), n + 2);
		put64(f, slot(f, i, L->mid), arr);
	}
	for (i = 0; i < NRANGE; i++) {
		put64(f, ARR + 16ull * i, CODE + 0x1000ull * i);
		put64(f, ARR + 16ull * i + 8, CODE + 0x1000ull * i + 0x800);
	}
	put64(f, ARR + 0x1000, CODE + 0x9000); /* r[0] */
	put64(f, ARR + 0x1008, CODE + 0x9100);
	put64(f, ARR + 0x2000, CODE + 0xa000); /* r[2] */
	put64(f, ARR + 0x2008, CODE + 0xa100);
}

static int read_at(struct fixture *f, uint64_t ix, struct code_ranges *cr)
{
	struct mem_region r = {.addr = BASE, .len = SIZE, .data = f->mem};
	struct mem *m = NULL;
	int err = mem__open_snapshot(&m, &r, 1);

	if (!err)
		err = coderanges__read(m, f->row, ix, R, cr);
	mem__free(m);
	return err;
}

static int read_fixture(struct fixture *f, struct code_ranges *cr)
{
	return read_at(f, IX, cr);
}

static void test_good(void)
{
	struct fixture f;
	struct code_ranges cr;

	fixture_init(&f);
	CHECK("prefilter passes r[]", coderanges__prefilter(f.row, f.mem + (R - BASE)));
	CHECK("prefilter refuses zeros", !coderanges__prefilter(f.row, f.mem));
	CHECK_INT("read", 0, read_fixture(&f, &cr));
	CHECK_INT("active index", 1, cr.code_ix);
	CHECK_INT("ranges", NRANGE, (int64_t)cr.n);
	CHECK("holds module 2", coderanges__contains(&cr, CODE + 0x2000, CODE + 0x2800));
	CHECK("not a range with another end",
	      !coderanges__contains(&cr, CODE + 0x2000, CODE + 0x2801));
	CHECK("not r[0]'s range", !coderanges__contains(&cr, CODE + 0x9000, CODE + 0x9100));
	coderanges__free(&cr);
	CHECK_INT("an unreadable index: a failed read", -EFAULT, read_at(&f, BASE + SIZE, &cr));
	free(f.mem);
}

/* One corruption at addr (8 bytes, or the 4-byte index), read back: err expected. */
static void corrupt(const char *name, uint64_t addr, uint64_t v, int expect)
{
	struct fixture f;
	struct code_ranges cr;

	fixture_init(&f);
	if (addr == IX)
		memcpy(f.mem + (IX - BASE), &v, 4);
	else
		put64(&f, addr, v);
	CHECK_INT(name, expect, read_fixture(&f, &cr));
	CHECK(name, cr.r == NULL && cr.n == 0);
	coderanges__free(&cr);
	free(f.mem);
}

static void test_corrupt(void)
{
	struct fixture f;
	const struct xp_ranges_layout *L;

	fixture_init(&f); /* only for the offsets */
	L = &f.row->ranges;
	corrupt("index 3 refused", IX, 3, -EINVAL);
	corrupt("index 0xffffffff refused", IX, 0xffffffffu, -EINVAL);
	corrupt("n > allocated refused", slot(&f, 1, L->n), NRANGE + 3, -EINVAL);
	corrupt("huge allocated refused", slot(&f, 1, L->allocated), 1ull << 40, -EINVAL);
	corrupt("mid outside refused", slot(&f, 1, L->mid), ARR + 16 * NRANGE, -EINVAL);
	corrupt("mid misaligned refused", slot(&f, 1, L->mid), ARR + 8, -EINVAL);
	corrupt("misaligned array refused", slot(&f, 1, L->modules), ARR + 4, -EINVAL);
	corrupt("an array apart from its mid refused", slot(&f, 1, L->modules), 0x7e0000000000ull,
		-EINVAL);
	corrupt("unsorted ranges refused", ARR + 16, CODE, -EINVAL);
	corrupt("overlapping ranges refused", ARR + 8, CODE + 0x1800, -EINVAL);
	corrupt("start > end refused", ARR + 8 + 16 * 3, CODE + 0x2000, -EINVAL);
	corrupt("implausible start refused", ARR, 0x10, -EINVAL);
	free(f.mem);
}

/* A symfile of one module with one range. */
static int add(struct jitmap *map, const char *mod, uint64_t base, uint32_t size, uint32_t gen)
{
	struct symfile_range r = {0, size, "m:f/0"};
	uint8_t b[SYMFILE_CAP];
	size_t len = symfile_build_lines(b, mod, base, size, &r, NULL, 1);

	return jitmap__add_symfile(map, b, len, 0x1000 + gen, gen);
}

static void test_jit(void)
{
	struct fixture f;
	struct code_ranges cr;
	struct coderanges_jit j;
	struct jitmap *map = NULL;

	fixture_init(&f);
	put64(&f, ARR + 16 * 3 + 8, CODE + 0x3000); /* module 3 purged: end == start */
	CHECK_INT("read", 0, read_fixture(&f, &cr));
	CHECK_INT("jitmap", 0, jitmap__new(&map));
	/* Newest first: b, a, a's old code, a stale entry at b's address, erts_beamasm, c. */
	add(map, "b", CODE + 0x1000, 0x800, 0);
	add(map, "a", CODE, 0x800, 1);
	add(map, "a", CODE + 0x5000, 0x800, 2);
	add(map, "b", CODE + 0x1000, 0x800, 3);
	add(map, "erts_beamasm", CODE + 0x6000, 0x100, 4);
	add(map, "c", CODE + 0x7000, 0x100, 5);
	jitmap__finish(map);
	CHECK_INT("check_jit", 0, coderanges__check_jit(&cr, map, &j));
	CHECK_INT("ranges", 4, (int64_t)j.ranges);
	CHECK_INT("purged", 1, (int64_t)j.purged);
	CHECK_INT("matched: a, b", 2, (int64_t)j.matched);
	CHECK_INT("unmatched: module 2", 1, (int64_t)j.unmatched);
	CHECK_U64("first unmatched", CODE + 0x2000, j.first_unmatched);
	CHECK_INT("JIT modules", 6, (int64_t)j.jit_modules);
	CHECK_INT("JIT modules not in the table", 4, (int64_t)j.jit_not_in_table);
	CHECK_INT("old: a's old code, b's stale entry", 2, (int64_t)j.jit_old);
	CHECK_INT("other: c, erts_beamasm", 2, (int64_t)j.jit_other);
	CHECK_STR("other names sorted", "c", j.other_names[0]);
	CHECK_STR("other names sorted", "erts_beamasm", j.other_names[1]);
	jitmap__free(map);
	coderanges__free(&cr);
	free(f.mem);
}

int main(void)
{
	test_good();
	test_corrupt();
	test_jit();
	return check_done();
}
