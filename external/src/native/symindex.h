/* A module's function symbols sorted by address, for naming pcs in O(log n). libdw 0.188's
 * dwfl_module_addrinfo scans the whole symbol table on every call (tens of thousands of symbols
 * in beam.smp with its debug file), which made naming the sampler's largest cost.
 * Does not own: choosing the symbol table (libdwfl: .symtab of the debug file, else .symtab,
 * else .dynsym) or the rules for sizeless symbols (unwind.c). */
#ifndef XP_SYMINDEX_H
#define XP_SYMINDEX_H

#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdint.h>

struct symindex;

struct symindex_hit {
	uint64_t start;	  /* runtime address; first: the sort's key (radix.h) */
	uint64_t size;	  /* 0 for a sizeless symbol (an assembly label) */
	const char *name; /* owned by libdwfl, valid while the module is */
};

/* Index every function-like symbol of mod. 0, or -ENOMEM / -ENOENT (no symbol table). */
int symindex__build(Dwfl_Module *mod, struct symindex **out);
/* The symbol starting last at or below pc (a sized symbol is preferred among equal starts).
 * 0, or -ENOENT when none starts at or below pc. */
int symindex__lookup(const struct symindex *x, uint64_t pc, struct symindex_hit *out);
void symindex__free(struct symindex *x);

#endif /* XP_SYMINDEX_H */
