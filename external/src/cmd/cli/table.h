/* The command table: every command's name, the line --help shows for it, the options it
 * accepts, its own --help and what runs it. cli.c parses and prints help with it, main.c
 * dispatches with it: adding a command is one row here (and its own file). Does not own:
 * parsing option values (cli.c), exit codes (main.c, exitcode.h). */
#ifndef XP_TABLE_H
#define XP_TABLE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct cli_opts;
struct target;

/* Option groups a command accepts (--help always). */
enum command_opts {
	CO_NO_AGENT = 1u << 0,	  /* --no-agent */
	CO_JSON = 1u << 1,	  /* --json */
	CO_SAMPLING = 1u << 2,	  /* the sampling options: -F, --event, --threads, --erlang-pid,
				   * --name, --include-idle, --keep-priority, --no-bpf, -v */
	CO_DURATION = 1u << 3,	  /* -d */
	CO_ONLY_ERLANG = 1u << 4, /* --only-erlang */
	CO_OUTPUT = 1u << 5,	  /* -o FILE, required */
	CO_FORMAT = 1u << 6,	  /* --format, else from the output file's name */
	CO_LIMIT = 1u << 7,	  /* -n */
	CO_SKID_LINES = 1u << 8,  /* --skid-summary, --lines, --fold-recursion */
	CO_ALL = 1u << 9,	  /* --all */
	CO_STACKS = 1u << 10,	  /* --stacks */
	CO_PERFMAP = 1u << 11,	  /* --follow, --perf-data */
	CO_NODE = 1u << 12,	  /* --node, --cookie, --cookie-file, --code-path; no PID */
	CO_FUNCTIONS = 1u << 13,  /* FUNCTION... after the PID */
	CO_WATCH = 1u << 14,	  /* --method; -F is a snapshot interval; -o FILE optional;
				   * exactly one of --erlang-pid and --name */
	CO_SORT = 1u << 15,	  /* --sort COLUMN, --watch SECONDS */
	CO_CONTINUOUS = 1u << 16, /* --every, --keep, --push, --app-name, --label; -o repeatable */
	CO_EVENTS = 1u << 17, /* events' own: -d, --json, --erlang-pid, --name, --top, --sample */
	CO_OUTPUT_OPT = 1u << 18, /* -o FILE, optional: stdout without it */
};

/* How a command's --help text and the sampling options combine. */
enum command_help {
	HELP_PLAIN = 0,	     /* the text alone */
	HELP_SAMPLING_IN,    /* the text is a format: the sampling options go in its %s */
	HELP_SAMPLING_AFTER, /* the text, a blank line, the sampling options */
};

/* A command attached to a VM: 0, TARGET_EGONE when the VM exited mid-run, or a negative error
 * with err set (main.c maps it to an exit code). */
typedef int (*command_run_fn)(const struct cli_opts *o, struct target *t,
			      volatile sig_atomic_t *stop, char *err, size_t errlen);
/* A command that attaches to no VM: returns a process exit code. */
typedef int (*command_detached_fn)(const struct cli_opts *o, volatile sig_atomic_t *stop);

struct command {
	const char *name;
	const char *synopsis; /* its line in `extrospect --help` */
	unsigned opts;	      /* enum command_opts */
	unsigned limit;	      /* -n when not given */
	const char *usage;    /* its --help */
	enum command_help help;
	command_run_fn run;		  /* attached; NULL when detached */
	command_detached_fn run_detached; /* no VM */
	bool catches_stop; /* Ctrl-C and SIGTERM ask it to stop and report (else they end it) */
};

/* The command named name, or NULL. */
const struct command *command__find(const char *name);
/* The commands, in the order --help lists them. */
const struct command *command__at(size_t index);
/* A command's --help. */
void command__help(const struct command *c, FILE *f);

#endif /* XP_TABLE_H */
