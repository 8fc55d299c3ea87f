/* Aggregated stacks (see aggregate.h): frame and group names interned through open-addressing
 * index tables (idtab.h), distinct (group, frames) stacks counted in a third, all in amortised O(1)
 * per call.
 * Iteration is sorted lazily by names, so the order does not depend on insertion order.
 * Does not own: unwinding, formatting, or bounding memory (the caller decides what to add). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "hash.h"
#include "idtab.h"

#define AGG_MAX_IDS (UINT32_MAX - 1)

/* Interned names (frames or groups), each with a kind (always 0 for groups). */
struct itab {
	char **names;
	uint8_t *kinds;
	uint32_t *rank;	 /* rank[id]: position of id in the (name, kind) order */
	uint32_t *nrank; /* nrank[id]: the same, equal for equal names whatever their kinds */
	uint32_t *perm;	 /* scratch for computing rank */
	size_t n, cap;
	size_t names_bytes; /* the names' text, for agg__bytes */
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
	size_t nstk, capstk;
	uint32_t *pool;
	size_t npool, cappool;
	struct idtab idx;    /* of stack indexes */
	size_t *order;	     /* stack indexes, sorted when sorted is true */
	uint16_t *frame_mod; /* per frame id: index + 1 into mods, 0 = not set */
	size_t cap_frame_mod;
	char **mods; /* distinct module names */
	size_t nmods, cap_mods;
	bool sorted;
	uint64_t total;
	uint32_t last; /* the stack the last agg__add_tagged counted */
};

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
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
	size_t cap = a->capstk;
	struct stk *s;
	int err;

	if (a->nstk >= AGG_MAX_IDS)
		return -E2BIG;
	if ((err = grow((void **)&a->stk, &cap, a->nstk + 1, sizeof(*a->stk))))
		return err;
	cap = a->capstk;
	if ((err = grow((void **)&a->order, &cap, a->nstk + 1, sizeof(*a->order))))
		return err;
	a->capstk = cap;
	if ((err = grow((void **)&a->pool, &a->cappool, a->npool + k->nframes, sizeof(*a->pool))))
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

size_t agg__bytes(const struct agg *a)
{
	if (!a)
		return 0;
	return a->capstk * (sizeof(*a->stk) + sizeof(*a->order)) + a->cappool * sizeof(*a->pool) +
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
	for (i = 0; i < t->n; i++) {
		uint32_t id = t->perm[i], prev = i ? t->perm[i - 1] : 0;

		t->rank[id] = (uint32_t)i;
		t->nrank[id] =
		    i && !strcmp(t->names[id], t->names[prev]) ? t->nrank[prev] : (uint32_t)i;
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

/* The order of two stacks whose keys agree below depth d. */
static int cmp_from(const struct agg *a, size_t x, size_t y, uint32_t d)
{
	const struct stk *s = &a->stk[x], *u = &a->stk[y];
	uint32_t p, q;

	for (;; d++) {
		p = stack_key(a, s, d);
		q = stack_key(a, u, d);
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

/* Stacks the same but for their tags. */
static void mkq_tags(const struct agg *a, size_t *x, size_t n)
{
	qsort_r(x, n, sizeof(*x), cmp_tags, (void *)a);
}

#define MKQ_SMALL 12
#define MKQ_RUN	  64

/* Multikey quicksort (Bentley and Sedgewick, 1997) of stack indexes whose keys agree below d:
 * each stack's frames are read once per partition it is in, not once per comparison, so stacks
 * sharing long prefixes (deep recursion, a compiler's 100-frame stacks) sort in about
 * n log n + the frames that tell them apart, where qsort's comparisons walked every shared prefix
 * again (issue 27: 16 ms of a 20 s compiler record's end). Recurses into the two smaller parts
 * only (each at most half), so its depth is at most log2 n. */
static void mkq(const struct agg *a, size_t *x, size_t n, uint32_t d)
{
	while (n > 1) {
		size_t lt = 0, i = 0, gt = n, part[3][2];
		uint32_t k0, k1, k2, pivot;
		int big = 0;

		if (n < MKQ_SMALL) {
			for (size_t j = 1; j < n; j++)
				for (size_t m = j; m && cmp_from(a, x[m - 1], x[m], d) > 0; m--) {
					size_t t = x[m];

					x[m] = x[m - 1];
					x[m - 1] = t;
				}
			return;
		}
		/* The frames from depth d on that every stack here shares with the first (the same
		 * ids: the same ranks), up to MKQ_RUN of them, compared as arrays: a pass over each
		 * stack's frames in order, not a partition a depth reading every stack's frame at
		 * random. Capped, so that a stack sharing many frames with the first is not scanned
		 * again and again while another ends the run early. */
		if (d) {
			const struct stk *s0 = &a->stk[x[0]];
			uint32_t run = s0->nframes >= d ? s0->nframes - d + 1 : 0;

			run = run < MKQ_RUN ? run : MKQ_RUN;
			for (size_t j = 1; j < n && run; j++) {
				const struct stk *u = &a->stk[x[j]];
				const uint32_t *p = a->pool + s0->off + d - 1,
					       *q = a->pool + u->off + d - 1;
				uint32_t m = 0, lim = u->nframes >= d ? u->nframes - d + 1 : 0;

				lim = lim < run ? lim : run;
				while (m < lim && p[m] == q[m])
					m++;
				run = m;
			}
			d += run;
		}
		k0 = stack_key(a, &a->stk[x[0]], d);
		k1 = stack_key(a, &a->stk[x[n / 2]], d);
		k2 = stack_key(a, &a->stk[x[n - 1]], d);
		pivot = k0 < k1 ? (k1 < k2   ? k1
				   : k0 < k2 ? k2
					     : k0)
				: (k0 < k2   ? k0
				   : k1 < k2 ? k2
					     : k1);
		while (i < gt) {
			uint32_t k = stack_key(a, &a->stk[x[i]], d);
			size_t t = x[i];

			if (k < pivot) {
				x[i++] = x[lt];
				x[lt++] = t;
			} else if (k > pivot) {
				x[i] = x[--gt];
				x[gt] = t;
			} else {
				i++;
			}
		}
		/* [0, lt) below the pivot, [lt, gt) equal to it, [gt, n) above. Past the last frame
		 * (key 0 below the group) the equal ones are one stack but for their tags: sorted
		 * by tag here, and done. */
		part[0][0] = 0, part[0][1] = lt;
		part[1][0] = lt, part[1][1] = gt - lt;
		part[2][0] = gt, part[2][1] = n - gt;
		if (d && !pivot) {
			mkq_tags(a, x + lt, gt - lt);
			part[1][1] = 0;
		}
		for (int j = 1; j < 3; j++)
			if (part[j][1] > part[big][1])
				big = j;
		for (int j = 0; j < 3; j++)
			if (j != big && part[j][1] > 1)
				mkq(a, x + part[j][0], part[j][1], d + (j == 1));
		x += part[big][0];
		n = part[big][1];
		d += big == 1;
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
	mkq(a, a->order, a->nstk, 0);
	a->sorted = true;
}

uint32_t agg__frame_name_rank(const struct agg *a, uint32_t id)
{
	if (!a || id >= a->frames.n)
		return UINT32_MAX;
	ensure_sorted(a);
	return a->frames.nrank[id];
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
	free(a->stk);
	free(a->pool);
	idtab__free(&a->idx);
	free(a->order);
	free(a->frame_mod);
	for (size_t i = 0; i < a->nmods; i++)
		free(a->mods[i]);
	free(a->mods);
	free(a);
}
