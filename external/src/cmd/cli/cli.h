/* Command-line parsing for the sampler: the command, its options and the target pid, with the
 * general help. Does not own: which command takes which options, and each command's help (the
 * command table, table.c), running commands (main.c). */
#ifndef XP_CLI_H
#define XP_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli_values.h"
#include "sample/sampler.h"
#include "table.h"

#define CLI_MAX_OUTPUTS 4 /* record: -o given up to this many times */
#define CLI_MAX_LABELS	8 /* record --push: --label given up to this many times */

struct cli_opts {
	const struct command *command; /* table.h; NULL before one is named */
	pid_t pid;
	bool json;     /* info */
	bool no_agent; /* all */
	/* record and top */
	uint32_t freq_hz;
	double duration_s;
	bool cycles, all_threads, include_idle, only_erlang, fold_recursion;
	const char *erlang_pid, *name;
	const char *output; /* record, capture: the first -o */
	enum cli_format format;
	/* record: every -o (one recording, several files) and its format */
	const char *outputs[CLI_MAX_OUTPUTS];
	enum cli_format formats[CLI_MAX_OUTPUTS];
	size_t noutputs;
	/* record, continuous: --every (0: one profile), --keep, --push, --app-name, --label */
	double every_s;
	unsigned keep;
	const char *push_url, *app_name;
	const char *labels[CLI_MAX_LABELS];
	size_t nlabels;
	/* record --ring (0: off), --after, --max-dumps, --min-gap, --trigger */
	uint64_t ring_ns, after_ns, min_gap_ns;
	unsigned max_dumps;
	struct trig_opts trig;
	unsigned limit;		 /* top, blame, sched: rows; capture: samples kept */
	bool skid_summary;	 /* top, record, blame */
	bool keep_priority;	 /* sampling commands: do not raise the sampler's priority */
	bool no_bpf;		 /* sampling commands: no in-kernel capture */
	bool user_only;		 /* sampling commands: no samples taken in the kernel */
	bool verbose;		 /* sampling commands: the sampler's own counters in the summary */
	bool lines;		 /* record, top, blame: file:line in Erlang frame names */
	bool all;		 /* pstack: every process */
	bool erlang_names;	 /* names as Erlang prints them, not in Elixir form */
	enum sample_group group; /* sampling commands: the root of a process's samples */
	const char *sort;	 /* heap: the column to sort by (checked: heap__col_of) */
	double watch_s;		 /* heap: seconds between readings (0: one reading) */
	bool stacks;		 /* blame: whole Erlang stacks */
	bool gc;		 /* blame --gc: gc, and garbage collection per process */
	bool follow;		 /* perf-map: keep the map current */
	const char *perf_data;	 /* perf-map: mark the JIT mapping anonymous in this perf.data */
	char **functions;	 /* blame: the native functions (argv) */
	size_t nfunctions;
	const char *node, *cookie, *cookie_file, *code_path; /* inject */
	uint64_t interval_ns;	 /* watch: --rate as a snapshot interval */
	bool watch_poll;	 /* watch --method poll: the sampler reads the struct, no spy */
	unsigned watch_cpu_hz;	 /* watch --cpu-hz: scheduler samples a second (0: the default) */
	bool watch_cpu_off;	 /* watch --cpu-hz 0: no scheduler sampler */
	uint64_t events_sample;	 /* events --sample N: one process in N (0: every one) */
	unsigned events_slowest; /* events --slowest N */
	bool events_uprobes;	 /* events --source uprobes */
};

/* CLI_MAN, CLI_COMPLETION: the build's --help-man and --help-completion (docgen.c). */
enum cli_result { CLI_RUN = 0, CLI_HELP, CLI_VERSION, CLI_USAGE_ERROR, CLI_MAN, CLI_COMPLETION };

/* Parse argv. On CLI_USAGE_ERROR, err holds a one-line message. */
enum cli_result cli__parse(int argc, char **argv, struct cli_opts *opts, char *err, size_t errlen);
/* The help of command, or the general help when NULL. */
void cli__help(FILE *f, const struct command *command);
/* The long options (without "--") command accepts, at most max of them; how many. */
size_t cli__option_names(const struct command *cmd, const char **names, size_t max);
/* docgen.c: a man page (roff) made of the same text as --help, and a bash completion script
 * made of the command table; both written at build time (CMakeLists.txt). */
void cli__man_page(FILE *f, const char *version);
void cli__bash_completion(FILE *f);

#endif /* XP_CLI_H */
