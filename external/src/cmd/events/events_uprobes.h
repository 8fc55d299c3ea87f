/* events --source uprobes: the second event source, measured beside the agent's tracer
 * (bench/events_cost): uprobes on beam.smp's exported functions, no agent needed
 * (events_uprobes.c). Does not own: the probes' perf events (kernel/uprobe.h), the figures
 * (events_stats.h). */
#ifndef XP_EVENTS_UPROBES_H
#define XP_EVENTS_UPROBES_H

#include <signal.h>

#include "events_stats.h"
#include "target.h"

/* Record for secs (or until *stop) into s: 0, or an error with err set. */
int events__uprobes(struct target *t, double secs, volatile sig_atomic_t *stop, struct evstats *s,
		    uint64_t *lost, char *err, size_t errlen);

#endif /* XP_EVENTS_UPROBES_H */
