/* The NIF of test/targets/xp_defer.erl: make_list/1 returns a new list of N small integers, built
 * by the NIF in a heap fragment, so that the VM collects the calling process's heap after the call
 * (on a dirty CPU scheduler when that heap is large). thread_cpu_ns/1 is the exact CPU time of
 * some of the VM's threads, the truth xp_defer and xp_class measure their phases with.
 * Built against the oldest erl_nif.h in use (host OTP 25): a lower NIF version loads on 27 and 29
 * too. Does not own: the Erlang side. */
#include <erl_nif.h>
#include <time.h>

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

/* thread_cpu_ns(Tids): the summed CPU time, user and system, of the VM's threads Tids (a list of
 * Linux thread ids), in nanoseconds, from each thread's CPU clock (clockid (~tid << 3) | 6:
 * CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD, as glibc's pthread_getcpuclockid makes it). Exact for a
 * thread that is running on another CPU too: the kernel brings its run time up to date
 * (task_sched_runtime). Not /proc/self/task/TID/schedstat, whose run time for a running thread
 * is as of its last tick or switch (4 ms steps at HZ=250, measured): a phase of 1 ms a round then
 * reads 0 or 4 ms. badarg when a thread is gone or the list is not one of integers. */
static ERL_NIF_TERM xp_thread_cpu_ns(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	ERL_NIF_TERM list, head;
	ErlNifSInt64 sum = 0;
	struct timespec ts;
	int tid, n = 0;

	if (argc != 1)
		return enif_make_badarg(env);
	list = argv[0];
	while (enif_get_list_cell(env, list, &head, &list)) {
		if (!enif_get_int(env, head, &tid) || tid <= 0 || ++n > 4096 ||
		    clock_gettime((clockid_t)((~(unsigned)tid << 3) | 6), &ts) != 0)
			return enif_make_badarg(env);
		sum += (ErlNifSInt64)ts.tv_sec * 1000000000 + ts.tv_nsec;
	}
	if (!enif_is_empty_list(env, list))
		return enif_make_badarg(env);
	return enif_make_int64(env, sum);
}

static ErlNifFunc funcs[] = {
    {"make_list", 1, xp_make_list, 0},
    {"thread_cpu_ns", 1, xp_thread_cpu_ns, 0},
};

ERL_NIF_INIT(xp_defer, funcs, NULL, NULL, NULL, NULL)
