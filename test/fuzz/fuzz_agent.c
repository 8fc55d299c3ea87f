/* Fuzz target: the agent block as the sampler reads it from the VM (agent.c agent__validate).
 * The input is the block's bytes (a short read leaves the rest zero, len says how much was
 * read); a block that validates is used as target.c uses it: its counted arrays, its strings
 * and the layout row its version names. */
#include <stdint.h>
#include <string.h>

#include "agent.h"
#include "layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xp_agent_block b;
	size_t len = size < sizeof(b) ? size : sizeof(b);
	volatile uint64_t sink = 0;

	memset(&b, 0, sizeof(b));
	memcpy(&b, data, len);
	if (agent__validate(&b, len) != AGENT_OK)
		return 0;
	agent__status_str(AGENT_OK);
	for (uint32_t i = 0; i < b.n_offsets; i++)
		sink += (uint64_t)b.offsets[i].value + b.offsets[i].flags;
	for (uint32_t i = 0; i < b.n_addrs; i++)
		sink += b.addrs[i].value + b.addrs[i].flags;
	for (uint32_t i = 0; i < b.n_sched; i++)
		sink += b.sched[i].esdp;
	sink += (strlen(b.otp_release) + strlen(b.erts_version) + strlen(b.system_version) +
		 strlen(b.probe_atom_text));
	layout__find(b.erts_version, b.flavor, "x86_64");
	(void)sink;
	return 0;
}
