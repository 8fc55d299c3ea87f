/* The erl_tracer callbacks the VM calls for each event of a traced process, as NIFs of the
 * module extrospect_nif (the tracer is {extrospect_nif, Session}): enabled/3 keeps what the
 * session records (once the session is over it discards everything, and answers trace_status
 * with remove, so the VM drops the tracer), trace/5 writes one record. One process in sample_n
 * is traced (by pid, so that its events stay paired); enabled/3 discards the others'. Both run
 * on the scheduler that emits the event, allocate nothing and build no term: atom comparisons,
 * one ring reservation and a 32-byte store (a send to a registered name also looks the name up).
 * Also the events process's NIFs: tracer_report/3 and tracer_info/0.
 * Does not own: the rings and the lease (tracer.c), setting flags (extrospect_events.erl). */
#include <errno.h>
#include <string.h>

#include "agent.h"
#include "tracer.h"

enum ev_atom {
	A_TRACE = 0,
	A_DISCARD,
	A_REMOVE,
	A_TRACE_STATUS,
	A_SPAWN,
	A_EXIT,
	A_SEND,
	A_IN,
	A_IN_EXITING,
	A_OUT,
	A_OUT_EXITING,
	A_OUT_EXITED,
	A_GC_MINOR_START,
	A_GC_MINOR_END,
	A_GC_MAJOR_START,
	A_GC_MAJOR_END,
	A_EXTRA,
	A_NORMAL,
	A_SHUTDOWN,
	A_KILLED,
	A_NOPROC,
	A_NOCONNECTION,
	A_COUNT
};

static const char *const atom_names[A_COUNT] = {
    "trace",	      "discard",      "remove",		"trace_status", "spawn",       "exit",
    "send",	      "in",	      "in_exiting",	"out",		"out_exiting", "out_exited",
    "gc_minor_start", "gc_minor_end", "gc_major_start", "gc_major_end", "extra",       "normal",
    "shutdown",	      "killed",	      "noproc",		"noconnection",
};

struct events {
	struct tracer *tracer;
	ERL_NIF_TERM atom[A_COUNT];
	/* Process.common.id and Process.state, verified by calibration, -1 when not: read at a
	 * schedule-out to tell a runnable process from a waiting one (set at each start). */
	int32_t off_id, off_state;
};

int events__new(ErlNifEnv *env, unsigned n_threads, struct events **out)
{
	struct events *e = enif_alloc(sizeof(*e));
	unsigned i;
	int err;

	*out = NULL;
	if (!e)
		return -ENOMEM;
	for (i = 0; i < A_COUNT; i++)
		e->atom[i] = enif_make_atom(env, atom_names[i]);
	e->off_id = e->off_state = -1;
	err = tracer__new(n_threads, &e->tracer);
	if (err) {
		enif_free(e);
		return err;
	}
	*out = e;
	return 0;
}

void events__free(struct events *e)
{
	if (!e)
		return;
	tracer__free(e->tracer);
	enif_free(e);
}

void events__region(const struct events *e, struct xp_tracer_region *r)
{
	tracer__region(e ? e->tracer : NULL, r);
}

static struct events *events_of(ErlNifEnv *env)
{
	struct agent *a = enif_priv_data(env);

	return a ? a->events : NULL;
}

static int session_live(ErlNifEnv *env, const struct events *e, ERL_NIF_TERM state)
{
	ErlNifUInt64 s;

	return e && enif_get_uint64(env, state, &s) && tracer__live(e->tracer, s);
}

/* A local pid is an immediate whose low four bits are 0x3 (B/erl_term.h _TAG_IMMED1_PID). */
static uint64_t local_pid(ERL_NIF_TERM t)
{
	return ((uint64_t)t & 0xf) == 0x3 ? (uint64_t)t : 0;
}

ERL_NIF_TERM events_nif__enabled(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct events *e = events_of(env);
	const ERL_NIF_TERM *a;
	ERL_NIF_TERM tag = argv[0];
	unsigned i;

	/* remove is only an answer to trace_status (erl_trace.c asserts it): the VM then drops
	 * the tracer from that process, or from the flags new processes get. */
	if (!session_live(env, e, argv[1]))
		return enif_make_atom(env,
				      e && tag == e->atom[A_TRACE_STATUS] ? "remove" : "discard");
	a = e->atom;
	if (tag == a[A_TRACE_STATUS])
		return a[A_TRACE];
	if (!tracer__sampled(e->tracer, local_pid(argv[2])))
		return a[A_DISCARD];
	for (i = A_SPAWN; i <= A_GC_MAJOR_END; i++) {
		if (tag == a[i])
			return a[A_TRACE];
	}
	return a[A_DISCARD];
}

static uint16_t exit_class(const struct events *e, ErlNifEnv *env, ERL_NIF_TERM reason)
{
	const ERL_NIF_TERM *a = e->atom;
	const ERL_NIF_TERM *tuple;
	int arity;

	if (reason == a[A_NORMAL])
		return XP_EXIT_NORMAL;
	if (reason == a[A_SHUTDOWN])
		return XP_EXIT_SHUTDOWN;
	if (reason == a[A_KILLED])
		return XP_EXIT_KILLED;
	if (reason == a[A_NOPROC] || reason == a[A_NOCONNECTION])
		return XP_EXIT_NOPROC;
	if (enif_get_tuple(env, reason, &arity, &tuple) && arity == 2 && tuple[0] == a[A_SHUTDOWN])
		return XP_EXIT_SHUTDOWN;
	return XP_EXIT_ERROR;
}

/* The record for tag, or XP_EV_NONE. */
static uint16_t kind_of(const ERL_NIF_TERM *a, ERL_NIF_TERM tag, uint16_t *arg)
{
	static const uint16_t kinds[] = {
	    [A_SPAWN] = XP_EV_SPAWN,
	    [A_EXIT] = XP_EV_EXIT,
	    [A_SEND] = XP_EV_SEND,
	    [A_IN] = XP_EV_IN,
	    [A_IN_EXITING] = XP_EV_IN,
	    [A_OUT] = XP_EV_OUT,
	    [A_OUT_EXITING] = XP_EV_OUT,
	    [A_OUT_EXITED] = XP_EV_OUT,
	    [A_GC_MINOR_START] = XP_EV_GC_MINOR_START,
	    [A_GC_MINOR_END] = XP_EV_GC_MINOR_END,
	    [A_GC_MAJOR_START] = XP_EV_GC_MAJOR_START,
	    [A_GC_MAJOR_END] = XP_EV_GC_MAJOR_END,
	};
	unsigned i;

	for (i = A_SPAWN; i <= A_GC_MAJOR_END; i++) {
		if (tag != a[i])
			continue;
		*arg = i == A_IN_EXITING ? 1 : (i == A_OUT_EXITING || i == A_OUT_EXITED) ? 2 : 0;
		return kinds[i];
	}
	return XP_EV_NONE;
}

/* Is the process being scheduled out still runnable (ACTIVE: it goes back to a run queue to
 * run Erlang code) or waiting? The callback's environment holds the process (ENV_OFF_PROC): its id
 * must be the tracee's before its state word is read. */
static uint16_t out_how(const struct events *e, ErlNifEnv *env, uint64_t pid)
{
	int32_t oid = __atomic_load_n(&e->off_id, __ATOMIC_RELAXED);
	int32_t ost = __atomic_load_n(&e->off_state, __ATOMIC_RELAXED);
	uint64_t proc, id;
	uint32_t st;

	if (oid < 0 || ost < 0 || !pid)
		return XP_OUT_UNKNOWN;
	memcpy(&proc, (const char *)env + ENV_OFF_PROC, sizeof(proc));
	if (!proc || (proc & 7))
		return XP_OUT_UNKNOWN;
	memcpy(&id, (const char *)(uintptr_t)proc + oid, sizeof(id));
	if (id != pid)
		return XP_OUT_UNKNOWN;
	st = __atomic_load_n((const uint32_t *)(uintptr_t)(proc + (uint64_t)ost), __ATOMIC_RELAXED);
	/* ACTIVE only: a process with system work alone (ACTIVE_SYS) runs it without an in/out
	 * and waits on for a message; counting it runnable gave code_server 130 ms "waits". */
	return (st & XP_PSFLG_ACTIVE) ? XP_OUT_RUNNABLE : XP_OUT_WAITING;
}

/* The receiver of a send: a local pid, or the pid a registered name stands for now. */
static uint64_t receiver(ErlNifEnv *env, ERL_NIF_TERM to)
{
	ErlNifPid pid;

	if (enif_is_atom(env, to))
		return enif_whereis_pid(env, to, &pid) ? local_pid((ERL_NIF_TERM)pid.pid) : 0;
	return local_pid(to);
}

ERL_NIF_TERM events_nif__trace(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct events *e = events_of(env);
	uint64_t pid = local_pid(argv[2]), extra = 0;
	uint16_t kind, arg = 0;
	ERL_NIF_TERM v;

	if (!session_live(env, e, argv[1]))
		return e ? e->atom[A_DISCARD] : enif_make_atom(env, "ok");
	kind = kind_of(e->atom, argv[0], &arg);
	switch (kind) {
	case XP_EV_NONE:
		return e->atom[A_DISCARD];
	case XP_EV_SPAWN:
		extra = local_pid(argv[3]);
		break;
	case XP_EV_EXIT:
		arg = exit_class(e, env, argv[3]);
		break;
	case XP_EV_SEND:
		if (enif_get_map_value(env, argv[4], e->atom[A_EXTRA], &v))
			extra = receiver(env, v);
		break;
	case XP_EV_OUT:
		if (arg == 0)
			arg = out_how(e, env, pid);
		break;
	default:
		break;
	}
	tracer__emit(e->tracer, kind, arg, pid, extra);
	return e->atom[A_TRACE];
}

/* The offsets out_how reads, only when the block last published says verified (the calibration
 * under way, if any, starts from nothing: its record is not the evidence). */
static int32_t verified_off(const struct agent *a, enum xp_off_id id)
{
	const struct xp_value *v = &a->draft.offsets[id];
	const uint32_t want = XP_VAL_PRESENT | XP_VAL_VERIFIED;

	return id < a->draft.n_offsets && (v->flags & want) == want && !(v->flags & XP_VAL_MISMATCH)
		   ? (int32_t)v->value
		   : -1;
}

static void take_offsets(struct agent *a, struct events *e)
{
	int32_t oid, ost;

	enif_mutex_lock(a->lock);
	oid = verified_off(a, XP_OFF_P_ID);
	ost = verified_off(a, XP_OFF_P_STATE);
	enif_mutex_unlock(a->lock);
	__atomic_store_n(&e->off_id, oid, __ATOMIC_RELAXED);
	__atomic_store_n(&e->off_state, ost, __ATOMIC_RELAXED);
	tracer__set_caps(e->tracer, oid >= 0 && ost >= 0 ? XP_TRACER_CAP_RUNQ : 0);
}

/* tracer_report(Session, starting | on | off | refused, Why): the events process's progress
 * (starting: before it sets the flags). */
ERL_NIF_TERM events_nif__report(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct events *e = events_of(env);
	ErlNifUInt64 s;
	unsigned why;
	uint32_t st;

	if (!e || !enif_get_uint64(env, argv[0], &s) || !enif_get_uint(env, argv[2], &why))
		return enif_make_badarg(env);
	if (enif_is_identical(argv[1], enif_make_atom(env, "starting"))) {
		take_offsets(enif_priv_data(env), e);
		return enif_make_atom(env, "ok");
	}
	if (enif_is_identical(argv[1], enif_make_atom(env, "on")))
		st = XP_TRACER_ON;
	else if (enif_is_identical(argv[1], enif_make_atom(env, "off")))
		st = XP_TRACER_OFF;
	else if (enif_is_identical(argv[1], enif_make_atom(env, "refused")))
		st = XP_TRACER_REFUSED;
	else
		return enif_make_badarg(env);
	tracer__report(e->tracer, s, st, why);
	return enif_make_atom(env, "ok");
}

/* tracer_info(): the control slot, for extrospect:events/0. */
ERL_NIF_TERM events_nif__info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	static const char *const states[] = {"off", "starting", "on", "stopping", "refused"};
	struct events *e = events_of(env);
	struct xp_tracer_ctl c;
	ERL_NIF_TERM k[8], v[8], out;

	if (!e)
		return enif_make_atom(env, "none");
	tracer__ctl(e->tracer, &c);
	k[0] = enif_make_atom(env, "state");
	v[0] = enif_make_atom(env, c.state < 5 ? states[c.state] : "unknown");
	k[1] = enif_make_atom(env, "reason"), v[1] = enif_make_uint(env, c.reason);
	k[2] = enif_make_atom(env, "session"), v[2] = enif_make_uint64(env, c.session);
	k[3] = enif_make_atom(env, "want"), v[3] = enif_make_uint64(env, c.want);
	k[4] = enif_make_atom(env, "flags_on"), v[4] = enif_make_uint64(env, c.flags_on);
	k[5] = enif_make_atom(env, "owner"), v[5] = enif_make_uint64(env, c.owner);
	k[6] = enif_make_atom(env, "sample_n"), v[6] = enif_make_uint64(env, c.sample_on);
	k[7] = enif_make_atom(env, "lease_expiry_ns"),
	v[7] = enif_make_uint64(env, c.lease_expiry_ns);
	if (!enif_make_map_from_arrays(env, k, v, 8, &out))
		return enif_make_badarg(env);
	return out;
}
