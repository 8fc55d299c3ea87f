/* The JIT map's representation, shared by its parser (jitmap.c) and its index (jitmap_index.c)
 * and by nothing else. */
#ifndef XP_JITMAP_INT_H
#define XP_JITMAP_INT_H

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

struct jitmap {
	struct jit_descriptor desc; /* as read right before the walk (jitmap__load) */
	struct jit_range *ranges;
	size_t nranges, cap_ranges;
	struct jit_module_info *mods;
	size_t nmods, cap_mods;
	struct jit_seg *segs; /* disjoint, sorted, newest range wins; NULL until finished */
	size_t nsegs;
	struct jit_line *lines; /* every range's line table, back to back */
	size_t nlines, cap_lines;
	const char **files; /* every module's file names, back to back */
	size_t nfiles, cap_files;
	struct str_chunk *strings;
	struct jitmap_stats stats;
};

#endif /* XP_JITMAP_INT_H */
