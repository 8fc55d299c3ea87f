/* events --slowest: a sampler beside the event drain, as record's, keeping the last samples of
 * every process (a bounded ring), so that each of the slowest events is shown with its process's
 * Erlang stack sampled during it, or the nearest before or after it, the gap said
 * (events_stacks.c). Does not own: the events (events_stats.h), printing (events_print.c). */
#ifndef XP_EVENTS_STACKS_H
#define XP_EVENTS_STACKS_H

#include <stdbool.h>
#include <stdint.h>

#include "target.h"

#define EVS_HZ	   997
#define EVS_FRAMES 24 /* the innermost Erlang frames kept of a sample */

struct evstacks;

/* Where the stack shown was sampled, against the event's [from, to]. */
enum evs_when { EVS_DURING = 0, EVS_BEFORE, EVS_AFTER };

struct evs_hit {
	enum evs_when when;
	uint64_t gap_ns; /* before/after: from the sample to the event; during: 0 */
	uint32_t samples_during;
	bool gc; /* the sample was in a collection of the process (its state said so) */
	uint32_t n;
	const char *frames[EVS_FRAMES]; /* innermost first */
};

/* 0, or -errno / a target error with err set (no JIT map, perf refused, ...). */
int evstacks__open(struct evstacks **out, struct target *t, char *err, size_t errlen);
/* Sample for up to timeout_ms: 0, or -ESRCH when the VM is gone. */
int evstacks__poll(struct evstacks *x, int timeout_ms);
/* The sample of the process whose pid prints as pid_text nearest [from, to] (CLOCK_MONOTONIC
 * ns), within EVS_MAX_GAP_NS (10 ms): false when there is none. */
bool evstacks__find(struct evstacks *x, const char *pid_text, uint64_t from, uint64_t to,
		    struct evs_hit *h);
/* Samples kept, and those overwritten (the ring holds EVS_KEEP). */
void evstacks__counts(const struct evstacks *x, uint64_t *kept, uint64_t *overwritten);
void evstacks__free(struct evstacks *x);

#endif /* XP_EVENTS_STACKS_H */
