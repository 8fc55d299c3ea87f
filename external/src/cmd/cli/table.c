/* The command table. See table.h. Rows are in the order `extrospect --help` lists them. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "table.h"

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
     .opts = CO_NO_AGENT | CO_JSON | CO_ONLY_ERLANG | CO_ALL | CO_OUTPUT_OPT,
     .limit = 20,
     .usage = pstack__usage,
     .run = cmd__pstack,
     .catches_stop = true},
    {.name = "heap",
     .synopsis = "heap PID      the memory of every process: heaps, binaries, queues (--sort)",
     .opts = CO_NO_AGENT | CO_JSON | CO_LIMIT | CO_SORT | CO_DURATION | CO_OUTPUT_OPT,
     .limit = 20,
     .usage = heap__usage,
     .run = cmd__heap,
     .catches_stop = true},
    {.name = "alloc",
     .synopsis = "alloc PID     the allocators: carriers, blocks, free, fragmentation (--sort)",
     .opts = CO_NO_AGENT | CO_JSON | CO_LIMIT | CO_SORT | CO_DURATION | CO_OUTPUT_OPT,
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
