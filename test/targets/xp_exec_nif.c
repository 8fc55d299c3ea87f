/* The "VM execs another program" fault (test/e2e/faults_test.sh, case exec): exec/1 replaces
 * the whole VM by the program at the path given (same pid, every other thread gone), as a VM
 * whose code calls execve (a port program gone wrong, a hot upgrade by re-exec) would. Test only.
 */
#include <string.h>
#include <unistd.h>

#include <erl_nif.h>

static ERL_NIF_TERM do_exec(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	char path[256];

	(void)argc;
	if (enif_get_string(env, argv[0], path, sizeof(path), ERL_NIF_LATIN1) <= 0)
		return enif_make_badarg(env);
	execl(path, path, "300", (char *)NULL);
	return enif_make_atom(env, "exec_failed");
}

static ErlNifFunc funcs[] = {{"exec", 1, do_exec, 0}};

ERL_NIF_INIT(xp_exec, funcs, NULL, NULL, NULL, NULL)
