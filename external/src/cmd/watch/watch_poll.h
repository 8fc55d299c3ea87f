/* watch --method poll (watch_poll.c). */
#ifndef XP_WATCH_POLL_H
#define XP_WATCH_POLL_H

#include <signal.h>

#include "perf.h"

struct watch;

/* Read P's struct every interval until *stop, the duration or the VM's exit, giving each copy
 * to on_sample (watch.c's decoding) as a spy's would be. */
void watch__run_poll(struct watch *w, volatile sig_atomic_t *stop, perf_sample_fn on_sample);

#endif /* XP_WATCH_POLL_H */
