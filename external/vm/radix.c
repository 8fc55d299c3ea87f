/* Least significant digit first, 16 bits a pass, skipping a digit every key shares: pids of a
 * table that never wrapped, or addresses within a few GB, sort in two or three passes. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "radix.h"

#define DIGITS	 (1u << 16)
#define RUNS_MAX 256 /* fewer ascending runs than this are merged, not sorted by digits */
/* Fewer items than this are sorted a byte a pass, counted on the stack: the 16-bit digits' 512 KiB
 * of counts, fresh pages for each sort, cost more than the passes they save. An attach sorts five
 * arrays of 3,000-50,000 items; in a guest where a page's first touch costs ~10 us (the 2-core
 * machines of issue 27), sorts of 4,366 ELF symbols and of libdw's 6,827 took 2.4-3.9 and 1.8-3.1
 * ms of CPU, 0.6-1.1 and 0.05-1.1 a byte a digit. */
#define SMALL_N (1u << 16)

static uint64_t key(const uint8_t *item)
{
	uint64_t k;

	memcpy(&k, item, sizeof(k));
	return k;
}

/* One stable pass by the digit of bits bits at shift, src to dst (count: 2^bits entries). */
static void pass(const uint8_t *src, uint8_t *dst, size_t n, size_t size, unsigned shift,
		 unsigned bits, size_t *count)
{
	const size_t digits = (size_t)1 << bits, mask = digits - 1;
	size_t i, sum = 0, c;

	memset(count, 0, digits * sizeof(*count));
	for (i = 0; i < n; i++)
		count[(key(src + i * size) >> shift) & mask]++;
	for (i = 0; i < digits; i++) {
		c = count[i];
		count[i] = sum;
		sum += c;
	}
	for (i = 0; i < n; i++) {
		size_t at = count[(key(src + i * size) >> shift) & mask]++;

		memcpy(dst + at * size, src + i * size, size);
	}
}

/* Where each ascending run of the n items begins (starts[0..nruns)), counted in one pass. */
static size_t run_starts(const uint8_t *v, size_t n, size_t size, size_t *starts)
{
	size_t i, nruns = 1;

	starts[0] = 0;
	for (i = 1; i < n; i++) {
		if (key(v + i * size) < key(v + (i - 1) * size))
			starts[nruns++] = i;
	}
	return nruns;
}

/* Does run a's head come before run b's? Equal keys: the earlier run's (stable). */
static bool before(const uint8_t *v, size_t size, const size_t *at, size_t a, size_t b)
{
	uint64_t ka = key(v + at[a] * size), kb = key(v + at[b] * size);

	return ka < kb || (ka == kb && a < b);
}

/* heap[i] moved down the heap of h runs to where its head belongs. */
static void sift(const uint8_t *v, size_t size, const size_t *at, size_t *heap, size_t h, size_t i)
{
	size_t c, r;

	for (; (c = 2 * i + 1) < h; i = c) {
		if (c + 1 < h && before(v, size, at, heap[c + 1], heap[c]))
			c++;
		if (!before(v, size, at, heap[c], heap[i]))
			break;
		r = heap[i];
		heap[i] = heap[c];
		heap[c] = r;
	}
}

/* The nruns ascending runs of src merged into dst, through a heap of the runs by their heads:
 * pids listed in address order, when the processes were spawned one after the other, are a
 * hundred or so runs, merged in one pass instead of two or three by digits. */
static void merge_runs(const uint8_t *src, uint8_t *dst, size_t n, size_t size,
		       const size_t *starts, size_t nruns)
{
	size_t at[RUNS_MAX], end[RUNS_MAX], heap[RUNS_MAX], h = nruns, r, o;

	for (r = 0; r < nruns; r++) {
		at[r] = starts[r];
		end[r] = r + 1 < nruns ? starts[r + 1] : n;
		heap[r] = r;
	}
	for (r = h / 2; r-- > 0;)
		sift(src, size, at, heap, h, r);
	for (o = 0; o < n; o++) {
		r = heap[0];
		memcpy(dst + o * size, src + at[r] * size, size);
		if (++at[r] == end[r])
			heap[0] = heap[--h];
		sift(src, size, at, heap, h, 0);
	}
}

int radix__sort(void *items, size_t n, size_t size)
{
	uint64_t all_or = 0, all_and = ~(uint64_t)0;
	uint8_t *v = items, *tmp, *src, *dst, *t;
	size_t *count, small[256], i, runs = 0; /* runs: where a key is below the one before it */
	unsigned shift, bits;

	if (size < 8 || size > 64 || size % 8 || (n && !items))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		all_or |= key(v + i * size);
		all_and &= key(v + i * size);
		runs += i && key(v + i * size) < key(v + (i - 1) * size);
	}
	if (n < 2 || all_or == all_and || !runs)
		return 0; /* in order already */
	tmp = malloc(n * size);
	if (!tmp)
		return -ENOMEM;
	if (runs < RUNS_MAX) {
		size_t starts[RUNS_MAX];

		merge_runs(v, tmp, n, size, starts, run_starts(v, n, size, starts));
		memcpy(v, tmp, n * size);
		free(tmp);
		return 0;
	}
	/* Small: a byte a digit, counted on the stack. Else 16 bits, whose counts are 512 KiB of
	 * fresh pages (128 faults) a sort. */
	bits = n < SMALL_N ? 8 : 16;
	count = bits == 8 ? small : malloc(DIGITS * sizeof(*count));
	if (!count) {
		free(tmp);
		return -ENOMEM;
	}
	src = v;
	dst = tmp;
	for (shift = 0; shift < 64; shift += bits) {
		if (!(((all_or ^ all_and) >> shift) & (((uint64_t)1 << bits) - 1)))
			continue; /* every key has this digit: the order stays */
		pass(src, dst, n, size, shift, bits, count);
		t = src;
		src = dst;
		dst = t;
	}
	if (count != small)
		free(count);
	if (src != v)
		memcpy(v, src, n * size);
	free(tmp);
	return 0;
}

/* Runs of equal keys in order by cmp, in place: an insertion sort through one item of scratch. */
static void sort_ties(uint8_t *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	uint8_t hold[64];
	size_t lo = 0, hi, i, j;

	for (; lo < n; lo = hi) {
		for (hi = lo + 1; hi < n && key(v + hi * size) == key(v + lo * size); hi++)
			;
		for (i = lo + 1; i < hi; i++) {
			memcpy(hold, v + i * size, size);
			for (j = i; j > lo && cmp(v + (j - 1) * size, hold) > 0; j--)
				memcpy(v + j * size, v + (j - 1) * size, size);
			memcpy(v + j * size, hold, size);
		}
	}
}

void radix__sort_cmp(void *items, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n < 2)
		return;
	if (radix__sort(items, n, size)) {
		qsort(items, n, size, cmp);
		return;
	}
	sort_ties(items, n, size, cmp);
}
