/* The info/0 map. Keys and atoms follow layout__off_name/layout__addr_name and the enums of
 * extrospect_abi.h. Reads the block through block__read (a consistent copy). See info.h. */
#include <string.h>

#include "block.h"
#include "info.h"

#define MAXKV 24

struct kv {
	unsigned n;
	ERL_NIF_TERM k[MAXKV], v[MAXKV];
};

static const char *const reason_names[] = {
    "none", "not_found", "ambiguous", "uncheckable", "check_failed", "unsupported", "time_budget"};
static const char *const source_names[] = {"none", "dynsym", "scan", "runtime", "table"};
static const char *const sched_names[] = {"normal", "dirty_cpu", "dirty_io"};
static const char *const check_names[] = {"pid_word",	 "htop_stop",	"heap_quad",
					  "normal_exit", "esd_backptr", "atom_roundtrip",
					  "jit_caller",	 "dynsym_agree"};

static void put(struct kv *m, ErlNifEnv *env, const char *key, ERL_NIF_TERM value)
{
	if (m->n >= MAXKV)
		return;
	m->k[m->n] = enif_make_atom(env, key);
	m->v[m->n++] = value;
}

static ERL_NIF_TERM make_map(ErlNifEnv *env, struct kv *m)
{
	ERL_NIF_TERM out;

	if (!enif_make_map_from_arrays(env, m->k, m->v, m->n, &out))
		return enif_make_new_map(env);
	return out;
}

static ERL_NIF_TERM text(ErlNifEnv *env, const char *s, size_t cap)
{
	return enif_make_string_len(env, s, strnlen(s, cap), ERL_NIF_LATIN1);
}

static ERL_NIF_TERM bool_atom(ErlNifEnv *env, int b)
{
	return enif_make_atom(env, b ? "true" : "false");
}

static ERL_NIF_TERM name_of(ErlNifEnv *env, const char *const *names, unsigned n, unsigned i)
{
	return enif_make_atom(env, i < n ? names[i] : "unknown");
}

static ERL_NIF_TERM note(ErlNifEnv *env, const char *s)
{
	return s ? enif_make_string(env, s, ERL_NIF_LATIN1) : enif_make_atom(env, "undefined");
}

static ERL_NIF_TERM offset_entry(ErlNifEnv *env, const struct agent *a, unsigned i,
				 const struct xp_value *v)
{
	int32_t t = a->row ? a->row->off[i] : XP_ABSENT;
	struct kv m = {0};
	const char *src = !(v->flags & XP_VAL_PRESENT)	   ? "none"
			  : (v->flags & XP_VAL_FROM_TABLE) ? "table"
							   : "calibrated";

	put(&m, env, "value",
	    v->flags & XP_VAL_PRESENT ? enif_make_int64(env, v->value)
				      : enif_make_atom(env, "undefined"));
	put(&m, env, "verified", bool_atom(env, v->flags & XP_VAL_VERIFIED));
	put(&m, env, "source", enif_make_atom(env, src));
	put(&m, env, "table",
	    t == XP_ABSENT ? enif_make_atom(env, "undefined") : enif_make_int(env, t));
	put(&m, env, "mismatch", bool_atom(env, v->flags & XP_VAL_MISMATCH));
	put(&m, env, "reason", name_of(env, reason_names, 7, v->reason));
	put(&m, env, "note", note(env, a->calib.off[i].note));
	return make_map(env, &m);
}

static ERL_NIF_TERM offsets(ErlNifEnv *env, const struct agent *a, const struct xp_agent_block *b)
{
	ERL_NIF_TERM k[XP_OFF_COUNT], v[XP_OFF_COUNT], out;
	unsigned i, n = b->n_offsets < XP_OFF_COUNT ? b->n_offsets : XP_OFF_COUNT;

	for (i = 0; i < n; i++) {
		k[i] = enif_make_atom(env, layout__off_name((enum xp_off_id)i));
		v[i] = offset_entry(env, a, i, &b->offsets[i]);
	}
	if (!enif_make_map_from_arrays(env, k, v, n, &out))
		return enif_make_new_map(env);
	return out;
}

static ERL_NIF_TERM address_entry(ErlNifEnv *env, const struct agent *a, unsigned i,
				  const struct xp_addr *x)
{
	const struct addr_obs *o = &a->calib.addr[i];
	struct kv m = {0};

	put(&m, env, "value", enif_make_uint64(env, x->value));
	put(&m, env, "source", name_of(env, source_names, 5, x->source));
	put(&m, env, "verified", bool_atom(env, x->flags & XP_VAL_VERIFIED));
	put(&m, env, "dynsym",
	    o->dynsym ? enif_make_uint64(env, o->dynsym) : enif_make_atom(env, "undefined"));
	put(&m, env, "reason",
	    name_of(env, reason_names, 7, x->flags & XP_VAL_VERIFIED ? XP_WHY_NONE : o->reason));
	put(&m, env, "note", note(env, o->note));
	return make_map(env, &m);
}

static ERL_NIF_TERM addresses(ErlNifEnv *env, const struct agent *a, const struct xp_agent_block *b)
{
	ERL_NIF_TERM k[XP_ADDR_COUNT], v[XP_ADDR_COUNT], out;
	unsigned i, n = b->n_addrs < XP_ADDR_COUNT ? b->n_addrs : XP_ADDR_COUNT;

	for (i = 0; i < n; i++) {
		k[i] = enif_make_atom(env, layout__addr_name((enum xp_addr_id)i));
		v[i] = address_entry(env, a, i, &b->addrs[i]);
	}
	if (!enif_make_map_from_arrays(env, k, v, n, &out))
		return enif_make_new_map(env);
	return out;
}

static ERL_NIF_TERM schedulers(ErlNifEnv *env, const struct xp_agent_block *b)
{
	ERL_NIF_TERM list = enif_make_list(env, 0);
	unsigned i = b->n_sched < XP_MAX_SCHED ? b->n_sched : XP_MAX_SCHED;

	while (i-- > 0) {
		const struct xp_sched *s = &b->sched[i];
		struct kv m = {0};

		put(&m, env, "type", name_of(env, sched_names, 3, s->type));
		put(&m, env, "number", enif_make_uint(env, s->number));
		put(&m, env, "tid", enif_make_int(env, s->tid));
		put(&m, env, "esdp", enif_make_uint64(env, s->esdp));
		put(&m, env, "verified", bool_atom(env, s->flags & XP_VAL_VERIFIED));
		list = enif_make_list_cell(env, make_map(env, &m), list);
	}
	return list;
}

static ERL_NIF_TERM checks(ErlNifEnv *env, const struct xp_agent_block *b)
{
	struct kv m = {0};
	unsigned i;

	for (i = 0; i < sizeof(check_names) / sizeof(check_names[0]); i++) {
		uint32_t bit = 1u << i;
		const char *r = !(b->checks_run & bit)	   ? "not_run"
				: (b->checks_passed & bit) ? "pass"
							   : "fail";

		put(&m, env, check_names[i], enif_make_atom(env, r));
	}
	return make_map(env, &m);
}

/* The published spy region's header (the slots themselves: extrospect:spies/0). */
static ERL_NIF_TERM spies_map(ErlNifEnv *env, const struct xp_agent_block *b)
{
	struct kv m = {0};

	put(&m, env, "version", enif_make_uint(env, b->spy.version));
	put(&m, env, "count", enif_make_uint(env, b->spy.nslots));
	put(&m, env, "slots", enif_make_uint64(env, b->spy.slots_addr));
	put(&m, env, "policy",
	    enif_make_atom(env, b->spy.policy == 0   ? "idle"
				: b->spy.policy == 1 ? "other"
						     : "normal"));
	return make_map(env, &m);
}

static ERL_NIF_TERM block_map(ErlNifEnv *env, const struct xp_agent_block *b)
{
	struct kv m = {0};

	put(&m, env, "address", enif_make_uint64(env, block__address()));
	put(&m, env, "size", enif_make_uint(env, b->size));
	put(&m, env, "abi_version", enif_make_uint(env, b->abi_version));
	put(&m, env, "generation", enif_make_uint64(env, b->generation));
	put(&m, env, "seq", enif_make_uint64(env, b->seq));
	put(&m, env, "magic_ok", bool_atom(env, b->magic == XP_AGENT_MAGIC));
	return make_map(env, &m);
}

static ERL_NIF_TERM probe_map(ErlNifEnv *env, const struct xp_agent_block *b)
{
	struct kv m = {0};

	put(&m, env, "pid_word", enif_make_uint64(env, b->probe_pid));
	put(&m, env, "atom_word", enif_make_uint64(env, b->probe_atom));
	put(&m, env, "atom_text", text(env, b->probe_atom_text, sizeof(b->probe_atom_text)));
	put(&m, env, "process", enif_make_uint64(env, b->addrs[XP_ADDR_PROBE_PROCESS].value));
	return make_map(env, &m);
}

static const char *const nif_names[NIF_COUNT] = {
    [NIF_SELF_PROC] = "self_proc",
    [NIF_CALIB_BEGIN] = "calib_begin",
    [NIF_CALIB_SELF] = "calib_self",
    [NIF_CALIB_DIRTY_CPU] = "calib_dirty_cpu",
    [NIF_CALIB_DIRTY_IO] = "calib_dirty_io",
    [NIF_CALIB_PROBE] = "calib_probe",
    [NIF_CALIB_MEMORY] = "calib_memory",
    [NIF_CALIB_SCAN] = "calib_scan",
    [NIF_CALIB_FINISH] = "calib_finish",
    [NIF_INFO] = "info",
    [NIF_SPY_START] = "spy_start",
    [NIF_SPY_STOP] = "spy_stop",
    [NIF_SPY_INFO] = "spy_info",
    [NIF_CALIB_CODEIX] = "calib_codeix",
};

static ERL_NIF_TERM us(ErlNifEnv *env, uint64_t ns)
{
	return enif_make_uint64(env, (ns + 999) / 1000);
}

/* Longest call of each NIF since load, in microseconds (dirty ones include their sleep). */
static ERL_NIF_TERM per_nif(ErlNifEnv *env, struct agent *a)
{
	struct kv m = {0};
	unsigned i;

	for (i = 0; i < NIF_COUNT; i++)
		put(&m, env, nif_names[i],
		    us(env, __atomic_load_n(&a->max_ns[i], __ATOMIC_RELAXED)));
	return make_map(env, &m);
}

static ERL_NIF_TERM timing_map(ErlNifEnv *env, struct agent *a)
{
	uint64_t ns = __atomic_load_n(&a->max_normal_ns, __ATOMIC_RELAXED);
	struct kv m = {0};

	put(&m, env, "max_normal_nif_ns", enif_make_uint64(env, ns));
	put(&m, env, "max_normal_nif_us", us(env, ns));
	put(&m, env, "preempted_normal_nif_calls",
	    enif_make_uint64(env, __atomic_load_n(&a->preempted_calls, __ATOMIC_RELAXED)));
	put(&m, env, "max_preempted_normal_nif_us",
	    us(env, __atomic_load_n(&a->max_preempted_ns, __ATOMIC_RELAXED)));
	put(&m, env, "max_nif_us", per_nif(env, a));
	put(&m, env, "scan_us", us(env, a->calib.scan_ns));
	put(&m, env, "atom_candidates", enif_make_uint(env, a->calib.atom_candidates));
	put(&m, env, "jit_candidates", enif_make_uint(env, a->calib.jit_candidates));
	put(&m, env, "codeix_words", enif_make_uint(env, a->calib.codeix_words));
	put(&m, env, "jit_entries", enif_make_uint(env, a->calib.jit_entries));
	put(&m, env, "msg_len_candidate", enif_make_int(env, a->calib.msg_len_candidate));
	return make_map(env, &m);
}

static const char *layout_name(uint32_t l)
{
	return l == XP_LAYOUT_RA ? "ra" : l == XP_LAYOUT_FP ? "fp" : "unknown";
}

ERL_NIF_TERM info__make(ErlNifEnv *env, struct agent *a)
{
	struct xp_agent_block *b = enif_alloc(sizeof(*b));
	struct kv m = {0};
	ERL_NIF_TERM out;

	if (!b)
		return enif_raise_exception(env, enif_make_atom(env, "enomem"));
	block__read(b);
	enif_mutex_lock(a->lock);
	put(&m, env, "otp_release", text(env, b->otp_release, sizeof(b->otp_release)));
	put(&m, env, "erts_version", text(env, b->erts_version, sizeof(b->erts_version)));
	put(&m, env, "system_version", text(env, b->system_version, sizeof(b->system_version)));
	put(&m, env, "flavor",
	    enif_make_atom(env, b->flavor == XP_FLAVOR_JIT   ? "jit"
				: b->flavor == XP_FLAVOR_EMU ? "emu"
							     : "unknown"));
	put(&m, env, "frame_layout", enif_make_atom(env, layout_name(b->frame_layout)));
	put(&m, env, "os_pid", enif_make_int(env, b->os_pid));
	put(&m, env, "word_size", enif_make_uint(env, b->word_size));
	put(&m, env, "calibrated", bool_atom(env, a->calibrated));
	put(&m, env, "table_row",
	    a->row ? text(env, a->row->checked_on, 128) : enif_make_atom(env, "undefined"));
	put(&m, env, "offsets", offsets(env, a, b));
	put(&m, env, "addresses", addresses(env, a, b));
	put(&m, env, "schedulers", schedulers(env, b));
	put(&m, env, "checks", checks(env, b));
	put(&m, env, "block", block_map(env, b));
	put(&m, env, "spies", spies_map(env, b));
	put(&m, env, "probe", probe_map(env, b));
	put(&m, env, "timing", timing_map(env, a));
	put(&m, env, "max_normal_nif_us",
	    us(env, __atomic_load_n(&a->max_normal_ns, __ATOMIC_RELAXED)));
	enif_mutex_unlock(a->lock);
	out = make_map(env, &m);
	enif_free(b);
	return out;
}
