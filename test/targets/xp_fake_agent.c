/* The agent library of the hostile fake VM (xp_fake_beam.c, with XP_FAKE_AGENT=PATH): nothing but
 * the exported block, named extrospect_nif_fake.so so that the sampler takes it for the agent's
 * NIF. The fake VM fills the block itself. */
#include "extrospect_abi.h"

__attribute__((visibility("default"))) struct xp_agent_block extrospect_agent_block;
