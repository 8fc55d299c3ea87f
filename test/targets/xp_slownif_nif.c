/* A deliberately bad NIF for `extrospect sched` tests (test/targets/xp_slownif.erl): burn/1 spins
 * on a normal scheduler for the given number of milliseconds of CPU time (what a NIF must never
 * do: it holds the scheduler far past 1 ms), quick/1 spins for microseconds of CPU time, and
 * dirty_burn/1 is burn/1 on a dirty CPU scheduler. Built against the oldest erl_nif.h in use (host
 * OTP 25): a lower NIF version loads on 27 and 29 too. Does not own: the Erlang side or anything
 * the sampler checks. */

#include <stdint.h>
#include <time.h>

#include <erl_nif.h>

/* Turns of xp_spin's loop a millisecond of this thread's CPU time, measured when the library
 * loads (xp_load). */
static uint64_t turns_per_ms = 1;

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Spins TURNS turns in this function's own code: a fixed amount of CPU work, not of wall time, so
 * a thread the OS preempts mid-call still burns its CPU time and a CPU-clock sampler takes about
 * as many samples of a call however busy the machine (with a wall clock, a loaded CI machine left
 * a 5 ms call one sample or none; a core shared with another vCPU still runs the turns somewhat
 * slower). No clock is read while spinning: samples land here, not in the kernel or the vDSO.
 * noinline: the frame must be named xp_spin in every build. */
static __attribute__((noinline)) uint64_t xp_spin(uint64_t turns)
{
	uint64_t acc = 1;
	volatile uint64_t sink;

	while (turns) {
		uint64_t n = turns < 4096 ? turns : 4096;

		turns -= n;
		for (uint64_t i = 0; i < n; i++)
			acc = acc * 6364136223846793005ull + 1442695040888963407ull;
		sink = acc;
	}
	(void)sink;
	return acc;
}

/* The calibration: the least thread CPU time of five runs of 2^18 turns (about 0.3 ms each here),
 * the CPU clock unaffected by preemption. */
static int xp_load(ErlNifEnv *env, void **priv, ERL_NIF_TERM info)
{
	const uint64_t probe = 1u << 18;
	uint64_t best = UINT64_MAX;

	(void)env, (void)priv, (void)info;
	for (int i = 0; i < 5; i++) {
		uint64_t t0 = cpu_ns(), t;

		xp_spin(probe);
		t = cpu_ns() - t0;
		if (t && t < best)
			best = t;
	}
	turns_per_ms = best == UINT64_MAX ? probe : probe * 1000000ull / best;
	if (!turns_per_ms)
		turns_per_ms = 1;
	return 0;
}

/* Reductions are charged for the time spent (a whole timeslice per millisecond), so the calling
 * process is scheduled out afterwards like any other: without this, a process calling a slow NIF
 * in a loop would keep its scheduler for seconds and stall thread progress. */
static inline __attribute__((always_inline)) ERL_NIF_TERM
spin_for(ErlNifEnv *env, const ERL_NIF_TERM argv[], uint64_t unit_ns)
{
	unsigned long n;
	uint64_t ns, r;
	int pct;

	if (!enif_get_ulong(env, argv[0], &n) || n > 1000)
		return enif_make_badarg(env);
	ns = n * unit_ns;
	r = xp_spin(ns * turns_per_ms / 1000000) & 0xffff;
	pct = ns >= 1000000 ? 100 : (int)(ns / 10000) + 1;
	enif_consume_timeslice(env, pct);
	return enif_make_uint64(env, r);
}

static ERL_NIF_TERM xp_burn(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	(void)argc;
	return spin_for(env, argv, 1000000);
}

static ERL_NIF_TERM xp_quick(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	(void)argc;
	return spin_for(env, argv, 1000);
}

/* A unit 1 ns short of burn's: otherwise the compiler may fold the two identical functions into
 * one, and the dirty NIF's frame would be named xp_burn. */
static ERL_NIF_TERM xp_dirty_burn(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	(void)argc;
	return spin_for(env, argv, 999999);
}

static ErlNifFunc funcs[] = {
    {"burn", 1, xp_burn, 0},
    {"quick", 1, xp_quick, 0},
    {"dirty_burn", 1, xp_dirty_burn, ERL_NIF_DIRTY_JOB_CPU_BOUND},
};

ERL_NIF_INIT(xp_slownif, funcs, xp_load, NULL, NULL, NULL)
