/* events: pid text and names of the processes the events name (events_names.c). */
#ifndef XP_EVENTS_NAMES_H
#define XP_EVENTS_NAMES_H

#include <stdbool.h>

#include "events_stats.h"
#include "target.h"

/* Pid text for every process in s, and names for those alive now (first name read wins). */
int events__names(struct target *t, struct evstats *s, bool erlang_names);

#endif /* XP_EVENTS_NAMES_H */
