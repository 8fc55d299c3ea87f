/* Growth and freeing of the open-addressing index table (see idtab.h). Lookups are inline in the
 * header. Does not own: the entries the ids name. */
#include <errno.h>
#include <stdlib.h>

#include "idtab.h"

/* A bigger slot array, every stored id rehashed into it (see idtab__reserve). */
int idtab__grow(struct idtab *t, size_t min_slots, idtab_hash_fn hash, const void *ctx)
{
	size_t n, i, j;
	uint32_t *s;

	n = t->nslots ? t->nslots * 2 : min_slots;
	while ((t->n + 1) * 2 > n)
		n *= 2;
	s = calloc(n, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (i = 0; i < t->nslots; i++) {
		if (!t->slots[i])
			continue;
		j = hash(ctx, t->slots[i] - 1) & (n - 1);
		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = s;
	t->nslots = n;
	return 0;
}

void idtab__free(struct idtab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->nslots = 0;
	t->n = 0;
}
