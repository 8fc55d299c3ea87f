/* The sampler's state, shared by its files: sampler.c (the per-sample algorithm: which process,
 * where E is), sampler_stack.c (reading the stack's words), sampler_frames.c (turning a resolved
 * sample into named frames and a group, filters, the aggregate and the record consumer) and
 * sampler_src.c (the unwinder and the capture, or a replay's hooks). Not for use outside them. */
#ifndef XP_SAMPLER_INT_H
#define XP_SAMPLER_INT_H

#include "callsite.h"
#include "kcapture.h"
#include "process.h"
#include "sampler.h"

/* The most of one Erlang stack read for a sample: 1 MiB, a non-tail recursion some 40,000 frames
 * deep (3 words a frame); a deeper stack is walked from the top and cut at the root, marked. */
#define STACK_CAP_BYTES (1024u * 1024)
/* perf's user-stack copy per sample when the in-kernel capture runs (it copies the rest). */
#define PERF_STACK_CAPTURED 2048u
/* Copied words compared again beside a part of a stack read live (read_stack). */
#define SEAM_BYTES  64
#define IDENT_SLOTS 4096 /* process identity cache (open addressing) */
#define SITE_SLOTS  4096 /* call-site classification cache */
#define NAME_SLOTS  8192 /* native frame name cache: naming through libdw is slow */
#define MEMO_SLOTS  8	 /* stack walks kept, by process (a hash of its address) */
/* A stack shallower than this is walked plainly: keeping its walk costs more than it saves (at
 * 9,973 Hz on the bench workload, 4-19 % more sampler CPU). */
#define MEMO_MIN_WORDS 256
#define MAX_FRAMES     (ESTACK_MAX_FRAMES + UNWIND_MAX_FRAMES + 2)
/* JIT map re-walks when its descriptor changed: at most this often from the polling loop, and
 * this often when a sample lands in code the map does not name. A walk costs 10-50 ms on a
 * VM with a few hundred modules, while samples queue up: keep them rare. */
#define JIT_REFRESH_POLL_NS (1000 * 1000000ull)
#define JIT_REFRESH_MISS_NS (100 * 1000000ull)
#define JIT_RETRY_NS	    (5 * 1000000ull)   /* a walk that raced a purge; head checks */
#define JIT_CHECK_NS	    (250 * 1000000ull) /* the descriptor read from the polling loop */
#define MAPS_REFRESH_NS	    (1000 * 1000000ull)
#define LEARN_ESDP_TRIES    1000 /* JIT samples asked for their scheduler's data, at most */
#define LEARN_POLL_NS	    (1000 * 1000000ull) /* ... in the first second, read every LEARN_POLL_MS */
#define LEARN_POLL_MS	    1

enum site_kind { SITE_UNKNOWN = 0, SITE_PLAIN, SITE_ESTACK };

struct ident {
	uint64_t addr, pid;
	uint32_t group;
	uint32_t plabels; /* opts.labels: the process's label set id + 1 (pid, name), 0 none */
	bool used;
};

struct site {
	uint64_t ra;
	enum site_kind kind;
};

/* A native function's frame id by unwinder__name_key's key and size. */
struct fn_name {
	uint64_t key, size;
	uint32_t id;
	bool used, dirty_main;
};

#define FIXED_SLOTS 16 /* sampler.fixed */

struct native_name {
	uint64_t pc;
	uint32_t id;
	bool activation, used;
	bool dirty_main; /* named erts_dirty_process_main (a dirty scheduler's loop) */
};

struct sampler {
	struct target *t;
	struct sampler_opts opts;
	struct agg *agg;
	struct perf_session *perf;
	struct unwinder *unw;
	struct process_reader pr;
	struct estack_cfg ecfg;
	struct sampler_stats st;
	struct ident ident[IDENT_SLOTS];
	struct site sites[SITE_SLOTS];
	struct callsite *calls;	    /* the call-site check and its caches */
	struct kcapture *kc;	    /* NULL: no in-kernel capture (st.kcapture_why says why) */
	const struct kcap_rec *cap; /* the sample's capture of its process, or NULL */
	uint32_t learn_tries;	    /* learn_esdp() attempts so far */
	uint64_t learn_until;	    /* CLOCK_MONOTONIC ns: poll often until then while learning */
	struct native_name names[NAME_SLOTS];
	struct fn_name fn_names[NAME_SLOTS]; /* by unwinder__name_key */
	/* A JIT range's frame id + 1 (0: not yet), by its index in the map (without --lines):
	 * njit_ids of them, set to 0 when the map is replaced or re-read (its ranges are others
	 * then), and the array sized to the map and emptied at the next use. */
	uint32_t *jit_ids;
	size_t njit_ids;
	const struct jitmap *jit_ids_map; /* the map they are for */
	/* The ids of the fixed frames ("[kernel]", "[garbage collection]"), by their literal's
	 * address, valid in their names_epoch: interned once, not at every sample. */
	struct {
		const char *text;
		uint64_t epoch;
		uint32_t id;
	} fixed[FIXED_SLOTS];
	uint64_t *words;    /* STACK_CAP_BYTES scratch */
	const uint64_t *sw; /* the stack's words as read: words, or the one copy holding them all */
	uint32_t frames[MAX_FRAMES];
	uint32_t plabels; /* opts.labels: the current sample's process label set + 1, 0 none */
	struct estack_result er;     /* the sample's walk (large: never on the stack) */
	struct estack_result er_alt; /* ... from another start (try_alternatives) */
	/* The last walk of a process's stack, by its Process address: samples of a few processes
	 * interleave. With each, its frames' ids, root first: the frames a walk took from the one
	 * before are its first ones, with the same ids (names_epoch: the aggregate's they are). */
	struct estack_memo memo[MEMO_SLOTS];
	struct memo_ids {
		uint32_t *ids; /* ESTACK_MAX_FRAMES */
		size_t n;
		uint64_t names_epoch;
	} memo_ids[MEMO_SLOTS];
	int memo_slot;		      /* the sample's walk's, -1: none (another start was kept) */
	uint64_t names_epoch;	      /* new with each aggregate and JIT map: frame ids change */
	bool live_read;		      /* the last read_stack read memory beyond the copy */
	bool top_live;		      /* ... and its first words among them */
	bool heap_moved;	      /* the last sample_stack found the heap moved since */
	uint8_t lea_disp;	      /* disp8 of `lea rsp,[rbx-X]`: -x_reg_array */
	struct jit_descriptor jdesc;  /* as of the JIT map in use */
	uint64_t jit_tried_ns;	      /* last re-walk of the JIT map */
	uint64_t jit_walked_ns;	      /* when the map in use was walked (a re-walk's start) */
	uint64_t jit_checked_ns;      /* last read of its descriptor from the polling loop */
	uint64_t jit_head_checked_ns; /* last check of its newest entry (jitmap__head_current) */
	uint64_t maps_tried_ns;	      /* last re-read of /proc/PID/maps */
	struct proc_maps *maps;	      /* the newest maps read, when re-read since attach */
	char filter_pid[32];
	struct sampler_hooks hooks; /* capture or replay (sampler_src.c), else all NULL */
	bool replay;		    /* sampler__new_replay: no perf, unwinder or refresh */
	uint64_t stack_used;	    /* sampler__stack_used */
	uint64_t runtime_used;	    /* of perf's copy, what runtime_caller read (sampler.c) */
	uint64_t stack_e;	    /* sampler__stack_used */
};

/* E and the stack words from E to hend at s->sw (sampler_stack.c). *e is rsp for a sample
 * in JIT code, c_p->stop for a parked process, 0 for a sample in native code (E is then found
 * from the call site). 0, or -EFAULT when no E or no words could be had. */
int sampler_stack__read(struct sampler *s, const struct perf_sample *ps,
			const struct unwind_result *ur, const struct process_view *p, uint64_t *e,
			uint64_t *fp, size_t *nwords, bool *complete);
/* The words of [e, hend) at s->sw: in the sample's copy or the capture's where one holds them all,
 * else copied into s->words from both, the rest read live. */
int sampler_stack__read_at(struct sampler *s, const struct perf_sample *ps, uint64_t e,
			   uint64_t hend, size_t *nwords, bool *complete);

bool sampler_frames__filtered_out(struct sampler *s, struct process_view *p);
/* A sample with no process: labelled by its thread, kept only with --include-idle. known: that
 * the scheduler ran no process is known (else "process unknown"). */
void sampler_frames__label(struct sampler *s, struct sample_record *rec,
			   const struct jit_range *leaf, const struct unwind_result *ur,
			   bool known);
/* A shared fragment the leaf called on the runtime stack (sampler.c runtime_caller): the
 * native frames return into it, and it returns to the leaf; or the yield test's fragment the
 * leaf entered to be scheduled out (yield_caller). leaf_pc: where the leaf stands, the call's
 * return address less one, or the address the leaf resumes at. */
struct leaf_via {
	const struct jit_range *frag;
	uint64_t leaf_pc;
};

/* Erlang frames outermost first, then the leaf JIT frame (and the fragment it called on the
 * runtime stack, when via), then native frames. */
void sampler_frames__erlang(struct sampler *s, struct sample_record *rec, struct process_view *p,
			    const struct estack_result *er, const struct jit_range *leaf,
			    const struct leaf_via *via, bool unnamed,
			    const struct unwind_result *ur);
/* A sample of a known process whose Erlang callers are unknown for the reason given (a label
 * such as "native unwind cut at 128 frames"): its native frames under the process, below leaf
 * (a parked process's resume point, or NULL) and rec's task labels. */
void sampler_frames__unknown_callers(struct sampler *s, struct sample_record *rec,
				     struct process_view *p, const char *why,
				     const struct jit_range *leaf, const struct unwind_result *ur);

/* sampler_src.c: the sources beside memory, live or from the hooks. */
void sampler_src__unwind(struct sampler *s, const struct perf_sample *ps, unwind_is_jit_fn is_jit,
			 struct unwind_result *ur);
const struct kcap_rec *sampler_src__capture(struct sampler *s, const struct perf_sample *ps);
int sampler_src__name(struct sampler *s, const struct unwind_frame *f, char *buf, size_t len);
const char *sampler_src__module(struct sampler *s, uint64_t pc);

/* sampler_jit.c: CLOCK_MONOTONIC in ns; the JIT map re-walked when the descriptor changed (at
 * most every min_ns); a pc looked up in it, then in the maps re-read, *unnamed when neither
 * names it; the walker set to check unaligned top return addresses at their call site. */
uint64_t sampler__now_ns(void);
void sampler__refresh_jit(struct sampler *s, uint64_t min_ns);
const struct jit_range *sampler__lookup_jit(struct sampler *s, uint64_t pc, uint64_t time,
					    bool *unnamed);
void sampler__verify_returns(struct sampler *s);
/* Where a word that named no function lies, for the summary: in a JIT range that is no function
 * (its name), in a mapped file (name+offset), in anonymous memory, or unmapped. */
void sampler__unnamed_where(const struct sampler *s, uint64_t addr, char *buf, size_t len);

/* sampler.c: one perf sample resolved, between the hooks (perf_session__poll's callback); the
 * capture told to look up this scheduler's current_process at the sample, once its data is
 * known and checked. */
void sampler__on_sample(const struct perf_sample *ps, void *ctx);
void sampler__watch_sched(struct sampler *s, const struct target_sched *sch);

#endif /* XP_SAMPLER_INT_H */
