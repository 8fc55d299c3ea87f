/* The agent's event tracer seen from outside (extrospect_abi.h, "The event tracer"): its region
 * read fresh from the block and validated, the lease on its control slot, and the rings drained
 * with process_vm_readv, every record checked and every loss counted by reason. The writes are
 * those of spies.c's kind: process_vm_writev of the first XP_TRACER_WRITABLE bytes of the
 * published control slot, after every check. Does not own: what the events mean (cmd/events). */
#ifndef XP_EVRING_H
#define XP_EVRING_H

#include <stdint.h>
#include <sys/types.h>

#include "extrospect_abi.h"
#include "target.h"

enum evring_status {
	EVRING_OK = 0,
	EVRING_NO_AGENT,     /* no agent block in the VM */
	EVRING_BLOCK_GONE,   /* the block is retired or unreadable now */
	EVRING_NONE,	     /* the agent has no event tracer (an older agent, or none made) */
	EVRING_BAD_VERSION,  /* a region version this sampler does not speak */
	EVRING_BAD_REGION,   /* counts, sizes or addresses out of range */
	EVRING_NOT_WRITABLE, /* the control slot is not inside a writable mapping of the VM */
	EVRING_BUSY,	     /* another sampler holds the lease */
	EVRING_WRITE_FAILED, /* process_vm_writev failed */
	EVRING_READ_FAILED,  /* a ring or the slot could not be read */
	EVRING_STATUS_COUNT
};
const char *evring__status_str(enum evring_status st);

/* Why records were lost. */
enum evring_loss {
	EVLOSS_LAPPED = 0, /* the ring wrapped past them before we read (the sampler was late) */
	EVLOSS_TORN,	   /* overwritten while we copied them, or never completed */
	EVLOSS_COUNT
};

struct evring {
	pid_t pid;
	struct mem *mem;
	struct xp_tracer_region region;
	uint64_t next[XP_TRACER_MAX_RINGS]; /* the next index to read, per ring */
	int32_t tid[XP_TRACER_MAX_RINGS];   /* the ring's thread, as the VM numbers it */
	uint64_t lease;
	uint64_t session; /* the agent's session counter when we asked: ours is a later one */
	uint64_t read, lost[EVLOSS_COUNT];
	struct xp_ev *buf; /* ring_records records */
	int leased;
};

/* Read and validate the region of t's agent. */
enum evring_status evring__open(const struct target *t, struct evring *r);
void evring__close(struct evring *r);

/* Lease the tracer: want (XP_EVF_*), one process in sample_n (0, 1: all). Busy when another
 * owner's lease is live. The rings are read from their heads at this moment on. */
enum evring_status evring__start(struct evring *r, uint64_t want, uint64_t sample_n);
/* Bump the lease counter (at least every lease_ns / 4). */
enum evring_status evring__renew(struct evring *r);
/* Withdraw the request (want 0): the agent clears the flags at its next look. */
enum evring_status evring__stop(struct evring *r);
/* A copy of the control slot. */
enum evring_status evring__ctl(const struct evring *r, struct xp_tracer_ctl *out);

/* Copy every ring's new records; fn sees each whole one, in ring order (ring index given). */
typedef void (*evring_fn)(const struct xp_ev *ev, unsigned ring, void *ctx);
enum evring_status evring__drain(struct evring *r, evring_fn fn, void *ctx);

/* The checks, for unit tests: the region as published. */
enum evring_status evring__check_region(const struct xp_tracer_region *g);

#endif /* XP_EVRING_H */
