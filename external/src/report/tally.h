/* Counts by name, for the ranked tables of blame and sched: add (name, n), then read the rows
 * sorted by count (descending) with ties broken by name, so every table is deterministic.
 * Does not own: what is counted or how rows print. */
#ifndef XP_TALLY_H
#define XP_TALLY_H

#include <stddef.h>
#include <stdint.h>

struct tally_row {
	const char *name; /* owned by the tally */
	uint64_t count;
};

struct tally;

int tally__new(struct tally **out);
/* Add n to name's count (the name is copied). 0 or -ENOMEM. */
int tally__add(struct tally *t, const char *name, uint64_t n);
uint64_t tally__get(const struct tally *t, const char *name);
uint64_t tally__total(const struct tally *t);
size_t tally__size(const struct tally *t);
/* The rows, sorted; valid until the next add or free. NULL when empty or out of memory. */
const struct tally_row *tally__sorted(struct tally *t, size_t *n);
void tally__free(struct tally *t);

#endif /* XP_TALLY_H */
