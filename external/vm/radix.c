/* Least significant digit first, 16 bits a pass, skipping a digit every key shares: pids of a
 * table that never wrapped, or addresses within a few GB, sort in two or three passes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "radix.h"

#define DIGITS (1u << 16)

static uint64_t key(const uint8_t *item)
{
	uint64_t k;

	memcpy(&k, item, sizeof(k));
	return k;
}

/* One stable pass by the digit at shift, src to dst. */
static void pass(const uint8_t *src, uint8_t *dst, size_t n, size_t size, unsigned shift,
		 size_t *count)
{
	size_t i, sum = 0, c;

	memset(count, 0, DIGITS * sizeof(*count));
	for (i = 0; i < n; i++)
		count[(key(src + i * size) >> shift) & (DIGITS - 1)]++;
	for (i = 0; i < DIGITS; i++) {
		c = count[i];
		count[i] = sum;
		sum += c;
	}
	for (i = 0; i < n; i++) {
		size_t at = count[(key(src + i * size) >> shift) & (DIGITS - 1)]++;

		memcpy(dst + at * size, src + i * size, size);
	}
}

int radix__sort(void *items, size_t n, size_t size)
{
	uint64_t all_or = 0, all_and = ~(uint64_t)0;
	uint8_t *v = items, *tmp, *src, *dst, *t;
	size_t *count, i;
	unsigned shift;

	if (size < 8 || size > 64 || size % 8 || (n && !items))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		all_or |= key(v + i * size);
		all_and &= key(v + i * size);
	}
	if (n < 2 || all_or == all_and)
		return 0;
	tmp = malloc(n * size);
	count = malloc(DIGITS * sizeof(*count));
	if (!tmp || !count) {
		free(tmp);
		free(count);
		return -ENOMEM;
	}
	src = v;
	dst = tmp;
	for (shift = 0; shift < 64; shift += 16) {
		if (!(((all_or ^ all_and) >> shift) & (DIGITS - 1)))
			continue; /* every key has this digit: the order stays */
		pass(src, dst, n, size, shift, count);
		t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * size);
	free(tmp);
	free(count);
	return 0;
}
