/* Unit tests for watch's runnable-episode histogram (watch_hist.c): values land in buckets 1/16
 * of their power of two wide, the log2 rows the report prints add up the same episodes, and the
 * median and 90th percentile come out within a bucket of the exact ones. */
#include <math.h>
#include <stdio.h>

#include "check.h"
#include "watch_hist.h"

static bool near(double want, double got, double rel)
{
	return fabs(got - want) <= rel * want;
}

int main(void)
{
	uint64_t fine[WATCH_FINE_BUCKETS] = {0}, log2[WATCH_HIST_BUCKETS];
	uint64_t one[WATCH_FINE_BUCKETS] = {0}, us, n = 0;
	char buf[64];

	CHECK("empty: median 0", watch_hist__quantile(fine, 0.5) == 0);
	/* 2000, 2001, ..., 7999 us: median 5000, 90th percentile 7400. */
	for (us = 2000; us < 8000; us++)
		watch_hist__add(fine, us);
	snprintf(buf, sizeof(buf), "%.1f", watch_hist__quantile(fine, 0.5));
	check_report("median of 2000..7999 within 1 %",
		     near(5000, watch_hist__quantile(fine, 0.5), 0.01), "5000", buf);
	snprintf(buf, sizeof(buf), "%.1f", watch_hist__quantile(fine, 0.9));
	check_report("p90 within 1 %", near(7400, watch_hist__quantile(fine, 0.9), 0.01), "7400",
		     buf);
	watch_hist__log2(fine, log2);
	CHECK_INT("[1024, 2048) us", 2048 - 2000, log2[10]);
	CHECK_INT("[2048, 4096) us", 4096 - 2048, log2[11]);
	CHECK_INT("[4096, 8192) us", 8000 - 4096, log2[12]);
	/* Exact below 16 us; [0, 2) is the first log2 row; past 2^24 us, the last bucket. */
	watch_hist__add(fine, 0);
	watch_hist__add(fine, 1);
	watch_hist__add(fine, 3);
	watch_hist__add(fine, 1ull << 40);
	watch_hist__log2(fine, log2);
	CHECK_INT("[0, 2) us", 2, log2[0]);
	CHECK_INT("[2, 4) us", 1, log2[1]);
	CHECK_INT("longest row holds the overflow", 1, log2[WATCH_HIST_BUCKETS - 1]);
	for (us = 0; us < WATCH_HIST_BUCKETS; us++)
		n += log2[us];
	CHECK_INT("log2 rows count every episode", 6000 + 4, n);
	watch_hist__add(one, 10);
	CHECK("one 10 us episode: median in [10, 11)",
	      watch_hist__quantile(one, 0.5) >= 10 && watch_hist__quantile(one, 0.5) < 11);
	return check_done();
}
