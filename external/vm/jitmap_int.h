/* The JIT map's representation, shared by its parser (jitmap.c) and its index (jitmap_index.c)
 * and by nothing else. */
#ifndef XP_JITMAP_INT_H
#define XP_JITMAP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jitmap.h"

/* A line_info kept compactly (a VM has ~100k ranges): loc packs line and file index as ERTS
 * does (beam_code.h LOC_LINE / LOC_FILE, same in 25, 27, 29); loc 0 is "no line". */
#define LOC_LINE_MAX ((1u << 24) - 1)
#define LOC_FILES    255u

struct jit_line {
	uint32_t off; /* from the module's base */
	uint32_t loc; /* file index << 24 | line */
};

struct str_chunk {
	struct str_chunk *next;
	size_t used, cap;
	char data[];
};

struct jit_seg {
	uint64_t start, end;
	uint32_t range;
};

/* A lookup's answer, cached by address: a stack walk asks for the same return addresses sample
 * after sample (a deep recursion asks for one address thousands of times a sample), and a binary
 * search over ~100k segments costs tens of cache misses. range: index + 1, 0 = no range. */
#define LCACHE_LOG2 12
struct jit_lcache {
	uint64_t addr;
	uint32_t range;
	bool used;
};

/* The newest entry a walk read: where jitmap__extend's next walk stops, and what
 * jitmap__head_current compares (base: the symfile's word at 8, a module's code address). */
struct jit_head {
	uint64_t addr, symfile_addr, symfile_size, base;
};

struct jitmap {
	struct jit_descriptor desc; /* as read right before the walk (jitmap__load) */
	struct jit_head head;	    /* zero when the walk read no entry */
	uint32_t walked;	    /* list positions the walk covered: the next generation */
	struct jit_range *ranges;
	size_t nranges, cap_ranges;
	struct jit_module_info *mods;
	size_t nmods, cap_mods;
	struct jit_seg *segs; /* disjoint, sorted, newest range wins; NULL until finished */
	size_t nsegs;
	/* LCACHE slots, emptied whenever segs are rebuilt; written by lookups (a map is used by
	 * one thread at a time). NULL: no cache. */
	struct jit_lcache *lcache;
	struct jit_line *lines; /* every range's line table, back to back */
	size_t nlines, cap_lines;
	const char **files; /* every module's file names, back to back */
	size_t nfiles, cap_files;
	struct str_chunk *strings;
	size_t str_chunk; /* bytes a new chunk holds at least; 0 = 64 KiB */
	struct jitmap_stats stats;
};

/* jitmap.c: walk the list from addr into map (generations from 0), up to stop when given. */
int jitmap__walk(struct mem *m, struct jitmap *map, uint64_t addr, const struct jit_head *stop,
		 bool *reached);
/* jitmap.c: grow *arr to hold need elements of elem bytes; 0 or -ENOMEM (*arr kept). */
int jitmap__grow(void **arr, size_t *cap, size_t need, size_t elem);
/* jitmap.c: whether a range's name (n bytes) is an Erlang function's ("M:F/A"). */
bool jitmap__is_function(const char *name, size_t n);
/* jitmap.c: a string kept in map's chunks, NUL-terminated; NULL without memory. */
const char *jitmap__strdup(struct jitmap *map, const char *s, size_t n);

#endif /* XP_JITMAP_INT_H */
