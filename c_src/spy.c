/* Spy threads (see spy.h and extrospect_abi.h). Each spy blocks every signal, lowers its own
 * priority, and loops: read its slot; parked (target 0) it waits 100 ms on the set's stop word;
 * leased, it loads target into rsp, waits interval_ns on the stop word in a raw futex syscall
 * (arguments in registers, the timeout in its slot) and restores its rsp. Nothing touches the
 * memory at target: only the kernel's perf copy reads it. A lease not renewed for
 * XP_SPY_LEASE_NS is revoked here: the spy parks itself and bumps its generation. Stopping sets
 * the stop word, wakes every waiter and joins: a spy leaves a wait at once. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "spy.h"

#define SPY_PARK_NS	  100000000ull /* a parked spy looks at its slot this often */
#define SPY_START_WAIT_NS 1000000000ull
#define SPY_STACK_BYTES	  (64 * 1024)

struct spy {
	pthread_t thread;
	int joinable;
	unsigned index;
	struct xp_spy_slot *slot;
	const uint32_t *stop;
	enum spy_policy policy;
	uint64_t seen_lease; /* the lease counter at the last renewal */
	uint64_t seen_target;
};

struct spies {
	unsigned n;
	enum spy_policy policy;
	uint32_t stop; /* futex word: 1 asks every spy to exit */
	struct xp_spy_slot *slots;
	struct spy spy[XP_SPY_MAX];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void futex_wait_ns(const uint32_t *word, uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};

	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
}

/* The only code that runs with rsp at target: one futex wait on *stop (expected 0) for the
 * timespec at ts. rcx and r11 are clobbered by syscall; r12 holds our own rsp meanwhile. */
static void spy_wait_at(uint64_t target, const uint32_t *stop, const uint64_t *ts)
{
	register long rax __asm__("rax") = SYS_futex;
	register const uint64_t *r10 __asm__("r10") = ts;
	register long r8 __asm__("r8") = 0;
	register long r9 __asm__("r9") = 0;

	__asm__ volatile("mov %%rsp, %%r12\n\t"
			 "mov %[target], %%rsp\n\t"
			 "syscall\n\t"
			 "mov %%r12, %%rsp\n\t"
			 : "+r"(rax)
			 : [target] "r"(target), "D"(stop), "S"((long)FUTEX_WAIT_PRIVATE), "d"(0L),
			   "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "r12", "memory");
}

static void spy_set_state(struct spy *s, enum xp_spy_state st)
{
	__atomic_store_n(&s->slot->state, (uint32_t)st, __ATOMIC_RELEASE);
}

/* Park: drop the target (only if it is still the one we saw) and forget the lease. */
static void spy_revoke(struct spy *s, uint64_t target)
{
	struct xp_spy_slot *sl = s->slot;

	__atomic_compare_exchange_n(&sl->target, &target, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	__atomic_add_fetch(&sl->generation, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&sl->lease_expiry_ns, 0, __ATOMIC_RELEASE);
	s->seen_target = 0;
}

/* Is the lease on target live? A new target or a changed counter renews it. */
static int spy_leased(struct spy *s, uint64_t target)
{
	struct xp_spy_slot *sl = s->slot;
	uint64_t lease = __atomic_load_n(&sl->lease, __ATOMIC_ACQUIRE), now = now_ns();

	if (target != s->seen_target || lease != s->seen_lease) {
		s->seen_target = target;
		s->seen_lease = lease;
		__atomic_store_n(&sl->lease_expiry_ns, now + XP_SPY_LEASE_NS, __ATOMIC_RELEASE);
		return 1;
	}
	if (now < __atomic_load_n(&sl->lease_expiry_ns, __ATOMIC_ACQUIRE))
		return 1;
	spy_revoke(s, target);
	return 0;
}

static void spy_set_interval(struct spy *s)
{
	uint64_t ns = __atomic_load_n(&s->slot->interval_ns, __ATOMIC_ACQUIRE);

	if (ns < XP_SPY_MIN_INTERVAL)
		ns = XP_SPY_MIN_INTERVAL;
	if (ns > XP_SPY_MAX_INTERVAL)
		ns = XP_SPY_MAX_INTERVAL;
	s->slot->sleep_ts[0] = ns / 1000000000ull;
	s->slot->sleep_ts[1] = ns % 1000000000ull;
}

static void spy_lower_priority(enum spy_policy policy)
{
	struct sched_param sp = {0};

	if (policy == SPY_POLICY_NORMAL)
		return;
	if (policy == SPY_POLICY_OTHER || sched_setscheduler(0, SCHED_IDLE, &sp))
		setpriority(PRIO_PROCESS, 0, 19); /* per thread on Linux */
}

static void *spy_main(void *arg)
{
	struct spy *s = arg;
	struct xp_spy_slot *sl = s->slot;
	char name[16];
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	snprintf(name, sizeof(name), "xp_spy_%u", s->index + 1);
	prctl(PR_SET_NAME, name, 0, 0, 0);
	/* Wake on time: the sampler reads a late snapshot as busy cores (credit, cmd/watch/). */
	prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0);
	spy_lower_priority(s->policy);
	spy_set_state(s, XP_SPY_PARKED);
	__atomic_store_n(&sl->tid, (int32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!__atomic_load_n(s->stop, __ATOMIC_ACQUIRE)) {
		uint64_t target = __atomic_load_n(&sl->target, __ATOMIC_ACQUIRE);

		if (!target || !spy_leased(s, target)) {
			if (s->seen_target)
				spy_revoke(s, s->seen_target); /* the sampler parked it */
			spy_set_state(s, XP_SPY_PARKED);
			futex_wait_ns(s->stop, SPY_PARK_NS);
			continue;
		}
		spy_set_state(s, XP_SPY_RETARGETED);
		spy_set_interval(s);
		__atomic_add_fetch(&sl->loops, 1, __ATOMIC_RELAXED);
		spy_wait_at(target, s->stop, sl->sleep_ts);
	}
	spy_set_state(s, XP_SPY_STOPPED);
	return NULL;
}

/* Wait for every started spy to publish its tid; 0 or -EAGAIN. */
static int spies_wait_started(struct spies *set)
{
	uint64_t deadline = now_ns() + SPY_START_WAIT_NS;
	unsigned i;

	for (i = 0; i < set->n; i++) {
		while (!__atomic_load_n(&set->slots[i].tid, __ATOMIC_ACQUIRE)) {
			if (now_ns() > deadline)
				return -EAGAIN;
			usleep(200);
		}
	}
	return 0;
}

/* The thread starts with every signal blocked (it inherits the creator's mask, blocked here
 * for the call): no handler ever runs on a spy, not even before spy_main blocks them itself. */
static int spy_create(struct spies *set, unsigned i)
{
	struct spy *s = &set->spy[i];
	sigset_t all, old;
	pthread_attr_t attr;
	int err;

	s->index = i;
	s->slot = &set->slots[i];
	s->stop = &set->stop;
	s->policy = set->policy;
	if (pthread_attr_init(&attr))
		return -ENOMEM;
	pthread_attr_setstacksize(&attr, SPY_STACK_BYTES);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&s->thread, &attr, spy_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err)
		return -EAGAIN;
	s->joinable = 1;
	return 0;
}

int spies__start(unsigned n, enum spy_policy policy, struct spies **out)
{
	struct spies *set;
	unsigned i;
	int err = 0;

	*out = NULL;
	if (n == 0 || n > XP_SPY_MAX)
		return -EINVAL;
	set = calloc(1, sizeof(*set));
	if (!set)
		return -ENOMEM;
	set->policy = policy;
	if (posix_memalign((void **)&set->slots, 64, XP_SPY_MAX * sizeof(*set->slots))) {
		free(set);
		return -ENOMEM;
	}
	memset(set->slots, 0, XP_SPY_MAX * sizeof(*set->slots));
	for (i = 0; i < n && !err; i++) {
		err = spy_create(set, i);
		if (!err)
			set->n = i + 1;
	}
	if (!err)
		err = spies_wait_started(set);
	if (err) {
		spies__stop(set);
		return err;
	}
	*out = set;
	return 0;
}

/* Give a SCHED_IDLE spy a normal share so that it exits promptly on a busy machine (allowed to
 * root or with RLIMIT_NICE; otherwise it exits at its next turn). */
static void spy_hurry(const struct xp_spy_slot *sl)
{
	struct sched_param sp = {0};
	int32_t tid = __atomic_load_n(&sl->tid, __ATOMIC_ACQUIRE);

	if (tid > 0 && __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != XP_SPY_STOPPED)
		sched_setscheduler(tid, SCHED_OTHER, &sp);
}

void spies__stop(struct spies *set)
{
	unsigned i;

	if (!set)
		return;
	__atomic_store_n(&set->stop, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &set->stop, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	for (i = 0; i < set->n; i++)
		spy_hurry(&set->slots[i]);
	for (i = 0; i < set->n; i++) {
		if (set->spy[i].joinable)
			pthread_join(set->spy[i].thread, NULL);
	}
	free(set->slots);
	free(set);
}

void spies__region(const struct spies *set, struct xp_spy_region *r)
{
	unsigned i;

	memset(r, 0, sizeof(*r));
	if (!set)
		return;
	r->version = XP_SPY_REGION_VERSION;
	r->nslots = set->n;
	r->slots_addr = (uint64_t)(uintptr_t)set->slots;
	r->slot_size = sizeof(struct xp_spy_slot);
	r->policy = set->policy;
	r->lease_ns = XP_SPY_LEASE_NS;
	r->min_interval = XP_SPY_MIN_INTERVAL;
	for (i = 0; i < set->n; i++) {
		r->desc[i].tid = __atomic_load_n(&set->slots[i].tid, __ATOMIC_ACQUIRE);
		r->desc[i].index = i;
		r->desc[i].slot = r->slots_addr + (uint64_t)i * sizeof(struct xp_spy_slot);
	}
}

int spies__slot(const struct spies *set, unsigned i, struct xp_spy_slot *out)
{
	if (!set || i >= set->n)
		return -ENOENT;
	memcpy(out, &set->slots[i], sizeof(*out));
	return 0;
}

unsigned spies__count(const struct spies *set)
{
	return set ? set->n : 0;
}
