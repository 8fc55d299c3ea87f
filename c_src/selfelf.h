/* Where beam.smp's writable data lives in our own address space: the .data and .bss section
 * headers of /proc/self/exe (they survive stripping), parsed by hand with <elf.h>, plus the load
 * bias of the main program from dl_iterate_phdr. Does not own: what is searched for in there. */
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

#endif /* XP_SELFELF_H */
