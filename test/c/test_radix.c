/* Unit tests for the radix sort (radix.c): against a plain stable sort, for keys that differ in
 * one digit, in every digit, or not at all; stable (equal keys keep their order); sizes 16 and
 * 24 as ptab.c and pstack use them; fewer items than SMALL_N (a byte a digit) and more; items
 * in a few ascending runs (merged), disjoint or touching; bad sizes refused
 * with the items untouched. radix__sort_cmp: ties broken by the comparator (here against the
 * items' order, so that a tie left as radix__sort leaves it fails). And
 * ptab__by_address (ptab.c), packed into 8-byte keys or not, against the same stable sort. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ptab.h"
#include "radix.h"

struct item {
	uint64_t key;
	uint64_t seq; /* where it was: equal keys must stay in this order */
	uint32_t pad;
};

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int by_key_then_seq(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* v[0..n) sorted by radix__sort and, in w (room for n), by the stable sort: the same. Frees both
 * (a failed allocation of either fails the check). */
static void check_as_stable(const char *name, struct item *v, struct item *w, size_t n)
{
	bool ok = v && w;

	if (ok) {
		memcpy(w, v, n * sizeof(*v));
		qsort(w, n, sizeof(*w), by_key_then_seq);
		ok = radix__sort(v, n, sizeof(*v)) == 0 && memcmp(v, w, n * sizeof(*v)) == 0;
	}
	CHECK(name, ok);
	free(v);
	free(w);
}

/* n items with keys from mask (bits that vary), sorted both ways and compared. */
static void expect_sorted(const char *name, size_t n, uint64_t mask, uint64_t base)
{
	struct item *v = malloc((n ? n : 1) * sizeof(*v)), *w = malloc((n ? n : 1) * sizeof(*w));

	for (size_t i = 0; v && i < n; i++)
		v[i] = (struct item){.key = base | (next() & mask), .seq = i};
	check_as_stable(name, v, w, n);
}

/* n items in about k ascending runs (merged, not sorted by digits, below RUNS_MAX runs), keys
 * from a small range so that runs share keys: against the stable sort. */
static void expect_runs(const char *name, size_t n, size_t k)
{
	struct item *v = malloc(n * sizeof(*v)), *w = malloc(n * sizeof(*w));
	uint64_t at = 0;

	for (size_t i = 0; v && i < n; i++) {
		if (next() % (n / k + 1) == 0)
			at = next() % 1000; /* a new run, most likely below */
		at += next() % 3;
		v[i] = (struct item){.key = at, .seq = i};
	}
	check_as_stable(name, v, w, n);
}

/* n items (a multiple of k) in k ascending blocks that do not overlap (a JIT map's modules: each
 * its own range of keys), the blocks in descending order of their keys (each a run of its own)
 * or shuffled (neighbours in ascending order join into runs that overlap); touch: every other
 * block begins with the key the block below it ends with (equal keys across runs, the later
 * run's first in key order): merged. */
static void expect_disjoint_runs(const char *name, size_t n, size_t k, bool shuffle, bool touch)
{
	struct item *v = malloc(n * sizeof(*v)), *w = malloc(n * sizeof(*w));
	size_t *slot = malloc(k * sizeof(*slot)), per = n / k, i, r, j;

	for (r = 0; slot && r < k; r++)
		slot[r] = k - 1 - r;
	for (r = k; shuffle && slot && r > 1; r--) {
		j = next() % r;
		i = slot[r - 1];
		slot[r - 1] = slot[j];
		slot[j] = i;
	}
	for (r = 0, i = 0; v && slot && r < k; r++) {
		size_t m = r + 1 < k ? per : n - i;

		for (j = 0; j < m; j++, i++) {
			uint64_t at = slot[r] * 1000000ull + 10 * j + 1;

			if (touch && slot[r] % 2 && j == 0) /* where the block below ends */
				at = (slot[r] - 1) * 1000000ull + 10 * (per - 1) + 1;
			v[i] = (struct item){.key = at, .seq = i};
		}
	}
	free(slot);
	check_as_stable(name, v, w, n);
}

/* 16-byte items: ptab__by_address's {address, slot}. */
static void expect_pairs(void)
{
	uint64_t v[8] = {30, 1, 10, 2, 20, 3, 10, 4}; /* {key, payload} x 4 */
	const uint64_t want[8] = {10, 2, 10, 4, 20, 3, 30, 1};

	CHECK("16-byte items", radix__sort(v, 4, 16) == 0 && memcmp(v, want, sizeof(v)) == 0);
}

/* ptab__by_address on n slots ascending (as ptab__collect lists them) at addresses
 * base + (next() & mask) & ~clear, every dup-th one a copy of the one before, against a stable
 * sort of {address, slot}. */
static void expect_by_address(const char *name, size_t n, uint64_t base, uint64_t mask,
			      uint64_t clear, size_t dup)
{
	struct item *w = malloc((n ? n : 1) * sizeof(*w));
	uint64_t *procs = malloc((n ? n : 1) * sizeof(*procs));
	uint32_t *ixs = malloc((n ? n : 1) * sizeof(*ixs));
	bool ok = w && procs && ixs;

	for (size_t i = 0; ok && i < n; i++) {
		ixs[i] = (uint32_t)(3 * i + 1);
		procs[i] =
		    dup && i && i % dup == 0 ? procs[i - 1] : (base + (next() & mask)) & ~clear;
		w[i] = (struct item){.key = procs[i], .seq = ixs[i]};
	}
	if (ok) {
		qsort(w, n, sizeof(*w), by_key_then_seq);
		ok = ptab__by_address(ixs, procs, n) == 0;
	}
	for (size_t i = 0; ok && i < n; i++)
		ok = procs[i] == w[i].key && ixs[i] == w[i].seq;
	CHECK(name, ok);
	free(w);
	free(procs);
	free(ixs);
}

/* Ties by seq descending: not the order a stable sort leaves them in. */
static int by_key_then_seq_down(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? 1 : x->seq > y->seq ? -1 : 0;
}

/* radix__sort_cmp on n items with keys from mask against qsort by the whole comparator. */
static void expect_sorted_cmp(const char *name, size_t n, uint64_t mask)
{
	struct item *v = malloc((n ? n : 1) * sizeof(*v)), *w = malloc((n ? n : 1) * sizeof(*w));
	bool ok = v && w;

	for (size_t i = 0; ok && i < n; i++)
		v[i] = (struct item){.key = next() & mask, .seq = i};
	if (ok) {
		memcpy(w, v, n * sizeof(*v));
		qsort(w, n, sizeof(*w), by_key_then_seq_down);
		radix__sort_cmp(v, n, sizeof(*v), by_key_then_seq_down);
		ok = memcmp(v, w, n * sizeof(*v)) == 0;
	}
	CHECK(name, ok);
	free(v);
	free(w);
}

static void expect_refused(void)
{
	uint64_t v[4] = {3, 2, 1, 0};
	const uint64_t same[4] = {3, 2, 1, 0};

	CHECK("size 4 refused", radix__sort(v, 4, 4) == -EINVAL);
	CHECK("size 12 refused", radix__sort(v, 2, 12) == -EINVAL);
	CHECK("size 72 refused", radix__sort(v, 1, 72) == -EINVAL);
	CHECK("refused: untouched", memcmp(v, same, sizeof(v)) == 0);
	CHECK("NULL with n > 0 refused", radix__sort(NULL, 3, 8) == -EINVAL);
	CHECK("nothing to sort", radix__sort(NULL, 0, 8) == 0);
}

int main(void)
{
	expect_sorted("empty", 0, ~0ull, 0);
	expect_sorted("one", 1, ~0ull, 0);
	expect_sorted("all keys equal", 1000, 0, 42);
	expect_sorted("one low digit, many equal keys", 100000, 0xff, 0);
	expect_sorted("pids: two digits", 100000, 0xfffffff, 0);
	expect_sorted("addresses: high digits vary", 100000, 0x7ffff0000ull, 0x7f0000000000ull);
	expect_sorted("only the top digit varies", 5000, 0xffff000000000000ull, 0);
	expect_sorted("full 64-bit keys", 100000, ~0ull, 0);
	expect_pairs();
	expect_runs("two runs", 100000, 2);
	expect_runs("a hundred runs, keys shared between them", 100000, 100);
	expect_runs("about the most runs merged", 100000, 240);
	expect_runs("more runs than merged: by digits", 100000, 2000);
	expect_runs("more runs than merged, fewer items: by bytes", 30000, 2000);
	expect_disjoint_runs("runs that do not overlap", 24800, 124, false, false);
	expect_disjoint_runs("runs that touch: the later run's equal keys first", 24800, 124, false,
			     true);
	expect_disjoint_runs("blocks shuffled: runs that overlap", 25000, 124, true, false);
	expect_disjoint_runs("blocks shuffled, touching", 25000, 124, true, true);
	expect_disjoint_runs("one run per item", 200, 200, false, false);
	expect_sorted("pids, fewer items: by bytes", 30000, 0xfffffff, 0);
	expect_sorted("addresses, fewer items: by bytes", 30000, 0x7ffff0000ull, 0x7f0000000000ull);
	expect_sorted("full 64-bit keys, fewer items: by bytes", 30000, ~0ull, 0);
	expect_refused();
	expect_sorted_cmp("with cmp: no ties", 20000, ~0ull);
	expect_sorted_cmp("with cmp: runs of ties reversed", 20000, 0x3ff);
	expect_sorted_cmp("with cmp: every key equal", 500, 0);
	expect_sorted_cmp("with cmp: one item", 1, ~0ull);
	/* Packed: 8-aligned within a few GB; Processes 776 bytes apart would be as good. */
	expect_by_address("by address, packed", 100000, 0x7f3a00000000ull, 0xffffffffull, 7, 0);
	expect_by_address("by address, packed, equal addresses", 50000, 0x7f3a00000000ull,
			  0xfffffull, 7, 3);
	expect_by_address("by address, one slot", 1, 0x7f3a00000000ull, 0xfffull, 7, 0);
	/* Not packed: a misaligned entry (kept, and refused later as invalid), or a span too wide
	 * for the slot bits. */
	expect_by_address("by address, misaligned", 100000, 0x7f3a00000000ull, 0xffffffffull, 0, 0);
	expect_by_address("by address, 64-bit span", 100000, 0, ~0ull, 7, 5);
	return check_done();
}
