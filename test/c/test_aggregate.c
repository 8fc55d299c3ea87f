/* Unit tests for the stack aggregate (aggregate.c): interning by (name, kind), counting, argument
 * checks, iteration sorted by names whatever the insertion order, and linear-ish growth on a
 * large input. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "aggregate.h"
#include "check.h"

static void test_intern(void)
{
	uint32_t a, b, c, d, g1, g2;
	struct agg *ag = NULL;

	CHECK_INT("new", 0, agg__new(&ag));
	CHECK_INT("frame a", 0, agg__frame(ag, "lists:foldl/3", FRAME_ERLANG, &a));
	CHECK_INT("frame a again", 0, agg__frame(ag, "lists:foldl/3", FRAME_ERLANG, &b));
	CHECK_INT("same name+kind, same id", a, b);
	CHECK_INT("frame same name, other kind", 0,
		  agg__frame(ag, "lists:foldl/3", FRAME_NATIVE, &c));
	CHECK("other kind, other id", c != a);
	CHECK_INT("frame d", 0, agg__frame(ag, "", FRAME_LABEL, &d));
	CHECK_INT("three frames", 3, agg__nframes(ag));
	CHECK_STR("name of c", "lists:foldl/3", agg__frame_name(ag, c));
	CHECK_INT("kind of c", FRAME_NATIVE, agg__frame_kind(ag, c));
	CHECK_INT("kind of d", FRAME_LABEL, agg__frame_kind(ag, d));
	CHECK("no module set", agg__frame_module(ag, c) == NULL);
	CHECK_INT("set module", 0, agg__frame_set_module(ag, c, "beam.smp"));
	CHECK_INT("a second module is ignored", 0, agg__frame_set_module(ag, c, "libc.so.6"));
	CHECK_STR("module of c", "beam.smp", agg__frame_module(ag, c));
	CHECK_INT("set module of d", 0, agg__frame_set_module(ag, d, "beam.smp"));
	CHECK_STR("module of d", "beam.smp", agg__frame_module(ag, d));
	CHECK_INT("unknown frame id: no module", -EINVAL, agg__frame_set_module(ag, 99, "x.so"));
	CHECK("unknown frame id has no module", agg__frame_module(ag, 99) == NULL);
	CHECK("unknown frame id has no name", agg__frame_name(ag, 99) == NULL);
	CHECK_INT("group 1", 0, agg__group(ag, "<0.1.0> init", &g1));
	CHECK_INT("group 2", 0, agg__group(ag, "scheduler idle", &g2));
	CHECK_INT("group 1 again", 0, agg__group(ag, "<0.1.0> init", &b));
	CHECK_INT("same group, same id", g1, b);
	CHECK("groups differ", g1 != g2);
	CHECK_INT("two groups", 2, agg__ngroups(ag));
	CHECK_STR("group name", "scheduler idle", agg__group_name(ag, g2));
	CHECK("unknown group id has no name", agg__group_name(ag, 7) == NULL);
	CHECK_INT("bad kind", -EINVAL, agg__frame(ag, "x", (enum frame_kind)9, &b));
	CHECK_INT("NULL name", -EINVAL, agg__frame(ag, NULL, FRAME_ERLANG, &b));
	CHECK_INT("NULL group name", -EINVAL, agg__group(ag, NULL, &b));
	agg__free(ag);
	agg__free(NULL);
	CHECK("agg__free(NULL) is a no-op", 1);
}

static void test_add(void)
{
	struct agg *ag = NULL;
	struct agg_stack s;
	uint32_t g, f[3];

	agg__new(&ag);
	agg__group(ag, "g", &g);
	agg__frame(ag, "root", FRAME_ERLANG, &f[0]);
	agg__frame(ag, "leaf", FRAME_ERLANG, &f[1]);
	CHECK_INT("add", 0, agg__add(ag, g, f, 2, 3));
	CHECK_INT("add same stack", 0, agg__add(ag, g, f, 2, 4));
	CHECK_INT("add prefix", 0, agg__add(ag, g, f, 1, 1));
	CHECK_INT("add empty stack", 0, agg__add(ag, g, NULL, 0, 2));
	CHECK_INT("count 0 adds nothing", 0, agg__add(ag, g, f, 2, 0));
	f[2] = 42;
	CHECK_INT("unknown frame id", -EINVAL, agg__add(ag, g, f, 3, 1));
	CHECK_INT("unknown group id", -EINVAL, agg__add(ag, g + 1, f, 1, 1));
	CHECK_INT("NULL frames", -EINVAL, agg__add(ag, g, NULL, 1, 1));
	CHECK_INT("more frames than the sort's depth holds", -E2BIG,
		  agg__add(ag, g, f, (1u << 24) + 1, 1));
	CHECK_INT("overflow", -EOVERFLOW, agg__add(ag, g, f, 1, UINT64_MAX));
	CHECK_INT("three stacks", 3, agg__nstacks(ag));
	CHECK_U64("total", 10, agg__total(ag));
	agg__stack(ag, 0, &s);
	CHECK_INT("first: empty stack", 0, s.nframes);
	CHECK_U64("first count", 2, s.count);
	agg__stack(ag, 2, &s);
	CHECK_INT("last: deepest", 2, s.nframes);
	CHECK_U64("merged count", 7, s.count);
	CHECK_INT("root first", f[0], s.nframes ? s.frames[0] : 99);
	agg__stack(ag, 3, &s);
	CHECK("out of range gives an empty stack", s.frames == NULL && s.count == 0);
	agg__free(ag);
	CHECK_INT("NULL agg has no stacks", 0, agg__nstacks(NULL));
}

/* Adds the same stacks in the given order; returns the iteration as "group:frame,frame=count|". */
static void build_order(const int *order, char *out, size_t len)
{
	static const char *const names[] = {"b", "a", "c"};
	static const uint32_t stacks[][4] = {
	    /* group, nframes, frame indexes into names */
	    {0, 2, 0, 1}, {0, 1, 1, 0}, {1, 2, 1, 2}, {0, 2, 0, 2}, {1, 0, 0, 0}, {0, 2, 1, 0},
	};
	struct agg *ag = NULL;
	struct agg_stack s;
	uint32_t g[2], f[3], fr[2];
	size_t i, o = 0;
	uint32_t k;

	agg__new(&ag);
	for (i = 0; i < 6; i++) {
		const uint32_t *st = stacks[order[i]];

		/* intern lazily, so ids depend on the order too */
		agg__group(ag, st[0] ? "g1" : "g0", &g[st[0]]);
		for (k = 0; k < st[1]; k++) {
			agg__frame(ag, names[st[2 + k]], FRAME_ERLANG, &f[st[2 + k]]);
			fr[k] = f[st[2 + k]];
		}
		agg__add(ag, g[st[0]], fr, st[1], (uint64_t)order[i] + 1);
	}
	out[0] = 0;
	for (i = 0; i < agg__nstacks(ag); i++) {
		agg__stack(ag, i, &s);
		o += snprintf(out + o, len - o, "%s:", agg__group_name(ag, s.group));
		for (k = 0; k < s.nframes; k++)
			o += snprintf(out + o, len - o, "%s%s", k ? "," : "",
				      agg__frame_name(ag, s.frames[k]));
		o += snprintf(out + o, len - o, "=%llu|", (unsigned long long)s.count);
	}
	agg__free(ag);
}

static void test_order(void)
{
	static const int fwd[] = {0, 1, 2, 3, 4, 5}, rev[] = {5, 4, 3, 2, 1, 0},
			 mix[] = {3, 0, 5, 2, 4, 1};
	const char *expect = "g0:a=2|g0:a,b=6|g0:b,a=1|g0:b,c=4|g1:=5|g1:a,c=3|";
	char out[256];

	build_order(fwd, out, sizeof(out));
	CHECK_STR("sorted by group name, then frame names, shorter first", expect, out);
	build_order(rev, out, sizeof(out));
	CHECK_STR("reverse insertion, same order", expect, out);
	build_order(mix, out, sizeof(out));
	CHECK_STR("mixed insertion, same order", expect, out);
}

/* Sorting stays right after more adds, and kinds break ties between equal names. */
static void test_resort(void)
{
	struct agg *ag = NULL;
	struct agg_stack s;
	uint32_t g, z, a, an;

	agg__new(&ag);
	agg__group(ag, "g", &g);
	agg__frame(ag, "z", FRAME_ERLANG, &z);
	agg__add(ag, g, &z, 1, 1);
	CHECK_INT("one stack", 1, agg__nstacks(ag));
	agg__frame(ag, "a", FRAME_NATIVE, &an);
	agg__frame(ag, "a", FRAME_ERLANG, &a);
	agg__add(ag, g, &an, 1, 1);
	agg__add(ag, g, &a, 1, 1);
	CHECK_INT("three stacks", 3, agg__nstacks(ag));
	agg__stack(ag, 0, &s);
	CHECK("a (Erlang) first", s.frames[0] == a);
	agg__stack(ag, 1, &s);
	CHECK("a (native) second", s.frames[0] == an);
	agg__stack(ag, 2, &s);
	CHECK("z last", s.frames[0] == z);
	agg__free(ag);
}

/* 200k distinct stacks over 2000 frames in 50 groups: must stay fast (hash tables, one sort). */
static void test_large(void)
{
	struct agg *ag = NULL;
	struct agg_stack s, prev;
	uint32_t g, f[4], i, bad = 0;
	char name[32];
	clock_t t0 = clock();
	size_t k;

	agg__new(&ag);
	for (i = 0; i < 200000; i++) {
		snprintf(name, sizeof(name), "<0.%u.0>", i % 50);
		agg__group(ag, name, &g);
		snprintf(name, sizeof(name), "m%u:f/%u", (i * 7919u) % 2000, i % 3);
		agg__frame(ag, name, FRAME_ERLANG, &f[0]);
		snprintf(name, sizeof(name), "leaf%u", i % 97);
		agg__frame(ag, name, FRAME_NATIVE, &f[1]);
		snprintf(name, sizeof(name), "x%u", i);
		agg__frame(ag, name, FRAME_LABEL, &f[2]);
		if (agg__add(ag, g, f, 3, 1) || agg__add(ag, g, f, 2, 1))
			bad++;
	}
	CHECK_INT("all adds succeed", 0, bad);
	CHECK_U64("total", 400000, agg__total(ag));
	CHECK("distinct stacks", agg__nstacks(ag) > 200000 && agg__nstacks(ag) <= 400000);
	for (k = 1, bad = 0; k < agg__nstacks(ag); k++) {
		agg__stack(ag, k - 1, &prev);
		agg__stack(ag, k, &s);
		if (strcmp(agg__group_name(ag, prev.group), agg__group_name(ag, s.group)) > 0)
			bad++;
	}
	CHECK_INT("groups in order", 0, bad);
	CHECK("under 10 s of CPU", (double)(clock() - t0) / CLOCKS_PER_SEC < 10.0);
	agg__free(ag);
}

/* Tables past 2 MiB move from the heap to mappings of their own (aggregate.c, big_grow): every
 * stack's frames read back as added, across the move and the mremaps after it, the pool stays
 * 2 MiB-aligned (its huge pages whole), and agg__bytes counts what is written, not the mappings'
 * size. */
/* This process's anonymous mappings of 2 MiB or more whose start or length is not a multiple of
 * 2 MiB: the aggregate's tables, once mapped, are whole huge pages (bigmem.h). The stack table
 * (40-byte entries) at 65,536 stacks is 2.5 MiB: where its mapping was left to mmap and mremap,
 * it was neither. */
static unsigned unaligned_maps(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned bad = 0;

	if (!f)
		return 1000;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx rw-p 00000000 00:00 0", &lo, &hi) == 2 &&
		    !strchr(line, '[') && hi - lo >= (2u << 20) &&
		    (lo % (2u << 20) || (hi - lo) % (2u << 20)))
			bad++;
	}
	fclose(f);
	return bad;
}

/* Stack i's frame d: each stack other from the next, all of them 8 ids. */
static uint32_t big_frame(const uint32_t *ids, uint32_t i, uint32_t d)
{
	return ids[(i >> (d % 12)) % 8 ^ (d & 7)];
}

static void test_big_tables(void)
{
	enum { DEPTH = 600, STACKS = 3000, SHORT = 70000 };
	struct agg *ag = NULL;
	struct agg_stack st;
	uint32_t g, f[DEPTH], ids[8], i, d, bad = 0;
	char name[32];

	agg__new(&ag);
	agg__group(ag, "<0.1.0>", &g);
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "m:f%u/0", i);
		agg__frame(ag, name, FRAME_ERLANG, &ids[i]);
	}
	CHECK("an empty aggregate is small", agg__bytes(ag) < 4096);
	for (i = 0; i < STACKS; i++) {
		for (d = 0; d < DEPTH; d++)
			f[d] = big_frame(ids, i, d);
		if (agg__add(ag, g, f, DEPTH, 1 + i % 3))
			bad++;
	}
	CHECK_INT("adds of 1.8 M frame ids succeed", 0, bad);
	for (i = 0, bad = 0; i < agg__nstacks(ag); i++) {
		agg__stack_by_id(ag, i, &st);
		for (d = 0; d < st.nframes; d++)
			if (st.frames[d] != big_frame(ids, i, d))
				bad++;
		bad += st.nframes != DEPTH;
	}
	CHECK_INT("every frame reads back as added", 0, bad);
	CHECK("agg__bytes: what is written, within 1 MiB",
	      agg__bytes(ag) >= (size_t)agg__nstacks(ag) * DEPTH * 4 &&
		  agg__bytes(ag) < (size_t)agg__nstacks(ag) * DEPTH * 4 + (1u << 20));
	/* Stack 0's frames start the pool: moved by mremap onto aligned places, not where mremap
	 * would have put them (huge pages split, the rest in 4 KiB faults). */
	agg__stack_by_id(ag, 0, &st);
	CHECK_INT("the pool, grown to 7 MiB, starts on a 2 MiB boundary", 0,
		  (uintptr_t)st.frames % (2u << 20));
	/* And 70,000 short stacks (each i's digits in base 8), for a stack table past 2 MiB. */
	for (i = 0, bad = 0; i < SHORT; i++) {
		for (d = 0; d < 6; d++)
			f[d] = ids[(i >> (3 * d)) % 8];
		bad += agg__add(ag, g, f, 6, 1) != 0;
	}
	CHECK_INT("adds of 70,000 short stacks succeed", 0, bad);
	CHECK_INT("the stacks: all distinct", STACKS + SHORT, agg__nstacks(ag));
	CHECK_INT("the mappings of 2 MiB or more: whole huge pages, aligned", 0, unaligned_maps());
	agg__free(ag);
}

/* pprof's labels: stacks with other tags stay apart, in a stable order (tag last); label sets
 * intern like names. */
static void test_tags(void)
{
	struct agg *ag;
	struct agg_stack s;
	uint32_t g, f, l1, l2, l3;

	CHECK_INT("new", 0, agg__new(&ag));
	CHECK_INT("group", 0, agg__group(ag, "x", &g));
	CHECK_INT("labelset", 0, agg__labelset(ag, "pid=<0.1.0>\x1fscheduler=normal 1", &l1));
	CHECK_INT("labelset 2", 0, agg__labelset(ag, "pid=<0.1.0>", &l2));
	CHECK_INT("labelset again", 0, agg__labelset(ag, "pid=<0.1.0>\x1fscheduler=normal 1", &l3));
	CHECK_INT("same text, same id", l1, l3);
	CHECK("other text, other id", l1 != l2);
	CHECK_STR("text", "pid=<0.1.0>", agg__labelset_text(ag, l2));
	CHECK("unknown id", agg__labelset_text(ag, 99) == NULL);
	CHECK_INT("frame", 0, agg__frame(ag, "m:f/1", FRAME_ERLANG, &f));
	CHECK_INT("tag 3", 0, agg__add_tagged(ag, g, 3, &f, 1, 2));
	CHECK_INT("tag 1", 0, agg__add_tagged(ag, g, 1, &f, 1, 5));
	CHECK_INT("tag 3 again", 0, agg__add_tagged(ag, g, 3, &f, 1, 1));
	CHECK_INT("two stacks", 2, agg__nstacks(ag));
	agg__stack(ag, 0, &s);
	CHECK_INT("first: tag 1", 1, s.tag);
	CHECK_INT("tag 1 count", 5, s.count);
	agg__stack(ag, 1, &s);
	CHECK_INT("second: tag 3", 3, s.tag);
	CHECK_INT("tag 3 count", 3, s.count);
	CHECK_INT("total", 8, agg__total(ag));
	agg__free(ag);
}

/* The iteration order from names alone: group name, then (frame name, kind) root first, a prefix
 * first, then tag. */
static int ref_cmp(const struct agg *ag, const struct agg_stack *s, const struct agg_stack *u)
{
	uint32_t k, n = s->nframes < u->nframes ? s->nframes : u->nframes;
	int c = strcmp(agg__group_name(ag, s->group), agg__group_name(ag, u->group));

	if (c)
		return c;
	for (k = 0; k < n; k++) {
		if ((c = strcmp(agg__frame_name(ag, s->frames[k]),
				agg__frame_name(ag, u->frames[k]))))
			return c;
		if (agg__frame_kind(ag, s->frames[k]) != agg__frame_kind(ag, u->frames[k]))
			return agg__frame_kind(ag, s->frames[k]) < agg__frame_kind(ag, u->frames[k])
				   ? -1
				   : 1;
	}
	if (s->nframes != u->nframes)
		return s->nframes < u->nframes ? -1 : 1;
	return s->tag < u->tag ? -1 : s->tag > u->tag;
}

/* The frames from the root s and u have with the same ids, or -1 in other groups. */
static long ref_same(const struct agg_stack *s, const struct agg_stack *u)
{
	uint32_t n = s->nframes < u->nframes ? s->nframes : u->nframes, k = 0;

	if (s->group != u->group)
		return -1;
	while (k < n && s->frames[k] == u->frames[k])
		k++;
	return k;
}

/* Random stacks sharing long prefixes (deep, few names, kinds of one name, tags, stacks that are
 * others' prefixes), in every size class of the sort (a few, and thousands): iteration strictly
 * ascending by ref_cmp, and what each shares with the one before as the sort says. */
static void test_sort_random(void)
{
	static const size_t sizes[] = {1, 2, 5, 11, 12, 13, 40, 3000};
	unsigned seed = 12345;
	size_t z;

	for (z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		struct agg *ag = NULL;
		struct agg_stack s, prev;
		uint32_t g, fr[300], bad = 0, same_bad = 0, i, k, depth;
		char name[32];

		agg__new(&ag);
		for (i = 0; i < sizes[z]; i++) {
			seed = seed * 1103515245u + 12345u;
			snprintf(name, sizeof(name), "g%u", (seed >> 16) % 3);
			agg__group(ag, name, &g);
			depth = (seed >> 8) % 300;
			for (k = 0; k < depth; k++) {
				seed = seed * 1103515245u + 12345u;
				/* mostly the same frame at each depth: long shared prefixes */
				snprintf(name, sizeof(name), "m:f%u/%u", k % 7,
					 (seed >> 16) % 16 ? 0 : (seed >> 20) % 3);
				agg__frame(ag, name, (seed >> 24) % 8 ? FRAME_ERLANG : FRAME_NATIVE,
					   &fr[k]);
			}
			seed = seed * 1103515245u + 12345u;
			agg__add_tagged(ag, g, (seed >> 16) % 4, fr, depth, 1);
		}
		for (k = 1; k < agg__nstacks(ag); k++) {
			agg__stack(ag, k - 1, &prev);
			agg__stack(ag, k, &s);
			if (ref_cmp(ag, &prev, &s) >= 0)
				bad++;
			if (agg__same_as_last(ag, k) != ref_same(&prev, &s))
				same_bad++;
		}
		CHECK_INT("random stacks strictly in order", 0, bad);
		CHECK_INT("random stacks: what each shares with the last, as the sort found", 0,
			  same_bad);
		CHECK_INT("the first stack shares nothing", -1, agg__same_as_last(ag, 0));
		agg__free(ag);
	}
	/* One deep stack under 40 tags, added last tag first: a partition of the sort past the
	 * last frame, ordered by tag alone. */
	{
		struct agg *ag = NULL;
		struct agg_stack s;
		uint32_t g, fr[50], k, bad = 0;

		agg__new(&ag);
		agg__group(ag, "g", &g);
		for (k = 0; k < 50; k++)
			agg__frame(ag, k % 2 ? "m:a/1" : "m:b/1", FRAME_ERLANG, &fr[k]);
		for (k = 40; k > 0; k--)
			agg__add_tagged(ag, g, k, fr, 50, 1);
		for (k = 0; k < agg__nstacks(ag); k++) {
			agg__stack(ag, k, &s);
			bad += s.tag != k + 1;
		}
		CHECK_INT("one stack under 40 tags: 40 stacks", 40, (int)agg__nstacks(ag));
		CHECK_INT("one stack under 40 tags: by tag", 0, bad);
		agg__free(ag);
	}
}

/* The shared ids from the first: every length around the four-at-a-time step, the first
 * difference at every place, or none. */
static void test_ids_shared(void)
{
	uint32_t p[11], q[11], n, at, bad = 0;

	for (n = 0; n <= 11; n++) {
		for (at = 0; at <= n; at++) {
			for (uint32_t k = 0; k < 11; k++)
				p[k] = q[k] = k * 7 + 1;
			if (at < n)
				q[at] ^= 0x100;
			bad += agg__ids_shared(p, q, n) != at;
		}
	}
	CHECK_INT("ids shared up to the first difference, or all", 0, bad);
}

/* The iteration order is the order by names unless a name has two kinds. */
static void test_order_by_names(void)
{
	struct agg *ag = NULL;
	uint32_t g, f[2];

	agg__new(&ag);
	agg__group(ag, "g", &g);
	agg__frame(ag, "m:a/1", FRAME_ERLANG, &f[0]);
	agg__frame(ag, "m:b/1", FRAME_ERLANG, &f[1]);
	agg__add(ag, g, f, 2, 1);
	CHECK("one kind a name: the order is by names", agg__order_by_names(ag));
	agg__frame(ag, "m:a/1", FRAME_NATIVE, &f[1]);
	agg__add(ag, g, f, 2, 1);
	CHECK("a name of two kinds: not", !agg__order_by_names(ag));
	agg__free(ag);
}

int main(void)
{
	test_order_by_names();
	test_ids_shared();
	test_tags();
	test_intern();
	test_add();
	test_order();
	test_resort();
	test_large();
	test_big_tables();
	test_sort_random();
	return check_done();
}
