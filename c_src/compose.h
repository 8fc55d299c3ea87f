/* Building the block to publish from the agent's state (compose.c). */
#ifndef XP_COMPOSE_H
#define XP_COMPOSE_H

#include "agent.h"

/* Fill *b (magic and seq left 0: block__publish owns them). calibrated: whether a calibration
 * ran since load; before that every value is the table's, unverified. Caller holds agent->lock. */
void compose__block(const struct agent *a, struct xp_agent_block *b, uint64_t generation,
		    int calibrated);

#endif /* XP_COMPOSE_H */
