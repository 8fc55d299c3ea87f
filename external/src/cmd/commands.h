/* The sampling commands, `record` and `top`, over an attached target. Each returns 0,
 * TARGET_EGONE when the VM exited mid-run (after writing what it had), or a negative errno with
 * err set. Does not own: attaching, exit codes (main.c). */
#ifndef XP_COMMANDS_H
#define XP_COMMANDS_H

#include <signal.h>
#include <stddef.h>

#include "cli.h"
#include "report/report.h"
#include "sampler.h"
#include "target.h"

int cmd__record(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
		size_t errlen);
int cmd__top(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	     size_t errlen);
/* A usage error found only after attaching (blame: a name or alias the attached VM cannot show):
 * main.c maps it to exit status 2. */
#define CMD_EUSAGE (-1100)

/* record --every (continuous.c): one pprof profile per interval into -o DIR/ and/or --push. */
int cmd__record_every(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop,
		      char *err, size_t errlen);
/* What a pprof profile of this target says beside its samples (comment is the caller's
 * buffer); the wall clock in ns since the epoch. */
void cmd__pprof_meta(const struct cli_opts *o, const struct target *t, struct pprof_meta *m,
		     char *comment, size_t commentlen);
int64_t cmd__wall_ns(void);

/* The sampler options the command line asked for (sampling commands share them). */
void cmd__sampler_opts(const struct cli_opts *o, struct sampler_opts *so);
/* pstack.c */
int cmd__pstack(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
		size_t errlen);
/* heap.c */
int cmd__heap(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	      size_t errlen);
/* heap.c: the column a --sort name means, -1 when none (cli.c checks the option with it). */
int heap__col_of(const char *name);
/* alloc_cmd.c */
int cmd__alloc(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	       size_t errlen);
/* alloc_cmd.c: the column a --sort name means for alloc, -1 when none. */
int alloc__col_of(const char *name);
/* blame.c */
int cmd__blame(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	       size_t errlen);
/* sched.c */
int cmd__sched(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	       size_t errlen);
/* events/events.c */
int cmd__events(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
		size_t errlen);
extern const char events__usage[];
/* events: the agent refused to trace, or another sampler holds its tracer (exit status 10). */
#define EVENTS_EREFUSED (-1201)
/* perfmap_cmd.c */
int cmd__perfmap(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
		 size_t errlen);
/* perfmap_cmd.c: `perf-map --perf-data FILE PID`, which needs no live VM. Returns a process exit
 * code. */
int cmd__perfmap_fix_data(const char *path, pid_t pid);
/* capture_cmd.c */
int cmd__capture(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
		 size_t errlen);
/* watch.c: one process's wall time from a spy thread's snapshots. */
int cmd__watch(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	       size_t errlen);
/* inject.c: needs no attached target. Returns a process exit code (main.c's EXIT_*). */
int cmd__inject(const struct cli_opts *o, volatile sig_atomic_t *stop);

/* Each command's --help text, in the command's own file; how it combines with the sampling
 * options is in the command table (table.c). */
extern const char pstack__usage[], heap__usage[], blame__usage[], sched__usage[], perfmap__usage[],
    inject__usage[], record__usage[], top__usage[], capture__usage[], watch__usage[],
    alloc__usage[];
/* The sampling options, shared by the sampling commands' --help (commands.c). */
extern const char cmd__sampling_usage[];

#endif /* XP_COMMANDS_H */
