/* Keeping a JIT map up to date without walking the whole list again: when the list only grows at
 * its head (OTP 25 never unlinks an entry, J/beam_jit_metadata.cpp 25:225), read the entries
 * registered since the map was read and merge them; drop the modules whose code memory a newer
 * module reuses, so that a VM that loads and purges code in a loop does not grow the map without
 * bound. Does not own: walking and parsing (jitmap.c), the index (jitmap_index.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jitmap.h"
#include "jitmap_int.h"

#define COMPACT_MIN  4096u /* dead ranges before compacting is worth its copy */
#define OVERLAP_SCAN 64u   /* modules held open in the overlap sweep: more are left alone */

/* Append t (the entries newer than map's) to map: map's generations move up by the positions t
 * covered. Nothing changes unless every array could be grown first. */
static int merge(struct jitmap *map, struct jitmap *t)
{
	size_t nm = map->nmods, nr = map->nranges, nl = map->nlines, nf = map->nfiles;
	struct str_chunk **tail = &t->strings;

	if (map->walked > UINT32_MAX - t->walked || nl + t->nlines > UINT32_MAX ||
	    nf + t->nfiles > UINT32_MAX || nm + t->nmods > UINT32_MAX)
		return -EOVERFLOW;
	if (jitmap__grow((void **)&map->ranges, &map->cap_ranges, nr + t->nranges,
			 sizeof(*map->ranges)) ||
	    jitmap__grow((void **)&map->lines, &map->cap_lines, nl + t->nlines,
			 sizeof(*map->lines)) ||
	    jitmap__grow((void **)&map->files, &map->cap_files, nf + t->nfiles,
			 sizeof(*map->files)) ||
	    jitmap__grow((void **)&map->mods, &map->cap_mods, nm + t->nmods, sizeof(*map->mods)))
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++)
		map->ranges[i].generation += t->walked;
	for (size_t i = 0; i < t->nranges; i++) {
		struct jit_range r = t->ranges[i];

		r.module += (uint32_t)nm;
		r.lines += (uint32_t)nl;
		map->ranges[map->nranges++] = r;
	}
	for (size_t i = 0; i < t->nmods; i++) {
		struct jit_module_info mi = t->mods[i];

		mi.files += (uint32_t)nf;
		map->mods[map->nmods++] = mi;
	}
	if (t->nlines) /* memcpy must not see NULL, even for 0 bytes */
		memcpy(map->lines + nl, t->lines, t->nlines * sizeof(*t->lines));
	if (t->nfiles)
		memcpy(map->files + nf, t->files, t->nfiles * sizeof(*t->files));
	map->nlines += t->nlines;
	map->nfiles += t->nfiles;
	while (*tail) /* t's strings, which its ranges, modules and files point into, move over */
		tail = &(*tail)->next;
	*tail = map->strings;
	map->strings = t->strings;
	t->strings = NULL;
	map->stats.entries += t->stats.entries;
	map->stats.modules += t->stats.modules;
	map->stats.functions += t->stats.functions;
	map->stats.ranges += t->stats.ranges;
	map->stats.lines += t->stats.lines;
	map->stats.bad_entries += t->stats.bad_entries;
	if (t->stats.emulator) { /* the newest emulator entry is the live one */
		map->stats.frame_layout = t->stats.frame_layout;
		map->stats.normal_exit = t->stats.normal_exit;
	}
	map->stats.emulator += t->stats.emulator;
	map->walked += t->walked;
	map->head = t->head;
	map->desc = t->desc;
	return 0;
}

struct mod_span {
	uint64_t base, end;
	uint32_t gen, index;
};

static int span_cmp(const void *a, const void *b)
{
	const struct mod_span *x = a, *y = b;

	if (x->base != y->base)
		return x->base < y->base ? -1 : 1;
	return (x->gen > y->gen) - (x->gen < y->gen); /* newest first at one base */
}

/* Mark dead the modules whose code overlaps a newer module's: two live modules never share code
 * memory, so the older one was purged and its memory reused. Sweep by base (newest first at a
 * base) with the modules still open at it, each of which overlaps the next; at most OVERLAP_SCAN
 * of them are held, the newest, so a deeper pile may leave some unmarked (kept: never wrongly
 * dropped). */
static void mark_dead(struct mod_span *sp, size_t n, bool *dead)
{
	uint32_t open[OVERLAP_SCAN];
	size_t nopen = 0;

	qsort(sp, n, sizeof(*sp), span_cmp);
	for (size_t i = 0; i < n; i++) {
		size_t k = 0, oldest = 0;

		for (size_t j = 0; j < nopen; j++) /* keep those still open at this base */
			if (sp[open[j]].end > sp[i].base)
				open[k++] = open[j];
		nopen = k;
		for (size_t j = 0; j < nopen; j++) {
			const struct mod_span *o = &sp[open[j]];

			dead[o->gen > sp[i].gen ? o->index : sp[i].index] = true;
			if (o->gen > sp[open[oldest]].gen)
				oldest = j;
		}
		if (nopen < OVERLAP_SCAN)
			open[nopen++] = (uint32_t)i;
		else if (sp[open[oldest]].gen > sp[i].gen)
			open[oldest] = (uint32_t)i;
	}
}

/* Copy into n the modules of map that skip does not mark, with their ranges, lines and file
 * names (strings copied: n owns its own). carry: each copy is marked carried and its ranges get
 * generation gen (older than every entry n walked). n's segments must be rebuilt (finish). */
static int copy_modules(struct jitmap *n, const struct jitmap *map, const bool *skip, bool carry,
			uint32_t gen)
{
	uint32_t *idx = malloc((map->nmods + 1) * sizeof(*idx));
	int err = idx ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < map->nmods; i++) {
		struct jit_module_info mi = map->mods[i];

		if (skip[i])
			continue;
		idx[i] = (uint32_t)n->nmods;
		mi.name = jitmap__strdup(n, mi.name, strlen(mi.name));
		mi.files = (uint32_t)n->nfiles;
		mi.carried = mi.carried || carry;
		err = !mi.name ||
		      jitmap__grow((void **)&n->mods, &n->cap_mods, n->nmods + 1, sizeof(mi)) ||
		      jitmap__grow((void **)&n->files, &n->cap_files, n->nfiles + mi.nfiles,
				   sizeof(*n->files));
		for (uint32_t f = 0; !err && f < mi.nfiles; f++) {
			const char *s = map->files[map->mods[i].files + f];

			n->files[n->nfiles] = jitmap__strdup(n, s, strlen(s));
			err = !n->files[n->nfiles++];
		}
		if (!err)
			n->mods[n->nmods++] = mi;
	}
	for (size_t i = 0; !err && i < map->nranges; i++) {
		struct jit_range r = map->ranges[i];

		if (skip[r.module])
			continue;
		r.name = jitmap__strdup(n, r.name, strlen(r.name));
		err =
		    !r.name ||
		    jitmap__grow((void **)&n->ranges, &n->cap_ranges, n->nranges + 1, sizeof(r)) ||
		    jitmap__grow((void **)&n->lines, &n->cap_lines, n->nlines + r.nlines,
				 sizeof(*n->lines));
		if (err)
			break;
		if (r.nlines)
			memcpy(n->lines + n->nlines, map->lines + r.lines,
			       r.nlines * sizeof(*n->lines));
		r.lines = (uint32_t)n->nlines;
		r.module = idx[r.module];
		if (carry)
			r.generation = gen;
		n->nlines += r.nlines;
		n->ranges[n->nranges++] = r;
	}
	free(idx);
	return err ? -ENOMEM : 0;
}

/* Copy map's live modules into a fresh map and take its place. */
static int compact(struct jitmap *map, const bool *dead)
{
	struct jitmap *n = NULL;
	int err = jitmap__new(&n);

	if (!err)
		err = copy_modules(n, map, dead, false, 0);
	if (!err) {
		struct jitmap old = *map;

		n->desc = old.desc;
		n->head = old.head;
		n->walked = old.walked;
		n->stats = old.stats;
		n->stats.ranges = n->nranges;
		n->stats.lines = n->nlines;
		n->stats.functions = 0;
		for (size_t i = 0; i < n->nranges; i++)
			n->stats.functions +=
			    jitmap__is_function(n->ranges[i].name, strlen(n->ranges[i].name));
		*map = *n; /* map takes n's arrays; old's are freed through n's shell */
		*n = old;  /* map->segs, NULL now, is rebuilt by the caller's finish */
	}
	jitmap__free(n);
	return err;
}

/* Drop the dead modules when they hold more ranges than the live ones (so that the copy is paid
 * at most once per as many ranges added). Without memory, the map stays whole: lookups are
 * right either way, since a newer range shadows a dead one. */
static void prune(struct jitmap *map)
{
	struct mod_span *sp = malloc((map->nmods + 1) * sizeof(*sp));
	bool *dead = calloc(map->nmods + 1, sizeof(*dead));
	size_t n = 0, ndead = 0;

	if (!sp || !dead)
		goto cleanup;
	for (size_t i = 0; i < map->nmods; i++)
		sp[i].gen = UINT32_MAX;
	for (size_t i = 0; i < map->nranges; i++) /* a module's generation: its ranges' */
		if (map->ranges[i].module < map->nmods)
			sp[map->ranges[i].module].gen = map->ranges[i].generation;
	for (size_t i = 0; i < map->nmods; i++) {
		const struct jit_module_info *mi = &map->mods[i];

		if (mi->code_size && sp[i].gen != UINT32_MAX)
			sp[n++] = (struct mod_span){mi->base, mi->base + mi->code_size, sp[i].gen,
						    (uint32_t)i};
	}
	mark_dead(sp, n, dead);
	for (size_t i = 0; i < map->nranges; i++)
		ndead += dead[map->ranges[i].module];
	if (ndead >= COMPACT_MIN && 2 * ndead > map->nranges && compact(map, dead) == 0)
		map->stats.pruned += ndead;
cleanup:
	free(dead);
	free(sp);
}

/* Whether [base, end) overlaps one of the n spans, sorted by base and disjoint (a walk's live
 * modules never share code memory). */
static bool overlaps(const struct mod_span *sp, size_t n, uint64_t base, uint64_t end)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* the first span that ends after base */
		size_t mid = lo + (hi - lo) / 2;

		if (sp[mid].end <= base)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && sp[lo].base < end;
}

int jitmap__carry(struct jitmap *fresh, const struct jitmap *old)
{
	struct mod_span *sp;
	bool *skip;
	size_t n = 0, ncarry = 0, before;
	int err;

	if (!fresh || !old)
		return -EINVAL;
	sp = malloc((fresh->nmods + 1) * sizeof(*sp));
	skip = malloc(old->nmods + 1);
	if (!sp || !skip) {
		free(sp);
		free(skip);
		return -ENOMEM;
	}
	for (size_t i = 0; i < fresh->nmods; i++) {
		const struct jit_module_info *mi = &fresh->mods[i];

		if (mi->code_size)
			sp[n++] =
			    (struct mod_span){mi->base, mi->base + mi->code_size, 0, (uint32_t)i};
	}
	qsort(sp, n, sizeof(*sp), span_cmp); /* by base: all of one generation */
	for (size_t i = 0; i < old->nmods; i++) {
		const struct jit_module_info *mi = &old->mods[i];

		/* Carried once already, the emulator's or empty, or code the walk still has. */
		skip[i] = mi->carried || !mi->name[0] || !mi->code_size ||
			  overlaps(sp, n, mi->base, mi->base + mi->code_size);
		ncarry += !skip[i];
	}
	free(sp);
	if (!ncarry) {
		free(skip);
		return 0;
	}
	before = fresh->nranges;
	err = copy_modules(fresh, old, skip, true, fresh->walked);
	free(skip);
	fresh->stats.carried += fresh->nranges - before;
	if (fresh->nranges != before) /* also after a copy that ran out of memory midway */
		jitmap__finish(fresh);
	return err;
}

int jitmap__extend(struct jitmap *map, struct mem *m, uint64_t desc_addr)
{
	struct jit_descriptor d;
	struct jitmap *t = NULL;
	bool reached = false;
	int err;

	if (!map || !m)
		return -EINVAL;
	if (!map->head.addr)
		return -ESTALE;
	err = jitmap__read_descriptor(m, desc_addr, &d);
	if (!err)
		err = jitmap__new(&t);
	if (err)
		return err;
	t->desc = d;
	t->str_chunk = 4096; /* its chunks join map's: a few new entries waste little */
	err = jitmap__walk(m, t, d.first_entry, &map->head, &reached);
	if (!err && (!reached || t->stats.chain_broken))
		err = -ESTALE; /* the list no longer leads to the map's newest entry */
	if (!err && t->walked) {
		err = merge(map, t);
		if (!err) {
			prune(map);
			jitmap__finish(map);
		}
	} else if (!err) {
		map->desc = d;
	}
	jitmap__free(t);
	return err;
}

int jitmap__update(struct mem *m, uint64_t desc_addr, bool append_only, struct jitmap **map)
{
	struct jitmap *fresh = NULL;
	int err;

	if (!m || !map)
		return -EINVAL;
	if (append_only && *map && jitmap__extend(*map, m, desc_addr) == 0)
		return 0;
	err = jitmap__load(m, desc_addr, &fresh);
	if (err)
		return err;
	if (jitmap__stats(fresh)->chain_broken) {
		jitmap__free(fresh); /* a walk that raced a purge: keep the map in use */
		return -EAGAIN;
	}
	if (*map && !append_only)
		(void)jitmap__carry(fresh, *map); /* without memory, fresh as walked */
	jitmap__free(*map);
	*map = fresh;
	return 0;
}
