/* Large arrays in memory of their own, in huge pages where the kernel gives them: anonymous
 * mappings whose address and length are multiples of 2 MiB, advised MADV_HUGEPAGE. A 4 KiB page
 * fault is a kernel entry (19 us on this project's PVM guests, where a fresh page also comes
 * through the host); a table of tens of MiB written once had thousands of them (issue 27).
 * Untouched parts cost address space only. Does not own: what is stored, or growing a table
 * (the callers: the aggregate's tables, pstack's index). */
#ifndef XP_BIGMEM_H
#define XP_BIGMEM_H

#include <stddef.h>

#define BIGMEM_ALIGN ((size_t)2 << 20)

/* bytes rounded up to whole huge pages; 0 when that would overflow. */
size_t bigmem__len(size_t bytes);
/* A zeroed mapping of bigmem__len(bytes) bytes, 2 MiB-aligned, advised huge; NULL when it cannot
 * be had. */
void *bigmem__map(size_t bytes);
/* The memory of bigmem__map(bytes) given back; p NULL: nothing. */
void bigmem__unmap(void *p, size_t bytes);

#endif /* XP_BIGMEM_H */
