/* Command-line parsing and help. See cli.h. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_main[] =
    "Usage: extrospect COMMAND [OPTIONS] PID\n"
    "\n"
    "A production-safe profiler for the Erlang VM. It reads a running VM from outside by OS\n"
    "pid: no restart, no tracing, no ptrace, no signals. The extrospect application (the\n"
    "agent), when loaded in the VM, publishes verified layout facts; without it the sampler\n"
    "falls back to beam.smp's exported symbols and a built-in per-version table.\n"
    "\n"
    "Commands:\n"
    "  info PID      versions, flavour, frame layout, agent, schedulers, JIT map, checks\n"
    "\n"
    "Options:\n"
    "  -h, --help    show help (also: extrospect COMMAND --help)\n"
    "  -V, --version print the sampler's version\n"
    "\n"
    "Exit codes:\n"
    "  0 success            1 internal error          2 usage error\n"
    "  3 no such process    4 not a BEAM VM            5 permission denied\n"
    "  6 unsupported OTP (no built-in layout and no agent)\n"
    "  7 the VM exited while being read\n";

static const char usage_info[] =
    "Usage: extrospect info [--json] [--no-agent] PID\n"
    "\n"
    "Describe a running BEAM VM: OTP release and erts version, emulator flavour, frame layout,\n"
    "whether the extrospect agent is loaded, every scheduler thread with its OS thread id, the\n"
    "key addresses and ERTS offsets with where each came from (agent, dynsym, scan, table),\n"
    "and the result of the sampler's own cross-checks. Works on VMs in chroots and containers:\n"
    "their files are read through /proc/PID/root.\n"
    "\n"
    "Options:\n"
    "  --json        print one JSON object (keys documented in README.md)\n"
    "  --no-agent    ignore the agent: show what is known without it\n"
    "\n"
    "Examples:\n"
    "  extrospect info $(pgrep -f beam.smp | head -1)\n"
    "  extrospect info --json 4242 | jq '.schedulers[] | select(.type == \"normal\")'\n"
    "  extrospect info --no-agent 4242     # compare with what the agent verified\n"
    "\n"
    "Environment:\n"
    "  EXTROSPECT_NO_BUILTIN_LAYOUT=1  ignore the built-in table (tests of the fail-closed path)\n";

void cli__help(FILE *f, enum cli_command command)
{
	fputs(command == CLI_INFO ? usage_info : usage_main, f);
}

static int parse_pid(const char *s, pid_t *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT_MAX)
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

static enum cli_result parse_info(int argc, char **argv, struct cli_opts *opts, char *err,
				  size_t errlen)
{
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"no-agent", no_argument, NULL, 'A'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			opts->json = true;
			break;
		case 'A':
			opts->no_agent = true;
			break;
		case 'h':
			return CLI_HELP;
		default:
			snprintf(err, errlen, "info: unknown option '%s'", argv[optind - 1]);
			return CLI_USAGE_ERROR;
		}
	}
	if (optind >= argc) {
		snprintf(err, errlen, "info: missing PID (see extrospect info --help)");
		return CLI_USAGE_ERROR;
	}
	if (optind + 1 < argc) {
		snprintf(err, errlen, "info: unexpected argument '%s'", argv[optind + 1]);
		return CLI_USAGE_ERROR;
	}
	if (parse_pid(argv[optind], &opts->pid)) {
		snprintf(err, errlen, "info: invalid pid '%s': expected a positive OS process id",
			 argv[optind]);
		return CLI_USAGE_ERROR;
	}
	return CLI_RUN;
}

enum cli_result cli__parse(int argc, char **argv, struct cli_opts *opts, char *err, size_t errlen)
{
	const char *cmd;

	memset(opts, 0, sizeof(*opts));
	if (argc < 2) {
		snprintf(err, errlen, "missing command (see extrospect --help)");
		return CLI_USAGE_ERROR;
	}
	cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0)
		return CLI_HELP;
	if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0)
		return CLI_VERSION;
	if (strcmp(cmd, "info") == 0) {
		opts->command = CLI_INFO;
		return parse_info(argc - 1, argv + 1, opts, err, errlen);
	}
	snprintf(err, errlen, "unknown command '%s' (see extrospect --help)", cmd);
	return CLI_USAGE_ERROR;
}
