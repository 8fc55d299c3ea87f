/* Unit tests for the open-addressing index table (idtab.c): insert and find, the first reserve,
 * growth across many rehashes (every id still found, load at most 50 %), and collisions, where
 * every key hashes alike and the probe must walk past unequal entries. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "idtab.h"

/* Entries are uint64 keys in an array indexed by id; the hash is either the key or a constant. */
struct keys {
	uint64_t *v;
	bool collide;
};

static uint64_t key_hash(const struct keys *k, uint64_t key)
{
	return k->collide ? 42 : key * 0x9e3779b97f4a7c15ull;
}

static uint64_t id_hash(const void *ctx, uint32_t id)
{
	const struct keys *k = ctx;

	return key_hash(k, k->v[id]);
}

static bool id_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct keys *k = ctx;

	return k->v[id] == *(const uint64_t *)key;
}

/* Insert key unless present; its id through *id. -1 when reserve fails. */
static int intern(struct idtab *t, struct keys *k, uint64_t key, uint32_t *id)
{
	size_t slot;

	if (idtab__reserve(t, 4, id_hash, k))
		return -1;
	if (!idtab__find(t, key_hash(k, key), id_eq, k, &key, &slot, id))
		return 0;
	*id = (uint32_t)t->n;
	k->v[*id] = key;
	idtab__insert(t, slot, *id);
	return 1;
}

static void test_basic(void)
{
	uint64_t v[8], key = 7;
	struct keys k = {v, false};
	struct idtab t = {0};
	uint32_t id = 99;
	size_t slot;

	CHECK_INT("find in an empty table", -ENOENT,
		  idtab__find(&t, 1, id_eq, &k, &key, &slot, &id));
	CHECK_INT("insert 7", 1, intern(&t, &k, 7, &id));
	CHECK_INT("id 0", 0, id);
	CHECK_INT("insert 8", 1, intern(&t, &k, 8, &id));
	CHECK_INT("id 1", 1, id);
	CHECK_INT("first size: min_slots", 4, t.nslots);
	CHECK_INT("7 again is found", 0, intern(&t, &k, 7, &id));
	CHECK_INT("7 keeps id 0", 0, id);
	CHECK_INT("reserve before a lookup doubles at 3 of 4", 8, t.nslots);
	CHECK_INT("find 8", 0, idtab__find(&t, key_hash(&k, 8), id_eq, &k, &v[1], &slot, &id));
	CHECK_INT("8 is id 1", 1, id);
	key = 9;
	CHECK_INT("9 absent", -ENOENT,
		  idtab__find(&t, key_hash(&k, 9), id_eq, &k, &key, &slot, &id));
	CHECK_INT("two ids", 2, t.n);
	idtab__free(&t);
	CHECK("free empties", !t.slots && !t.nslots && !t.n);
	idtab__free(&t);
}

/* n keys, inserted then looked up; the table grows from 4 slots through many doublings. */
static void test_many(bool collide, uint32_t n)
{
	struct keys k = {calloc(n, sizeof(uint64_t)), collide};
	struct idtab t = {0};
	uint32_t i, id, bad = 0, grew = 0;
	size_t last = 0, slot;
	uint64_t key;

	for (i = 0; i < n; i++) {
		if (intern(&t, &k, (uint64_t)i * 3 + 1, &id) != 1 || id != i)
			bad++;
		if (t.nslots != last)
			grew++, last = t.nslots;
		if (t.n * 2 > t.nslots)
			bad++;
	}
	CHECK_INT(collide ? "colliding inserts" : "inserts", 0, bad);
	CHECK(collide ? "colliding: grew" : "grew many times", grew >= (collide ? 5 : 15));
	for (i = 0, bad = 0; i < n; i++) {
		if (intern(&t, &k, (uint64_t)i * 3 + 1, &id) != 0 || id != i)
			bad++;
		key = (uint64_t)i * 3 + 2;
		if (idtab__find(&t, key_hash(&k, key), id_eq, &k, &key, &slot, &id) != -ENOENT ||
		    t.slots[slot])
			bad++;
	}
	CHECK_INT(collide ? "colliding: all found" : "all found", 0, bad);
	CHECK_INT("count", n, t.n);
	idtab__free(&t);
	free(k.v);
}

int main(void)
{
	test_basic();
	test_many(false, 200000);
	test_many(true, 500);
	return check_done();
}
