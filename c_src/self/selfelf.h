/* Where beam.smp's writable data lives in our own address space: its writable PT_LOAD segment
 * past RELRO (.got.plt, .data, .bss), from the program headers dl_iterate_phdr gives, and the
 * scan of it for a unique address. Reads no ELF file. Does not own: what is searched for in
 * there (the callers' checks). */
#ifndef XP_SELFELF_H
#define XP_SELFELF_H

#include <stdint.h>

#define SELFELF_MAX_RANGES 4

struct selfelf_range {
	uint64_t start,
	    end; /* absolute, [start, end), inside a PT_LOAD segment of the executable */
	char name[16];
};

struct selfelf {
	uint64_t bias;
	unsigned n;
	struct selfelf_range r[SELFELF_MAX_RANGES];
};

/* 0, or -ENOENT (no writable segment). */
int selfelf__load(struct selfelf *out);

/* Find the one 8-byte-aligned address a in the ranges, with [a, a + span) inside its range,
 * that passes prefilter (a cheap look at the bytes in place) and then confirm (the costly
 * check). *candidates counts the addresses that passed prefilter. 0 with *addr, -ENOENT when
 * none is confirmed, -EEXIST when several are (a scan that is not sure says so). */
int selfelf__scan_unique(const struct selfelf *se, uint64_t span,
			 int (*prefilter)(uint64_t a, void *ctx),
			 int (*confirm)(uint64_t a, void *ctx), void *ctx, uint64_t *addr,
			 unsigned *candidates);

#endif /* XP_SELFELF_H */
