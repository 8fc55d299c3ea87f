/* The agent block and its publication protocol. See block.h. Outside readers use the seqlock:
 * accept a copy only if magic == XP_AGENT_MAGIC and seq was even and unchanged across the copy.
 * The block must be a global (the sampler finds it by its dynamic symbol); the only other
 * globals guard it. */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "block.h"

__attribute__((visibility("default"), used)) struct xp_agent_block extrospect_agent_block;

/* block_lock serialises writers from every loaded instance of this library (load, upgrade and
 * unload of different module versions overlap; in-VM readers take it too). newest_instance
 * lets only the most recently loaded instance publish, so a calibration that finishes in an
 * old instance cannot overwrite its successor's block. */
static pthread_mutex_t block_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t newest_instance;

uint64_t block__publish(const struct xp_agent_block *draft, uint64_t instance)
{
	struct xp_agent_block *b = &extrospect_agent_block;
	const size_t body = offsetof(struct xp_agent_block, generation);
	uint64_t seq;

	pthread_mutex_lock(&block_lock);
	if (instance < newest_instance) {
		pthread_mutex_unlock(&block_lock);
		return 0;
	}
	newest_instance = instance;
	__atomic_store_n(&b->magic, 0, __ATOMIC_RELEASE);
	seq = __atomic_load_n(&b->seq, __ATOMIC_RELAXED);
	seq = (seq | 1) + 2; /* odd, and never a value a reader saw before */
	__atomic_store_n(&b->seq, seq, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	b->abi_version = draft->abi_version;
	b->size = draft->size;
	memcpy((char *)b + body, (const char *)draft + body, sizeof(*b) - body);
	__atomic_store_n(&b->seq, seq + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&b->magic, XP_AGENT_MAGIC, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&block_lock);
	return draft->generation;
}

int block__retire(uint64_t generation)
{
	struct xp_agent_block *b = &extrospect_agent_block;
	int retired = 0;

	pthread_mutex_lock(&block_lock);
	if (__atomic_load_n(&b->magic, __ATOMIC_ACQUIRE) == XP_AGENT_MAGIC &&
	    b->generation == generation) {
		__atomic_store_n(&b->magic, 0, __ATOMIC_RELEASE);
		/* A reader that copied across the retirement sees seq move and retries. */
		__atomic_store_n(&b->seq, b->seq + 2, __ATOMIC_RELEASE);
		retired = 1;
	}
	pthread_mutex_unlock(&block_lock);
	return retired;
}

void block__read(struct xp_agent_block *out)
{
	pthread_mutex_lock(&block_lock);
	memcpy(out, &extrospect_agent_block, sizeof(*out));
	pthread_mutex_unlock(&block_lock);
}

uint64_t block__address(void)
{
	return (uint64_t)(uintptr_t)&extrospect_agent_block;
}
