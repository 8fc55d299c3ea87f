/* events: the report, as text or JSON (events_print.c; the format in docs/guide.md). Does not
 * own: the figures (events_stats.h). */
#ifndef XP_EVENTS_PRINT_H
#define XP_EVENTS_PRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "events_stacks.h"
#include "events_stats.h"

/* What the command prints. */
struct events_out {
	bool json;
	unsigned top;		     /* processes per kind */
	const char *only;	     /* a pid text or a name: only that process in the lists */
	double seconds;		     /* the window */
	uint64_t read, lapped, torn; /* records read and lost */
	uint64_t sample_n;
	const char *mechanism;
	const char *otp;
	uint64_t rings_addr, rings_bytes; /* the agent's rings: where, and their fixed size */
	unsigned nrings;
	struct evstacks *stacks; /* --slowest's stacks, NULL: none */
};
void events__print_text(const struct evstats *s, const struct events_out *o, FILE *f);
/* A duration in the text's columns: microseconds with one decimal below 10, whole from 10 on,
 * chosen by the value as printed (9,960 ns is "10", not "10.0" beside another row's "10"). */
void events__us_text(uint64_t ns, char *buf, size_t len);
void events__print_json(const struct evstats *s, const struct events_out *o, FILE *f);

#endif /* XP_EVENTS_PRINT_H */
