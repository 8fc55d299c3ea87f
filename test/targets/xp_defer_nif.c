/* The NIF of test/targets/xp_defer.erl: make_list/1 returns a new list of N small integers, built
 * by the NIF in a heap fragment, so that the VM collects the calling process's heap after the call
 * (on a dirty CPU scheduler when that heap is large). Built against the oldest erl_nif.h in use
 * (host OTP 25): a lower NIF version loads on 27 and 29 too. Does not own: the Erlang side. */
#include <erl_nif.h>

static ERL_NIF_TERM xp_make_list(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	ERL_NIF_TERM list = enif_make_list(env, 0);
	int n;

	if (argc != 1 || !enif_get_int(env, argv[0], &n) || n < 0 || n > 10000000)
		return enif_make_badarg(env);
	while (n > 0)
		list = enif_make_list_cell(env, enif_make_int(env, n--), list);
	return list;
}

static ErlNifFunc funcs[] = {
    {"make_list", 1, xp_make_list, 0},
};

ERL_NIF_INIT(xp_defer, funcs, NULL, NULL, NULL, NULL)
