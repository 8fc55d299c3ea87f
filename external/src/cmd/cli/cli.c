/* Command-line parsing and the general help. See cli.h. */
#include <errno.h>
#include <stdio.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_values.h"
#include "commands.h"
#include "table.h"

static const char usage_head[] =
    "Usage: extrospect COMMAND [OPTIONS] PID\n"
    "\n"
    "A production-safe profiler for the Erlang VM. It reads a running VM from outside by OS\n"
    "pid: no restart, no tracing, no ptrace, no signals. The extrospect application (the\n"
    "agent), when loaded in the VM, publishes verified layout facts; without it the sampler\n"
    "falls back to beam.smp's exported symbols and a built-in per-version table.\n"
    "\n"
    "Commands:\n";

static const char usage_tail[] =
    "\n"
    "Options:\n"
    "  -h, --help    show help (also: extrospect COMMAND --help)\n"
    "  -V, --version print the version, git revision and supported OTP releases\n"
    "\n"
    "Exit codes:\n"
    "  0 success            1 internal error          2 usage error\n"
    "  3 no such process    4 not a BEAM VM            5 permission denied\n"
    "  6 unsupported OTP (no built-in layout and no agent; events: no agent)\n"
    "  7 the VM exited while being read\n"
    "  8 node or epmd unreachable (inject)  9 the node refused the cookie (inject)\n"
    "  10 perf-map refused to replace a map it did not write; events: the agent refused to\n"
    "     trace (another tracer on OTP 25-26, another sampler reading events)\n";

void cli__help(FILE *f, const struct command *command)
{
	const struct command *c;
	size_t i;

	if (command) {
		command__help(command, f);
		return;
	}
	fputs(usage_head, f);
	for (i = 0; (c = command__at(i)); i++)
		fprintf(f, "  %s\n", c->synopsis);
	fputs(usage_tail, f);
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

enum {
	OPT_JSON = 256,
	OPT_NO_AGENT,
	OPT_EVENT,
	OPT_THREADS,
	OPT_ERLANG_PID,
	OPT_NAME,
	OPT_ONLY_ERLANG,
	OPT_INCLUDE_IDLE,
	OPT_FORMAT,
	OPT_SKID,
	OPT_VERBOSE,
	OPT_LINES,
	OPT_ALL,
	OPT_STACKS,
	OPT_FOLLOW,
	OPT_NODE,
	OPT_COOKIE,
	OPT_COOKIE_FILE,
	OPT_CODE_PATH,
	OPT_PERF_DATA,
	OPT_KEEP_PRIORITY,
	OPT_NO_BPF,
	OPT_USER_ONLY,
	OPT_METHOD,
	OPT_CPU_HZ,
	OPT_SORT,
	OPT_WATCH,
	OPT_GROUP,
	OPT_ERLANG_NAMES,
	OPT_EVERY,
	OPT_KEEP,
	OPT_PUSH,
	OPT_APP_NAME,
	OPT_LABEL,
	OPT_GC,
	OPT_RING,
	OPT_AFTER,
	OPT_MAX_DUMPS,
	OPT_MIN_GAP,
	OPT_TRIGGER,
	OPT_FOLD_RECURSION,
	OPT_TOP,
	OPT_SAMPLE,
	OPT_SLOWEST,
	OPT_SOURCE
};

static const struct option longopts[] = {
    {"json", no_argument, NULL, OPT_JSON},
    {"no-agent", no_argument, NULL, OPT_NO_AGENT},
    {"rate", required_argument, NULL, 'F'},
    {"duration", required_argument, NULL, 'd'},
    {"event", required_argument, NULL, OPT_EVENT},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"erlang-pid", required_argument, NULL, OPT_ERLANG_PID},
    {"name", required_argument, NULL, OPT_NAME},
    {"only-erlang", no_argument, NULL, OPT_ONLY_ERLANG},
    {"fold-recursion", no_argument, NULL, OPT_FOLD_RECURSION},
    {"erlang-only", no_argument, NULL, OPT_ONLY_ERLANG},
    {"include-idle", no_argument, NULL, OPT_INCLUDE_IDLE},
    {"output", required_argument, NULL, 'o'},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"limit", required_argument, NULL, 'n'},
    {"skid-summary", no_argument, NULL, OPT_SKID},
    {"verbose", no_argument, NULL, 'v'},
    {"keep-priority", no_argument, NULL, OPT_KEEP_PRIORITY},
    {"no-bpf", no_argument, NULL, OPT_NO_BPF},
    {"user-only", no_argument, NULL, OPT_USER_ONLY},
    {"method", required_argument, NULL, OPT_METHOD},
    {"cpu-hz", required_argument, NULL, OPT_CPU_HZ},
    {"lines", no_argument, NULL, OPT_LINES},
    {"all", no_argument, NULL, OPT_ALL},
    {"stacks", no_argument, NULL, OPT_STACKS},
    {"gc", no_argument, NULL, OPT_GC},
    {"top", required_argument, NULL, OPT_TOP},
    {"sample", required_argument, NULL, OPT_SAMPLE},
    {"slowest", required_argument, NULL, OPT_SLOWEST},
    {"source", required_argument, NULL, OPT_SOURCE},
    {"follow", no_argument, NULL, OPT_FOLLOW},
    {"node", required_argument, NULL, OPT_NODE},
    {"cookie", required_argument, NULL, OPT_COOKIE},
    {"cookie-file", required_argument, NULL, OPT_COOKIE_FILE},
    {"code-path", required_argument, NULL, OPT_CODE_PATH},
    {"perf-data", required_argument, NULL, OPT_PERF_DATA},
    {"sort", required_argument, NULL, OPT_SORT},
    {"watch", required_argument, NULL, OPT_WATCH},
    {"group", required_argument, NULL, OPT_GROUP},
    {"erlang-names", no_argument, NULL, OPT_ERLANG_NAMES},
    {"every", required_argument, NULL, OPT_EVERY},
    {"keep", required_argument, NULL, OPT_KEEP},
    {"push", required_argument, NULL, OPT_PUSH},
    {"app-name", required_argument, NULL, OPT_APP_NAME},
    {"label", required_argument, NULL, OPT_LABEL},
    {"ring", required_argument, NULL, OPT_RING},
    {"after", required_argument, NULL, OPT_AFTER},
    {"max-dumps", required_argument, NULL, OPT_MAX_DUMPS},
    {"min-gap", required_argument, NULL, OPT_MIN_GAP},
    {"trigger", required_argument, NULL, OPT_TRIGGER},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* watch takes its own few options: the sampling group's others mean nothing to it. */
static bool watch_allows(int c)
{
	return c == 'h' || c == 'F' || c == 'd' || c == 'v' || c == OPT_JSON ||
	       c == OPT_ERLANG_NAMES || c == OPT_ERLANG_PID || c == OPT_NAME || c == OPT_METHOD ||
	       c == OPT_CPU_HZ || c == 'o' || c == OPT_FORMAT;
}

/* events: its own few (events.c's usage). */
static bool events_allows(int c)
{
	return c == 'h' || c == 'd' || c == OPT_JSON || c == OPT_ERLANG_NAMES ||
	       c == OPT_ERLANG_PID || c == OPT_NAME || c == OPT_TOP || c == OPT_SAMPLE ||
	       c == OPT_SLOWEST || c == OPT_SOURCE;
}

/* Which options each command accepts (its row's CO_* groups). */
static bool allowed(const struct command *cmd, int c)
{
	unsigned need;

	if (cmd->opts & CO_WATCH)
		return watch_allows(c);
	if (cmd->opts & CO_EVENTS)
		return events_allows(c);
	switch (c) {
	case 'h':
		return true;
	case OPT_NO_AGENT:
		need = CO_NO_AGENT;
		break;
	case OPT_JSON:
		need = CO_JSON;
		break;
	case 'o':
		need = CO_OUTPUT | CO_OUTPUT_OPT;
		break;
	case OPT_FORMAT:
		need = CO_FORMAT;
		break;
	case 'n':
		need = CO_LIMIT;
		break;
	case OPT_SKID:
	case OPT_LINES:
	case OPT_FOLD_RECURSION:
		need = CO_SKID_LINES;
		break;
	case OPT_ONLY_ERLANG:
		need = CO_ONLY_ERLANG;
		break;
	case OPT_ALL:
		need = CO_ALL;
		break;
	case OPT_ERLANG_NAMES:
		need = CO_SAMPLING | CO_ALL | CO_SORT;
		break;
	case OPT_STACKS:
	case OPT_GC:
		need = CO_STACKS;
		break;
	case OPT_RING:
	case OPT_AFTER:
	case OPT_MAX_DUMPS:
	case OPT_MIN_GAP:
	case OPT_TRIGGER:
		need = CO_CONTINUOUS;
		break;
	case OPT_SORT:
	case OPT_WATCH:
		need = CO_SORT;
		break;
	case OPT_FOLLOW:
	case OPT_PERF_DATA:
		need = CO_PERFMAP;
		break;
	case OPT_EVERY:
	case OPT_KEEP:
	case OPT_PUSH:
	case OPT_APP_NAME:
	case OPT_LABEL:
		need = CO_CONTINUOUS;
		break;
	case 'd':
		need = CO_DURATION;
		break;
	case OPT_METHOD:
	case OPT_CPU_HZ:
		need = CO_WATCH; /* watch's own (watch_allows): no other command takes them */
		break;
	case OPT_NODE:
	case OPT_COOKIE:
	case OPT_COOKIE_FILE:
	case OPT_CODE_PATH:
		need = CO_NODE;
		break;
	default: /* -F, -v, --event, --threads, --erlang-pid, --name, --include-idle, ... */
		need = CO_SAMPLING;
		break;
	}
	return (cmd->opts & need) != 0;
}

size_t cli__option_names(const struct command *cmd, const char **names, size_t max)
{
	size_t i, n = 0;

	for (i = 0; longopts[i].name && n < max; i++) {
		/* An alias ("--erlang-only") shares its value with the name listed before it. */
		if (i && longopts[i - 1].val == longopts[i].val)
			continue;
		if (allowed(cmd, longopts[i].val))
			names[n++] = longopts[i].name;
	}
	return n;
}

/* The option as the user wrote it, for messages. */
static const char *option_name(int c, const char *fallback, char *buf, size_t len)
{
	size_t i;

	for (i = 0; c >= 256 && longopts[i].name; i++) {
		if (longopts[i].val == c) {
			snprintf(buf, len, "--%s", longopts[i].name);
			return buf;
		}
	}
	if (c > 0 && c < 256 && c != '?' && c != ':') {
		snprintf(buf, len, "-%c", c);
		return buf;
	}
	return fallback;
}

/* What an option's value may be, for the message that refuses one. An option without a row is
 * named as the user would write it (option_name), never as another. */
static const struct {
	int c;
	const char *name; /* with what it takes */
} value_hints[] = {
    {'F', "-F/--rate (1 to 100000 samples a second)"},
    {'d', "-d/--duration (a duration, like 30, 30s, 500ms or 5m)"},
    {'n', "-n/--limit (1 to 10000, or all)"},
    {'o', "-o (given at most 4 times)"},
    {OPT_EVENT, "--event (cpu-clock or cycles)"},
    {OPT_THREADS, "--threads (schedulers or all)"},
    {OPT_ERLANG_PID, "--erlang-pid (like '<0.123.0>')"},
    {OPT_NODE, "--node (like name@host)"},
    {OPT_METHOD, "--method (spy or poll)"},
    {OPT_CPU_HZ, "--cpu-hz (0, or 1 to 100000)"},
    {OPT_GROUP, "--group (name, pid or none)"},
    {OPT_SORT, "--sort (heap: total, heap, old, frag, stack, bin, msgq, reds or memory; alloc: "
	       "carriers, blocks, free, largest or frag)"},
    {OPT_WATCH, "--watch (the time between readings, from 0.1s to 1d, like 5, 5s or 1m)"},
    {OPT_EVERY, "--every (an interval from 1s to 1d, like 60s, 5m or 1h)"},
    {OPT_KEEP, "--keep (a number of profiles, 1 or more)"},
    {OPT_PUSH, "--push (an http:// URL; for https use a local agent)"},
    {OPT_APP_NAME, "--app-name (no spaces or any of {}&?#=)"},
    {OPT_LABEL, "--label (KEY=VALUE, KEY a Prometheus label name, at most 8)"},
    {OPT_RING, "--ring (a duration from 1s to 1h, like 30s or 5m)"},
    {OPT_AFTER, "--after (a duration up to 10m, like 2s or 500ms; 0: none)"},
    {OPT_MIN_GAP, "--min-gap (a duration, like 10s)"},
    {OPT_MAX_DUMPS, "--max-dumps (a number of dumps, 1 or more)"},
    {OPT_TRIGGER, "--trigger (long-run=DURATION or gc=DURATION from 5ms to 1h, msgq=NAME:N or "
		  "runq=N, like long-run=200ms)"},
    {OPT_TOP, "--top (1 to 10000)"},
    {OPT_SAMPLE, "--sample (1 to 1000000: one process in N)"},
    {OPT_SLOWEST, "--slowest (1 to 1000)"},
    {OPT_SOURCE, "--source (tracer or uprobes)"},
    {OPT_FORMAT, "--format (svg, speedscope, collapsed, pprof or trace)"},
};

/* err: "invalid value 'ARG' for option NAME (what it takes)". */
static void invalid_value(const struct cli_opts *o, int c, const char *arg, char *err,
			  size_t errlen)
{
	const char *what = NULL;
	char name[32];
	size_t i;

	if (c == 'F' && o->command && (o->command->opts & CO_WATCH))
		what = "--rate (an interval from 100us to 1s, like 1ms, or snapshots per second)";
	for (i = 0; !what && i < sizeof(value_hints) / sizeof(value_hints[0]); i++) {
		if (value_hints[i].c == c)
			what = value_hints[i].name;
	}
	if (!what)
		what = option_name(c, "?", name, sizeof(name));
	snprintf(err, errlen, "invalid value '%s' for option %s", arg ? arg : "", what);
}

static int take_option(struct cli_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	uint64_t ns;
	double v;

	switch (c) {
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_NO_AGENT:
		o->no_agent = true;
		return 0;
	case OPT_ONLY_ERLANG:
		o->only_erlang = true;
		return 0;
	case OPT_FOLD_RECURSION:
		o->fold_recursion = true;
		return 0;
	case OPT_INCLUDE_IDLE:
		o->include_idle = true;
		return 0;
	case OPT_SKID:
		o->skid_summary = true;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	case OPT_KEEP_PRIORITY:
		o->keep_priority = true;
		return 0;
	case OPT_NO_BPF:
		o->no_bpf = true;
		return 0;
	case OPT_USER_ONLY:
		o->user_only = true;
		return 0;
	case OPT_LINES:
		o->lines = true;
		return 0;
	case OPT_ALL:
		o->all = true;
		return 0;
	case OPT_ERLANG_NAMES:
		o->erlang_names = true;
		return 0;
	case OPT_STACKS:
		o->stacks = true;
		return 0;
	case OPT_GC:
		o->gc = true;
		return 0;
	case OPT_FOLLOW:
		o->follow = true;
		return 0;
	case OPT_NODE:
		if (!strchr(arg, '@') || arg[0] == '@' || arg[strlen(arg) - 1] == '@')
			break;
		o->node = arg;
		return 0;
	case OPT_COOKIE:
		o->cookie = arg;
		return 0;
	case OPT_COOKIE_FILE:
		o->cookie_file = arg;
		return 0;
	case OPT_CODE_PATH:
		o->code_path = arg;
		return 0;
	case OPT_PERF_DATA:
		o->perf_data = arg;
		return 0;
	case OPT_SORT:
		/* Each command checks that the column is one of its own (heap.c, alloc_cmd.c). */
		if (heap__col_of(arg) < 0 && alloc__col_of(arg) < 0)
			break;
		o->sort = arg;
		return 0;
	case OPT_WATCH:
		if (cli__parse_duration(arg, 0.1, 86400, &ns))
			break;
		o->watch_s = (double)ns / 1e9;
		return 0;
	case 'o':
		if (o->noutputs >= CLI_MAX_OUTPUTS)
			break;
		o->outputs[o->noutputs++] = arg;
		o->output = o->outputs[0];
		return 0;
	case OPT_EVERY:
		if (cli__parse_duration(arg, 1, 86400, &ns))
			break;
		o->every_s = (double)ns / 1e9;
		return 0;
	case OPT_KEEP:
		if (cli__parse_number(arg, 1, 1000000, &v))
			break;
		o->keep = (unsigned)v;
		return 0;
	case OPT_PUSH:
		if (strncmp(arg, "http://", 7) != 0 || !arg[7])
			break;
		o->push_url = arg;
		return 0;
	case OPT_APP_NAME:
		if (!arg[0] || strpbrk(arg, "{}&?# ="))
			break;
		o->app_name = arg;
		return 0;
	case OPT_LABEL:
		if (o->nlabels >= CLI_MAX_LABELS || !cli__valid_label(arg))
			break;
		o->labels[o->nlabels++] = arg;
		return 0;
	case OPT_RING:
		if (cli__parse_duration(arg, 1, 3600, &o->ring_ns))
			break;
		return 0;
	case OPT_AFTER:
		if (strcmp(arg, "0") && cli__parse_duration(arg, 0.001, 600, &o->after_ns))
			break;
		o->after_ns = strcmp(arg, "0") ? o->after_ns : 1; /* 1 ns: none */
		return 0;
	case OPT_MIN_GAP:
		if (cli__parse_duration(arg, 0.001, 86400, &o->min_gap_ns))
			break;
		return 0;
	case OPT_MAX_DUMPS:
		if (cli__parse_number(arg, 1, 1000000, &v))
			break;
		o->max_dumps = (unsigned)v;
		return 0;
	case OPT_TRIGGER:
		if (cli__parse_trigger(arg, &o->trig))
			break;
		return 0;
	case OPT_METHOD:
		if (strcmp(arg, "spy") && strcmp(arg, "poll"))
			break;
		o->watch_poll = strcmp(arg, "poll") == 0;
		return 0;
	case OPT_CPU_HZ:
		if (strcmp(arg, "0") == 0) {
			o->watch_cpu_off = true;
			return 0;
		}
		if (cli__parse_number(arg, 1, 100000, &v))
			break;
		o->watch_cpu_hz = (unsigned)v;
		o->watch_cpu_off = false;
		return 0;
	case 'F':
		if (o->command && (o->command->opts & CO_WATCH)) {
			if (cli__parse_interval(arg, &o->interval_ns))
				break;
			return 0;
		}
		if (cli__parse_number(arg, 1, 100000, &v))
			break;
		o->freq_hz = (uint32_t)v;
		return 0;
	case 'd':
		if (cli__parse_duration(arg, 0.01, 1e7, &ns))
			break;
		o->duration_s = (double)ns / 1e9;
		return 0;
	case 'n':
	case OPT_TOP:
		if (c == 'n' && strcmp(arg, "all") == 0) { /* heap -n all: every process */
			o->limit = UINT_MAX;
			return 0;
		}
		if (cli__parse_number(arg, 1, 10000, &v))
			break;
		o->limit = (unsigned)v;
		return 0;
	case OPT_SAMPLE:
		if (cli__parse_number(arg, 1, 1000000, &v))
			break;
		o->events_sample = (uint64_t)v;
		return 0;
	case OPT_SLOWEST:
		if (cli__parse_number(arg, 1, 1000, &v))
			break;
		o->events_slowest = (unsigned)v;
		return 0;
	case OPT_SOURCE:
		if (strcmp(arg, "tracer") && strcmp(arg, "uprobes"))
			break;
		o->events_uprobes = strcmp(arg, "uprobes") == 0;
		return 0;
	case OPT_EVENT:
		if (strcmp(arg, "cpu-clock") && strcmp(arg, "cycles"))
			break;
		o->cycles = strcmp(arg, "cycles") == 0;
		return 0;
	case OPT_THREADS:
		if (strcmp(arg, "schedulers") && strcmp(arg, "all"))
			break;
		o->all_threads = strcmp(arg, "all") == 0;
		return 0;
	case OPT_ERLANG_PID:
		if (!cli__valid_erlang_pid(arg))
			break;
		o->erlang_pid = arg;
		return 0;
	case OPT_NAME:
		o->name = arg;
		return 0;
	case OPT_GROUP:
		if (strcmp(arg, "name") == 0)
			o->group = GROUP_NAME;
		else if (strcmp(arg, "pid") == 0)
			o->group = GROUP_PID;
		else if (strcmp(arg, "none") == 0)
			o->group = GROUP_NONE;
		else
			break;
		return 0;
	case OPT_FORMAT:
		if (strcmp(arg, "svg") == 0)
			o->format = CLI_FMT_SVG;
		else if (strcmp(arg, "speedscope") == 0)
			o->format = CLI_FMT_SPEEDSCOPE;
		else if (strcmp(arg, "collapsed") == 0)
			o->format = CLI_FMT_COLLAPSED;
		else if (strcmp(arg, "pprof") == 0)
			o->format = CLI_FMT_PPROF;
		else if (strcmp(arg, "trace") == 0)
			o->format = CLI_FMT_TRACE;
		else
			break;
		return 1; /* format given explicitly */
	}
	invalid_value(o, c, arg, err, errlen);
	return -EINVAL;
}

/* record --ring and what only it takes. */
static enum cli_result ring_args(struct cli_opts *o, const char *cmd, bool format_given, char *err,
				 size_t errlen)
{
	bool trig =
	    o->trig.long_run_ns || o->trig.gc_ns || o->trig.msgq_name[0] || o->trig.runq_len;

	if (!o->ring_ns) {
		if (o->after_ns || o->max_dumps || o->min_gap_ns || trig) {
			snprintf(err, errlen,
				 "%s: --after, --max-dumps, --min-gap and --trigger need --ring",
				 cmd);
			return CLI_USAGE_ERROR;
		}
		return CLI_RUN;
	}
	if (o->every_s || o->noutputs != 1 || format_given) {
		snprintf(err, errlen,
			 "%s --ring: writes its dumps into one directory: give -o DIR/ once (no "
			 "--every, no --format)",
			 cmd);
		return CLI_USAGE_ERROR;
	}
	o->after_ns = o->after_ns == 1 ? 0 : o->after_ns ? o->after_ns : 2000000000ull;
	return CLI_RUN;
}

/* record --every and what only it takes. */
static enum cli_result continuous_args(struct cli_opts *o, const char *cmd, bool format_given,
				       char *err, size_t errlen)
{
	if (ring_args(o, cmd, format_given, err, errlen) != CLI_RUN)
		return CLI_USAGE_ERROR;
	if (!o->every_s) {
		if (o->keep || o->push_url || o->app_name || o->nlabels) {
			snprintf(err, errlen,
				 "%s: --keep, --push, --app-name and --label need --every", cmd);
			return CLI_USAGE_ERROR;
		}
		return CLI_RUN;
	}
	if (o->noutputs > 1 || (format_given && o->format != CLI_FMT_PPROF)) {
		snprintf(err, errlen,
			 "%s --every: writes pprof profiles into one directory: give -o DIR/ once",
			 cmd);
		return CLI_USAGE_ERROR;
	}
	o->format = CLI_FMT_PPROF;
	if (!o->keep)
		o->keep = 24;
	return CLI_RUN;
}

/* inject takes a node, not a pid: a user who gives the pid every other command takes is told
 * so, and where to find the name (a node such as RabbitMQ's names itself once running, so its
 * command line need not hold it). */
static enum cli_result inject_args(int argc, char **argv, struct cli_opts *o, char *err,
				   size_t errlen)
{
	if (optind < argc && argv[optind][0] && !argv[optind][strspn(argv[optind], "0123456789")]) {
		snprintf(
		    err, errlen,
		    "inject: takes the node's name, not a pid: --node NAME@HOST (`epmd -names` "
		    "lists this host's nodes; RabbitMQ's is rabbit@HOSTNAME)");
		return CLI_USAGE_ERROR;
	}
	if (optind < argc) {
		snprintf(err, errlen, "inject: unexpected argument '%s'", argv[optind]);
		return CLI_USAGE_ERROR;
	}
	if (!o->node) {
		snprintf(err, errlen,
			 "inject: missing --node NAME@HOST (see extrospect inject --help)");
		return CLI_USAGE_ERROR;
	}
	if (o->cookie) {
		/* Every local user reads a command line (ps, /proc/PID/cmdline): SECURITY.md. */
		snprintf(err, errlen,
			 "inject: --cookie would show the cookie to every user on this host (ps, "
			 "/proc/PID/cmdline): give --cookie-file F, or set EXTROSPECT_COOKIE");
		return CLI_USAGE_ERROR;
	}
	return CLI_RUN;
}

static enum cli_result parse_command(int argc, char **argv, struct cli_opts *o, char *err,
				     size_t errlen)
{
	const char *cmd = argv[0];
	bool format_given = false;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hvF:d:o:n:", longopts, NULL)) != -1) {
		int rc;

		if (c == 'h')
			return CLI_HELP;
		if (c == '?' || c == ':' || !allowed(o->command, c)) {
			char name[32];

			snprintf(err, errlen, "%s: %s option '%s'", cmd,
				 c == ':' ? "missing value for" : "unknown",
				 option_name(c, argv[optind - 1], name, sizeof(name)));
			return CLI_USAGE_ERROR;
		}
		rc = take_option(o, c, optarg, err, errlen);
		if (rc < 0)
			return CLI_USAGE_ERROR;
		format_given |= rc == 1;
	}
	if (o->command->opts & CO_NODE)
		return inject_args(argc, argv, o, err, errlen);
	if (optind >= argc) {
		snprintf(err, errlen, "%s: missing PID (see extrospect %s --help)", cmd, cmd);
		return CLI_USAGE_ERROR;
	}
	if (o->command->opts & CO_FUNCTIONS) {
		o->functions = argv + optind + 1;
		o->nfunctions = (size_t)(argc - optind - 1);
		if (!o->nfunctions && !o->gc) {
			snprintf(err, errlen,
				 "blame: missing FUNCTION (e.g. erts_garbage_collect or gc; see "
				 "extrospect blame --help)");
			return CLI_USAGE_ERROR;
		}
		if (o->nfunctions && o->gc) {
			snprintf(err, errlen, "blame: --gc takes no FUNCTION (it blames gc)");
			return CLI_USAGE_ERROR;
		}
	} else if (optind + 1 < argc) {
		snprintf(err, errlen, "%s: unexpected argument '%s'", cmd, argv[optind + 1]);
		return CLI_USAGE_ERROR;
	}
	if (parse_pid(argv[optind], &o->pid)) {
		pid_t last;

		/* blame gc 4242: the functions after the pid, as its usage says. */
		if ((o->command->opts & CO_FUNCTIONS) && o->nfunctions &&
		    !parse_pid(argv[argc - 1], &last))
			snprintf(err, errlen,
				 "blame: the PID comes first: extrospect blame %s %s ... (see "
				 "extrospect blame --help)",
				 argv[argc - 1], argv[optind]);
		else
			snprintf(err, errlen,
				 "%s: invalid pid '%s': expected a positive OS process id", cmd,
				 argv[optind]);
		return CLI_USAGE_ERROR;
	}
	if ((o->command->opts & CO_WATCH) && !o->erlang_pid == !o->name) {
		snprintf(err, errlen, "watch: give one of --erlang-pid P or --name NAME");
		return CLI_USAGE_ERROR;
	}
	if ((o->command->opts & CO_OUTPUT) && !o->output && !(o->every_s && o->push_url)) {
		snprintf(err, errlen, "%s: missing -o %s (see extrospect %s --help)", cmd,
			 o->every_s ? "DIR/ or --push URL" : "FILE", cmd);
		return CLI_USAGE_ERROR;
	}
	if (o->noutputs > 1 && !(o->command->opts & CO_CONTINUOUS)) {
		snprintf(err, errlen, "%s: -o given more than once", cmd);
		return CLI_USAGE_ERROR;
	}
	for (size_t i = 0; i < o->noutputs; i++)
		o->formats[i] = format_given ? o->format : cli__format_from_name(o->outputs[i]);
	if (format_given && o->format == CLI_FMT_TRACE && !(o->command->opts & CO_CONTINUOUS)) {
		snprintf(err, errlen, "%s: --format trace is record's only", cmd);
		return CLI_USAGE_ERROR;
	}
	if ((o->command->opts & CO_FORMAT) && o->output)
		o->format = o->formats[0];
	return continuous_args(o, cmd, format_given, err, errlen);
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
	if (strcmp(cmd, "--help-man") == 0)
		return CLI_MAN;
	if (strcmp(cmd, "--help-completion") == 0)
		return CLI_COMPLETION;
	opts->freq_hz = 997;
	opts->command = command__find(cmd);
	if (opts->command) {
		opts->limit = opts->command->limit;
		return parse_command(argc - 1, argv + 1, opts, err, errlen);
	}
	snprintf(err, errlen, "unknown command '%s' (see extrospect --help)", cmd);
	return CLI_USAGE_ERROR;
}
