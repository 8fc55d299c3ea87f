/* Aggregated stacks (see aggregate.h): frame and group names interned through open-addressing
 * index tables (idtab.h), distinct (group, frames) stacks counted in a third, all in amortised O(1)
 * per call.
 * Iteration is sorted lazily by names, so the order does not depend on insertion order.
 * Does not own: unwinding, formatting, or bounding memory (the caller decides what to add). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "aggregate.h"
#include "bigmem.h"
#include "hash.h"
#include "idtab.h"

#define AGG_MAX_IDS (UINT32_MAX - 1)
/* Frames a stack may have: the sort keeps a depth in 30 bits (lcpq); the sampler's stacks have
 * at most MAX_FRAMES, about 16,000. */
#define AGG_MAX_DEPTH (1u << 24)

/* Interned names (frames or groups), each with a kind (always 0 for groups). */
struct itab {
	char **names;
	uint8_t *kinds;
	uint32_t *rank;	 /* rank[id]: position of id in the (name, kind) order */
	uint32_t *nrank; /* nrank[id]: the same, equal for equal names whatever their kinds */
	uint32_t *perm;	 /* scratch for computing rank */
	size_t n, cap;
	size_t names_bytes; /* the names' text, for agg__bytes */
	bool name_kinds;    /* a name interned with two kinds (set by itab_rank) */
	struct idtab idx;
};

struct itab_key {
	const char *name;
	uint8_t kind;
};

struct stk {
	uint32_t group, nframes, tag;
	size_t off; /* into pool */
	uint64_t count;
	uint64_t hash;
};

struct agg {
	struct itab frames, groups, labels; /* labels: agg__labelset */
	struct stk *stk;
	/* Each table's capacity: equal but after a grow that failed part way, and whether a table
	 * is mapped (big_mapped) follows from it, so each is kept. */
	size_t nstk, capstk, caporder, capsep, capkeys;
	uint32_t *pool;
	size_t npool, cappool;
	struct idtab idx;    /* of stack indexes */
	size_t *order;	     /* stack indexes, sorted when sorted is true */
	uint32_t *sep;	     /* sep[i]: the depth order[i - 1] and order[i] part at (stack_key) */
	uint64_t *keys;	     /* the sort's: keys[i], where order[i] parts from the pivot */
	uint16_t *frame_mod; /* per frame id: index + 1 into mods, 0 = not set */
	size_t cap_frame_mod;
	char **mods; /* distinct module names */
	size_t nmods, cap_mods;
	bool sorted;
	uint64_t total;
	uint32_t last; /* the stack the last agg__add_tagged counted */
};

/* The capacity a table of cap entries grows to for need: doubled from 16. false when n * size
 * would overflow. */
static bool grown_cap(size_t cap, size_t need, size_t size, size_t *n)
{
	*n = cap ? cap : 16;
	while (*n < need) {
		if (*n > SIZE_MAX / 2 / size)
			return false;
		*n *= 2;
	}
	return true;
}

static int heap_resize(void **p, size_t *cap, size_t n, size_t size)
{
	void *q = realloc(*p, n * size);

	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n;

	if (need <= *cap)
		return 0;
	if (!grown_cap(*cap, need, size, &n))
		return -ENOMEM;
	return heap_resize(p, cap, n, size);
}

/* The stack tables and the frame-id pool, which grow with every new stack. Past BIG_MIN_BYTES a
 * table moves to memory of its own in huge pages (bigmem.h; advice only: where the kernel
 * declines, 4 KiB pages as before), grown by mremap onto a new 2 MiB-aligned mapping (the pages
 * move, none is copied). Where mremap chose the address, it was not aligned: the huge pages were
 * split, the rest faulted in 4 KiB at a time, ~500 faults in a 10 s record. A compiler's record
 * adds ~700 stacks and ~500 KiB of frame ids a second; in 4 KiB pages from realloc that was ~110
 * page faults a second and a copy of the pool at every doubling: a seventh of the whole record's
 * CPU (issue 27). Smaller tables (most aggregates, a flight recorder's generations) stay on the
 * heap, so that an aggregate is not 2 MiB a table. Whether a table is mapped follows from its
 * capacity alone. */
#define BIG_MIN_BYTES ((size_t)2 << 20)

static bool big_mapped(size_t cap, size_t size)
{
	return cap * size >= BIG_MIN_BYTES;
}

static int big_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n, len;
	void *q;

	if (need <= *cap)
		return 0;
	if (!grown_cap(*cap, need, size, &n))
		return -ENOMEM;
	if (!big_mapped(n, size))
		return heap_resize(p, cap, n, size);
	/* Whole huge pages: the capacity is what the rounded length holds. */
	if (!(len = bigmem__len(n * size)) || !(q = bigmem__map(len)))
		return -ENOMEM;
	n = len / size;
	if (big_mapped(*cap, size)) {
		/* The pages move onto the new, aligned place (in whole huge pages where they
		 * were), none is copied; what was mapped there is replaced. */
		void *m =
		    mremap(*p, bigmem__len(*cap * size), len, MREMAP_MAYMOVE | MREMAP_FIXED, q);

		if (m == MAP_FAILED) {
			bigmem__unmap(q, len);
			return -ENOMEM;
		}
	} else {
		if (*cap) /* from the heap: once */
			memcpy(q, *p, *cap * size);
		free(*p);
	}
	*p = q;
	*cap = n;
	return 0;
}

static void big_free(void *p, size_t cap, size_t size)
{
	if (big_mapped(cap, size))
		bigmem__unmap(p, cap * size);
	else
		free(p);
}

/* ---- interning ----------------------------------------------------------------------------- */

static uint64_t itab_hash(const char *name, uint8_t kind)
{
	return hash__bytes(hash__bytes(HASH_INIT, &kind, 1), name, strlen(name));
}

static uint64_t itab_hash_id(const void *ctx, uint32_t id)
{
	const struct itab *t = ctx;

	return itab_hash(t->names[id], t->kinds[id]);
}

static bool itab_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct itab *t = ctx;
	const struct itab_key *k = key;

	return t->kinds[id] == k->kind && !strcmp(t->names[id], k->name);
}

static int itab_grow(struct itab *t)
{
	size_t cap = t->cap, need = t->n + 1;
	int err;

	if ((err = grow((void **)&t->names, &cap, need, sizeof(*t->names))))
		return err;
	cap = t->cap;
	if ((err = grow((void **)&t->kinds, &cap, need, sizeof(*t->kinds))))
		return err;
	cap = t->cap;
	if ((err = grow((void **)&t->rank, &cap, need, sizeof(*t->rank))))
		return err;
	cap = t->cap;
	if ((err = grow((void **)&t->nrank, &cap, need, sizeof(*t->nrank))))
		return err;
	cap = t->cap;
	if ((err = grow((void **)&t->perm, &cap, need, sizeof(*t->perm))))
		return err;
	t->cap = cap;
	return 0;
}

static int itab_intern(struct itab *t, const char *name, uint8_t kind, uint32_t *id)
{
	struct itab_key k = {name, kind};
	size_t j;
	int err;

	if ((err = idtab__reserve(&t->idx, 64, itab_hash_id, t)))
		return err;
	if (!idtab__find(&t->idx, itab_hash(name, kind), itab_eq, t, &k, &j, id))
		return 0;
	if (t->n >= AGG_MAX_IDS)
		return -E2BIG;
	if ((err = itab_grow(t)))
		return err;
	t->names[t->n] = strdup(name);
	if (!t->names[t->n])
		return -ENOMEM;
	t->kinds[t->n] = kind;
	t->names_bytes += strlen(name) + 1;
	idtab__insert(&t->idx, j, (uint32_t)t->n);
	*id = (uint32_t)t->n++;
	return 0;
}

static void itab_free(struct itab *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->names[i]);
	free(t->names);
	free(t->kinds);
	free(t->rank);
	free(t->nrank);
	free(t->perm);
	idtab__free(&t->idx);
}

int agg__new(struct agg **out)
{
	struct agg *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->sorted = true;
	*out = a;
	return 0;
}

/* A new name does not reorder existing stacks, but it has no rank until the next sort. */
static int agg_intern(struct agg *a, struct itab *t, const char *name, uint8_t kind, uint32_t *id)
{
	size_t n = t->n;
	int err = itab_intern(t, name, kind, id);

	if (t->n != n)
		a->sorted = false;
	return err;
}

int agg__frame(struct agg *a, const char *name, enum frame_kind kind, uint32_t *id)
{
	if (!a || !name || !id || (unsigned)kind > FRAME_LABEL)
		return -EINVAL;
	return agg_intern(a, &a->frames, name, (uint8_t)kind, id);
}

int agg__group(struct agg *a, const char *name, uint32_t *id)
{
	if (!a || !name || !id)
		return -EINVAL;
	return agg_intern(a, &a->groups, name, 0, id);
}

int agg__labelset(struct agg *a, const char *text, uint32_t *id)
{
	if (!a || !text || !id)
		return -EINVAL;
	return itab_intern(&a->labels, text, 0, id);
}

const char *agg__labelset_text(const struct agg *a, uint32_t id)
{
	return a && id < a->labels.n ? a->labels.names[id] : NULL;
}

/* ---- stacks -------------------------------------------------------------------------------- */

/* Two frame ids a multiply, in four independent lanes (one chain waited on every multiply), then
 * the lanes, the group, tag and length folded together and a final mix (murmur3's fmix64) for the
 * table's low bits. With the largest id found without a branch a frame, agg__add of a compiler's
 * samples (184 frames on average) went from 200 to 150-167 ns (issue 27); a byte a multiply had
 * been ~5 ns a frame. Kept in memory only: nothing outside this process sees it. */
static uint64_t stack_hash(uint32_t group, uint32_t tag, const uint32_t *frames, uint32_t nframes)
{
	const uint64_t k = 0x9e3779b97f4a7c15ull;
	uint64_t h0 = HASH_INIT, h1 = HASH_INIT + 1, h2 = HASH_INIT + 2, h3 = HASH_INIT + 3, x;
	uint32_t i = 0;

	for (; i + 8 <= nframes; i += 8) {
		h0 = (h0 ^ (frames[i] | (uint64_t)frames[i + 1] << 32)) * k;
		h1 = (h1 ^ (frames[i + 2] | (uint64_t)frames[i + 3] << 32)) * k;
		h2 = (h2 ^ (frames[i + 4] | (uint64_t)frames[i + 5] << 32)) * k;
		h3 = (h3 ^ (frames[i + 6] | (uint64_t)frames[i + 7] << 32)) * k;
	}
	for (; i + 1 < nframes; i += 2)
		h0 = (h0 ^ (frames[i] | (uint64_t)frames[i + 1] << 32)) * k;
	if (i < nframes)
		h1 = (h1 ^ frames[i]) * k;
	x = (((h0 * k + h1) * k + h2) * k + h3) * k;
	x = (x ^ (group | (uint64_t)tag << 32)) * k;
	x ^= nframes;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static uint64_t stack_hash_id(const void *ctx, uint32_t id)
{
	const struct agg *a = ctx;

	return a->stk[id].hash;
}

struct stack_key {
	uint32_t group, tag, nframes;
	const uint32_t *frames;
	uint64_t hash;
};

static int stacks_append(struct agg *a, size_t slot, const struct stack_key *k)
{
	struct stk *s;
	int err;

	if (a->nstk >= AGG_MAX_IDS)
		return -E2BIG;
	if ((err = big_grow((void **)&a->stk, &a->capstk, a->nstk + 1, sizeof(*a->stk))) ||
	    (err = big_grow((void **)&a->order, &a->caporder, a->nstk + 1, sizeof(*a->order))) ||
	    (err = big_grow((void **)&a->sep, &a->capsep, a->nstk + 1, sizeof(*a->sep))) ||
	    (err = big_grow((void **)&a->keys, &a->capkeys, a->nstk + 1, sizeof(*a->keys))) ||
	    (err =
		 big_grow((void **)&a->pool, &a->cappool, a->npool + k->nframes, sizeof(*a->pool))))
		return err;
	s = &a->stk[a->nstk];
	s->group = k->group;
	s->tag = k->tag;
	s->nframes = k->nframes;
	s->off = a->npool;
	s->count = 0;
	s->hash = k->hash;
	if (k->nframes)
		memcpy(a->pool + a->npool, k->frames, k->nframes * sizeof(*k->frames));
	a->npool += k->nframes;
	a->order[a->nstk] = a->nstk;
	idtab__insert(&a->idx, slot, (uint32_t)a->nstk);
	a->nstk++;
	a->sorted = false;
	return 0;
}

static bool stack_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct agg *a = ctx;
	const struct stk *s = &a->stk[id];
	const struct stack_key *k = key;

	return s->hash == k->hash && s->group == k->group && s->tag == k->tag &&
	       s->nframes == k->nframes &&
	       (!k->nframes ||
		!memcmp(a->pool + s->off, k->frames, k->nframes * sizeof(*k->frames)));
}

int agg__add(struct agg *a, uint32_t group, const uint32_t *frames, uint32_t nframes,
	     uint64_t count)
{
	return agg__add_tagged(a, group, 0, frames, nframes, count);
}

int agg__add_tagged(struct agg *a, uint32_t group, uint32_t tag, const uint32_t *frames,
		    uint32_t nframes, uint64_t count)
{
	struct stack_key k = {group, tag, nframes, frames, 0};
	size_t j;
	uint32_t i, top = 0;
	int err;

	if (!a || group >= a->groups.n || (nframes && !frames))
		return -EINVAL;
	if (nframes > AGG_MAX_DEPTH)
		return -E2BIG;
	/* The largest id, without a branch a frame: one pass the compiler can vectorise. */
	for (i = 0; i < nframes; i++)
		top = frames[i] > top ? frames[i] : top;
	if (nframes && top >= a->frames.n)
		return -EINVAL;
	if (count == 0)
		return 0;
	if (count > UINT64_MAX - a->total)
		return -EOVERFLOW;
	if ((err = idtab__reserve(&a->idx, 256, stack_hash_id, a)))
		return err;
	k.hash = stack_hash(group, tag, frames, nframes);
	if (idtab__find(&a->idx, k.hash, stack_eq, a, &k, &j, &i)) {
		if ((err = stacks_append(a, j, &k)))
			return err;
		i = (uint32_t)a->nstk - 1;
	}
	a->stk[i].count += count;
	a->total += count;
	a->last = i;
	return 0;
}

uint32_t agg__last_stack(const struct agg *a)
{
	return a->last;
}

void agg__stack_by_id(const struct agg *a, uint32_t id, struct agg_stack *out)
{
	const struct stk *s;

	memset(out, 0, sizeof(*out));
	if (!a || id >= a->nstk)
		return;
	s = &a->stk[id];
	out->frames = a->pool + s->off;
	out->nframes = s->nframes;
	out->group = s->group;
	out->tag = s->tag;
	out->count = s->count;
}

/* A table's bytes: its capacity on the heap (realloc has copied into all of it), what is written
 * in a mapping (the pages past it are address space only). */
static size_t table_bytes(size_t n, size_t cap, size_t size)
{
	return (big_mapped(cap, size) ? n : cap) * size;
}

size_t agg__bytes(const struct agg *a)
{
	if (!a)
		return 0;
	return table_bytes(a->nstk, a->capstk, sizeof(*a->stk)) +
	       table_bytes(a->nstk, a->caporder, sizeof(*a->order)) +
	       table_bytes(a->nstk, a->capsep, sizeof(*a->sep)) +
	       table_bytes(a->nstk, a->capkeys, sizeof(*a->keys)) +
	       table_bytes(a->npool, a->cappool, sizeof(*a->pool)) +
	       a->idx.nslots * sizeof(uint32_t) +
	       (a->frames.cap + a->groups.cap) * (sizeof(char *) + 2 * sizeof(uint32_t) + 1) +
	       a->frames.names_bytes + a->groups.names_bytes;
}

/* ---- sorted iteration ---------------------------------------------------------------------- */

static int cmp_names(const void *x, const void *y, void *arg)
{
	const struct itab *t = arg;
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
	int c = strcmp(t->names[i], t->names[j]);

	if (c)
		return c;
	return t->kinds[i] < t->kinds[j] ? -1 : t->kinds[i] > t->kinds[j];
}

/* rank[id] = position of id when sorted by (name, kind), so stacks compare as integer arrays;
 * nrank[id] = the rank of the first id with that name (a name's kinds sort next to each other). */
static void itab_rank(struct itab *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		t->perm[i] = (uint32_t)i;
	qsort_r(t->perm, t->n, sizeof(*t->perm), cmp_names, t);
	t->name_kinds = false;
	for (i = 0; i < t->n; i++) {
		uint32_t id = t->perm[i], prev = i ? t->perm[i - 1] : 0;

		t->rank[id] = (uint32_t)i;
		t->nrank[id] =
		    i && !strcmp(t->names[id], t->names[prev]) ? t->nrank[prev] : (uint32_t)i;
		t->name_kinds |= t->nrank[id] != i;
	}
}

/* Stacks sort by group name, then frame (name, kind) root first, a prefix first, then tag. The
 * sort key of stack s at depth d: its group's rank at 0, then a frame's rank + 1 root first, then
 * 0 past its last frame; tags break the rest. */
static uint32_t stack_key(const struct agg *a, const struct stk *s, uint32_t d)
{
	if (!d)
		return a->groups.rank[s->group];
	return d <= s->nframes ? a->frames.rank[a->pool[s->off + d - 1]] + 1 : 0;
}

/* The order of two stacks whose keys agree below depth d; *at: the depth they part at (past
 * the last frame of both when they differ only by tag). */
static int cmp_from(const struct agg *a, size_t x, size_t y, uint32_t d, uint32_t *at)
{
	const struct stk *s = &a->stk[x], *u = &a->stk[y];
	uint32_t p, q;

	for (;; d++) {
		p = stack_key(a, s, d);
		q = stack_key(a, u, d);
		*at = d;
		if (p != q)
			return p < q ? -1 : 1;
		if (d && !p)
			return s->tag < u->tag ? -1 : s->tag > u->tag;
	}
}

static int cmp_tags(const void *x, const void *y, void *arg)
{
	const struct agg *a = arg;
	uint32_t p = a->stk[*(const size_t *)x].tag, q = a->stk[*(const size_t *)y].tag;

	return p < q ? -1 : p > q;
}

/* Stacks the same but for their tags, which part at depth d. */
static void sort_tags(const struct agg *a, size_t *x, size_t n, uint32_t d)
{
	qsort_r(x, n, sizeof(*x), cmp_tags, (void *)a);
	for (size_t i = 1; i < n; i++)
		a->sep[x - a->order + i] = d;
}

#define LCPQ_SMALL 12
#define LCPQ_AHEAD 4

uint32_t agg__ids_shared(const uint32_t *p, const uint32_t *q, uint32_t n)
{
	uint32_t i = 0;

	for (; i + 4 <= n; i += 4) {
		uint64_t x0, x1, y0, y1;

		memcpy(&x0, p + i, 8), memcpy(&x1, p + i + 2, 8);
		memcpy(&y0, q + i, 8), memcpy(&y1, q + i + 2, 8);
		if ((x0 ^ y0) | (x1 ^ y1))
			break;
	}
	while (i < n && p[i] == q[i])
		i++;
	return i;
}

/* Where stacks s and u, whose keys agree below depth d, part: the depth of their first unequal
 * keys, *ks and *ku (equal, 0, when both end there: the same stack but for tags). Frames are
 * compared as ids (equal ids, equal ranks), in order: a pass over each stack's frames. */
static uint32_t part_at(const struct agg *a, const struct stk *s, const struct stk *u, uint32_t d,
			uint32_t *ks, uint32_t *ku)
{
	const uint32_t *p = a->pool + s->off, *q = a->pool + u->off;
	uint32_t n = s->nframes < u->nframes ? s->nframes : u->nframes, i;

	if (!d) {
		if (s->group != u->group) {
			*ks = a->groups.rank[s->group];
			*ku = a->groups.rank[u->group];
			return 0;
		}
		d = 1;
	}
	i = d - 1 < n ? d - 1 : n;
	i += agg__ids_shared(p + i, q + i, n - i);
	*ks = stack_key(a, s, i + 1);
	*ku = stack_key(a, u, i + 1);
	return i + 1;
}

/* Sort x[0, n) by k (3-way quicksort: the keys repeat), x moved with its key. */
static void sort_keyed(uint64_t *k, size_t *x, size_t n)
{
	while (n > 1) {
		size_t lt = 0, i = 0, gt = n;
		uint64_t pivot, a, b, c;

		if (n < 16) {
			for (size_t j = 1; j < n; j++)
				for (size_t m = j; m && k[m - 1] > k[m]; m--) {
					uint64_t t = k[m];
					size_t y = x[m];

					k[m] = k[m - 1], x[m] = x[m - 1];
					k[m - 1] = t, x[m - 1] = y;
				}
			return;
		}
		a = k[0], b = k[n / 2], c = k[n - 1];
		pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
		while (i < gt) {
			uint64_t t = k[i];
			size_t y = x[i];

			if (t < pivot) {
				k[i] = k[lt], x[i] = x[lt];
				k[lt] = t, x[lt] = y;
				i++, lt++;
			} else if (t > pivot) {
				gt--;
				k[i] = k[gt], x[i] = x[gt];
				k[gt] = t, x[gt] = y;
			} else {
				i++;
			}
		}
		/* Into the smaller side, then on with the larger: depth log2 n at most. */
		if (lt < n - gt) {
			sort_keyed(k, x, lt);
			k += gt, x += gt, n -= gt;
		} else {
			sort_keyed(k + gt, x + gt, n - gt);
			n = lt;
		}
	}
}

#define PART_LT	   0ull
#define PART_EQ	   1ull
#define PART_GT	   2ull
#define PART_DEPTH 0x3fffffffull

/* The depth a part's stacks left the pivot at, from their sort key. */
static uint32_t part_depth(uint64_t key)
{
	uint32_t v = (uint32_t)(key >> 32) & PART_DEPTH;

	return key >> 62 == PART_GT ? (uint32_t)(PART_DEPTH - v) : v;
}

/* Are a part's stacks one stack but for their tags: the pivot's, or below it and all ended at
 * the depth they left it (key 0 past the last frame; at depth 0 a key is a group's rank)? */
static bool tags_only(uint64_t key)
{
	return key >> 62 == PART_EQ || (part_depth(key) && !(uint32_t)key);
}

/* Sort stack indexes x[0, n), whose keys agree below depth d, and note where neighbours part
 * (a->sep). Each stack is compared with a pivot once, frame after frame from d to where they part
 * (part_at), and the stacks are ordered by that: those below the pivot by the depth they leave it
 * at (the shallower first), then their key there; the pivot's equals; those above by depth, the
 * deeper first, then key. Stacks that left at one depth with one key agree below the next: each
 * such part is sorted the same way from there. The multikey quicksort this replaced partitioned
 * on one key a depth, and took a compiler's stacks (190 frames deep, sharing 177 with their
 * neighbours) through 75 partitions each on average (issue 27); here a stack is read in order,
 * once a pivot. The parts but the largest are sorted by recursion (each at most half), so the
 * depth is log2 n; the largest, which never holds the pivot, is sorted next in the loop. */
static void lcpq(const struct agg *a, size_t *x, size_t n, uint32_t d)
{
	while (n > 1) {
		const size_t base = (size_t)(x - a->order);
		uint64_t *kx = a->keys + base;
		const struct stk *pv;
		size_t pi, b, big = 0, big_n = 0;
		uint32_t at, big_d = 0;

		if (n < LCPQ_SMALL) {
			for (size_t j = 1; j < n; j++)
				for (size_t m = j; m && cmp_from(a, x[m - 1], x[m], d, &at) > 0;
				     m--) {
					size_t t = x[m];

					x[m] = x[m - 1];
					x[m - 1] = t;
				}
			for (size_t j = 1; j < n; j++) {
				cmp_from(a, x[j - 1], x[j], d, &at);
				a->sep[base + j] = at;
			}
			return;
		}
		/* The median of the first, middle and last. */
		{
			size_t i0 = x[0], i1 = x[n / 2], i2 = x[n - 1];

			if (cmp_from(a, i0, i1, d, &at) < 0)
				pi = cmp_from(a, i1, i2, d, &at) < 0   ? i1
				     : cmp_from(a, i0, i2, d, &at) < 0 ? i2
								       : i0;
			else
				pi = cmp_from(a, i0, i2, d, &at) < 0   ? i0
				     : cmp_from(a, i1, i2, d, &at) < 0 ? i2
								       : i1;
		}
		pv = &a->stk[pi];
		for (size_t j = 0; j < n; j++) {
			uint32_t ks, kp, dep;

			/* The stacks compared next, asked for ahead: each is a read at random. */
			if (j + 2 * LCPQ_AHEAD < n)
				__builtin_prefetch(&a->stk[x[j + 2 * LCPQ_AHEAD]]);
			if (j + LCPQ_AHEAD < n) {
				const struct stk *f = &a->stk[x[j + LCPQ_AHEAD]];

				__builtin_prefetch(a->pool + f->off + (d ? d - 1 : 0));
			}
			dep = part_at(a, &a->stk[x[j]], pv, d, &ks, &kp);

			if (ks == kp)
				kx[j] = PART_EQ << 62 | (uint64_t)dep << 32;
			else if (ks < kp)
				kx[j] = PART_LT << 62 | (uint64_t)dep << 32 | ks;
			else
				kx[j] = PART_GT << 62 | (PART_DEPTH - dep) << 32 | ks;
		}
		sort_keyed(kx, x, n);
		/* The parts, each a run of one key: where each parts from the last, then each
		 * sorted but the largest. */
		for (b = 0; b < n;) {
			size_t e = b + 1;
			uint32_t dep = part_depth(kx[b]);

			while (e < n && kx[e] == kx[b])
				e++;
			if (b) {
				uint32_t prev = part_depth(kx[b - 1]);

				a->sep[base + b] = prev < dep ? prev : dep;
			}
			if (tags_only(kx[b]))
				sort_tags(a, x + b, e - b, dep);
			else if (e - b > big_n)
				big = b, big_n = e - b, big_d = dep + 1;
			b = e;
		}
		for (b = 0; b < n;) {
			size_t e = b + 1;

			while (e < n && kx[e] == kx[b])
				e++;
			if (!tags_only(kx[b]) && b != big && e - b > 1)
				lcpq(a, x + b, e - b, part_depth(kx[b]) + 1);
			b = e;
		}
		x += big;
		n = big_n;
		d = big_d;
	}
}

/* Iteration is const for callers; the sorted order is a cache all of whose memory was allocated
 * by the mutating calls, so sorting here cannot fail. */
static void ensure_sorted(const struct agg *ca)
{
	struct agg *a = (struct agg *)ca;

	if (a->sorted)
		return;
	itab_rank(&a->frames);
	itab_rank(&a->groups);
	lcpq(a, a->order, a->nstk, 0);
	if (a->nstk)
		a->sep[0] = 0;
	a->sorted = true;
}

uint32_t agg__frame_name_rank(const struct agg *a, uint32_t id)
{
	if (!a || id >= a->frames.n)
		return UINT32_MAX;
	ensure_sorted(a);
	return a->frames.nrank[id];
}

long agg__same_as_last(const struct agg *a, size_t i)
{
	if (!a || !i || i >= a->nstk)
		return -1;
	ensure_sorted(a);
	return (long)a->sep[i] - 1;
}

bool agg__order_by_names(const struct agg *a)
{
	if (!a)
		return true;
	ensure_sorted(a);
	return !a->frames.name_kinds;
}

uint32_t agg__group_rank(const struct agg *a, uint32_t id)
{
	if (!a || id >= a->groups.n)
		return UINT32_MAX;
	ensure_sorted(a);
	return a->groups.rank[id];
}

size_t agg__nstacks(const struct agg *a)
{
	if (!a)
		return 0;
	ensure_sorted(a);
	return a->nstk;
}

void agg__stack(const struct agg *a, size_t i, struct agg_stack *out)
{
	const struct stk *s;

	memset(out, 0, sizeof(*out));
	if (!a || i >= a->nstk)
		return;
	ensure_sorted(a);
	s = &a->stk[a->order[i]];
	out->frames = a->pool + s->off;
	out->nframes = s->nframes;
	out->group = s->group;
	out->tag = s->tag;
	out->count = s->count;
}

/* ---- accessors ----------------------------------------------------------------------------- */

const char *agg__frame_name(const struct agg *a, uint32_t id)
{
	return a && id < a->frames.n ? a->frames.names[id] : NULL;
}

enum frame_kind agg__frame_kind(const struct agg *a, uint32_t id)
{
	return a && id < a->frames.n ? (enum frame_kind)a->frames.kinds[id] : FRAME_LABEL;
}

int agg__frame_set_module(struct agg *a, uint32_t id, const char *module)
{
	size_t i, old = a->cap_frame_mod;

	if (!module || id >= a->frames.n)
		return -EINVAL;
	if (grow((void **)&a->frame_mod, &a->cap_frame_mod, (size_t)id + 1, sizeof(uint16_t)))
		return -ENOMEM;
	memset(a->frame_mod + old, 0, (a->cap_frame_mod - old) * sizeof(uint16_t));
	if (a->frame_mod[id])
		return 0;
	for (i = 0; i < a->nmods && strcmp(a->mods[i], module); i++)
		;
	if (i == a->nmods) {
		if (a->nmods >= UINT16_MAX - 1 ||
		    grow((void **)&a->mods, &a->cap_mods, a->nmods + 1, sizeof(char *)) ||
		    !(a->mods[a->nmods] = strdup(module)))
			return -ENOMEM;
		a->nmods++;
	}
	a->frame_mod[id] = (uint16_t)(i + 1);
	return 0;
}

const char *agg__frame_module(const struct agg *a, uint32_t id)
{
	return a && id < a->cap_frame_mod && a->frame_mod[id] ? a->mods[a->frame_mod[id] - 1]
							      : NULL;
}

const char *agg__group_name(const struct agg *a, uint32_t id)
{
	return a && id < a->groups.n ? a->groups.names[id] : NULL;
}

size_t agg__nframes(const struct agg *a)
{
	return a ? a->frames.n : 0;
}

size_t agg__ngroups(const struct agg *a)
{
	return a ? a->groups.n : 0;
}

uint64_t agg__total(const struct agg *a)
{
	return a ? a->total : 0;
}

void agg__free(struct agg *a)
{
	if (!a)
		return;
	itab_free(&a->frames);
	itab_free(&a->groups);
	itab_free(&a->labels);
	big_free(a->stk, a->capstk, sizeof(*a->stk));
	big_free(a->pool, a->cappool, sizeof(*a->pool));
	idtab__free(&a->idx);
	big_free(a->order, a->caporder, sizeof(*a->order));
	big_free(a->sep, a->capsep, sizeof(*a->sep));
	big_free(a->keys, a->capkeys, sizeof(*a->keys));
	free(a->frame_mod);
	for (size_t i = 0; i < a->nmods; i++)
		free(a->mods[i]);
	free(a->mods);
	free(a);
}
