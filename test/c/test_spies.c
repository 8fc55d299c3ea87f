/* Unit tests for the spy checks that guard the sampler's only write into a VM (spies.c): a spy
 * region read from a VM that is corrupt or foreign in any field is refused; a tid is a spy only
 * when the thread is named xp_spy_N for its index; a lease is ours only while the slot's tid,
 * generation, target and owner are what we wrote. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "spies.h"

#define SLOTS 0x7f0000001000ull

static void good_region(struct xp_spy_region *r)
{
	unsigned i;

	memset(r, 0, sizeof(*r));
	r->version = XP_SPY_REGION_VERSION;
	r->nslots = 2;
	r->slots_addr = SLOTS;
	r->slot_size = sizeof(struct xp_spy_slot);
	r->lease_ns = XP_SPY_LEASE_NS;
	for (i = 0; i < r->nslots; i++) {
		r->desc[i].tid = 1000 + (int32_t)i;
		r->desc[i].index = i;
		r->desc[i].slot = SLOTS + i * sizeof(struct xp_spy_slot);
	}
}

static void regions(void)
{
	struct xp_spy_region r;

	good_region(&r);
	CHECK_INT("good region", SPIES_OK, spies__check_region(&r));
	r.version = 0;
	CHECK_INT("version 0: no spies", SPIES_NONE, spies__check_region(&r));
	good_region(&r);
	r.nslots = 0;
	CHECK_INT("no slots", SPIES_NONE, spies__check_region(&r));
	good_region(&r);
	r.version = 2;
	CHECK_INT("unknown version", SPIES_BAD_VERSION, spies__check_region(&r));
	good_region(&r);
	r.nslots = XP_SPY_MAX + 1;
	CHECK_INT("too many slots", SPIES_BAD_REGION, spies__check_region(&r));
	good_region(&r);
	r.slot_size = 64;
	CHECK_INT("foreign slot size", SPIES_BAD_REGION, spies__check_region(&r));
	good_region(&r);
	r.slots_addr = 0;
	CHECK_INT("null slots", SPIES_BAD_REGION, spies__check_region(&r));
	good_region(&r);
	r.slots_addr += 8;
	r.desc[0].slot += 8;
	r.desc[1].slot += 8;
	CHECK_INT("misaligned slots", SPIES_BAD_REGION, spies__check_region(&r));
	good_region(&r);
	r.slots_addr = 0xffff800000000000ull;
	CHECK_INT("kernel-half slots", SPIES_BAD_REGION, spies__check_region(&r));
	good_region(&r);
	r.desc[1].slot += 128;
	CHECK_INT("slot address outside the array", SPIES_BAD_REGION, spies__check_region(&r));
	good_region(&r);
	r.desc[1].slot -= 8;
	CHECK_INT("slot address inside another slot", SPIES_BAD_REGION, spies__check_region(&r));
	good_region(&r);
	r.desc[1].index = 0;
	CHECK_INT("wrong index", SPIES_BAD_REGION, spies__check_region(&r));
	good_region(&r);
	r.desc[0].tid = 0;
	CHECK_INT("no tid", SPIES_BAD_REGION, spies__check_region(&r));
	good_region(&r);
	r.desc[1].tid = -5;
	CHECK_INT("negative tid", SPIES_BAD_REGION, spies__check_region(&r));
}

struct named {
	pthread_barrier_t ready, done;
	pid_t tid;
};

static void *named_thread(void *arg)
{
	struct named *n = arg;

	prctl(PR_SET_NAME, "xp_spy_2", 0, 0, 0);
	n->tid = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&n->ready);
	pthread_barrier_wait(&n->done);
	return NULL;
}

static void tids(void)
{
	struct named n = {0};
	pthread_t t;

	pthread_barrier_init(&n.ready, NULL, 2);
	pthread_barrier_init(&n.done, NULL, 2);
	if (pthread_create(&t, NULL, named_thread, &n)) {
		CHECK("thread created", false);
		return;
	}
	pthread_barrier_wait(&n.ready);
	CHECK("a thread named xp_spy_2 is spy index 1", spies__tid_is_spy(getpid(), n.tid, 1));
	CHECK("but not spy index 0", !spies__tid_is_spy(getpid(), n.tid, 0));
	CHECK("the main thread is no spy", !spies__tid_is_spy(getpid(), getpid(), 0));
	CHECK("a thread of another process is no spy", !spies__tid_is_spy(1, n.tid, 1));
	CHECK("no such thread", !spies__tid_is_spy(getpid(), 0x7ffffff0, 1));
	pthread_barrier_wait(&n.done);
	pthread_join(t, NULL);
}

static void good_lease(struct spies_view *v, struct spy_lease *l)
{
	memset(v, 0, sizeof(*v));
	good_region(&v->region);
	memset(l, 0, sizeof(*l));
	l->pid = 4242;
	l->index = 1;
	l->tid = v->region.desc[1].tid;
	l->slot = v->region.desc[1].slot;
	l->target = 0x55550000abc0ull;
	l->generation = 3;
	v->slot_ok[1] = true;
	v->slot[1].tid = l->tid;
	v->slot[1].state = XP_SPY_RETARGETED;
	v->slot[1].target = l->target;
	v->slot[1].owner = (uint64_t)l->pid;
	v->slot[1].generation = l->generation;
}

static void leases(void)
{
	struct spies_view *v = malloc(sizeof(*v));
	struct spy_lease l;

	if (!v)
		return;
	good_lease(v, &l);
	CHECK_INT("our lease", SPIES_OK, spy_lease__still_ours(v, &l));
	v->slot[1].generation++;
	CHECK_INT("revoked by the agent", SPIES_LEASE_LOST, spy_lease__still_ours(v, &l));
	good_lease(v, &l);
	v->slot[1].owner = 77;
	CHECK_INT("taken by another sampler", SPIES_LEASE_LOST, spy_lease__still_ours(v, &l));
	good_lease(v, &l);
	v->slot[1].target = 0;
	CHECK_INT("parked", SPIES_LEASE_LOST, spy_lease__still_ours(v, &l));
	good_lease(v, &l);
	v->region.desc[1].tid = 999;
	CHECK_INT("another thread in the slot", SPIES_LEASE_LOST, spy_lease__still_ours(v, &l));
	good_lease(v, &l);
	v->slot_ok[1] = false;
	CHECK_INT("slot inconsistent", SPIES_LEASE_LOST, spy_lease__still_ours(v, &l));
	good_lease(v, &l);
	v->region.nslots = 1;
	CHECK_INT("slot no longer published", SPIES_LEASE_LOST, spy_lease__still_ours(v, &l));
	free(v);
}

int main(void)
{
	regions();
	tids();
	leases();
	return check_done();
}
