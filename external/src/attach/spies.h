/* The agent's spy threads seen from outside (extrospect_abi.h, "Spy threads"): the spy region read
 * fresh from the block and validated, each spy's slot, and a lease on one spy. The ONLY write
 * extrospect makes into a VM is here (slot_write): process_vm_writev of the first
 * XP_SPY_WRITABLE bytes of a published slot, after every check. Does not own: the snapshots
 * (watch.c), finding the block (agent.c). */
#ifndef XP_SPIES_H
#define XP_SPIES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "extrospect_abi.h"
#include "target.h"

/* Why a region, a slot or a lease is refused. */
enum spies_status {
	SPIES_OK = 0,
	SPIES_NO_AGENT,	    /* no agent block in the VM */
	SPIES_BLOCK_GONE,   /* the block is retired, moved or unreadable now */
	SPIES_NONE,	    /* region version 0 or no spy running */
	SPIES_BAD_VERSION,  /* a region version this sampler does not speak */
	SPIES_BAD_REGION,   /* counts, sizes or addresses out of range */
	SPIES_NOT_WRITABLE, /* the slot array is not inside one writable mapping of the VM */
	SPIES_BAD_TID,	    /* a spy's tid is not a thread of the VM named xp_spy_N */
	SPIES_BAD_SLOT,	    /* the slot disagrees with the region (tid, state) */
	SPIES_BUSY,	    /* every spy is leased by someone */
	SPIES_LEASE_LOST,   /* the agent revoked our lease, or someone else holds the slot */
	SPIES_WRITE_FAILED, /* process_vm_writev failed */
	SPIES_STATUS_COUNT
};
const char *spies__status_str(enum spies_status st);

struct spies_view {
	uint64_t block_addr, block_generation;
	struct xp_spy_region region;
	struct xp_spy_slot slot[XP_SPY_MAX];
	bool slot_ok[XP_SPY_MAX];
	/* Each spy's tid in our pid namespace: the agent publishes its own gettid(), which in a
	 * container is the container's number (proc__host_tid). */
	pid_t host_tid[XP_SPY_MAX];
};

/* Read the block again at the agent's address, then the region and every slot, validating all.
 * Reads only. */
enum spies_status spies__read(const struct target *t, struct spies_view *out);

struct spy_lease {
	pid_t pid;
	unsigned index;
	int32_t tid;	/* as the VM's pid namespace numbers it (the block's) */
	pid_t host_tid; /* the same thread in ours: what perf_event_open and /proc take */
	uint64_t slot, target, generation, lease, block_generation;
};

/* Lease a parked spy and point it at target every interval_ns. */
enum spies_status spy_lease__acquire(const struct target *t, uint64_t target, uint64_t interval_ns,
				     struct spy_lease *out);
/* Validate again and bump the lease counter; every lease_ns / 4 at least. */
enum spies_status spy_lease__renew(const struct target *t, struct spy_lease *l);
/* Park the spy again, if it is still ours (validated first). */
enum spies_status spy_lease__release(const struct target *t, struct spy_lease *l);

/* The checks, exposed for unit tests. The region as published: version, counts, slot size and
 * alignment, each slot's address recomputed. */
enum spies_status spies__check_region(const struct xp_spy_region *r);
/* /proc/PID/task/TID/comm is "xp_spy_<index + 1>". */
bool spies__tid_is_spy(pid_t pid, int32_t tid, unsigned index);
/* Is the spy of l still ours in v: same tid and slot, slot consistent, and the generation,
 * target and owner we wrote? SPIES_OK or SPIES_LEASE_LOST. */
enum spies_status spy_lease__still_ours(const struct spies_view *v, const struct spy_lease *l);

/* A slot's state word: "starting", "parked", "retargeted", "stopped" ("?" otherwise). */
const char *spies__state_name(uint32_t state);

#endif /* XP_SPIES_H */
