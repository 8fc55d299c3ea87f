/* Finding the watched process (watch_find.c). */
#ifndef XP_WATCH_FIND_H
#define XP_WATCH_FIND_H

#include <stddef.h>

struct watch;

/* P's Process struct by pid text or registered name (w->o): sets w->proc, pid_term, pid_text,
 * name and w->pr. 0, CMD_EUSAGE (no such process), TARGET_EUNSUPPORTED, -ENOMEM. */
int watch__find_process(struct watch *w, char *err, size_t errlen);

#endif /* XP_WATCH_FIND_H */
