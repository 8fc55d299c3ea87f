/* Unit tests for agent-block validation (agent.c): every way a block read from a VM can be wrong
 * is refused with its own status, and a good block is accepted with its strings terminated. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "check.h"

static void good_block(struct xp_agent_block *b)
{
	memset(b, 0, sizeof(*b));
	b->magic = XP_AGENT_MAGIC;
	b->abi_version = XP_ABI_VERSION;
	b->size = sizeof(*b);
	b->seq = 4;
	b->n_offsets = XP_OFF_COUNT;
	b->n_addrs = XP_ADDR_COUNT;
	b->n_sched = 14;
	strcpy(b->otp_release, "25");
}

int main(void)
{
	struct xp_agent_block *b = malloc(sizeof(*b));

	if (!b)
		return check_skip("out of memory");
	good_block(b);
	CHECK_INT("good block", AGENT_OK, agent__validate(b, sizeof(*b)));
	good_block(b);
	CHECK_INT("short read", AGENT_SHORT, agent__validate(b, 8));
	CHECK_INT("short copy", AGENT_SHORT, agent__validate(b, sizeof(*b) - 1));
	good_block(b);
	b->size = 64;
	CHECK_INT("short size field", AGENT_SHORT, agent__validate(b, sizeof(*b)));
	good_block(b);
	b->magic = 0;
	CHECK_INT("retired", AGENT_RETIRED, agent__validate(b, sizeof(*b)));
	good_block(b);
	b->magic ^= 1;
	CHECK_INT("bad magic", AGENT_BAD_MAGIC, agent__validate(b, sizeof(*b)));
	good_block(b);
	b->abi_version = XP_ABI_VERSION + 1;
	CHECK_INT("wrong ABI", AGENT_BAD_ABI, agent__validate(b, sizeof(*b)));
	good_block(b);
	b->seq = 5;
	CHECK_INT("odd sequence: being written", AGENT_TORN, agent__validate(b, sizeof(*b)));
	good_block(b);
	b->n_sched = XP_MAX_SCHED + 1;
	CHECK_INT("scheduler count beyond array", AGENT_BAD_COUNTS, agent__validate(b, sizeof(*b)));
	good_block(b);
	b->n_offsets = XP_OFF_SLOTS + 1;
	CHECK_INT("offset count beyond array", AGENT_BAD_COUNTS, agent__validate(b, sizeof(*b)));
	good_block(b);
	b->n_addrs = XP_ADDR_SLOTS + 1;
	CHECK_INT("address count beyond array", AGENT_BAD_COUNTS, agent__validate(b, sizeof(*b)));
	good_block(b);
	b->size = offsetof(struct xp_agent_block, tracer); /* ABI 1.0: no tracer region */
	b->tracer.version = 7;
	CHECK_INT("ABI 1.0 block", AGENT_OK, agent__validate(b, sizeof(*b)));
	CHECK_INT("ABI 1.0 block reads no tracer region", 0, (int)b->tracer.version);
	good_block(b);
	b->size = sizeof(*b) + 4096; /* a newer agent with more fields: still readable */
	CHECK_INT("larger block from a newer minor", AGENT_OK, agent__validate(b, sizeof(*b)));
	good_block(b);
	memset(b->erts_version, 'x', sizeof(b->erts_version));
	memset(b->system_version, 'y', sizeof(b->system_version));
	CHECK_INT("unterminated strings accepted", AGENT_OK, agent__validate(b, sizeof(*b)));
	CHECK_INT("erts_version terminated", sizeof(b->erts_version) - 1, strlen(b->erts_version));
	CHECK_INT("system_version terminated", sizeof(b->system_version) - 1,
		  strlen(b->system_version));
	CHECK_STR("status text", "bad magic", agent__status_str(AGENT_BAD_MAGIC));
	free(b);
	return check_done();
}
