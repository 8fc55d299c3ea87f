/* Sampling a VM: perf events on its scheduler threads, and each sample resolved into the Erlang
 * process it belongs to and its mixed native + Erlang stack (otp-internals.md "Design
 * implications", per-sample algorithm), added to an aggregate. Every sample is either kept,
 * excluded by a filter or idle rule, or dropped with a counted reason. Does not own: reports, the
 * command line. */
#ifndef XP_SAMPLER_H
#define XP_SAMPLER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "aggregate.h"
#include "erlang_stack.h"
#include "kcapture.h"
#include "perf.h"
#include "procdict.h"
#include "skid.h"
#include "target.h"
#include "unwind.h"

enum sampler_drop {
	DROP_NO_USER_REGS = 0,	 /* sampled with no user registers */
	DROP_UNKNOWN_THREAD,	 /* not a thread we sampled on purpose */
	DROP_PROCESS_UNREADABLE, /* the current Process could not be read or did not validate */
	DROP_STACK_UNREADABLE,	 /* the Erlang stack could not be read */
	DROP_COUNT
};

/* One kept sample as the sampler resolved it, for consumers beyond the aggregate (blame, sched,
 * the skid summary). Pointers are valid only during the callback. */
enum sample_kind {
	SAMPLE_ERLANG = 0, /* a process was running: Erlang stack walked */
	SAMPLE_NO_PROCESS, /* scheduler time without a process (idle, spinning, aux work) */
};

/* Why the in-kernel capture, on, held no copy of a sample's process. */
enum not_captured {
	NOT_CAPTURED_NO_RECORD = 0, /* no record for the sample: a full ring, or its copy failed */
	NOT_CAPTURED_OTHER,	    /* its record copied another process (r13 in C code, no
				     * scheduler known to ask) */
	NOT_CAPTURED_COUNT,
};

struct sample_record {
	const struct perf_sample *ps;	  /* tid, cpu, time (CLOCK_MONOTONIC), ip */
	const struct target_sched *sched; /* NULL: a thread that is not a scheduler */
	enum sample_kind kind;
	uint32_t group;		/* aggregate group id (process or label) */
	const uint32_t *frames; /* aggregate frame ids, root (outermost) first */
	uint32_t nframes;
	uint32_t nerlang;	/* frames[0..nerlang) are Erlang/JIT frames, the rest native */
	uint64_t process;	/* Process address (SAMPLE_ERLANG) */
	uint64_t read_delay_ns; /* Process fields were read this long after the sample (0: the
				   capture copied them) */
	bool contradicted;	/* a later read disagreed with the sample (skid summary only) */
	bool scheduler_work; /* the scheduler worked for the process, parked at its resume point */
	bool exiting; /* the process was exiting: no Erlang stack left ("[process exiting]") */
	/* A dirty scheduler ran a system task for the process (ERTS_PSFLG_DIRTY_RUNNING_SYS),
	 * parked at its resume point ("[dirty system task]"). */
	bool dirty_task;
	/* The process was being garbage collected (ERTS_PSFLG_GC): "[garbage collection]". */
	bool gc;
};

typedef void (*sample_record_fn)(const struct sample_record *r, void *ctx);

/* What a process's samples are grouped under (--group). */
enum sample_group {
	GROUP_NAME = 0, /* what it is: registered name, else '$initial_call', else initial call */
	GROUP_PID,	/* one root per process: "<0.123.0> name" */
	GROUP_NONE,	/* one root for every process */
};

struct sampler_opts {
	uint32_t freq_hz;
	double duration_s; /* 0: until stopped */
	enum perf_event_kind event;
	bool all_threads;	 /* every thread of the VM, not just schedulers */
	bool include_idle;	 /* keep samples with no Erlang process */
	bool only_erlang;	 /* drop native frames */
	bool fold_recursion;	 /* one frame "f [recursive xN]" for N consecutive f frames */
	bool lines;		 /* reserved: file:line in frame names */
	const char *erlang_pid;	 /* "<0.123.0>" or NULL */
	const char *name;	 /* registered name or NULL */
	bool skid;		 /* re-read what the sample saw, to count contradictions */
	bool keep_priority;	 /* run.c: do not rank the sampler above the VM */
	bool no_bpf;		 /* no in-kernel capture (kcapture.h) */
	bool user_only;		 /* no samples taken in the kernel */
	enum sample_group group; /* the root each process's samples go under */
	bool erlang_names;	 /* names as Erlang prints them, not in Elixir form */
	bool labels;		 /* stacks kept apart by pid, name and scheduler (pprof) */
	/* pstack's snapshot: a sample or two per thread is all it wants, so each thread gets the
	 * smallest ring, cheap to set up whatever the number of CPUs (no ring per CPU). */
	bool snapshot;
	sample_record_fn on_record; /* may be NULL: called for every kept sample */
	void *record_ctx;
	/* May be NULL: each sampled thread's switches off and on its CPU (perf.h), given
	 * record_ctx; record --ring and --format trace tell preemption from a blocked thread. */
	perf_switch_fn on_switch;
};

#define SAMPLER_UNRESOLVED_KEPT 4

struct sampler_stats {
	uint64_t samples, kept, excluded_idle, excluded_filter;
	uint64_t dropped[DROP_COUNT];
	uint64_t erlang;		       /* samples with an Erlang stack walked */
	uint64_t estack_end[ESTACK_END_COUNT]; /* how those walks ended */
	/* The walks that ended unresolved, by the first word of each that named no function (or
	 * the sampled pc, code the map does not name): the first SAMPLER_UNRESOLVED_KEPT such
	 * words, with how many walks and where it lies (sampler__unnamed_where); walks whose word
	 * was none of those in unresolved_more. */
	struct sampler_unresolved {
		uint64_t ra, n;
		char where[96];
	} unresolved[SAMPLER_UNRESOLVED_KEPT];
	uint64_t unresolved_more;
	uint64_t native_reached_jit, native_stopped; /* native samples: unwound into JIT or not */
	/* Native samples on a normal scheduler whose unwind stopped short of JIT code, by why:
	 * kept under their process (from the capture) with their callers marked unknown. */
	uint64_t unwind_cut[UNWIND_STOP_COUNT];
	/* Stacks deeper than the copies whose rest, read later, no longer matched them at the
	 * seam (the process had returned past it, or was garbage collected): cut where the copy
	 * ends, "[truncated: ...]" at the root. */
	uint64_t deep_stale;
	/* Walks that reached the stack bottom only from another start than the first inferred
	 * (try_alternatives in sampler.c). */
	uint64_t alternative_start;
	/* Native samples under a fragment called on the runtime stack, whose caller was found in
	 * the fragment's frame there (sampler.c runtime_caller). */
	uint64_t runtime_fragment;
	/* JIT samples in the yield test's fragment, named by the function that yields there
	 * (sampler.c yield_caller). */
	uint64_t yield_test;
	/* Native samples unwound through the capture's copy of a C stack deeper than perf's. */
	uint64_t native_extended;
	/* Native samples whose process's Erlang stack could not be read (its heap freed under it):
	 * kept as that process's, "[Erlang callers unknown: stack unreadable]". */
	uint64_t stack_unreadable_kept;
	/* Samples in the scheduler loop while it named a process (signals, system tasks, GC at
	 * schedule time): kept as that process's. */
	uint64_t system_task;
	/* Samples of a dirty scheduler running a system task for a process (a collection too large
	 * for a normal scheduler): kept as that process's, at its resume point; how many of those
	 * had the process's state read after the sample (no capture). */
	uint64_t dirty_task, dirty_task_late;
	/* Walks of a stack read after the sample that missed its bottom while the process's stop
	 * or heap, read again, had moved since (sampler.c moved_since): counted as moved on. */
	uint64_t moved_reread;
	/* Samples labelled [garbage collection] by the process's state word (ERTS_PSFLG_GC). */
	uint64_t gc_state;
	/* Of those, copied while a collection on a delayed heap was ending: the stack already in
	 * the new heap, the bounds a freed fragment's (process__bounds_from_span_moved); walked
	 * from stop. */
	uint64_t gc_moved;
	/* The same read after the sample (no capture), a dirty collection's: kept without callers.
	 */
	uint64_t gc_moved_late;
	/* Of those, copied while the collection shrank the heap's block in place (in mremap, the
	 * stack already moved to the new end, the bounds the old block's): walked from there. */
	uint64_t gc_remapped;
	/* Samples of a process whose exit the scheduler continued in JIT code (its heap, messages,
	 * links freed): no Erlang stack left; kept as that process's, "[process exiting]". */
	uint64_t exiting;
	/* Process identities read, by how their '$initial_call' read went (procdict.h). */
	uint64_t pdict[PDICT_RESULT_COUNT];
	uint64_t jit_refreshes;
	/* The JIT map in use after the last refresh: its entries and ranges, the ranges of purged
	 * modules it dropped (OTP 25 never unlinks them: jitmap__extend), and those of code purged
	 * before its walk that it kept for samples taken before it (27+: jitmap__carry). */
	uint64_t jit_entries, jit_ranges, jit_pruned, jit_carried;
	uint64_t maps_refreshes; /* files mapped since attach were found and reported */
	struct skid_stats skid;	 /* delays always; contradictions with opts.skid */
	/* In-kernel capture: on when kcapture_why is empty; the Erlang samples whose Process and
	 * stack came from it. */
	uint64_t captured;
	/* ... and the process samples it held no copy for, by why (NOT_CAPTURED_*). */
	uint64_t not_captured[NOT_CAPTURED_COUNT];
	char kcapture_why[600];
	uint64_t kernel; /* samples taken in the kernel on a thread's behalf, kept as [kernel] */
	double elapsed_s;
};

struct sampler;

/* What the per-sample algorithm takes from outside the VM's memory, for capture.c and replay.c.
 * Replay: each set source replaces the live one (the unwinder, the in-kernel capture, native
 * frame names and their modules). Capture: each saw_* is told what a live source gave. begin and
 * end bracket every sample. All may be NULL; none is set in `record`, `top`, ... */
struct sampler_hooks {
	void *ctx;
	void (*unwind)(void *ctx, const struct perf_sample *ps, struct unwind_result *out);
	const struct kcap_rec *(*capture)(void *ctx, const struct perf_sample *ps);
	int (*name)(void *ctx, const struct unwind_frame *f, char *buf, size_t len);
	const char *(*module)(void *ctx, uint64_t pc);
	void (*saw_unwind)(void *ctx, const struct unwind_result *ur);
	void (*saw_capture)(void *ctx, const struct kcap_rec *k);
	void (*saw_name)(void *ctx, const struct unwind_frame *f, int rc, const char *name);
	void (*saw_module)(void *ctx, uint64_t pc, const char *module);
	void (*begin)(void *ctx, const struct perf_sample *ps);
	void (*end)(void *ctx, const struct sampler *s);
};

int sampler__new(struct target *t, const struct sampler_opts *opts, struct agg *agg,
		 struct sampler **out, char *err, size_t errlen);
/* Poll once (up to timeout_ms) and resolve what arrived. 0, or -ESRCH when the VM is gone. */
int sampler__poll(struct sampler *s, int timeout_ms);
const struct sampler_stats *sampler__stats(const struct sampler *s);
const struct perf_stats *sampler__perf_stats(const struct sampler *s);
/* The native unwinder's and the in-kernel capture's counters (zero without a capture). */
void sampler__more_stats(const struct sampler *s, struct unwind_stats *unw, struct kcap_stats *kc);
/* How many threads have a perf event open. */
size_t sampler__nthreads(const struct sampler *s);
const char *sampler__drop_name(enum sampler_drop d);
void sampler__free(struct sampler *s);
/* Bring the JIT map the sampler shares with its target up to date now, when the VM registered or
 * purged code since it was read (t->jit may be extended in place or replaced: hold no jit_range
 * across it). Whoever else reads t->jit while a sampler runs refreshes it through here. */
void sampler__refresh_code(struct sampler *s);

/* Swap the aggregate samples go to (continuous recording): from the next sample on, new
 * receives them; the caller owns the old one. Caches of the old one's ids are emptied. */
void sampler__swap_agg(struct sampler *s, struct agg *new_agg);
/* With opts.labels, each stack is tagged (agg__add_tagged) with an interned label set
 * (agg__labelset): "pid=<0.1.0>", "registered_name=x" or "initial_call=m:f/1", and
 * "scheduler=normal 2" (or dirty_cpu, dirty_io), each present when known, joined by
 * AGG_LABEL_SEP. */

/* sampler_src.c: hooks for a live sampler (capture.c), set before its first poll. */
void sampler__set_hooks(struct sampler *s, const struct sampler_hooks *h);
/* The bytes of the last sample's perf stack copy the Erlang stack was taken from (the rest was
 * only the native unwinder's): what a capture keeps of it. */
uint64_t sampler__stack_used(const struct sampler *s);
/* E of the last sample's stack read from its copies ([E, hend)), 0 when none was. */
uint64_t sampler__stack_e(const struct sampler *s);
/* A sampler with no perf events, unwinder or in-kernel capture: every sample is handed to
 * sampler__resolve_one and served by h (replay.c). No JIT map or maps refresh. */
int sampler__new_replay(struct target *t, const struct sampler_opts *opts, struct agg *agg,
			const struct sampler_hooks *h, struct sampler **out, char *err,
			size_t errlen);
/* Resolve one sample exactly as a live poll does. */
void sampler__resolve_one(struct sampler *s, const struct perf_sample *ps);

#endif /* XP_SAMPLER_H */
