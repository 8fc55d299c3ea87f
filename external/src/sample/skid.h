/* The skid summary (--skid-summary): values a sample did not capture are read after it. This
 * keeps how long after (a distribution of delays) and how often a later read contradicted what
 * the sample itself captured, by reason. Does not own: taking the reads (sampler.c). */
#ifndef XP_SKID_H
#define XP_SKID_H

#include <stdint.h>
#include <stdio.h>

/* Read delays in microseconds: bucket 0 holds < 1 us, then 4 buckets per power of two (edges
 * 2^(k + j/4)), up to about 2^22 us (4 s); the last bucket holds the rest. */
#define SKID_OCTAVES 22
#define SKID_BUCKETS (1 + 4 * SKID_OCTAVES + 1)

enum skid_contradiction {
	SKID_SWITCHED = 0, /* the scheduler ran another process (or none) when read */
	SKID_HEAP_MOVED,   /* the sample's stack pointer lay outside the heap read later (a GC) */
	SKID_CALL_SITE, /* native sample: the stack read later no longer calls the sampled code */
	SKID_CONTRA_COUNT
};

struct skid_stats {
	uint64_t reads;		     /* samples whose Process fields were read after the sample */
	uint64_t captured;	     /* ... and those the in-kernel capture copied at it */
	uint64_t hist[SKID_BUCKETS]; /* read delays */
	uint64_t max_ns;	     /* the longest delay */
	uint64_t live_stack;	     /* samples whose stack was partly read from memory later */
	uint64_t checked;	     /* samples checked for contradictions */
	uint64_t contradicted[SKID_CONTRA_COUNT];
	uint64_t at_risk; /* contradicted, and part of the stack was read after the sample */
};

void skid__delay(struct skid_stats *k, uint64_t delay_ns);
/* A sample whose Process fields the in-kernel capture copied at the sample: no read delay. */
void skid__captured(struct skid_stats *k);
/* The delay at quantile q (0..1), as the upper edge of its bucket, in nanoseconds. */
uint64_t skid__quantile(const struct skid_stats *k, double q);
const char *skid__contradiction_name(enum skid_contradiction c);
void skid__print(const struct skid_stats *k, FILE *f);

#endif /* XP_SKID_H */
