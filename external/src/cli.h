/* Command-line parsing for the sampler: the command, its options and the target pid, with the
 * help text and its examples. Does not own: running commands (main.c). */
#ifndef XP_CLI_H
#define XP_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

enum cli_command {
	CLI_NONE = 0,
	CLI_INFO,
	CLI_RECORD,
	CLI_TOP,
	CLI_PSTACK,
	CLI_BLAME,
	CLI_SCHED,
	CLI_PERFMAP,
	CLI_INJECT,
	CLI_CAPTURE,
	CLI_WATCH
};
enum cli_format { CLI_FMT_SVG = 0, CLI_FMT_COLLAPSED, CLI_FMT_SPEEDSCOPE };

struct cli_opts {
	enum cli_command command;
	pid_t pid;
	bool json;     /* info */
	bool no_agent; /* all */
	/* record and top */
	uint32_t freq_hz;
	double duration_s;
	bool cycles, all_threads, include_idle, only_erlang;
	const char *erlang_pid, *name;
	const char *output; /* record, capture */
	enum cli_format format;
	unsigned limit;	       /* top, blame, sched: rows; capture: samples kept */
	bool skid_summary;     /* top, record, blame */
	bool keep_priority;    /* sampling commands: do not raise the sampler's priority */
	bool no_bpf;	       /* sampling commands: no in-kernel capture */
	bool verbose;	       /* sampling commands: the sampler's own counters in the summary */
	bool lines;	       /* record, top, blame: file:line in Erlang frame names */
	bool all;	       /* pstack: every process */
	bool stacks;	       /* blame: whole Erlang stacks */
	bool follow;	       /* perf-map: keep the map current */
	const char *perf_data; /* perf-map: mark the JIT mapping anonymous in this perf.data */
	char **functions;      /* blame: the native functions (argv) */
	size_t nfunctions;
	const char *node, *cookie, *cookie_file, *code_path; /* inject */
	uint64_t interval_ns; /* watch: --rate as a snapshot interval */
	bool watch_poll;      /* watch --method poll: the sampler reads the struct, no spy */
};

enum cli_result { CLI_RUN = 0, CLI_HELP, CLI_VERSION, CLI_USAGE_ERROR };

/* Parse argv. On CLI_USAGE_ERROR, err holds a one-line message. */
enum cli_result cli__parse(int argc, char **argv, struct cli_opts *opts, char *err, size_t errlen);
void cli__help(FILE *f, enum cli_command command);

#endif /* XP_CLI_H */
