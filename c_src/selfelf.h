/* Where beam.smp's writable data lives in our own address space: the .data and .bss section
 * headers of /proc/self/exe (they survive stripping), parsed by hand with <elf.h>, plus the load
 * bias of the main program from dl_iterate_phdr, and the scan of them for a unique address. Does
 * not own: what is searched for in there (the callers' checks). */
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

/* 0, or -ENOENT (no usable section), -EPROTO (not a 64-bit ELF we understand), -errno. */
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
