/* The agent NIF's private state (priv_data, jiffy style) and the calibration record that the
 * calibration steps fill and compose.c turns into the published block. Also the few structural
 * ERTS constants that are not per-version offsets (ErlNifEnv, term tags, process state bits).
 * Does not own: per-version offsets (external/vm/layout.c) or the published block (block.c). */
#ifndef XP_AGENT_H
#define XP_AGENT_H

#include <stdint.h>

#include <erl_nif.h>

#include "extrospect_abi.h"
#include "layout.h"

/* struct enif_environment_t (B/global.h 25:55, 27:55, 29:57): proc, hp, hp_end follow mod_nif.
 * The same in every supported release; the pid-word check catches a change. */
#define ENV_OFF_PROC   8
#define ENV_OFF_HP     16
#define ENV_OFF_HP_END 24

/* S_REDZONE = 3 * CP_SIZE words (B/erl_vm.h): CP_SIZE 1 in the RA layout, 2 in the FP layout. */
#define REDZONE_RA 3
#define REDZONE_FP 6

/* Process.state bits: XP_PSFLG_* (external/vm/layout.h). */
#define PROC_SCAN_BYTES 1024 /* scanned prefix of a Process struct (>= every sizeof(Process)) */
#define PROC_SCAN_WORDS (PROC_SCAN_BYTES / 8)
#define ESD_SCAN_BYTES	512 /* scanned prefix of an ErtsSchedulerData */
#define ESD_SCAN_WORDS	(ESD_SCAN_BYTES / 8)
#define STATE_SLOTS	(PROC_SCAN_BYTES / 4)
#define PROBE_STAGES	4

/* The NIFs, for per-call timing (extrospect_nif.c's table, info.c's names). */
enum nif_id {
	NIF_SELF_PROC = 0,
	NIF_CALIB_BEGIN,
	NIF_CALIB_SELF,
	NIF_CALIB_DIRTY_CPU,
	NIF_CALIB_DIRTY_IO,
	NIF_CALIB_PROBE,
	NIF_CALIB_MEMORY,
	NIF_CALIB_SCAN,
	NIF_CALIB_FINISH,
	NIF_INFO,
	NIF_SPY_START,
	NIF_SPY_STOP,
	NIF_SPY_INFO,
	NIF_CALIB_CODEIX,
	NIF_COUNT
};

/* Facts handed over by Erlang (erlang:load_nif/2 load info). */
struct facts {
	char otp_release[16];
	char erts_version[32];
	char system_version[192];
	uint32_t flavor;
	uint32_t n_normal, n_dirty_cpu, n_dirty_io;
	uint32_t layout_from_version; /* XP_LAYOUT_* from "[jit:ns:fp]" in system_version */
};

enum disc_state {
	DISC_NONE = 0, /* no evidence yet */
	DISC_FOUND,    /* discovered by a structural scan (value) */
	DISC_TABLE_OK, /* the table's value passed a structural check */
	DISC_FAILED,   /* the check ran and failed, or the scan found nothing (reason) */
};

struct disc {
	int64_t value;
	uint8_t state;	  /* enum disc_state */
	uint8_t reason;	  /* enum xp_reason, when not verified */
	const char *note; /* long form for logs and info(), a string literal */
};

struct addr_obs {
	uint64_t value;
	uint32_t source; /* enum xp_source */
	uint32_t flags;	 /* XP_VAL_* */
	uint32_t reason; /* enum xp_reason */
	const char *note;
	uint64_t dynsym; /* what .dynsym says, 0 when it does not export it */
};

/* One snapshot of the parked probe process's struct, with the queue length it should have. */
struct probe_snap {
	int valid;
	int64_t expect_len;
	int64_t expect_reds; /* process_info(P, reductions) around the snapshot, -1 unknown */
	size_t nwords;
	uint64_t w[PROC_SCAN_WORDS];
};

struct calib {
	uint64_t epoch; /* bumped by calib_begin: a scan started before it is discarded */
	struct disc off[XP_OFF_COUNT];
	struct addr_obs addr[XP_ADDR_COUNT];
	struct xp_sched sched[XP_MAX_SCHED]; /* normal, then dirty cpu, then dirty io */
	uint32_t layout_obs;		     /* XP_LAYOUT_* from stop - hp_end */
	int32_t jit_layout;		     /* from the JIT emulator entry, -1 when unknown */
	int32_t dynsym_layout;		     /* erts_frame_layout via dlsym, -1 when unknown */
	uint32_t checks_run, checks_passed, checks_failed;
	/* Candidate word sets inside ErtsSchedulerData, narrowed by every observation. */
	uint64_t esd_type_bits, esd_no_bits, esd_dirty_no_bits;
	int esd_bits_init;
	/* Candidate 32-bit slots of Process.state: self (running) and probe (parked). */
	uint64_t state_bits[STATE_SLOTS / 64];
	int state_bits_init;
	uint64_t self_proc, self_hend_1, self_hend_2; /* hend[-1], hend[-2] of a scanned process */
	uint64_t ra[2];				      /* stop[0], stop[1] at a calib_self call */
	int32_t jit_caller_slot;		      /* which stop word resolved, -1 */
	int32_t msg_len_candidate; /* offset the queue-length scan found, -1 none, -2 several */
	uint64_t probe_proc, probe_pid, probe_atom;
	char probe_atom_text[32];
	struct probe_snap snap[PROBE_STAGES];
	uint64_t scan_ns;
	unsigned atom_candidates, jit_candidates, jit_entries;
	unsigned codeix_words; /* words that stepped by one at every load (calib_codeix.c) */
};

/* priv_data. */
struct agent {
	ErlNifMutex *lock; /* guards calib and draft */
	struct facts facts;
	const struct xp_layout
	    *row; /* NULL for an unknown release: publish discovered values only */
	struct calib calib;
	struct xp_agent_block draft;
	uint64_t instance; /* generation of this library instance's load (orders instances) */
	uint64_t published_generation;
	int calibrated; /* a calibration finished since this instance was loaded (or inherited) */
	uint64_t max_normal_ns; /* longest normal-scheduler call, updated atomically */
	/* Normal-scheduler calls during which the OS preempted the thread (an involuntary
	 * switch): their time is the machine's, not the call's; kept out of max_normal_ns. */
	uint64_t preempted_calls, max_preempted_ns;
	uint64_t max_ns[NIF_COUNT]; /* longest call per NIF (dirty ones too) */
	uint64_t calls;
	struct spies *spies;   /* spy.c; swapped under lock, stopped by whoever swapped it out */
	struct codeix *codeix; /* calib_codeix.c: the diff under way, taken by its steps */
	struct events *events; /* tracer_nif.c: the event tracer, made at load; NULL without */
};

/* extrospect_nif.c, for the NIFs defined elsewhere (spy_nif.c): per-call timing, and
 * republishing the block (caller holds a->lock; 0 or -ESTALE when a newer instance published). */
void agent__timed(struct agent *a, enum nif_id id, uint64_t t0);
uint64_t agent__now_ns(void);
int agent__publish(struct agent *a, uint64_t generation);

/* spy_nif.c */
ERL_NIF_TERM spy_nif__start(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM spy_nif__stop(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM spy_nif__info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

/* tracer_nif.c: the event tracer of this instance (its rings and control thread) and the
 * erl_tracer callbacks. n_threads: the VM's schedulers of every type. */
struct events;
int events__new(ErlNifEnv *env, unsigned n_threads, struct events **out);
void events__free(struct events *e);
void events__region(const struct events *e, struct xp_tracer_region *r);
ERL_NIF_TERM events_nif__enabled(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM events_nif__trace(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM events_nif__report(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM events_nif__info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

/* calib.c: recording evidence (on a->calib: caller holds agent->lock). */
void calib__reset(struct calib *c);
void calib__found(struct calib *c, enum xp_off_id id, int64_t value, const char *note);
void calib__table_ok(struct calib *c, const struct xp_layout *row, enum xp_off_id id,
		     const char *note);
void calib__fail(struct calib *c, enum xp_off_id id, enum xp_reason why, const char *note);
/* A search over words for one that matches: its index, or one of these. */
#define CALIB_NOT_FOUND (-1)
#define CALIB_AMBIGUOUS (-2)
/* A match at word k: the first one found, or ambiguous when there already was one. */
void calib__hit(int *slot, int k);
/* The outcome of a search: found at k (value), else failed as not found or ambiguous. */
void calib__record(struct calib *c, enum xp_off_id id, int k, int64_t value, const char *note);
void calib__check(struct calib *c, uint32_t bit, int ok);
/* The offset to use now: discovered, else the table's, else -1. */
int32_t calib__off(const struct calib *c, const struct xp_layout *row, enum xp_off_id id);
/* Resolve a candidate bit set: one bit -> found, table value among several -> table_ok. */
void calib__from_bits(struct calib *c, const struct xp_layout *row, enum xp_off_id id,
		      const uint64_t *bits, unsigned nbits, unsigned unit, const char *note);

/* How many bytes of a Process struct the scans read. */
size_t calib__scan_bytes(const struct xp_layout *row);

/* sizeof(Process) against the 'proc' fix-alloc byte counts Erlang read. */
void calib__sizeof(struct calib *c, const struct xp_layout *row, const uint64_t *used, unsigned n);

#endif /* XP_AGENT_H */
