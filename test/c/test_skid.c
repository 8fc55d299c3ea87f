/* Unit tests for the skid summary (skid.c): delay buckets (4 per power of two), quantiles as
 * bucket upper edges capped at the maximum, and the printed summary's lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "skid.h"

static void test_quantiles(void)
{
	struct skid_stats k;
	int i;

	memset(&k, 0, sizeof(k));
	CHECK_INT("no reads: quantile 0", 0, skid__quantile(&k, 0.5));
	/* 90 delays of 1.5 ms, 9 of 5 ms, 1 of 40 ms. */
	for (i = 0; i < 90; i++)
		skid__delay(&k, 1500000);
	for (i = 0; i < 9; i++)
		skid__delay(&k, 5000000);
	skid__delay(&k, 40000000);
	CHECK_INT("reads", 100, k.reads);
	CHECK_INT("max", 40000000, k.max_ns);
	/* 1500 us lies in [1024 * 2^(2/4), 1024 * 2^(3/4)) us: the upper edge is 1722 us. */
	CHECK_INT("p50", 1722000, skid__quantile(&k, 0.5) / 1000 * 1000);
	CHECK_INT("p90 is the 5 ms bucket: [4871, 5793) us", 5792000,
		  skid__quantile(&k, 0.9) / 1000 * 1000);
	CHECK_INT("p99 is capped at the max", 40000000, skid__quantile(&k, 0.995));
	memset(&k, 0, sizeof(k));
	skid__delay(&k, 500);
	CHECK_INT("below 1 us: bucket 0", 1, k.hist[0]);
	CHECK_INT("quantile capped at max", 500, skid__quantile(&k, 0.5));
	skid__delay(&k, 3600ull * 1000000000ull);
	CHECK_INT("an hour: the last bucket", 1, k.hist[SKID_BUCKETS - 1]);
}

/* What skid__print writes for k (malloc'd; the caller frees it). */
static char *printed(const struct skid_stats *k)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return strdup("");
	skid__print(k, f);
	fclose(f);
	return buf;
}

static void test_print(void)
{
	struct skid_stats k;
	char *buf;

	memset(&k, 0, sizeof(k));
	skid__delay(&k, 1000000);
	skid__delay(&k, 1000000);
	k.live_stack = 1;
	k.checked = 2;
	k.contradicted[SKID_SWITCHED] = 1;
	k.at_risk = 1;
	buf = printed(&k);
	CHECK("delay line", strstr(buf, "Process fields read after the sample: 2 samples; delay "
					"p50 <= 1.0 ms") != NULL);
	CHECK("stack line",
	      strstr(buf, "stack partly read from memory after the sample: 1 (50.0%)") != NULL);
	CHECK("contradictions",
	      strstr(buf, "contradicted by a later read: 1 of 2 checked (50.00%)") != NULL);
	CHECK("reason", strstr(buf, "scheduler had switched process   1") != NULL);
	CHECK("at risk", strstr(buf, "at risk (contradicted, and frames read after the sample): 1 "
				     "(50.00%)") != NULL);
	free(buf);
}

/* Samples the in-kernel capture copied are said so, with no read delay; the stack's share is of
 * every sample. */
static void test_print_captured(void)
{
	struct skid_stats k;
	char *buf;

	memset(&k, 0, sizeof(k));
	skid__captured(&k);
	skid__captured(&k);
	skid__captured(&k);
	k.live_stack = 3;
	buf = printed(&k);
	CHECK("captured line",
	      strstr(buf,
		     "Process fields copied at the sample by the in-kernel capture: 3 samples\n") !=
		  NULL);
	CHECK("no delay line without a late read",
	      strstr(buf, "Process fields read after the sample") == NULL);
	CHECK("stack line of every sample",
	      strstr(buf, "stack partly read from memory after the sample: 3 (100.0%)") != NULL);
	free(buf);
}

int main(void)
{
	test_quantiles();
	test_print();
	test_print_captured();
	return check_done();
}
