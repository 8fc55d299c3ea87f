/* The agent NIF's entry points: load/upgrade/unload (all state in priv_data, jiffy style; unload
 * retires the block this instance published), argument checking, normal-scheduler call timing,
 * and the NIF table. The calibration steps live in calib/; extrospect_agent.erl drives them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "block.h"
#include "calib_codeix.h"
#include "calib_scan.h"
#include "calib_self.h"
#include "compose.h"
#include "info.h"
#include "perfmap_nif.h"
#include "spy.h"

#define MAX_DIRTY_SLEEP_US 50000u
#define MAX_FIX_COUNTS	   16

/* This thread's involuntary context switches (the OS preempting it), at the last now_ns(). */
static __thread long entry_nivcsw;

static long nivcsw(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? -1 : ru.ru_nivcsw;
}

/* A NIF's start: the time, and the thread's preemptions so far. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	entry_nivcsw = nivcsw();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void raise_max(uint64_t *max, uint64_t d)
{
	uint64_t cur = __atomic_load_n(max, __ATOMIC_RELAXED);

	while (d > cur &&
	       !__atomic_compare_exchange_n(max, &cur, d, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* Per-NIF maximum, and the normal-scheduler maximum the 1 ms budget is about. */
static void timed(struct agent *a, enum nif_id id, uint64_t t0)
{
	long before = entry_nivcsw;
	uint64_t d = now_ns() - t0;

	raise_max(&a->max_ns[id], d);
	if (enif_thread_type() != ERL_NIF_THR_NORMAL_SCHEDULER)
		return;
	/* Preempted by the OS meanwhile: the wall time is the machine's load, not the call's
	 * work (a voluntary switch, a lock or a sleep, still counts). */
	if (before >= 0 && entry_nivcsw != before) {
		__atomic_fetch_add(&a->preempted_calls, 1, __ATOMIC_RELAXED);
		raise_max(&a->max_preempted_ns, d);
		return;
	}
	raise_max(&a->max_normal_ns, d);
}

void agent__timed(struct agent *a, enum nif_id id, uint64_t t0)
{
	timed(a, id, t0);
}

uint64_t agent__now_ns(void)
{
	return now_ns();
}

static ERL_NIF_TERM error_tuple(ErlNifEnv *env, int err)
{
	const char *name = err == -EAGAIN   ? "eagain"
			   : err == -ESRCH  ? "esrch"
			   : err == -EFAULT ? "efault"
			   : err == -ENOENT ? "enoent"
			   : err == -EEXIST ? "eexist"
			   : err == -ENOMEM ? "enomem"
			   : err == -EINVAL ? "einval"
			   : err == -EPERM  ? "eperm"
			   : err == -ENOSYS ? "enosys"
			   : err == -ESTALE ? "superseded"
					    : "error";

	return enif_make_tuple2(env, enif_make_atom(env, "error"), enif_make_atom(env, name));
}

static ERL_NIF_TERM ok_or_error(ErlNifEnv *env, int err)
{
	return err ? error_tuple(env, err) : enif_make_atom(env, "ok");
}

static int get_value(ErlNifEnv *env, ERL_NIF_TERM map, const char *key, ERL_NIF_TERM *out)
{
	return enif_get_map_value(env, map, enif_make_atom(env, key), out);
}

static int get_text(ErlNifEnv *env, ERL_NIF_TERM map, const char *key, char *buf, size_t cap)
{
	ErlNifBinary bin;
	ERL_NIF_TERM v;

	memset(buf, 0, cap);
	if (!get_value(env, map, key, &v) || !enif_inspect_binary(env, v, &bin))
		return 0;
	memcpy(buf, bin.data, bin.size < cap - 1 ? bin.size : cap - 1);
	return 1;
}

static int get_u64(ErlNifEnv *env, ERL_NIF_TERM map, const char *key, uint64_t *out)
{
	ERL_NIF_TERM v;
	ErlNifUInt64 u;

	if (!get_value(env, map, key, &v) || !enif_get_uint64(env, v, &u))
		return 0;
	*out = u;
	return 1;
}

static int get_u32(ErlNifEnv *env, ERL_NIF_TERM map, const char *key, uint32_t *out)
{
	uint64_t u;

	if (!get_u64(env, map, key, &u) || u > UINT32_MAX)
		return 0;
	*out = (uint32_t)u;
	return 1;
}

static int facts_parse(ErlNifEnv *env, ERL_NIF_TERM info, struct facts *f, uint64_t *gen)
{
	char flavor[16];

	if (!enif_is_map(env, info) || !get_text(env, info, "otp_release", f->otp_release, 16) ||
	    !get_text(env, info, "erts_version", f->erts_version, 32) ||
	    !get_text(env, info, "system_version", f->system_version, 192) ||
	    !get_text(env, info, "emu_flavor", flavor, sizeof(flavor)) ||
	    !get_u32(env, info, "schedulers", &f->n_normal) ||
	    !get_u32(env, info, "dirty_cpu_schedulers", &f->n_dirty_cpu) ||
	    !get_u32(env, info, "dirty_io_schedulers", &f->n_dirty_io) ||
	    !get_u64(env, info, "generation", gen))
		return 0;
	f->flavor = strcmp(flavor, "jit") == 0 ? XP_FLAVOR_JIT : XP_FLAVOR_EMU;
	/* "[jit:ns:fp]" (B/erl_bif_info.c): frame pointers on. */
	f->layout_from_version = f->flavor != XP_FLAVOR_JIT	     ? XP_LAYOUT_UNKNOWN
				 : strstr(f->system_version, ":fp]") ? XP_LAYOUT_FP
								     : XP_LAYOUT_RA;
	return 1;
}

static void agent_free(struct agent *a)
{
	if (!a)
		return;
	if (a->lock)
		enif_mutex_destroy(a->lock);
	codeix__free(a->codeix);
	events__free(a->events);
	enif_free(a);
}

static struct agent *agent_new(ErlNifEnv *env, ERL_NIF_TERM info, uint64_t *gen)
{
	struct agent *a = enif_alloc(sizeof(*a));

	if (!a)
		return NULL;
	memset(a, 0, sizeof(*a));
	a->lock = enif_mutex_create("extrospect_agent");
	if (!a->lock || !facts_parse(env, info, &a->facts, gen)) {
		agent_free(a);
		return NULL;
	}
	a->instance = *gen;
	a->row = layout__find(a->facts.erts_version, a->facts.flavor, "x86_64");
	calib__reset(&a->calib);
	/* Without it, no events: the rest of the agent works. */
	events__new(env, a->facts.n_normal + a->facts.n_dirty_cpu + a->facts.n_dirty_io,
		    &a->events);
	return a;
}

/* Caller holds a->lock. */
/* 0, or -ESTALE when a newer instance of the library has published since. */
static int publish(struct agent *a, uint64_t generation)
{
	uint64_t gen;

	compose__block(a, &a->draft, generation, a->calibrated);
	gen = block__publish(&a->draft, a->instance);
	if (!gen)
		return -ESTALE;
	a->published_generation = gen;
	return 0;
}

int agent__publish(struct agent *a, uint64_t generation)
{
	return publish(a, generation);
}

static int load(ErlNifEnv *env, void **priv, ERL_NIF_TERM info)
{
	uint64_t gen = 0;
	struct agent *a = agent_new(env, info, &gen);

	if (!a)
		return 1;
	enif_mutex_lock(a->lock);
	publish(a, gen);
	enif_mutex_unlock(a->lock);
	*priv = a;
	return 0;
}

/* The new instance inherits the old one's calibration (same VM, same layout) and republishes. */
static int upgrade(ErlNifEnv *env, void **priv, void **old_priv, ERL_NIF_TERM info)
{
	struct agent *old = *old_priv, *a;
	uint64_t gen = 0;

	a = agent_new(env, info, &gen);
	if (!a)
		return 1;
	if (old && strcmp(old->facts.erts_version, a->facts.erts_version) == 0) {
		enif_mutex_lock(old->lock);
		a->calib = old->calib;
		a->calibrated = old->calibrated;
		enif_mutex_unlock(old->lock);
	}
	enif_mutex_lock(a->lock);
	publish(a, gen);
	enif_mutex_unlock(a->lock);
	*priv = a;
	return 0;
}

static void unload(ErlNifEnv *env, void *priv)
{
	struct agent *a = priv;

	if (!a)
		return;
	block__retire(a->published_generation);
	spies__stop(a->spies); /* no spy may outlive this library's code */
	agent_free(a);
}

static uint64_t self_proc(ErlNifEnv *env)
{
	uint64_t p;

	memcpy(&p, (const char *)env + ENV_OFF_PROC, 8);
	return p;
}

static ERL_NIF_TERM nif_self_proc(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct agent *a = enif_priv_data(env);
	uint64_t t0 = now_ns();
	ERL_NIF_TERM r;

	if (enif_thread_type() != ERL_NIF_THR_NORMAL_SCHEDULER)
		return enif_make_badarg(env);
	r = enif_make_uint64(env, self_proc(env));
	timed(a, NIF_SELF_PROC, t0);
	return r;
}

static ERL_NIF_TERM nif_calib_begin(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct agent *a = enif_priv_data(env);
	uint64_t t0 = now_ns(), epoch;

	enif_mutex_lock(a->lock);
	epoch = a->calib.epoch;
	calib__reset(&a->calib);
	a->calib.epoch = epoch + 1;
	enif_mutex_unlock(a->lock);
	timed(a, NIF_CALIB_BEGIN, t0);
	return enif_make_atom(env, "ok");
}

static ERL_NIF_TERM nif_calib_self(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct agent *a = enif_priv_data(env);
	uint64_t t0 = now_ns();
	unsigned sched_no;
	int err;

	if (!enif_get_uint(env, argv[0], &sched_no) ||
	    enif_thread_type() != ERL_NIF_THR_NORMAL_SCHEDULER)
		return enif_make_badarg(env);
	err = calib__self(a, env, argv, sched_no, enif_make_atom(env, "calib_self"), 1);
	timed(a, NIF_CALIB_SELF, t0);
	return ok_or_error(env, err);
}

static ERL_NIF_TERM calib_dirty(ErlNifEnv *env, const ERL_NIF_TERM argv[], int want)
{
	struct agent *a = enif_priv_data(env);
	uint64_t t0 = now_ns();
	ErlNifUInt64 proc;
	unsigned sleep_us;
	uint32_t type = 0, no = 0;
	int32_t tid = 0;
	int err;

	if (!enif_get_uint64(env, argv[0], &proc) || !enif_get_uint(env, argv[1], &sleep_us) ||
	    sleep_us > MAX_DIRTY_SLEEP_US || enif_thread_type() != want)
		return enif_make_badarg(env);
	/* Hold this dirty scheduler a little so concurrent calls spread over all of them. */
	if (sleep_us)
		usleep(sleep_us);
	err = calib__dirty(a, env, proc, &type, &no, &tid);
	timed(a, want == ERL_NIF_THR_DIRTY_CPU_SCHEDULER ? NIF_CALIB_DIRTY_CPU : NIF_CALIB_DIRTY_IO,
	      t0);
	if (err)
		return error_tuple(env, err);
	return enif_make_tuple2(env, enif_make_atom(env, "ok"),
				enif_make_tuple3(env, enif_make_uint(env, type),
						 enif_make_uint(env, no), enif_make_int(env, tid)));
}

static ERL_NIF_TERM nif_calib_dirty_cpu(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	return calib_dirty(env, argv, ERL_NIF_THR_DIRTY_CPU_SCHEDULER);
}

static ERL_NIF_TERM nif_calib_dirty_io(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	return calib_dirty(env, argv, ERL_NIF_THR_DIRTY_IO_SCHEDULER);
}

static ERL_NIF_TERM nif_calib_probe(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct agent *a = enif_priv_data(env);
	uint64_t t0 = now_ns();
	ErlNifUInt64 proc;
	ErlNifPid pid;
	unsigned stage;
	ErlNifSInt64 expect, reds;
	int err;

	if (!enif_get_uint64(env, argv[0], &proc) || !enif_get_local_pid(env, argv[1], &pid) ||
	    !enif_get_uint(env, argv[2], &stage) || !enif_get_int64(env, argv[3], &expect) ||
	    !enif_get_int64(env, argv[4], &reds) || stage >= PROBE_STAGES)
		return enif_make_badarg(env);
	err = calib__probe(a, proc, (uint64_t)pid.pid, stage, expect, reds);
	timed(a, NIF_CALIB_PROBE, t0);
	return ok_or_error(env, err);
}

static ERL_NIF_TERM nif_calib_memory(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct agent *a = enif_priv_data(env);
	uint64_t t0 = now_ns(), gc[GC_COUNT];
	const ERL_NIF_TERM *t;
	ErlNifUInt64 proc, v;
	ErlNifPid pid;
	int arity, i, err;

	if (!enif_get_uint64(env, argv[0], &proc) || !enif_get_local_pid(env, argv[1], &pid) ||
	    !enif_get_tuple(env, argv[2], &arity, &t) || arity != GC_COUNT)
		return enif_make_badarg(env);
	for (i = 0; i < GC_COUNT; i++) {
		if (!enif_get_uint64(env, t[i], &v))
			return enif_make_badarg(env);
		gc[i] = v;
	}
	err = calib__memory(a, proc, (uint64_t)pid.pid, gc);
	timed(a, NIF_CALIB_MEMORY, t0);
	return ok_or_error(env, err);
}

/* {Module, Function, Arity} -> "module", "module:function/arity" (the JIT map's range name). */
static int get_mfa(ErlNifEnv *env, ERL_NIF_TERM map, const char *key, char *mod, size_t modcap,
		   char *range, size_t rangecap, uint64_t *mterm, uint64_t *fterm)
{
	const ERL_NIF_TERM *t;
	char fun[128];
	unsigned arity;
	ERL_NIF_TERM v;
	int n;

	if (!get_value(env, map, key, &v) || !enif_get_tuple(env, v, &n, &t) || n != 3 ||
	    !enif_get_atom(env, t[0], mod, (unsigned)modcap, ERL_NIF_LATIN1) ||
	    !enif_get_atom(env, t[1], fun, sizeof(fun), ERL_NIF_LATIN1) ||
	    !enif_get_uint(env, t[2], &arity))
		return 0;
	*mterm = (uint64_t)t[0];
	*fterm = (uint64_t)t[1];
	n = snprintf(range, rangecap, "%s:%s/%u", mod, fun, arity);
	return n > 0 && (size_t)n < rangecap;
}

static int scan_args_parse(ErlNifEnv *env, ERL_NIF_TERM m, struct scan_args *g)
{
	uint64_t cm, cf;
	ERL_NIF_TERM v;
	ErlNifPid pid;

	memset(g, 0, sizeof(*g));
	if (!enif_is_map(env, m) || !get_u64(env, m, "probe_process", &g->probe_proc) ||
	    !get_value(env, m, "probe_pid", &v) || !enif_get_local_pid(env, v, &pid) ||
	    !get_value(env, m, "registered_name", &v) ||
	    !enif_get_atom(env, v, g->reg_text, sizeof(g->reg_text), ERL_NIF_LATIN1) ||
	    !get_u32(env, m, "process_limit", &g->process_limit) ||
	    !get_mfa(env, m, "probe_mfa", g->probe_module, sizeof(g->probe_module), g->probe_range,
		     sizeof(g->probe_range), &g->probe_mod, &g->probe_fun) ||
	    !get_mfa(env, m, "caller_mfa", g->caller_module, sizeof(g->caller_module),
		     g->caller_range, sizeof(g->caller_range), &cm, &cf))
		return 0;
	g->probe_pid = (uint64_t)pid.pid;
	g->reg_name = (uint64_t)v;
	g->nif_atom = (uint64_t)enif_make_atom(env, "extrospect_nif");
	/* Latin-1 0xfc (u with diaeresis): 4 characters, 5 UTF-8 bytes. */
	g->uni_atom = (uint64_t)enif_make_atom(env, "xp_\xfc");
	return 1;
}

static ERL_NIF_TERM nif_calib_scan(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct agent *a = enif_priv_data(env);
	struct scan_args *g;
	uint64_t t0 = now_ns();
	int err;

	if (enif_thread_type() != ERL_NIF_THR_DIRTY_CPU_SCHEDULER)
		return enif_make_badarg(env);
	g = enif_alloc(sizeof(*g));
	if (!g)
		return error_tuple(env, -ENOMEM);
	if (!scan_args_parse(env, argv[0], g)) {
		enif_free(g);
		return enif_make_badarg(env);
	}
	err = calib__scan(a, g);
	timed(a, NIF_CALIB_SCAN, t0);
	enif_free(g);
	return ok_or_error(env, err);
}

static int get_fix_counts(ErlNifEnv *env, ERL_NIF_TERM m, uint64_t *used, unsigned *n)
{
	ERL_NIF_TERM list, head;
	ErlNifUInt64 u;

	*n = 0;
	if (!get_value(env, m, "fix_proc_bytes", &list))
		return 0;
	while (enif_get_list_cell(env, list, &head, &list)) {
		if (!enif_get_uint64(env, head, &u))
			return 0;
		if (*n < MAX_FIX_COUNTS)
			used[(*n)++] = u;
	}
	return enif_is_empty_list(env, list);
}

static ERL_NIF_TERM nif_calib_finish(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct agent *a = enif_priv_data(env);
	uint64_t used[MAX_FIX_COUNTS], gen, t0 = now_ns();
	unsigned n;
	int err;

	if (!enif_is_map(env, argv[0]) || !get_u64(env, argv[0], "generation", &gen) ||
	    !get_fix_counts(env, argv[0], used, &n))
		return enif_make_badarg(env);
	enif_mutex_lock(a->lock);
	calib__sizeof(&a->calib, a->row, used, n);
	a->calibrated = 1;
	err = publish(a, gen);
	enif_mutex_unlock(a->lock);
	timed(a, NIF_CALIB_FINISH, t0);
	return ok_or_error(env, err);
}

static ERL_NIF_TERM nif_info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct agent *a = enif_priv_data(env);
	uint64_t t0 = now_ns();
	ERL_NIF_TERM r = info__make(env, a);

	timed(a, NIF_INFO, t0);
	return r;
}

static ErlNifFunc nif_funcs[] = {
    {"self_proc", 0, nif_self_proc, 0},
    {"calib_begin", 0, nif_calib_begin, 0},
    {"calib_self", 1, nif_calib_self, 0},
    {"calib_dirty_cpu", 2, nif_calib_dirty_cpu, ERL_NIF_DIRTY_JOB_CPU_BOUND},
    {"calib_dirty_io", 2, nif_calib_dirty_io, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"calib_probe", 5, nif_calib_probe, 0},
    {"calib_memory", 3, nif_calib_memory, 0},
    {"calib_scan", 1, nif_calib_scan, ERL_NIF_DIRTY_JOB_CPU_BOUND},
    {"calib_codeix", 2, codeix_nif__step, ERL_NIF_DIRTY_JOB_CPU_BOUND},
    {"calib_finish", 1, nif_calib_finish, 0},
    {"info", 0, nif_info, 0},
    {"write_perf_map", 1, perfmap_nif__write, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"spy_start", 3, spy_nif__start, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"spy_stop", 1, spy_nif__stop, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"spy_info", 0, spy_nif__info, 0},
    {"enabled", 3, events_nif__enabled, 0},
    {"trace", 5, events_nif__trace, 0},
    {"tracer_report", 3, events_nif__report, 0},
    {"tracer_info", 0, events_nif__info, 0},
};

ERL_NIF_INIT(extrospect_nif, nif_funcs, load, NULL, upgrade, unload)
