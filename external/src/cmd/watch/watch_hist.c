/* watch's histogram of runnable episodes: 16 buckets per power of two of microseconds (exact
 * below 16 us, each bucket 1/16 of its power of two wide above), so a quantile is known to about
 * 3 %, where the log2 rows the report prints would only give its power of two. Does not own:
 * estimating the episodes (watch.c) or printing them (watch_report.c). */
#include "watch_hist.h"

#define SUB_BITS 4
#define SUB	 (1u << SUB_BITS)

static unsigned log2_floor(uint64_t v)
{
	return 63u - (unsigned)__builtin_clzll(v);
}

void watch_hist__add(uint64_t *fine, uint64_t us)
{
	unsigned b;

	if (us < SUB) {
		fine[us]++;
		return;
	}
	b = log2_floor(us);
	if (b >= WATCH_HIST_BUCKETS) {
		fine[WATCH_FINE_BUCKETS - 1]++;
		return;
	}
	fine[SUB + (b - SUB_BITS) * SUB + ((us >> (b - SUB_BITS)) & (SUB - 1))]++;
}

/* Bucket i covers [*lo, *hi) us. */
static void bounds(unsigned i, uint64_t *lo, uint64_t *hi)
{
	unsigned b, sub;

	if (i < SUB) {
		*lo = i;
		*hi = i + 1;
		return;
	}
	b = SUB_BITS + (i - SUB) / SUB;
	sub = (i - SUB) % SUB;
	*lo = (uint64_t)(SUB + sub) << (b - SUB_BITS);
	*hi = *lo + (1ull << (b - SUB_BITS));
}

void watch_hist__log2(const uint64_t *fine, uint64_t out[WATCH_HIST_BUCKETS])
{
	unsigned i;

	for (i = 0; i < WATCH_HIST_BUCKETS; i++)
		out[i] = 0;
	for (i = 0; i < WATCH_FINE_BUCKETS; i++) {
		uint64_t lo, hi;

		bounds(i, &lo, &hi);
		out[lo < 2 ? 0 : log2_floor(lo)] += fine[i];
	}
}

double watch_hist__quantile(const uint64_t *fine, double q)
{
	uint64_t n = 0, before = 0, lo, hi;
	double rank;
	unsigned i;

	for (i = 0; i < WATCH_FINE_BUCKETS; i++)
		n += fine[i];
	if (!n)
		return 0;
	rank = q * (double)n;
	for (i = 0; i < WATCH_FINE_BUCKETS; i++) {
		if (fine[i] && (double)(before + fine[i]) >= rank)
			break;
		before += fine[i];
	}
	if (i == WATCH_FINE_BUCKETS)
		i--;
	bounds(i, &lo, &hi);
	return (double)lo + (double)(hi - lo) * (rank - (double)before) / (double)fine[i];
}
