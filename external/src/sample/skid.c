/* The skid summary. See skid.h. */
#include <inttypes.h>

#include "skid.h"

static const char *const contra_names[SKID_CONTRA_COUNT] = {
    [SKID_SWITCHED] = "scheduler had switched process",
    [SKID_HEAP_MOVED] = "process heap had moved (GC)",
    [SKID_CALL_SITE] = "process had returned (call site)",
};

const char *skid__contradiction_name(enum skid_contradiction c)
{
	return (unsigned)c < SKID_CONTRA_COUNT ? contra_names[c] : "?";
}

/* The upper edge of bucket b, in nanoseconds. */
static uint64_t bucket_edge_ns(unsigned b)
{
	static const double quarter[4] = {1.189207115, 1.414213562, 1.681792831, 2.0};
	unsigned k = (b - 1) / 4, j = (b - 1) % 4;

	if (b == 0)
		return 1000;
	return (uint64_t)((double)((uint64_t)1 << k) * quarter[j] * 1000.0);
}

void skid__delay(struct skid_stats *k, uint64_t delay_ns)
{
	unsigned b = 0;

	if (delay_ns >= 1000) {
		uint64_t us = delay_ns / 1000;
		unsigned oct = 63 - (unsigned)__builtin_clzll(us);

		if (oct >= SKID_OCTAVES) {
			b = SKID_BUCKETS - 1;
		} else {
			b = 1 + 4 * oct;
			while (b < 4 * oct + 4 && bucket_edge_ns(b) <= delay_ns)
				b++;
		}
	}
	k->reads++;
	k->hist[b]++;
	if (delay_ns > k->max_ns)
		k->max_ns = delay_ns;
}

void skid__captured(struct skid_stats *k)
{
	k->captured++;
}

uint64_t skid__quantile(const struct skid_stats *k, double q)
{
	uint64_t want, seen = 0;
	unsigned b;

	if (!k->reads)
		return 0;
	want = (uint64_t)(q * (double)k->reads);
	if (want >= k->reads)
		want = k->reads - 1;
	for (b = 0; b < SKID_BUCKETS - 1; b++) {
		seen += k->hist[b];
		if (seen > want)
			break;
	}
	if (b == SKID_BUCKETS - 1)
		return k->max_ns;
	return bucket_edge_ns(b) < k->max_ns ? bucket_edge_ns(b) : k->max_ns;
}

static void print_ns(FILE *f, uint64_t ns)
{
	if (ns < 1000000)
		fprintf(f, "%" PRIu64 " us", ns / 1000);
	else
		fprintf(f, "%.1f ms", (double)ns / 1e6);
}

void skid__print(const struct skid_stats *k, FILE *f)
{
	static const double qs[] = {0.5, 0.9, 0.99};
	uint64_t total = 0, seen = k->reads + k->captured;
	unsigned i;

	fprintf(f, "Skid summary: values read after the sample, not captured in it\n");
	if (!seen) {
		fprintf(f, "  no sample needed a later read\n");
		return;
	}
	if (k->captured)
		fprintf(f,
			"  Process fields copied at the sample by the in-kernel capture: %" PRIu64
			" samples\n",
			k->captured);
	if (k->reads) {
		fprintf(f, "  Process fields read after the sample: %" PRIu64 " samples; delay",
			k->reads);
		for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
			fprintf(f, "%s p%.0f <= ", i ? "," : "", qs[i] * 100);
			print_ns(f, skid__quantile(k, qs[i]));
		}
		fprintf(f, ", max ");
		print_ns(f, k->max_ns);
		fputc('\n', f);
	}
	fprintf(f, "  stack partly read from memory after the sample: %" PRIu64 " (%.1f%%)\n",
		k->live_stack, 100.0 * (double)k->live_stack / (double)seen);
	for (i = 0; i < SKID_CONTRA_COUNT; i++)
		total += k->contradicted[i];
	fprintf(f, "  contradicted by a later read: %" PRIu64 " of %" PRIu64 " checked (%.2f%%)\n",
		total, k->checked, k->checked ? 100.0 * (double)total / (double)k->checked : 0.0);
	for (i = 0; i < SKID_CONTRA_COUNT; i++) {
		if (k->contradicted[i])
			fprintf(f, "    %-32s %" PRIu64 "\n", skid__contradiction_name(i),
				k->contradicted[i]);
	}
	/* Registers and the stack copy are the sample's own: only frames read later can be
	 * another moment's. */
	fprintf(
	    f, "  at risk (contradicted, and frames read after the sample): %" PRIu64 " (%.2f%%)\n",
	    k->at_risk, k->checked ? 100.0 * (double)k->at_risk / (double)k->checked : 0.0);
}
