/* The agent writes /tmp/perf-PID.map itself (extrospect:write_perf_map/0,1). See perfmap_nif.h.
 * The sampler's JIT map parser, memory reader and map writer are linked into the NIF too
 * (CMakeLists.txt), so both sides read the list and write the file with the same code.
 * process_vm_readv on our own pid turns a racing free (27+ frees purged entries) into -EFAULT
 * instead of a crash, as mem__self_read does. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "jitmap.h"
#include "mem.h"
#include "perfmap.h"
#include "jitself.h"
#include "perfmap_nif.h"
#include "selfelf.h"

#define PN_WALK_TRIES 3

static ERL_NIF_TERM pn_error(ErlNifEnv *env, const char *reason, const char *text)
{
	ErlNifBinary b;
	size_t n = strlen(text);

	if (!enif_alloc_binary(n, &b))
		return enif_make_tuple2(env, enif_make_atom(env, "error"),
					enif_make_atom(env, "enomem"));
	memcpy(b.data, text, n);
	return enif_make_tuple2(
	    env, enif_make_atom(env, "error"),
	    enif_make_tuple2(env, enif_make_atom(env, reason), enif_make_binary(env, &b)));
}

/* The descriptor the calibration found, else a scan of our own .data/.bss. */
static int pn_descriptor(struct agent *a, struct mem *m, uint64_t *desc)
{
	struct jit_descriptor d;
	struct selfelf se;
	unsigned cand = 0;
	int err;

	enif_mutex_lock(a->lock);
	*desc = a->calib.addr[XP_ADDR_JIT_DESCRIPTOR].value;
	enif_mutex_unlock(a->lock);
	if (*desc && !jitmap__read_descriptor(m, *desc, &d))
		return 0;
	err = selfelf__load(&se);
	return err ? err : jitself__scan(&se, "extrospect_nif", desc, &cand);
}

static int pn_load(struct mem *m, uint64_t desc, struct jitmap **jit)
{
	int err = -EAGAIN;

	for (int i = 0; i < PN_WALK_TRIES; i++) {
		err = jitmap__load(m, desc, jit);
		if (err || !jitmap__stats(*jit)->chain_broken)
			return err;
		jitmap__free(*jit);
		*jit = NULL;
		err = -EAGAIN;
	}
	return err;
}

static ERL_NIF_TERM pn_ok(ErlNifEnv *env, const char *path, const struct perfmap *pm,
			  const struct jitmap *jit)
{
	ERL_NIF_TERM keys[3], vals[3], map;
	ErlNifBinary b;

	if (!enif_alloc_binary(strlen(path), &b))
		return pn_error(env, "enomem", "out of memory");
	memcpy(b.data, path, b.size);
	keys[0] = enif_make_atom(env, "path");
	vals[0] = enif_make_binary(env, &b);
	keys[1] = enif_make_atom(env, "symbols");
	vals[1] = enif_make_uint64(env, perfmap__count(pm));
	keys[2] = enif_make_atom(env, "modules");
	vals[2] = enif_make_uint64(env, jitmap__stats(jit)->modules);
	if (!enif_make_map_from_arrays(env, keys, vals, 3, &map))
		return enif_make_badarg(env);
	return enif_make_tuple2(env, enif_make_atom(env, "ok"), map);
}

static ERL_NIF_TERM pn_write(ErlNifEnv *env, const char *dir)
{
	struct agent *a = enif_priv_data(env);
	char err[1024] = "", path[4200];
	struct jitmap *jit = NULL;
	struct perfmap *pm = NULL;
	struct mem *m = NULL;
	ERL_NIF_TERM r;
	uint64_t desc;
	int rc;

	if (perfmap__vm_writes_own(getpid(), path, sizeof(path)) == 1) {
		snprintf(err, sizeof(err), "this VM writes its own perf map (+JPperf): %s", path);
		return pn_error(env, "vm_writes_own_map", err);
	}
	if (perfmap__path(path, sizeof(path), dir, getpid()))
		return pn_error(env, "enametoolong", "directory name too long");
	rc = mem__open_live(&m, getpid());
	if (!rc && (rc = pn_descriptor(a, m, &desc)))
		snprintf(err, sizeof(err), "no unique GDB JIT descriptor found: %s", strerror(-rc));
	if (!rc && (rc = pn_load(m, desc, &jit)))
		snprintf(err, sizeof(err), "cannot walk the JIT list: %s", strerror(-rc));
	if (!rc && ((rc = perfmap__from_jit(jit, &pm))))
		snprintf(err, sizeof(err), "out of memory");
	if (!rc)
		rc = perfmap__install(dir, getpid(), pm, err, sizeof(err));
	if (!rc)
		r = pn_ok(env, path, pm, jit);
	else
		r = pn_error(env,
			     rc == -ELOOP || rc == -EPERM || rc == -EEXIST || rc == -EINVAL
				 ? "refused"
				 : "failed",
			     err[0] ? err : strerror(-rc));
	perfmap__free(pm);
	jitmap__free(jit);
	mem__free(m);
	return r;
}

ERL_NIF_TERM perfmap_nif__write(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	char dir[4096];
	ErlNifBinary b;

	(void)argc;
	if (enif_thread_type() != ERL_NIF_THR_DIRTY_IO_SCHEDULER &&
	    enif_thread_type() != ERL_NIF_THR_DIRTY_CPU_SCHEDULER)
		return enif_make_badarg(env);
	if (!enif_inspect_binary(env, argv[0], &b) || !b.size || b.size >= sizeof(dir) ||
	    memchr(b.data, '\0', b.size))
		return enif_make_badarg(env);
	memcpy(dir, b.data, b.size);
	dir[b.size] = '\0';
	return pn_write(env, dir);
}
