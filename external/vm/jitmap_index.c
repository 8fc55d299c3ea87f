/* The JIT map's index and lookups (see jitmap.h): ranges sorted by start, disjoint segments in
 * which the newest range wins, and the per-range line tables. Does not own: walking the list and
 * parsing symfiles (jitmap.c). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitmap.h"
#include "jitmap_int.h"
#include "radix.h"

static int range_cmp(const void *a, const void *b)
{
	const struct jit_range *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->generation != y->generation)
		return x->generation < y->generation ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Min-heap of range indices: newest (lowest generation) on top, ties by index. */
static bool newer(const struct jit_range *r, uint32_t a, uint32_t b)
{
	if (r[a].generation != r[b].generation)
		return r[a].generation < r[b].generation;
	return a < b;
}

static void heap_push(const struct jit_range *r, uint32_t *h, size_t *n, uint32_t v)
{
	size_t i = (*n)++;

	for (; i && newer(r, v, h[(i - 1) / 2]); i = (i - 1) / 2)
		h[i] = h[(i - 1) / 2];
	h[i] = v;
}

static void heap_pop(const struct jit_range *r, uint32_t *h, size_t *n)
{
	uint32_t v = h[--(*n)];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < *n) {
		if (c + 1 < *n && newer(r, h[c + 1], h[c]))
			c++;
		if (!newer(r, h[c], v))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = v;
}

static size_t boundary_points(const struct jitmap *map, uint64_t *pts)
{
	size_t n = 0, u = 0;

	for (size_t i = 0; i < map->nranges; i++) {
		pts[n++] = map->ranges[i].start;
		pts[n++] = map->ranges[i].end;
	}
	/* A radix sort: the 2 x 25,000 boundaries of a VM's JIT map took qsort 1.6 ms of every
	 * attach, and take it 0.2 ms (issue 27); qsort only when its scratch cannot be had. */
	if (n && radix__sort(pts, n, sizeof(*pts)))
		qsort(pts, n, sizeof(*pts), u64_cmp);
	for (size_t i = 0; i < n; i++)
		if (!u || pts[u - 1] != pts[i])
			pts[u++] = pts[i];
	return u;
}

/* Sweep the sorted boundaries keeping the covering ranges in a heap: between two consecutive
 * boundaries the same set of ranges covers every address, and the heap's top is the newest. */
static void build_segments(struct jitmap *map, const uint64_t *pts, size_t npts, uint32_t *heap)
{
	const struct jit_range *r = map->ranges;
	size_t ri = 0, hn = 0;

	for (size_t k = 0; k + 1 < npts; k++) {
		struct jit_seg *last = map->nsegs ? &map->segs[map->nsegs - 1] : NULL;

		for (; ri < map->nranges && r[ri].start <= pts[k]; ri++)
			if (r[ri].start < r[ri].end)
				heap_push(r, heap, &hn, (uint32_t)ri);
		while (hn && r[heap[0]].end <= pts[k])
			heap_pop(r, heap, &hn);
		if (!hn)
			continue;
		if (last && last->range == heap[0] && last->end == pts[k])
			last->end = pts[k + 1];
		else
			map->segs[map->nsegs++] = (struct jit_seg){pts[k], pts[k + 1], heap[0]};
	}
}

void jitmap__finish(struct jitmap *map)
{
	uint64_t *pts = NULL;
	uint32_t *heap = NULL;

	if (!map)
		return;
	free(map->segs);
	map->segs = NULL;
	map->nsegs = 0;
	/* By start (the ranges' first word), ties by range_cmp: qsort took 1.0 ms an attach. */
	radix__sort_cmp(map->ranges, map->nranges, sizeof(*map->ranges), range_cmp);
	if (!map->lcache)
		map->lcache = calloc(1u << LCACHE_LOG2, sizeof(*map->lcache));
	else
		memset(map->lcache, 0, (1u << LCACHE_LOG2) * sizeof(*map->lcache));
	pts = malloc((2 * map->nranges + 1) * sizeof(*pts));
	heap = malloc((map->nranges + 1) * sizeof(*heap));
	map->segs = malloc((2 * map->nranges + 1) * sizeof(*map->segs));
	if (!pts || !heap || !map->segs) {
		free(map->segs); /* lookups find nothing: fail closed */
		map->segs = NULL;
		goto cleanup;
	}
	build_segments(map, pts, boundary_points(map, pts), heap);
cleanup:
	free(heap);
	free(pts);
}

bool jitmap__frame_name(const struct jit_range *r, char *buf, size_t len)
{
	static const char prologue[] = "-CodeInfoPrologue";
	size_t n = strlen(r->name), p = sizeof(prologue) - 1;

	if (n > p && strcmp(r->name + n - p, prologue) == 0)
		n -= p;
	snprintf(buf, len, "%.*s", (int)n, r->name);
	return strncmp(buf, "global::", 8) != 0 && strncmp(buf, "erts_beamasm:", 13) != 0 &&
	       !strstr(buf, "::code");
}

const struct jit_range *jitmap__prologue_body(const struct jitmap *map, const struct jit_range *r)
{
	const struct jit_range *body;
	char name[1024];

	if (!r || !jitmap__frame_name(r, name, sizeof(name)) || strcmp(name, r->name) == 0)
		return NULL;
	body = jitmap__lookup(map, r->end);
	return body && body->start == r->end && body->module == r->module &&
		       strcmp(body->name, name) == 0
		   ? body
		   : NULL;
}

static const struct jit_range *lookup_segs(const struct jitmap *map, uint64_t addr)
{
	size_t lo = 0, hi = map->nsegs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (map->segs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= map->segs[lo - 1].end)
		return NULL;
	return &map->ranges[map->segs[lo - 1].range];
}

const struct jit_range *jitmap__lookup(const struct jitmap *map, uint64_t addr)
{
	struct jit_lcache *c;
	const struct jit_range *r;

	if (!map || !map->segs || !map->nsegs)
		return NULL; /* not finished, or finishing ran out of memory */
	/* The stack walker asks for every word that could be a return address; most are terms,
	 * outside the code altogether (segs are disjoint and sorted). */
	if (addr < map->segs[0].start || addr >= map->segs[map->nsegs - 1].end)
		return NULL;
	if (!map->lcache)
		return lookup_segs(map, addr);
	c = &map->lcache[(addr * 0x9e3779b97f4a7c15ull) >> (64 - LCACHE_LOG2)];
	if (c->used && c->addr == addr)
		return c->range ? &map->ranges[c->range - 1] : NULL;
	r = lookup_segs(map, addr);
	*c = (struct jit_lcache){
	    .addr = addr, .range = r ? (uint32_t)(r - map->ranges) + 1 : 0, .used = true};
	return r;
}

bool jitmap__line(const struct jitmap *map, const struct jit_range *r, uint64_t addr,
		  const char **file, uint32_t *line)
{
	const struct jit_module_info *mi = map && r ? jitmap__module(map, r->module) : NULL;
	const struct jit_line *l;
	size_t lo = 0, hi;
	uint64_t off;

	if (!mi || r < map->ranges || r >= map->ranges + map->nranges) /* not a range of map */
		return false;
	/* A pc in a function's prologue (its breakpoint area) is that function, as in
	 * jitmap__frame_name; ERTS gives it the function's first line. */
	if (!r->nlines && addr >= r->start && addr < r->end) {
		const struct jit_range *body = jitmap__prologue_body(map, r);

		if (body && body->nlines && body->lines < map->nlines) {
			r = body;
			addr = mi->base + map->lines[body->lines].off;
			if (addr < r->start)
				addr = r->start;
		}
	}
	if (!r->nlines || addr < r->start || addr >= r->end || addr < mi->base ||
	    r->lines > map->nlines || r->nlines > map->nlines - r->lines)
		return false;
	off = addr - mi->base;
	l = map->lines + r->lines;
	hi = r->nlines;
	while (lo < hi) { /* the first line starting after off */
		size_t mid = lo + (hi - lo) / 2;

		if (l[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || !(l[lo - 1].loc & LOC_LINE_MAX) || (l[lo - 1].loc >> 24) >= mi->nfiles ||
	    mi->files + (l[lo - 1].loc >> 24) >= map->nfiles)
		return false;
	*file = map->files[mi->files + (l[lo - 1].loc >> 24)];
	*line = l[lo - 1].loc & LOC_LINE_MAX;
	return true;
}

const struct jit_range *jitmap__find(const struct jitmap *map, const char *name)
{
	const struct jit_range *best = NULL;

	for (size_t i = 0; map && name && i < map->nranges; i++) {
		const struct jit_range *r = &map->ranges[i];

		if (!strcmp(r->name, name) && (!best || r->generation < best->generation))
			best = r;
	}
	return best;
}

const struct jit_range *jitmap__range(const struct jitmap *map, size_t index)
{
	return map && index < map->nranges ? &map->ranges[index] : NULL;
}

size_t jitmap__range_count(const struct jitmap *map)
{
	return map ? map->nranges : 0;
}

const struct jit_module_info *jitmap__module(const struct jitmap *map, uint32_t index)
{
	if (!map || index >= map->nmods)
		return NULL;
	return &map->mods[index];
}

size_t jitmap__module_count(const struct jitmap *map)
{
	return map ? map->nmods : 0;
}

const struct jitmap_stats *jitmap__stats(const struct jitmap *map)
{
	return map ? &map->stats : NULL;
}
