/* The command table. See table.h. Rows are in the order `extrospect --help` lists them. Also
 * `info`, whose rendering is report/info.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "info.h"
#include "table.h"

static const char info__usage[] =
    "Usage: extrospect info [--json] [--no-agent] PID\n"
    "\n"
    "Describe a running BEAM VM: OTP release and erts version, emulator flavour, frame layout,\n"
    "whether the extrospect agent is loaded, every scheduler thread with its OS thread id, the\n"
    "key addresses and ERTS offsets with where each came from (agent, dynsym, scan, table),\n"
    "and the result of the sampler's own cross-checks. Works on VMs in chroots and containers:\n"
    "their files are read through /proc/PID/root.\n"
    "\n"
    "With the agent it also checks the JIT map against the VM's own module ranges table\n"
    "(r[the_active_code_index], published by the agent): every live module range must be one\n"
    "JIT module's code. It prints the active code index, the counts (ranges, matched, ranges\n"
    "with no JIT module, JIT modules not in the table: old code or other) and a one-line\n"
    "verdict: \"pass: ...\", \"FAIL: ...\" (also a failed check code_ranges) or \"skipped: why\".\n"
    "\n"
    "Options:\n"
    "  --json        print one JSON object (keys documented in README.md)\n"
    "  --no-agent    ignore the agent: show what is known without it\n"
    "\n"
    "Examples:\n"
    "  extrospect info $(pgrep -f beam.smp | head -1)\n"
    "  extrospect info --json 4242 | jq '.schedulers[] | select(.type == \"normal\")'\n"
    "  extrospect info --no-agent 4242     # compare with what the agent verified\n"
    "  extrospect info --json 4242 | jq .code_ranges   # the module table against the JIT map\n"
    "\n"
    "Environment:\n"
    "  EXTROSPECT_NO_BUILTIN_LAYOUT=1  ignore the built-in table (tests of the fail-closed path)\n";

/* info: what attach found, as text or JSON. */
static int cmd__info(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop,
		     char *err, size_t errlen)
{
	target__check_codeix(t);
	if (o->json)
		info__print_json(t, stdout);
	else
		info__print_text(t, stdout);
	if (fflush(stdout) != 0) {
		snprintf(err, errlen, "cannot write output: %s", strerror(errno));
		return -EIO;
	}
	return 0;
}

#define SAMPLES (CO_NO_AGENT | CO_SAMPLING | CO_DURATION | CO_ONLY_ERLANG)

static const struct command commands[] = {
    {.name = "info",
     .synopsis =
	 "info PID      versions, flavour, frame layout, agent, schedulers, JIT map, checks",
     .opts = CO_NO_AGENT | CO_JSON,
     .limit = 20,
     .usage = info__usage,
     .run = cmd__info},
    {.name = "top",
     .synopsis = "top PID       the hottest Erlang functions and the busiest processes, live",
     .opts = SAMPLES | CO_LIMIT | CO_SKID_LINES,
     .limit = 20,
     .usage = top__usage,
     .help = HELP_SAMPLING_IN,
     .run = cmd__top,
     .catches_stop = true},
    {.name = "record",
     .synopsis =
	 "record PID    sample into a flame graph or a pprof profile, once or every interval",
     .opts = SAMPLES | CO_OUTPUT | CO_FORMAT | CO_SKID_LINES | CO_CONTINUOUS,
     .limit = 20,
     .usage = record__usage,
     .help = HELP_SAMPLING_IN,
     .run = cmd__record,
     .catches_stop = true},
    {.name = "pstack",
     .synopsis = "pstack PID    what every scheduler (or, with --all, every process) is doing now",
     .opts = CO_NO_AGENT | CO_JSON | CO_ONLY_ERLANG | CO_ALL,
     .limit = 20,
     .usage = pstack__usage,
     .run = cmd__pstack,
     .catches_stop = true},
    {.name = "heap",
     .synopsis = "heap PID      the memory of every process: heaps, binaries, queues (--sort)",
     .opts = CO_NO_AGENT | CO_JSON | CO_LIMIT | CO_SORT | CO_DURATION,
     .limit = 20,
     .usage = heap__usage,
     .run = cmd__heap,
     .catches_stop = true},
    {.name = "alloc",
     .synopsis = "alloc PID     the allocators: carriers, blocks, free, fragmentation (--sort)",
     .opts = CO_NO_AGENT | CO_JSON | CO_LIMIT | CO_SORT | CO_DURATION,
     .limit = 20,
     .usage = alloc__usage,
     .run = cmd__alloc,
     .catches_stop = true},
    {.name = "blame",
     .synopsis =
	 "blame PID FUNCTION...  which Erlang code and processes lead into a native function",
     .opts = SAMPLES | CO_LIMIT | CO_SKID_LINES | CO_STACKS | CO_FUNCTIONS,
     .limit = 20,
     .usage = blame__usage,
     .help = HELP_SAMPLING_AFTER,
     .run = cmd__blame,
     .catches_stop = true},
    {.name = "sched",
     .synopsis = "sched PID     how work spreads over schedulers and CPUs; NIFs that run too long",
     .opts = SAMPLES | CO_LIMIT | CO_JSON,
     .limit = 20,
     .usage = sched__usage,
     .help = HELP_SAMPLING_AFTER,
     .run = cmd__sched,
     .catches_stop = true},
    {.name = "events",
     .synopsis =
	 "events PID    processes born and dying, message waits, GC pauses, run-queue waits",
     .opts = CO_EVENTS,
     .limit = 10,
     .usage = events__usage,
     .run = cmd__events,
     .catches_stop = true},
    {.name = "perf-map",
     .synopsis = "perf-map PID  write /tmp/perf-PID.map so perf names Erlang code, no restart",
     .opts = CO_NO_AGENT | CO_DURATION | CO_PERFMAP,
     .limit = 20,
     .usage = perfmap__usage,
     .run = cmd__perfmap,
     .catches_stop = true},
    {.name = "inject",
     .synopsis = "inject --node NAME@HOST  load the agent into a running distributed node",
     .opts = CO_NODE,
     .limit = 20,
     .usage = inject__usage,
     .run_detached = cmd__inject,
     .catches_stop = true},
    {.name = "capture",
     .synopsis =
	 "capture PID   record samples and what resolving them read, for offline replay tests",
     .opts = SAMPLES | CO_OUTPUT | CO_LIMIT,
     .limit = 300,
     .usage = capture__usage,
     .help = HELP_SAMPLING_IN,
     .run = cmd__capture,
     .catches_stop = true},
    {.name = "watch",
     .synopsis = "watch PID --erlang-pid P  one process's wall time: running, runnable, waiting "
		 "(where),\n                gc, suspended, exiting, from the agent's spy threads",
     .opts = CO_WATCH | CO_JSON | CO_DURATION | CO_FORMAT,
     .limit = 20,
     .usage = watch__usage,
     .run = cmd__watch,
     .catches_stop = true},
};

const struct command *command__find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(name, commands[i].name) == 0)
			return &commands[i];
	}
	return NULL;
}

const struct command *command__at(size_t index)
{
	return index < sizeof(commands) / sizeof(commands[0]) ? &commands[index] : NULL;
}

void command__help(const struct command *c, FILE *f)
{
	const char *at = strstr(c->usage, "%s");

	if (c->help == HELP_SAMPLING_IN && at) {
		/* Written in pieces, not as a format: the text is not a literal here. */
		fwrite(c->usage, 1, (size_t)(at - c->usage), f);
		fputs(cmd__sampling_usage, f);
		fputs(at + 2, f);
	} else if (c->help == HELP_SAMPLING_AFTER)
		fprintf(f, "%s\n%s", c->usage, cmd__sampling_usage);
	else
		fputs(c->usage, f);
}
