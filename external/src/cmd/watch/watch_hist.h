/* watch's histogram of runnable episodes (watch_hist.c). */
#ifndef XP_WATCH_HIST_H
#define XP_WATCH_HIST_H

#include <stdint.h>

#include "watch_view.h"

/* Runnable episodes (watch_hist.c): add one of us microseconds to fine[WATCH_FINE_BUCKETS]; the
 * counts per power of two; the q quantile (0 < q <= 1) in us, interpolated in its bucket (0
 * when empty). */
void watch_hist__add(uint64_t *fine, uint64_t us);
void watch_hist__log2(const uint64_t *fine, uint64_t out[WATCH_HIST_BUCKETS]);
double watch_hist__quantile(const uint64_t *fine, double q);

#endif /* XP_WATCH_HIST_H */
