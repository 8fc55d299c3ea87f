/* Counts by name. See tally.h. An open-addressing table of owned names, doubled at 50 % load. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "tally.h"

struct tally {
	struct tally_row *slots; /* name NULL: empty */
	size_t cap, used;
	uint64_t total;
	struct tally_row *sorted; /* rebuilt by tally__sorted */
	size_t nsorted;
	int dirty;
};

static struct tally_row *find(struct tally_row *slots, size_t cap, const char *name)
{
	size_t i = (size_t)hash__str(name) & (cap - 1);

	while (slots[i].name && strcmp(slots[i].name, name) != 0)
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static int grow(struct tally *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64, i;
	struct tally_row *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		if (t->slots[i].name)
			*find(v, cap, t->slots[i].name) = t->slots[i];
	}
	free(t->slots);
	t->slots = v;
	t->cap = cap;
	return 0;
}

int tally__new(struct tally **out)
{
	struct tally *t = calloc(1, sizeof(*t));

	if (!t || grow(t)) {
		free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

int tally__add(struct tally *t, const char *name, uint64_t n)
{
	struct tally_row *r;

	if ((t->used + 1) * 2 > t->cap && grow(t))
		return -ENOMEM;
	r = find(t->slots, t->cap, name);
	if (!r->name) {
		r->name = strdup(name);
		if (!r->name)
			return -ENOMEM;
		t->used++;
	}
	r->count += n;
	t->total += n;
	t->dirty = 1;
	return 0;
}

uint64_t tally__get(const struct tally *t, const char *name)
{
	const struct tally_row *r = find(t->slots, t->cap, name);

	return r->name ? r->count : 0;
}

uint64_t tally__total(const struct tally *t)
{
	return t->total;
}

size_t tally__size(const struct tally *t)
{
	return t->used;
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
	size_t i, k = 0;

	*n = 0;
	if (!t->used)
		return NULL;
	if (t->dirty || !t->sorted) {
		struct tally_row *v = realloc(t->sorted, t->used * sizeof(*v));

		if (!v)
			return NULL;
		for (i = 0; i < t->cap; i++) {
			if (t->slots[i].name)
				v[k++] = t->slots[i];
		}
		qsort(v, k, sizeof(*v), by_count_then_name);
		t->sorted = v;
		t->nsorted = k;
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
	for (i = 0; i < t->cap; i++)
		free((char *)t->slots[i].name);
	free(t->slots);
	free(t->sorted);
	free(t);
}
