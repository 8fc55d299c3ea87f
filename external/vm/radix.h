/* One sort for large arrays keyed by a uint64_t: a million process-table entries or pstack
 * rows sort in tens of ms, against a hundred or more for qsort. Does not own: the items. */
#ifndef XP_RADIX_H
#define XP_RADIX_H

#include <stddef.h>

/* Sort n items of size bytes (8 to 64, a multiple of 8), each beginning with its uint64_t key,
 * by that key, stably. 0, or -EINVAL (a bad size) or -ENOMEM, the items then left as they were. */
int radix__sort(void *items, size_t n, size_t size);

#endif /* XP_RADIX_H */
