/* What `extrospect sched` collects from the samples (sched.c) and prints (sched_print.c). */
#ifndef XP_SCHED_VIEW_H
#define XP_SCHED_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "aggregate.h"
#include "classify.h"
#include "cli.h"
#include "run.h"
#include "target.h"
#include "tally.h"

#define MAX_CPUS    1024
#define LONG_RUN_NS 1000000ull /* a NIF run longer than this is flagged */
#define RUN_CALLERS 16
#define NO_CALLER   UINT32_MAX
#define NAME_LEN    512

/* Consecutive samples of one normal scheduler in one NIF for one process. The calling Erlang
 * function of each sample is kept: a sample read after the process left the NIF can show a
 * later stack, so the caller reported is the one most samples of the flagged runs agree on. */
struct nif_run {
	bool active;
	uint32_t nif_frame, group;
	uint64_t first, last, samples;
	uint32_t callers[RUN_CALLERS]; /* frame ids, NO_CALLER when none */
	uint32_t ncallers;
};

struct sched_stat {
	uint64_t n, cls[CLASS_COUNT];
	struct tally *procs;
	uint64_t *cpus; /* samples per CPU */
	uint32_t last_cpu;
	uint64_t moves, last_time;
	struct nif_run run;
};

struct long_run {
	uint64_t runs, samples, longest_ns;
	uint64_t most_samples; /* in one run */
	struct tally *callers;
};

/* Busy wait per scheduler type (sched_spin.c). */
struct spin_type {
	uint64_t samples, running, spin, syscall, other, unknown;
};
struct spin_leaf {
	uint32_t frame, type;
	bool unknown; /* in a "process unknown" sample */
	uint64_t n;
};
struct spin_view {
	struct spin_type type[3]; /* by enum xp_sched_type */
	struct spin_leaf *leaf;	  /* no-process samples not yet judged, by leaf frame */
	size_t nleaf;
	uint32_t *loop; /* frames that call sched_yield: the scheduler's wait loop */
	size_t nloop;
};

struct sched_view {
	const struct cli_opts *o;
	struct target *t;
	struct agg *agg;
	struct classify *cls;
	struct sched_stat *st; /* one per t->sched */
	struct tally *nif_normal, *nif_dirty, *moves;
	struct tally *runs; /* "nif\tprocess" -> runs; details in run_info */
	struct {
		char *key;
		struct long_run v;
	} * run_info;
	size_t nrun_info;
	uint32_t *proc_sched; /* per group id: scheduler index + 1, 0: not seen */
	size_t nproc_sched;
	uint64_t period_ns, other_threads;
	struct spin_view spin;
	int err;
};

struct json;
void sched_spin__add(struct sched_view *v, const struct sample_record *rec);
void sched_spin__finish(struct sched_view *v);
void sched_spin__free(struct spin_view *sv);
void sched_spin__print_text(const struct sched_view *v, const struct run_ctx *ctx, FILE *f);
void sched_spin__print_json(const struct sched_view *v, const struct run_ctx *ctx, struct json *j);
void sched__print_text(struct sched_view *v, const struct run_ctx *ctx, FILE *f);
void sched__print_json(struct sched_view *v, const struct run_ctx *ctx, FILE *f);

#endif /* XP_SCHED_VIEW_H */
