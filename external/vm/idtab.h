/* The one open-addressing index table: slots of uint32 ids over entries the caller stores, linear
 * probing, a power-of-two size doubled at 50 % load. The caller owns the entries, their hash and
 * their equality; the probe is inline so an equality callback inlines on the hot path.
 * Does not own: the entries, their memory, or the hash function (hash.h). */
#ifndef XP_IDTAB_H
#define XP_IDTAB_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct idtab {
	uint32_t *slots; /* id + 1, 0 = empty */
	size_t nslots;	 /* power of two, 0 before the first idtab__reserve */
	size_t n;	 /* ids stored */
};

/* The hash of the entry with this id, to rehash on growth. */
typedef uint64_t (*idtab_hash_fn)(const void *ctx, uint32_t id);
/* Whether the entry with this id equals key. */
typedef bool (*idtab_eq_fn)(const void *ctx, uint32_t id, const void *key);

/* The slow half of idtab__reserve (idtab.c). */
int idtab__grow(struct idtab *t, size_t min_slots, idtab_hash_fn hash, const void *ctx);

/* Make room for one more id at <= 50 % load: first min_slots (a power of two, > 0), then doubling,
 * rehashing the stored ids through hash. 0 or -ENOMEM (the table is then unchanged). Inline so
 * that the common case, no growth, costs one comparison on the hot path. */
static inline int idtab__reserve(struct idtab *t, size_t min_slots, idtab_hash_fn hash,
				 const void *ctx)
{
	if ((t->n + 1) * 2 <= t->nslots)
		return 0;
	return idtab__grow(t, min_slots, hash, ctx);
}

/* Find key of hash h: 0 and its id, or -ENOENT and in *slot where idtab__insert puts it (valid
 * until the next reserve, and only after a first reserve: an empty table has no slot). */
static inline int idtab__find(const struct idtab *t, uint64_t h, idtab_eq_fn eq, const void *ctx,
			      const void *key, size_t *slot, uint32_t *id)
{
	size_t mask = t->nslots - 1, j;

	*slot = 0;
	if (!t->nslots)
		return -ENOENT;
	for (j = h & mask; t->slots[j]; j = (j + 1) & mask) {
		if (eq(ctx, t->slots[j] - 1, key)) {
			*id = t->slots[j] - 1;
			return 0;
		}
	}
	*slot = j;
	return -ENOENT;
}

/* Store id (< UINT32_MAX) in the empty slot idtab__find returned. */
static inline void idtab__insert(struct idtab *t, size_t slot, uint32_t id)
{
	t->slots[slot] = id + 1;
	t->n++;
}

void idtab__free(struct idtab *t);

#endif /* XP_IDTAB_H */
