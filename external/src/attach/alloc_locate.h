/* Where a target's allocators are: erts_allctrs_info from the agent or .dynsym (discover.c), else
 * (OTP 28+ without the agent) a scan of beam.smp's .data/.bss; checked either way. Does not own:
 * reading the allocators (vm/alloc.c). */
#ifndef XP_ALLOC_LOCATE_H
#define XP_ALLOC_LOCATE_H

#include <stddef.h>

struct target;

/* 0 with t->addr[XP_ADDR_ALLCTRS_INFO] set and checked, or -ENOTSUP / -ENOENT / -ENOMEM with
 * why saying what could not be found. */
int alloc__locate(struct target *t, char *why, size_t whylen);

#endif /* XP_ALLOC_LOCATE_H */
