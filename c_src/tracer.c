/* The event tracer's rings, control slot and control thread (see tracer.h). The rings and the
 * slot are one anonymous mapping of fixed size, made at load: the agent's memory for events
 * never grows. The xp_tracer thread blocks every signal and polls the slot every 100 ms: a
 * leased request (want != 0, lease counter moving) starts a session, a request withdrawn or a
 * lease that ran out stops it, and so does a request from another sampler (owner), which then
 * gets a session of its own. Start and stop are messages to the registered process
 * extrospect_events, which sets or clears the trace flags and reports back (tracer__report).
 * Each OS thread that emits takes a ring of its own on its first event (a thread-local index),
 * the last ring is shared by threads beyond the others. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tracer.h"

#define POLL_NS		100000000ull
#define RING_RECORDS	32768u		    /* 1 MiB a ring */
#define RINGS_MAX_BYTES (64ull << 20)	    /* all rings together */
#define CTL_BYTES	4096u		    /* the control slot's page, before the rings */
#define EVENTS_PROCESS	"extrospect_events" /* extrospect_events.erl */

struct tracer {
	char *mem; /* CTL_BYTES of control, then the rings */
	size_t mem_bytes;
	struct xp_tracer_ctl *ctl;
	unsigned nrings;
	uint32_t records;
	size_t ring_bytes;
	uint32_t next_ring; /* rings handed out to threads */
	uint64_t epoch;	    /* tells this tracer's thread-local ring indexes from another's */
	uint64_t live;	    /* the session events are recorded for; 0 none */
	uint64_t sample_n;
	uint32_t stop; /* futex word: 1 asks the thread to exit */
	pthread_t thread;
	int joinable;
	int32_t tid;
	uint64_t seen_lease;
	uint64_t session_owner; /* the owner the running session was started for */
};

/* A thread's ring in the tracer of that epoch (an upgraded library has its own tracer). */
static __thread struct {
	uint64_t epoch;
	int32_t ring;
} tls_ring;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct xp_ev_ring *ring_at(const struct tracer *t, unsigned i)
{
	return (struct xp_ev_ring *)(t->mem + CTL_BYTES + (size_t)i * t->ring_bytes);
}

static struct xp_ev_ring *ring_of_thread(struct tracer *t)
{
	struct xp_ev_ring *r;
	unsigned i;

	if (tls_ring.epoch == t->epoch)
		return ring_at(t, (unsigned)tls_ring.ring);
	i = __atomic_fetch_add(&t->next_ring, 1, __ATOMIC_RELAXED);
	if (i >= t->nrings - 1)
		i = t->nrings - 1;
	r = ring_at(t, i);
	if (i < t->nrings - 1)
		__atomic_store_n(&r->tid, (int32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	else if (!__atomic_load_n(&r->tid, __ATOMIC_RELAXED))
		__atomic_store_n(&r->tid, (int32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	tls_ring.epoch = t->epoch;
	tls_ring.ring = (int32_t)i;
	return r;
}

void tracer__emit(struct tracer *t, uint16_t kind, uint16_t arg, uint64_t pid, uint64_t extra)
{
	struct xp_ev_ring *r = ring_of_thread(t);
	uint64_t idx = __atomic_fetch_add(&r->head, 1, __ATOMIC_RELAXED);
	struct xp_ev *e = (struct xp_ev *)(r + 1) + (idx & (t->records - 1));

	__atomic_store_n(&e->seq, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	e->ts_ns = now_ns();
	e->pid = pid;
	e->extra = extra;
	e->kind = kind;
	e->arg = arg;
	__atomic_store_n(&e->seq, (uint32_t)(idx + 1), __ATOMIC_RELEASE);
}

int tracer__live(const struct tracer *t, uint64_t session)
{
	return t && session && __atomic_load_n(&t->live, __ATOMIC_ACQUIRE) == session;
}

int tracer__sampled(const struct tracer *t, uint64_t pid)
{
	uint64_t n = __atomic_load_n(&t->sample_n, __ATOMIC_RELAXED), h = pid >> 4;

	if (n <= 1)
		return 1;
	/* splitmix64's finaliser: a pid's data repeats its number in two fields (B/erl_ptab.h),
	 * which a plain multiplicative hash keeps in step. */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return h % n == 0;
}

static void send_request(const char *what, uint64_t session, uint64_t flags, uint64_t n,
			 struct tracer *t)
{
	ErlNifEnv *env = enif_alloc_env();
	ErlNifPid pid;
	ERL_NIF_TERM msg;

	if (!env)
		return;
	if (!enif_whereis_pid(NULL, enif_make_atom(env, EVENTS_PROCESS), &pid)) {
		if (strcmp(what, "start") == 0)
			tracer__report(t, session, XP_TRACER_REFUSED, XP_TRACER_WHY_NO_PROCESS);
		enif_free_env(env);
		return;
	}
	msg = enif_make_tuple5(env, enif_make_atom(env, "xp_events"), enif_make_atom(env, what),
			       enif_make_uint64(env, session), enif_make_uint64(env, flags),
			       enif_make_uint64(env, n));
	enif_send(NULL, &pid, env, msg);
	enif_free_env(env);
}

/* One look at the slot: start, stop or nothing. */
static void tracer_poll(struct tracer *t)
{
	struct xp_tracer_ctl *c = t->ctl;
	uint64_t want = __atomic_load_n(&c->want, __ATOMIC_ACQUIRE) & 0xffu;
	uint64_t lease = __atomic_load_n(&c->lease, __ATOMIC_ACQUIRE), now = now_ns();
	uint32_t st = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
	uint64_t owner;
	int active;

	if (want && lease != t->seen_lease) {
		t->seen_lease = lease;
		__atomic_store_n(&c->lease_expiry_ns, now + XP_TRACER_LEASE_NS, __ATOMIC_RELEASE);
	}
	active = want && now < __atomic_load_n(&c->lease_expiry_ns, __ATOMIC_ACQUIRE);
	/* A new sampler gets a session of its own: the one running is stopped first. */
	owner = __atomic_load_n(&c->owner, __ATOMIC_ACQUIRE);
	if (active && st != XP_TRACER_OFF && owner != t->session_owner)
		active = 0;
	if (active && st == XP_TRACER_OFF) {
		uint64_t s = __atomic_add_fetch(&c->session, 1, __ATOMIC_ACQ_REL);
		uint64_t n = __atomic_load_n(&c->sample_n, __ATOMIC_ACQUIRE);

		__atomic_store_n(&t->sample_n, n, __ATOMIC_RELEASE);
		c->sample_on = n;
		c->reason = XP_TRACER_WHY_NONE;
		__atomic_store_n(&c->state, XP_TRACER_STARTING, __ATOMIC_RELEASE);
		__atomic_store_n(&t->live, s, __ATOMIC_RELEASE);
		t->session_owner = owner;
		send_request("start", s, want, n, t);
	} else if (!active && (st == XP_TRACER_STARTING || st == XP_TRACER_ON)) {
		__atomic_store_n(&t->live, 0, __ATOMIC_RELEASE);
		c->reason = want ? XP_TRACER_WHY_LEASE : XP_TRACER_WHY_NONE;
		__atomic_store_n(&c->state, XP_TRACER_STOPPING, __ATOMIC_RELEASE);
		send_request("stop", c->session, 0, 0, t);
	} else if (!want && st == XP_TRACER_REFUSED) {
		__atomic_store_n(&c->state, XP_TRACER_OFF, __ATOMIC_RELEASE);
	}
}

static void *tracer_main(void *arg)
{
	struct tracer *t = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	prctl(PR_SET_NAME, "xp_tracer", 0, 0, 0);
	__atomic_store_n(&t->tid, (int32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		struct timespec ts = {0, (long)POLL_NS};

		tracer_poll(t);
		syscall(SYS_futex, &t->stop, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	}
	return NULL;
}

static int tracer_map(struct tracer *t, unsigned n_threads)
{
	t->nrings = n_threads + 1 < XP_TRACER_MAX_RINGS ? n_threads + 1 : XP_TRACER_MAX_RINGS;
	t->records = RING_RECORDS;
	while ((uint64_t)t->records * sizeof(struct xp_ev) * t->nrings > RINGS_MAX_BYTES)
		t->records /= 2;
	t->ring_bytes = sizeof(struct xp_ev_ring) + (size_t)t->records * sizeof(struct xp_ev);
	t->mem_bytes = CTL_BYTES + t->ring_bytes * t->nrings;
	t->mem =
	    mmap(NULL, t->mem_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->mem == MAP_FAILED)
		return -ENOMEM;
	t->ctl = (struct xp_tracer_ctl *)t->mem;
	ring_at(t, t->nrings - 1)->shared = 1;
	return 0;
}

int tracer__new(unsigned n_threads, struct tracer **out)
{
	struct tracer *t = calloc(1, sizeof(*t));
	sigset_t all, old;
	int err;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	if (tracer_map(t, n_threads)) {
		free(t);
		return -ENOMEM;
	}
	t->epoch = now_ns(); /* distinct for every tracer of the process's life */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&t->thread, NULL, tracer_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		munmap(t->mem, t->mem_bytes);
		free(t);
		return -EAGAIN;
	}
	t->joinable = 1;
	*out = t;
	return 0;
}

void tracer__free(struct tracer *t)
{
	if (!t)
		return;
	__atomic_store_n(&t->live, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &t->stop, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	if (t->joinable)
		pthread_join(t->thread, NULL);
	munmap(t->mem, t->mem_bytes);
	free(t);
}

void tracer__region(const struct tracer *t, struct xp_tracer_region *r)
{
	memset(r, 0, sizeof(*r));
	if (!t)
		return;
	r->version = XP_TRACER_REGION_VERSION;
	r->nrings = t->nrings;
	r->rings_addr = (uint64_t)(uintptr_t)(t->mem + CTL_BYTES);
	r->ring_bytes = t->ring_bytes;
	r->ring_records = t->records;
	r->record_size = sizeof(struct xp_ev);
	r->ctl_addr = (uint64_t)(uintptr_t)t->ctl;
	r->ctl_size = sizeof(struct xp_tracer_ctl);
	r->watcher_tid = __atomic_load_n(&t->tid, __ATOMIC_ACQUIRE);
	r->lease_ns = XP_TRACER_LEASE_NS;
}

void tracer__report(struct tracer *t, uint64_t session, uint32_t state, uint32_t why)
{
	struct xp_tracer_ctl *c = t->ctl;

	if (__atomic_load_n(&c->session, __ATOMIC_ACQUIRE) != session)
		return;
	if (state == XP_TRACER_ON) {
		if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) != XP_TRACER_STARTING)
			return; /* stopped meanwhile: the stop request follows */
		c->started_ns = now_ns();
		c->flags_on = c->want;
	} else {
		__atomic_store_n(&t->live, 0, __ATOMIC_RELEASE);
		c->stopped_ns = now_ns();
		c->flags_on = 0;
		if (why)
			c->reason = why;
	}
	__atomic_store_n(&c->state, state, __ATOMIC_RELEASE);
}

void tracer__set_caps(struct tracer *t, uint64_t caps)
{
	__atomic_store_n(&t->ctl->caps, caps, __ATOMIC_RELEASE);
}

void tracer__ctl(const struct tracer *t, struct xp_tracer_ctl *out)
{
	memcpy(out, t->ctl, sizeof(*out));
}
