/* What the command table (table.c) runs: every command's entry point and --help text, each
 * defined in its own room (record/record.c: record and top; heap/heap_cmd.c; ...). An entry point
 * returns 0, TARGET_EGONE when the VM exited mid-run (after writing what it had), or a negative
 * errno with err set. A header of declarations only, owned by no file: a room includes it to
 * define its entry point, the table to call it. Does not own: attaching, exit codes (main.c). */
#ifndef XP_COMMANDS_H
#define XP_COMMANDS_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

struct cli_opts;
struct target;

/* record/record.c */
int cmd__record(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
		size_t errlen);
int cmd__top(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	     size_t errlen);
/* A usage error found only after attaching (blame: a name or alias the attached VM cannot show):
 * main.c maps it to exit status 2. */
#define CMD_EUSAGE (-1100)

/* info_cmd.c */
int cmd__info(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	      size_t errlen);
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
    alloc__usage[], info__usage[];
/* The sampling options, shared by the sampling commands' --help (record/record.c). */
extern const char cmd__sampling_usage[];

#endif /* XP_COMMANDS_H */
