/* The published agent block: the one global the NIF exports (XP_AGENT_SYMBOL), and the protocol
 * that keeps a concurrent outside reader safe. Does not own: what goes into it (compose.c). */
#ifndef XP_BLOCK_H
#define XP_BLOCK_H

#include <stdint.h>

#include "extrospect_abi.h"

/* Copy draft into the block: clear magic, seq odd, fields, seq even, magic last. The draft's
 * magic and seq are ignored. instance: the publishing library instance's load generation; an
 * instance older than the newest one that published is refused. Returns the generation
 * published (draft->generation), or 0 when refused. */
uint64_t block__publish(const struct xp_agent_block *draft, uint64_t instance);

/* Clear the magic if the block still holds the publication `generation` (an instance being
 * unloaded must not retire its successor's block). Returns 1 when it retired the block. */
int block__retire(uint64_t generation);

/* A consistent copy for in-VM readers (info/0). */
void block__read(struct xp_agent_block *out);

uint64_t block__address(void);

#endif /* XP_BLOCK_H */
