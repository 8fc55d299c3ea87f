/* Resolving the scheduler table after every scheduler observation (calib_sched.c). */
#ifndef XP_CALIB_SCHED_H
#define XP_CALIB_SCHED_H

#include "agent.h"

/* ESD field offsets, stride, array bases (checked element by element), tids from thread names,
 * into c (the dirty scan's working copy of a->calib; a gives the row and facts). Runs on a
 * dirty scheduler: it reads /proc and up to three words per scheduler. */
void calib__sched_resolve(const struct agent *a, struct calib *c);

#endif /* XP_CALIB_SCHED_H */
