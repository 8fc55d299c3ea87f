/* `extrospect watch`: one Erlang process's wall time by state and function, from spy snapshots
 * (watch.c, which owns the command). Its parts: finding P (watch_find.h), --method poll
 * (watch_poll.h), the stack under a resume point (watch_stack.h), the on-CPU functions
 * (watch_cpu.h), runnable episodes (watch_hist.h), the report (watch_report.h); the state they
 * share is watch_int.h, the report's types watch_view.h. Does not own: the spies (spies.c). */
#ifndef XP_WATCH_H
#define XP_WATCH_H

#include <stdint.h>

#include "perf.h"
#include "watch_view.h"

/* Process.state -> state; -ESRCH when the struct is being freed (P is gone). */
int watch__classify(uint32_t state, enum watch_state *out);
/* A spy's copy (or a poll's read) of P's struct: perf_session's callback, ctx a struct watch. */
void watch__on_sample(const struct perf_sample *ps, void *ctx);

#endif /* XP_WATCH_H */
