/* The spy NIFs: spy_start/3 and spy_stop/1 (dirty I/O: they create and join threads) swap the
 * agent's spy set under its lock, republish the block, then stop the set they swapped out;
 * spy_info/0 copies the slots for extrospect:spies/0. Does not own: the threads (spy.c). */
#include <errno.h>
#include <string.h>

#include "agent.h"
#include "spy.h"

static ERL_NIF_TERM atom(ErlNifEnv *env, const char *name)
{
	return enif_make_atom(env, name);
}

static ERL_NIF_TERM error(ErlNifEnv *env, const char *why)
{
	return enif_make_tuple2(env, atom(env, "error"), atom(env, why));
}

/* Install set (may be NULL) and republish; the replaced set is returned in *old. */
static int swap_publish(struct agent *a, struct spies *set, uint64_t gen, struct spies **old)
{
	int err;

	enif_mutex_lock(a->lock);
	*old = a->spies;
	a->spies = set;
	err = agent__publish(a, gen);
	if (err) { /* a newer library instance owns the block: keep nothing it cannot show */
		a->spies = *old;
		*old = set;
	}
	enif_mutex_unlock(a->lock);
	return err;
}

ERL_NIF_TERM spy_nif__start(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct agent *a = enif_priv_data(env);
	struct spies *set = NULL, *old = NULL;
	uint64_t t0 = agent__now_ns();
	enum spy_policy policy;
	ErlNifUInt64 gen;
	unsigned n;
	int err;

	if (!enif_get_uint(env, argv[0], &n) || n == 0 || n > XP_SPY_MAX ||
	    !enif_get_uint64(env, argv[2], &gen))
		return enif_make_badarg(env);
	if (enif_is_identical(argv[1], atom(env, "idle")))
		policy = SPY_POLICY_IDLE;
	else if (enif_is_identical(argv[1], atom(env, "other")))
		policy = SPY_POLICY_OTHER;
	else if (enif_is_identical(argv[1], atom(env, "normal")))
		policy = SPY_POLICY_NORMAL;
	else
		return enif_make_badarg(env);
	err = spies__start(n, policy, &set);
	if (err)
		return error(env, err == -ENOMEM ? "enomem" : "eagain");
	err = swap_publish(a, set, gen, &old);
	spies__stop(old);
	agent__timed(a, NIF_SPY_START, t0);
	return err ? error(env, "superseded") : atom(env, "ok");
}

ERL_NIF_TERM spy_nif__stop(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct agent *a = enif_priv_data(env);
	struct spies *old = NULL;
	uint64_t t0 = agent__now_ns();
	ErlNifUInt64 gen;
	int err;

	if (!enif_get_uint64(env, argv[0], &gen))
		return enif_make_badarg(env);
	err = swap_publish(a, NULL, gen, &old);
	spies__stop(old);
	agent__timed(a, NIF_SPY_STOP, t0);
	return err ? error(env, "superseded") : atom(env, "ok");
}

static const char *state_name(uint32_t st)
{
	switch (st) {
	case XP_SPY_STARTING:
		return "starting";
	case XP_SPY_PARKED:
		return "parked";
	case XP_SPY_RETARGETED:
		return "retargeted";
	case XP_SPY_STOPPED:
		return "stopped";
	default:
		return "unknown";
	}
}

static ERL_NIF_TERM slot_map(ErlNifEnv *env, unsigned i, const struct xp_spy_slot *sl)
{
	ERL_NIF_TERM k[9], v[9], out;

	k[0] = atom(env, "index"), v[0] = enif_make_uint(env, i);
	k[1] = atom(env, "tid"), v[1] = enif_make_int(env, sl->tid);
	k[2] = atom(env, "state"), v[2] = atom(env, state_name(sl->state));
	k[3] = atom(env, "target"), v[3] = enif_make_uint64(env, sl->target);
	k[4] = atom(env, "interval_ns"), v[4] = enif_make_uint64(env, sl->interval_ns);
	k[5] = atom(env, "owner"), v[5] = enif_make_uint64(env, sl->owner);
	k[6] = atom(env, "generation"), v[6] = enif_make_uint64(env, sl->generation);
	k[7] = atom(env, "lease_expiry_ns"), v[7] = enif_make_uint64(env, sl->lease_expiry_ns);
	k[8] = atom(env, "loops"), v[8] = enif_make_uint64(env, sl->loops);
	if (!enif_make_map_from_arrays(env, k, v, 9, &out))
		return enif_make_badarg(env);
	return out;
}

ERL_NIF_TERM spy_nif__info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct agent *a = enif_priv_data(env);
	struct xp_spy_slot copy[XP_SPY_MAX];
	ERL_NIF_TERM list = enif_make_list(env, 0);
	uint64_t t0 = agent__now_ns();
	unsigned i, n;

	enif_mutex_lock(a->lock);
	n = spies__count(a->spies);
	for (i = 0; i < n; i++)
		spies__slot(a->spies, i, &copy[i]);
	enif_mutex_unlock(a->lock);
	for (i = n; i > 0; i--)
		list = enif_make_list_cell(env, slot_map(env, i - 1, &copy[i - 1]), list);
	agent__timed(a, NIF_SPY_INFO, t0);
	return list;
}
