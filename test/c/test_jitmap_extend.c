/* Unit tests for jitmap_extend.c, offline: an OTP 25-style GDB JIT list (entries only ever
 * prepended, never unlinked) served by the mem snapshot backend. The map extended entry by entry
 * must answer every lookup as a map walked whole; a list that no longer leads to the map's newest
 * entry, or that breaks among the new entries, leaves the map as it was; modules whose code a
 * newer module reuses are dropped once they outnumber the live ones. And for 27+, whose list
 * unlinks: a newest entry reused at the same addresses is told apart (jitmap__head_current), and
 * a walk between a purge and the next load keeps the purged code's names one walk longer
 * (jitmap__carry). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "jitmap.h"

#define COMPACT_RANGES 4096 /* jitmap_extend.c COMPACT_MIN */

#define SYMFILE_CAP (256u << 10) /* a module of 5000 ranges */
#include "symfile.h"

#define DESC_ADDR     0x10000ull
#define ENTRY_ADDR(i) (0x200000ull + 0x100 * (i))
#define SYM_ADDR(i)   (0x1000000ull + (uint64_t)(i)*SYMFILE_CAP)
#define MAX_ENTRIES   512

struct fake_vm {
	uint64_t words[MAX_ENTRIES][4]; /* next, prev, symfile address, size */
	uint8_t *sym[MAX_ENTRIES];
	size_t symlen[MAX_ENTRIES], n; /* entries registered, newest last */
	uint64_t desc4[4];
};

/* Register one module the way beamasm_update_gdb_info does on 25: the new entry goes first, the
 * old first entry's prev points at it, the new entry's own prev is left as malloc had it. */
static void vm_register(struct fake_vm *vm, const char *mod, uint64_t base, uint32_t code_size,
			uint32_t nranges)
{
	struct symfile_range *r = calloc(nranges, sizeof(*r));
	struct symfile_line *l = calloc(nranges, sizeof(*l));
	struct symfile_lines *ls = calloc(nranges, sizeof(*ls));
	char(*names)[32] = calloc(nranges, sizeof(*names)), file[40];
	size_t i = vm->n++;

	snprintf(file, sizeof(file), "%s.erl", mod);
	for (uint32_t k = 0; k < nranges; k++) { /* each a line of its own: 100 + k */
		snprintf(names[k], sizeof(names[k]), "%s:f%u/0", mod, k);
		r[k] = (struct symfile_range){k * 16, k * 16 + 16, names[k]};
		l[k] = (struct symfile_line){k * 16 + 4, 100 + k, file};
		ls[k] = (struct symfile_lines){&l[k], 1};
	}
	vm->sym[i] = malloc(SYMFILE_CAP);
	vm->symlen[i] = symfile_build_lines(vm->sym[i], mod, base, code_size, r, ls, nranges);
	vm->sym[i] = realloc(vm->sym[i], vm->symlen[i]);
	vm->words[i][0] = i ? ENTRY_ADDR(i - 1) : 0;
	vm->words[i][1] = 0xdeadbeef0ull; /* garbage, as malloc left it */
	vm->words[i][2] = SYM_ADDR(i);
	vm->words[i][3] = vm->symlen[i];
	if (i)
		vm->words[i - 1][1] = ENTRY_ADDR(i);
	vm->desc4[0] = 1;
	vm->desc4[1] = ENTRY_ADDR(i);
	vm->desc4[2] = ENTRY_ADDR(i);
	free(names);
	free(ls);
	free(l);
	free(r);
}

static struct mem *vm_mem(struct fake_vm *vm)
{
	struct mem_region r[1 + 2 * MAX_ENTRIES];
	struct mem *m = NULL;
	size_t nr = 0;

	r[nr++] = (struct mem_region){DESC_ADDR, 24, vm->desc4};
	for (size_t i = 0; i < vm->n; i++) {
		r[nr++] = (struct mem_region){ENTRY_ADDR(i), sizeof(vm->words[i]), vm->words[i]};
		r[nr++] = (struct mem_region){vm->words[i][2], vm->symlen[i], vm->sym[i]};
	}
	if (mem__open_snapshot(&m, r, nr))
		return NULL;
	return m;
}

static void vm_free(struct fake_vm *vm)
{
	for (size_t i = 0; i < vm->n; i++)
		free(vm->sym[i]);
}

/* Every range of whole answers the same lookups in map, at its first and last byte. */
static bool same_lookups(const struct jitmap *map, const struct jitmap *whole)
{
	for (size_t i = 0; i < jitmap__range_count(whole); i++) {
		const struct jit_range *w = jitmap__range(whole, i);

		for (uint64_t a = w->start; a < w->end; a += w->end - w->start - 1) {
			const struct jit_range *x = jitmap__lookup(map, a),
					       *y = jitmap__lookup(whole, a);

			if (!x || !y || strcmp(x->name, y->name))
				return false;
		}
	}
	return jitmap__range_count(map) == jitmap__range_count(whole);
}

static void test_extend_equals_whole(void)
{
	const char *file = NULL;
	uint32_t line = 0;
	struct fake_vm vm = {0};
	struct jitmap *map = NULL, *whole = NULL;
	struct mem *m;

	vm_register(&vm, "a", 0x7000000, 0x1000, 4);
	vm_register(&vm, "b", 0x7001000, 0x1000, 3);
	m = vm_mem(&vm);
	CHECK_INT("load", 0, jitmap__load(m, DESC_ADDR, &map));
	mem__free(m);
	CHECK_U64("head: nothing new", 0, jitmap__extend(map, m = vm_mem(&vm), DESC_ADDR));
	mem__free(m);
	vm_register(&vm, "c", 0x7002000, 0x1000, 5);
	vm_register(&vm, "d", 0x7003000, 0x1000, 2);
	m = vm_mem(&vm);
	CHECK_INT("extend by two", 0, jitmap__extend(map, m, DESC_ADDR));
	CHECK_INT("whole", 0, jitmap__load(m, DESC_ADDR, &whole));
	mem__free(m);
	CHECK("extended answers as whole", same_lookups(map, whole));
	CHECK_U64("entries", 4, jitmap__stats(map)->entries);
	CHECK_U64("functions", 14, jitmap__stats(map)->functions);
	CHECK_STR("newest is d", "d:f0/0", jitmap__lookup(map, 0x7003000)->name);
	CHECK_INT("d generation 0", 0, jitmap__lookup(map, 0x7003000)->generation);
	CHECK_INT("a generation 3", 3, jitmap__lookup(map, 0x7000000)->generation);
	CHECK("a's line after the merge", jitmap__line(map, jitmap__lookup(map, 0x7000000 + 52),
						       0x7000000 + 52, &file, &line) &&
					      line == 103 && !strcmp(file, "a.erl"));
	CHECK("d's line after the merge", jitmap__line(map, jitmap__lookup(map, 0x7003000 + 20),
						       0x7003000 + 20, &file, &line) &&
					      line == 101 && !strcmp(file, "d.erl"));
	CHECK_U64("descriptor now d", ENTRY_ADDR(3), jitmap__descriptor(map)->first_entry);
	jitmap__free(whole);
	jitmap__free(map);
	vm_free(&vm);
}

/* The map's newest entry is no longer on the list (a list that was replaced, or an entry whose
 * symfile changed), or a new entry's link is broken: -ESTALE, the map as it was. */
static void test_stale(void)
{
	struct fake_vm vm = {0};
	struct jitmap *map = NULL;
	struct mem *m;

	vm_register(&vm, "a", 0x7000000, 0x1000, 4);
	m = vm_mem(&vm);
	CHECK_INT("load", 0, jitmap__load(m, DESC_ADDR, &map));
	mem__free(m);
	vm_register(&vm, "b", 0x7001000, 0x1000, 3);
	vm.words[0][2] += 8; /* a's entry now names another symfile */
	m = vm_mem(&vm);
	CHECK_INT("head changed", -ESTALE, jitmap__extend(map, m, DESC_ADDR));
	CHECK("b not merged", !jitmap__lookup(map, 0x7001000));
	CHECK_U64("entries unchanged", 1, jitmap__stats(map)->entries);
	CHECK_INT("update walks whole", 0, jitmap__update(m, DESC_ADDR, true, &map));
	CHECK_STR("b after the whole walk", "b:f0/0", jitmap__lookup(map, 0x7001000)->name);
	mem__free(m);
	vm.words[0][2] -= 8;
	vm_register(&vm, "c", 0x7002000, 0x1000, 3);
	vm.words[1][1] = 0x1234; /* b's prev no longer points at c: a concurrent unlink */
	m = vm_mem(&vm);
	CHECK_INT("broken link", -ESTALE, jitmap__extend(map, m, DESC_ADDR));
	CHECK("c not merged", !jitmap__lookup(map, 0x7002000));
	CHECK_INT("update keeps the map", -EAGAIN, jitmap__update(m, DESC_ADDR, true, &map));
	CHECK_STR("b still", "b:f0/0", jitmap__lookup(map, 0x7001000)->name);
	mem__free(m);
	jitmap__free(map);
	vm_free(&vm);
}

/* OTP 27+: the newest module purged (its entry and symfile freed) and the next registered at the
 * same two addresses with the same size, its code elsewhere. The descriptor reads as when the
 * map was walked; jitmap__head_current tells them apart by the code address, and a walk then
 * names the code at its new place. */
static void test_head_reused(void)
{
	struct fake_vm vm = {0};
	struct jitmap *map = NULL;
	uint64_t moved = 0x7100000;
	struct jit_descriptor d;
	struct mem *m;

	vm_register(&vm, "a", 0x7000000, 0x1000, 4);
	vm_register(&vm, "dyn", 0x7001000, 0x1000, 3);
	m = vm_mem(&vm);
	CHECK_INT("load", 0, jitmap__load(m, DESC_ADDR, &map));
	CHECK_INT("descriptor", 0, jitmap__read_descriptor(m, DESC_ADDR, &d));
	CHECK("head current as read", jitmap__head_current(m, map, &d));
	mem__free(m);
	memcpy(vm.sym[1] + 8, &moved, sizeof(moved)); /* the same blob but for its code address */
	m = vm_mem(&vm);
	CHECK_INT("descriptor again", 0, jitmap__read_descriptor(m, DESC_ADDR, &d));
	CHECK_U64("the same first entry", jitmap__descriptor(map)->first_entry, d.first_entry);
	CHECK("head no longer current", !jitmap__head_current(m, map, &d));
	CHECK_INT("update", 0, jitmap__update(m, DESC_ADDR, false, &map));
	CHECK_STR("dyn at its new place", "dyn:f0/0", jitmap__lookup(map, moved)->name);
	CHECK("head current after the walk", jitmap__head_current(m, map, &d));
	d.first_entry = ENTRY_ADDR(0);
	CHECK("another first entry", !jitmap__head_current(m, map, &d));
	CHECK("no memory", !jitmap__head_current(NULL, map, &d));
	mem__free(m);
	jitmap__free(map);
	vm_free(&vm);
}

static struct jitmap *load_vm(struct fake_vm *vm)
{
	struct jitmap *map = NULL;
	struct mem *m = vm_mem(vm);

	CHECK_INT("load", 0, jitmap__load(m, DESC_ADDR, &map));
	mem__free(m);
	return map;
}

/* OTP 27+: a walk in the gap between a purge and the next load. The purged module's code, which
 * no module of the new walk overlaps, is kept, marked carried, for one walk; code a module of
 * the new walk occupies is not. */
static void test_carry(void)
{
	struct fake_vm before = {0}, gap = {0}, reused = {0};
	struct jitmap *old, *fresh, *again, *other;
	const char *file = NULL;
	uint32_t line = 0;

	vm_register(&before, "a", 0x7000000, 0x1000, 4);
	vm_register(&before, "dyn", 0x7001000, 0x1000, 3);
	vm_register(&gap, "a", 0x7000000, 0x1000, 4);
	vm_register(&reused, "a", 0x7000000, 0x1000, 4);
	vm_register(&reused, "other", 0x7001800, 0x1000, 2);
	old = load_vm(&before);
	fresh = load_vm(&gap);
	CHECK_INT("carry", 0, jitmap__carry(fresh, old));
	CHECK_U64("dyn's 3 ranges carried", 3, jitmap__stats(fresh)->carried);
	CHECK_STR("dyn named", "dyn:f1/0", jitmap__lookup(fresh, 0x7001000 + 16)->name);
	CHECK("dyn marked carried",
	      jitmap__module(fresh, jitmap__lookup(fresh, 0x7001000)->module)->carried);
	CHECK("a not carried",
	      !jitmap__module(fresh, jitmap__lookup(fresh, 0x7000000)->module)->carried);
	CHECK_INT("dyn the oldest generation", 1, jitmap__lookup(fresh, 0x7001000)->generation);
	CHECK("dyn's line kept", jitmap__line(fresh, jitmap__lookup(fresh, 0x7001000 + 20),
					      0x7001000 + 20, &file, &line) &&
				     line == 101 && !strcmp(file, "dyn.erl"));
	again = load_vm(&gap);
	CHECK_INT("carry again", 0, jitmap__carry(again, fresh));
	CHECK_U64("not carried twice", 0, jitmap__stats(again)->carried);
	CHECK("dyn gone after a second walk", !jitmap__lookup(again, 0x7001000));
	other = load_vm(&reused);
	CHECK_INT("carry into a walk whose module overlaps", 0, jitmap__carry(other, old));
	CHECK_U64("nothing carried", 0, jitmap__stats(other)->carried);
	CHECK("dyn's code below other's unnamed", !jitmap__lookup(other, 0x7001000));
	CHECK_STR("other named", "other:f0/0", jitmap__lookup(other, 0x7001800)->name);
	CHECK_INT("no map", -EINVAL, jitmap__carry(NULL, old));
	jitmap__free(other);
	jitmap__free(again);
	jitmap__free(fresh);
	jitmap__free(old);
	vm_free(&reused);
	vm_free(&gap);
	vm_free(&before);
}

/* Modules that were purged and whose memory a newer module reuses are dropped when they hold
 * more ranges than the live ones: lookups are unchanged, and a pc only the dead module covered
 * is unnamed. */
static void test_prune(void)
{
	struct fake_vm vm = {0};
	struct jitmap *map = NULL;
	const char *file = NULL;
	uint32_t line = 0;
	struct mem *m;

	vm_register(&vm, "keep", 0x6000000, 0x1000, 3);
	vm_register(&vm, "old", 0x7000000, 5000 * 16, 5000);
	m = vm_mem(&vm);
	CHECK_INT("load", 0, jitmap__load(m, DESC_ADDR, &map));
	mem__free(m);
	vm_register(&vm, "new", 0x7000000 + 32, 0x100, 4); /* inside old's freed code */
	m = vm_mem(&vm);
	CHECK_INT("extend", 0, jitmap__extend(map, m, DESC_ADDR));
	mem__free(m);
	CHECK_U64("old's ranges pruned", 5000, jitmap__stats(map)->pruned);
	CHECK_U64("ranges left", 7, jitmap__range_count(map));
	CHECK_STR("new at its base", "new:f0/0", jitmap__lookup(map, 0x7000000 + 32)->name);
	CHECK("old's other code unnamed", !jitmap__lookup(map, 0x7000000 + 4096));
	CHECK_STR("keep kept", "keep:f2/0", jitmap__lookup(map, 0x6000000 + 40)->name);
	CHECK_STR("module name kept", "keep",
		  jitmap__module(map, jitmap__lookup(map, 0x6000000)->module)->name);
	CHECK_U64("functions recounted", 7, jitmap__stats(map)->functions);
	CHECK("keep's line kept", jitmap__line(map, jitmap__lookup(map, 0x6000000 + 40),
					       0x6000000 + 40, &file, &line) &&
				      line == 102 && !strcmp(file, "keep.erl"));
	CHECK("new's line", jitmap__line(map, jitmap__lookup(map, 0x7000000 + 32 + 20),
					 0x7000000 + 32 + 20, &file, &line) &&
				line == 101 && !strcmp(file, "new.erl"));
	vm_register(&vm, "newer", 0x7100000, 0x100, 1); /* the compacted map extends again */
	m = vm_mem(&vm);
	CHECK_INT("extend after compaction", 0, jitmap__extend(map, m, DESC_ADDR));
	mem__free(m);
	CHECK_STR("newer", "newer:f0/0", jitmap__lookup(map, 0x7100000)->name);
	CHECK_INT("keep's generation", 3, jitmap__lookup(map, 0x6000000)->generation);
	jitmap__free(map);
	vm_free(&vm);
}

/* A module loaded and purged again and again lands at one address: across hundreds of
 * extensions, one entry each (the map's module array then runs oldest first at that address),
 * every module but the newest is found dead and dropped. */
static void test_prune_one_address(void)
{
	struct fake_vm vm = {0};
	struct jitmap *map = NULL;
	struct mem *m;
	int failed = 0;

	vm_register(&vm, "keep", 0x6000000, 0x1000, 3);
	vm_register(&vm, "dyn", 0x7000000, 0x100, 10);
	m = vm_mem(&vm);
	CHECK_INT("load", 0, jitmap__load(m, DESC_ADDR, &map));
	mem__free(m);
	for (int k = 0; k < 500; k++) {
		vm_register(&vm, "dyn", 0x7000000, 0x100, 10);
		m = vm_mem(&vm);
		failed += jitmap__extend(map, m, DESC_ADDR) != 0;
		mem__free(m);
	}
	CHECK_INT("500 extensions", 0, failed);
	CHECK("dead modules dropped", jitmap__stats(map)->pruned >= COMPACT_RANGES);
	CHECK("what is left is the newest and the dead since",
	      jitmap__range_count(map) < 3 + 10 + 2 * COMPACT_RANGES);
	CHECK_INT("newest dyn at its base", 0, jitmap__lookup(map, 0x7000000)->generation);
	CHECK_STR("keep kept", "keep:f0/0", jitmap__lookup(map, 0x6000000)->name);
	jitmap__free(map);
	vm_free(&vm);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_extend_equals_whole();
	test_stale();
	test_head_reused();
	test_carry();
	test_prune();
	test_prune_one_address();
	return check_done();
}
