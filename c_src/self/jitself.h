/* The GDB JIT interface seen from inside (otp-internals.md §3.2): find __jit_debug_descriptor by a
 * structural scan of .data/.bss, walk its entry list (27+ frees entries on purge, so every read
 * may fail), read the emulator entry and look up named function ranges. Does not own: the walk
 * and the symfile format (the vm library's jitmap.c, shared with the sampler). */
#ifndef XP_JITSELF_H
#define XP_JITSELF_H

#include <stdint.h>

#include "selfelf.h"

/* A function range to look up: module "extrospect_agent", range "extrospect_agent:probe_loop/0". */
struct jitself_want {
	const char *module;
	const char *range;
	uint64_t start, end;	     /* [start, end), 0 when not found */
	uint64_t mod_base, mod_size; /* its module entry's code: base, code_size */
};

struct jitself_result {
	unsigned entries; /* entries walked */
	unsigned modules; /* module entries */
	int emulator_found;
	int32_t frame_layout; /* from the emulator entry, -1 when none */
	uint64_t normal_exit; /* from the emulator entry */
	int module_found;     /* the must_module of the scan was in the list */
};

/* Walk the list of the descriptor at desc, filling wants (newest entry first) and res.
 * must_module may be NULL. 0, -EFAULT (unreadable head), -EPROTO (not a descriptor, or the
 * chain is inconsistent), -EAGAIN (the list changed under us; retry). */
int jitself__walk(uint64_t desc, const char *must_module, struct jitself_want *want, unsigned nwant,
		  struct jitself_result *res);

/* Scan for the descriptor: {version 1, action 0..2, first != 0} whose chain walks to the end with
 * consistent prev links, holds the emulator entry and must_module. 0 with *addr, -ENOENT,
 * -EEXIST (ambiguous). */
int jitself__scan(const struct selfelf *se, const char *must_module, uint64_t *addr,
		  unsigned *candidates);

#endif /* XP_JITSELF_H */
