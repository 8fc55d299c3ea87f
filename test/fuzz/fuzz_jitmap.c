/* Fuzz target: the GDB JIT symfile parser and the map built from it (jitmap.c). The input is one
 * or more symfiles separated by "XPSF" (a checked-in fixture is one); each is added as a newer
 * entry, the map is finished, and every range is looked up, named and line-resolved. An input
 * that starts with "XPMM" is instead target memory at MEM_BASE, with the JIT descriptor first:
 * the entry chain is walked (jitmap__load), extended from a second descriptor at MEM_BASE + 24
 * (jitmap__extend), and scanned for (jitmap__scan) through the mem snapshot backend. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "jitmap.h"

#define SEP	   "XPSF"
#define MEM	   "XPMM"
#define MEM_BASE   0x10000ULL
#define MAX_BLOBS  16
#define MAX_PROBES 256 /* ranges probed: jitmap__find is a linear search */

static const uint8_t *next_blob(const uint8_t *p, const uint8_t *end, size_t *len)
{
	const uint8_t *s = memmem(p, (size_t)(end - p), SEP, 4);

	*len = (size_t)((s ? s : end) - p);
	return s ? s + 4 : end;
}

static void probe(const struct jitmap *map, uint64_t addr)
{
	const struct jit_range *r = jitmap__lookup(map, addr);
	const char *file;
	uint32_t line;
	char name[256];

	if (!r)
		return;
	jitmap__frame_name(r, name, sizeof(name));
	jitmap__prologue_body(map, r);
	jitmap__line(map, r, addr, &file, &line);
	if (jitmap__find(map, r->name) == NULL)
		__builtin_trap(); /* a range's own name must be found */
}

static void probe_all(const struct jitmap *map)
{
	for (size_t i = 0; i < jitmap__range_count(map) && i < MAX_PROBES; i++) {
		const struct jit_range *r = jitmap__range(map, i);

		probe(map, r->start);
		probe(map, r->end - 1);
		probe(map, r->start + (r->end - r->start) / 2);
	}
	for (size_t i = 0; i < jitmap__module_count(map); i++)
		probe(map, jitmap__module(map, (uint32_t)i)->base);
	jitmap__stats(map);
}

static void from_memory(const uint8_t *data, size_t size)
{
	struct mem_region region = {MEM_BASE, size, data};
	struct mem *m = NULL;
	struct jitmap *map = NULL;
	uint64_t found;

	if (!size || mem__open_snapshot(&m, &region, 1))
		return;
	if (jitmap__load(m, MEM_BASE, &map) == 0) {
		jitmap__descriptor(map);
		probe_all(map);
		/* A second descriptor right after the first: a list that grew since (jitmap__extend
		 * walks to the map's head, merges and prunes), or one that no longer leads there.
		 */
		if (jitmap__extend(map, m, MEM_BASE + 24) == 0)
			probe_all(map);
		jitmap__free(map);
	}
	jitmap__scan(m, MEM_BASE, size < 256 ? size : 256, 1, &found, NULL);
	mem__free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	struct jitmap *map = NULL;
	uint32_t gen = 0;

	if (size >= 4 && memcmp(data, MEM, 4) == 0) {
		from_memory(data + 4, size - 4);
		return 0;
	}
	if (jitmap__new(&map))
		return 0;
	while (p < end && gen < MAX_BLOBS) {
		size_t len;
		const uint8_t *blob = p;

		p = next_blob(p, end, &len);
		jitmap__add_symfile(map, blob, len, 0x1000 + gen * 0x40, MAX_BLOBS - gen);
		gen++;
	}
	jitmap__finish(map);
	probe_all(map);
	jitmap__free(map);
	return 0;
}
