/* events: what the command's files share beyond events.h (the attached target). */
#ifndef XP_EVENTS_INT_H
#define XP_EVENTS_INT_H

#include <stdbool.h>

#include "events.h"
#include "target.h"

/* Pid text for every process in s, and names for those alive now (first name read wins). */
int events__names(struct target *t, struct evstats *s, bool erlang_names);

#endif /* XP_EVENTS_INT_H */
