/* Records perf lost, said where they matter: per scheduler (or CPU) and time window, in the
 * summary and as pprof comments (and for any other output: the list is perf_stats.losses). */
#ifndef XP_PERF_LOSS_H
#define XP_PERF_LOSS_H

#include <stdio.h>

#include "perf.h"
#include "target.h"

/* "perf: 12 records lost from normal scheduler 5 (tid 1234) at 3.205-3.260 s" (a thread's ring)
 * or "... lost on CPU 1 at ... (the last dirty_cpu scheduler 3 ...)" (a CPU's ring); times from
 * the start of sampling. */
void perf_loss__format(const struct perf_loss *l, const struct perf_stats *ps,
		       const struct target *t, char *buf, size_t len);
/* Every window, a line each ("  " and the text above), then any lost past the list. */
void perf_loss__print(const struct perf_stats *ps, const struct target *t, FILE *f);
/* --verbose: the rings, their memory, and how full and late their drains were. */
void perf_loss__print_rings(const struct perf_stats *ps, FILE *f);
/* The same lines, '\n'-separated, malloc'd; NULL when nothing was lost (or no memory). */
char *perf_loss__text(const struct perf_stats *ps, const struct target *t);

#endif /* XP_PERF_LOSS_H */
