/* Counts by name. See tally.h. Rows of owned names in insertion order, indexed by name through
 * the one open-addressing table (idtab.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "idtab.h"
#include "tally.h"

struct tally {
	struct tally_row *rows; /* by id */
	size_t nrows, caprows;
	struct idtab idx;
	uint64_t total;
	struct tally_row *sorted; /* rebuilt by tally__sorted */
	size_t nsorted;
	int dirty;
};

static uint64_t row_hash(const void *ctx, uint32_t id)
{
	const struct tally *t = ctx;

	return hash__str(t->rows[id].name);
}

static bool row_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct tally *t = ctx;

	return !strcmp(t->rows[id].name, key);
}

int tally__new(struct tally **out)
{
	struct tally *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	*out = t;
	return 0;
}

static int tally_append(struct tally *t, size_t slot, const char *name)
{
	struct tally_row *v = t->rows;
	size_t cap = t->caprows ? t->caprows * 2 : 64;
	char *copy;

	if (t->nrows >= UINT32_MAX - 1)
		return -E2BIG;
	if (t->nrows == t->caprows) {
		v = realloc(t->rows, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->rows = v;
		t->caprows = cap;
	}
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	t->rows[t->nrows].name = copy;
	t->rows[t->nrows].count = 0;
	idtab__insert(&t->idx, slot, (uint32_t)t->nrows++);
	return 0;
}

int tally__add(struct tally *t, const char *name, uint64_t n)
{
	uint32_t id;
	size_t slot;
	int err;

	if ((err = idtab__reserve(&t->idx, 64, row_hash, t)))
		return err;
	if (idtab__find(&t->idx, hash__str(name), row_eq, t, name, &slot, &id)) {
		if ((err = tally_append(t, slot, name)))
			return err;
		id = (uint32_t)t->nrows - 1;
	}
	t->rows[id].count += n;
	t->total += n;
	t->dirty = 1;
	return 0;
}

uint64_t tally__get(const struct tally *t, const char *name)
{
	uint32_t id;
	size_t slot;

	if (idtab__find(&t->idx, hash__str(name), row_eq, t, name, &slot, &id))
		return 0;
	return t->rows[id].count;
}

uint64_t tally__total(const struct tally *t)
{
	return t->total;
}

size_t tally__size(const struct tally *t)
{
	return t->nrows;
}

static int by_count_then_name(const void *pa, const void *pb)
{
	const struct tally_row *a = pa, *b = pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->name, b->name);
}

const struct tally_row *tally__sorted(struct tally *t, size_t *n)
{
	*n = 0;
	if (!t->nrows)
		return NULL;
	if (t->dirty || !t->sorted) {
		struct tally_row *v = realloc(t->sorted, t->nrows * sizeof(*v));

		if (!v)
			return NULL;
		memcpy(v, t->rows, t->nrows * sizeof(*v));
		qsort(v, t->nrows, sizeof(*v), by_count_then_name);
		t->sorted = v;
		t->nsorted = t->nrows;
		t->dirty = 0;
	}
	*n = t->nsorted;
	return t->sorted;
}

void tally__free(struct tally *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nrows; i++)
		free((char *)t->rows[i].name);
	free(t->rows);
	idtab__free(&t->idx);
	free(t->sorted);
	free(t);
}
