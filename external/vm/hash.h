/* The one hash function of the sampler's tables (aggregate.c, tally.c) and the flame graph's
 * stable colours (report/svg.c): FNV-1a, 64 bit. Not for anything an attacker chooses to collide:
 * the tables probe linearly and are bounded by what the sampler interns. */
#ifndef XP_HASH_H
#define XP_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_INIT 0xcbf29ce484222325ull

/* Continue the hash h over n bytes at p. */
static inline uint64_t hash__bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		h = (h ^ *c++) * 0x100000001b3ull;
	return h;
}

/* The hash of a NUL-terminated string. */
static inline uint64_t hash__str(const char *s)
{
	uint64_t h = HASH_INIT;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

#endif /* XP_HASH_H */
