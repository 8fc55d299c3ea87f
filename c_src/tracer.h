/* The event tracer's memory and control thread (ABI in extrospect_abi.h, "The event tracer"):
 * the rings the erl_tracer NIFs write, the control slot the sampler leases, and the xp_tracer
 * thread that turns a lease into a start or stop request to the agent's events process.
 * Does not own: the NIF callbacks (tracer_nif.c), setting trace flags (extrospect_events.erl). */
#ifndef XP_TRACER_H
#define XP_TRACER_H

#include <stdint.h>

#include <erl_nif.h>

#include "extrospect_abi.h"

struct tracer;

/* Allocate the rings (one per scheduler thread that may emit, and a shared one) and start the
 * control thread. n_threads: schedulers of every type. 0, -ENOMEM or -EAGAIN. */
int tracer__new(unsigned n_threads, struct tracer **out);
/* Stop the control thread and free everything; tracing must be off (unload). NULL: no-op. */
void tracer__free(struct tracer *t);
void tracer__region(const struct tracer *t, struct xp_tracer_region *r);

/* Producer side, for the NIF callbacks: is session the live one (and the lease alive)? */
int tracer__live(const struct tracer *t, uint64_t session);
/* Trace one process in sample_n (by pid). */
int tracer__sampled(const struct tracer *t, uint64_t pid);
void tracer__emit(struct tracer *t, uint16_t kind, uint16_t arg, uint64_t pid, uint64_t extra);

/* The events process reports the outcome of a start or stop (enum xp_tracer_state, why). */
void tracer__report(struct tracer *t, uint64_t session, uint32_t state, uint32_t why);
/* What this session's records can tell (XP_TRACER_CAP_*), published in the control slot. */
void tracer__set_caps(struct tracer *t, uint64_t caps);
/* A copy of the control slot (extrospect:events_status/0). */
void tracer__ctl(const struct tracer *t, struct xp_tracer_ctl *out);

#endif /* XP_TRACER_H */
