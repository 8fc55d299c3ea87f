/* Spy threads: agent threads whose stack pointer the sampler may point at a Process struct, so
 * that a perf context-switch event on the spy copies that memory at every loop (ABI in
 * extrospect_abi.h, "Spy threads"). Owns the threads, their slots, the lease and the clean stop.
 * Does not own: publication (extrospect_nif.c republishes the block after a change). */
#ifndef XP_SPY_H
#define XP_SPY_H

#include <stdint.h>

#include "extrospect_abi.h"

/* IDLE: SCHED_IDLE; OTHER: SCHED_OTHER at nice 19; NORMAL: the creating thread's policy and
 * nice value (a normal share: snapshots on time on a busy machine, a little CPU while leased). */
enum spy_policy { SPY_POLICY_IDLE = 0, SPY_POLICY_OTHER = 1, SPY_POLICY_NORMAL = 2 };

struct spies;

/* Start n (1..XP_SPY_MAX) parked spies. Waits (at most ~1 s: call it from a dirty scheduler)
 * until each published its tid. 0, -EINVAL, -ENOMEM, -EAGAIN (a thread could not be created or
 * did not start), with nothing left running on failure. */
int spies__start(unsigned n, enum spy_policy policy, struct spies **out);

/* Ask every spy to exit, wake them and join them; frees the set. NULL is a no-op. Returns once no
 * spy runs the library's code. */
void spies__stop(struct spies *s);

/* Fill the block's spy region (version 0 when s is NULL). */
void spies__region(const struct spies *s, struct xp_spy_region *r);

/* A copy of slot i (the live one changes under us), for spies/0. -ENOENT past the last. */
int spies__slot(const struct spies *s, unsigned i, struct xp_spy_slot *out);
unsigned spies__count(const struct spies *s);

#endif /* XP_SPY_H */
