/* Finding and validating the agent block (c_src/include/extrospect_abi.h) from outside: which
 * mapped NIF holds it, where its symbol lands, and whether the copy we read is whole and sane.
 * Does not own: interpreting the offsets (target.c compares them with layout.c). */
#ifndef XP_AGENT_H
#define XP_AGENT_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "extrospect_abi.h"
#include "mem.h"
#include "proc.h"

enum agent_status {
	AGENT_OK = 0,
	AGENT_ABSENT,	  /* no extrospect NIF is mapped */
	AGENT_NO_SYMBOL,  /* a NIF is mapped but has no agent block symbol */
	AGENT_UNREADABLE, /* the block could not be read */
	AGENT_RETIRED,	  /* magic cleared: unloaded or being upgraded */
	AGENT_BAD_MAGIC,
	AGENT_BAD_ABI,	  /* an ABI version this sampler does not speak */
	AGENT_SHORT,	  /* size smaller than the fields this sampler needs */
	AGENT_BAD_COUNTS, /* a count field beyond its array */
	AGENT_TORN,	  /* the agent kept rewriting it while we read */
};

struct agent_info {
	enum agent_status status;
	char path[PATH_MAX]; /* the NIF as the target sees it */
	uint64_t addr;	     /* the block's address in the target */
	struct xp_agent_block block;
};

/* Check a copy of a block. Forces NUL termination of its strings. */
enum agent_status agent__validate(struct xp_agent_block *b, size_t len);
const char *agent__status_str(enum agent_status st);

/* Look for the agent in a target. Always fills out->status; returns 0 unless memory ran out. */
int agent__find(pid_t pid, const struct proc_maps *maps, struct mem *m, struct agent_info *out);

#endif /* XP_AGENT_H */
