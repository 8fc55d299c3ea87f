/* The sampling loop shared by the sampling commands (record, top, blame, sched, capture): attach
 * a sampler, poll until the duration ends, a stop is requested (Ctrl-C) or the VM exits, report
 * progress on a TTY, and print the summary of what was kept, excluded and dropped; with the
 * sampler options the command line asked for and what a pprof profile says beside its samples.
 * Does not own: the output formats. */
#ifndef XP_RUN_H
#define XP_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "aggregate.h"
#include "cli.h"
#include "kcapture.h"
#include "report/report.h"
#include "sampler.h"
#include "target.h"

/* What *stop holds: Ctrl-C / SIGTERM ask to stop (RUN_STOP); SIGHUP, for record --every, to
 * end the interval now (RUN_ROTATE); SIGUSR1 for the summary so far (RUN_REPORT). The last two
 * are set back to 0 by whoever takes them (run__take). */
#define RUN_STOP   1
#define RUN_ROTATE 2
#define RUN_REPORT 3
#define RUN_DUMP   4 /* SIGUSR2, for record --ring: a dump now (flight.c takes it) */

struct run_ctx {
	struct target *t;
	struct sampler_opts opts;
	struct agg *agg;
	volatile sig_atomic_t *stop;
	bool progress; /* a progress line on stderr */
	bool verbose;  /* the sampler's own counters in the summary (--verbose) */
	/* Called about once a second while sampling (top's live view), may be NULL. */
	void (*tick)(struct run_ctx *ctx, const struct sampler_stats *st);
	void *user;
	const struct sampler_hooks *hooks; /* capture: given to the sampler, may be NULL */
	bool labels;			   /* stacks kept apart by their pprof labels */
	/* Called after every poll with the live sampler (record --every rotates its aggregate),
	 * may be NULL; a negative errno ends the run with it (err set). */
	int (*turn)(struct run_ctx *ctx, struct sampler *s);
	bool target_exited;	    /* set when the VM went away mid-run */
	bool target_execd;	    /* ... by exec'ing another program (same pid) */
	struct sampler_stats final; /* the sampler's numbers at the end */
	struct perf_stats final_perf;
	struct unwind_stats final_unwind;
	struct kcap_stats final_kcap; /* zero without the in-kernel capture */
	/* This process's CPU (all its threads, run__cpu_s) when sampling began (attach done) and
	 * when it ended: --verbose says what attaching, sampling and the report each cost. */
	double cpu_began_s, cpu_ended_s;
	char err[256];
};

/* 0 (also when the VM exited: see target_exited), or a negative errno with err set. */
int run__sample(struct run_ctx *ctx);
/* Take the request what (RUN_ROTATE, RUN_REPORT) from *stop: true when it was there, and *stop is
 * 0 again. With the signals blocked, so that a stop asked in between is not lost. */
bool run__take(volatile sig_atomic_t *stop, sig_atomic_t what);
/* Rank this process a few nice levels above the VM (when allowed): it gets a CPU as soon as it
 * wakes, not when a busy scheduler thread's slice ends (events drains its rings on time). */
void run__raise_priority(pid_t vm);
/* The summary: samples, kept, excluded, dropped by reason, lost records, stack validity. */
void run__summary(const struct run_ctx *ctx, const char *what, FILE *f);

/* The sampler options the command line asked for (sampling commands share them). */
void cmd__sampler_opts(const struct cli_opts *o, struct sampler_opts *so);
/* What a pprof profile of this target says beside its samples (comment is the caller's
 * buffer); the wall clock in ns since the epoch. */
void cmd__pprof_meta(const struct cli_opts *o, const struct target *t, struct pprof_meta *m,
		     char *comment, size_t commentlen);
int64_t cmd__wall_ns(void);
/* The CPU this process has used, all its threads, user and system, in seconds. */
double run__cpu_s(void);
/* --verbose's last line, after the report is written and the sampling freed: the CPU since
 * sampling ended, and in all. */
void run__cpu_report(const struct run_ctx *ctx, FILE *f);
struct outfile;
/* The start of a command's output to path (its -o FILE): of opened (outfile__open: written whole
 * or not at all), or err says "cannot write PATH: why" and the error is returned. */
int cmd__open_output(struct outfile *of, const char *path, char *err, size_t errlen);
/* The end of a command's output: of (its -o FILE, open) closed, or stdout flushed (of NULL),
 * after the command's result rc; the VM exiting meanwhile (TARGET_EGONE) leaves a complete
 * document, kept. Says "wrote FILE" on stderr when it did; when writing failed, err says why and
 * that error is returned, else rc. */
int cmd__finish_output(struct outfile *of, const char *path, int rc, char *err, size_t errlen);
/* --watch -o FILE (heap, alloc): the readings go to path as they are taken, each flushed, so the
 * file holds every reading so far whenever the command stops. *out opened (created or
 * truncated), or err says "cannot write PATH: why" and the error is returned. */
int cmd__open_stream(const char *path, FILE **out, char *err, size_t errlen);
/* The end of --watch's readings, after the command's result rc: write_err (the negative errno
 * of a failed write to out, or 0) said in err as "cannot write PATH: why" (path NULL: stdout,
 * "output") and returned; then out closed when it is path's: "wrote FILE" on stderr, or, when
 * writing failed, err says why and -EIO is returned (else rc). */
int cmd__close_stream(FILE *out, const char *path, int write_err, int rc, char *err, size_t errlen);

#endif /* XP_RUN_H */
