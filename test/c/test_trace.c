/* Unit tests for the timeline (external/src/report/trace.c) on synthetic samples: where runs
 * start and end (half a period out, halfway between neighbours, at a block or a wake-up from the
 * switch records), which gaps end a run (another process, 2.5 periods without a sample, time
 * blocked) and which do not (time preempted, samples of the scheduler's own loop, a name read
 * again differently, no sample while the switch records keep the thread on its CPU), how
 * uncertain an edge is (preempted between the last sample and a block), and that the JSON
 * validates (test/e2e/trace_check.py). Also keeps the browser test's fixture
 * test/e2e/speedscope/profile.trace.json equal to what the code writes (XP_UPDATE_FIXTURES=1
 * rewrites it). */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "report/trace.h"

#ifndef XP_FIXTURES_DIR
#define XP_FIXTURES_DIR "test/c/fixtures"
#endif
#define E2E_DIR XP_FIXTURES_DIR "/../../e2e"

#define T0   1795868400000000000ll /* 2026-11-28 09:40:00 UTC, ns */
#define MS   1000000ll
#define SRV  "<0.90.0> xp_stall_server"
#define SRV2 "<0.90.0> erlang:apply/2" /* the same pid, its name read again and missed */
#define WRK  "<0.91.0> worker"
#define IDLE "[normal scheduler: no process]"

static struct agg *agg;
static uint32_t f_server, f_slow, f_memcpy, f_gc, f_sched;

struct spec {
	double ms;
	uint32_t thread;
	const char *group;
	int stack; /* 0 server;slow, 1 server;slow;memcpy, 2 worker gc, 3 the scheduler's loop */
};

static const struct spec specs[] = {
    /* thread 0: the server 10..19, a worker 20..21, the server again at 30, blocked at 30.6
     * and woken at 39.8 (a new run), then 40, an idle sample, 42, 43 under another name for the
     * same pid (the name most samples had is the run's), and 47: no sample for 4 ms and no
     * switch (the sampling timer was late: the same run, 3 ms of it unsampled). */
    {10, 0, SRV, 0},
    {11, 0, SRV, 0},
    {12, 0, SRV, 1},
    {13, 0, SRV, 1},
    {14, 0, SRV, 0},
    {15, 0, SRV, 0},
    {16, 0, SRV, 0},
    {17, 0, SRV, 0},
    {18, 0, SRV, 0},
    {19, 0, SRV, 0},
    {20, 0, WRK, 2},
    {21, 0, WRK, 2},
    {30, 0, SRV, 0},
    {40, 0, SRV, 0},
    {41, 0, IDLE, 3},
    {42, 0, SRV, 0},
    {43, 0, SRV2, 0},
    {47, 0, SRV, 0},
    /* thread 1: the server 10..12, preempted 12.3..52.3, 53..54, blocked at 54.2, woken at 80,
     * sampled at 80.4 and 81, preempted 81.2..89, blocked at 89.3 (the process may have left
     * at 81.2: the end is uncertain by the 7.8 ms preempted). */
    {10, 1, SRV, 0},
    {11, 1, SRV, 0},
    {12, 1, SRV, 0},
    {53, 1, SRV, 0},
    {54, 1, SRV, 0},
    {80.4, 1, SRV, 0},
    {81, 1, SRV, 0},
};
#define NSPECS (sizeof(specs) / sizeof(specs[0]))

static struct trace_switch switches[] = {
    {T0 + 30600000, 0, TRACE_SWITCH_BLOCKED},	{T0 + 39800000, 0, TRACE_SWITCH_IN},
    {T0 + 12300000, 1, TRACE_SWITCH_PREEMPTED}, {T0 + 52300000, 1, TRACE_SWITCH_IN},
    {T0 + 54200000, 1, TRACE_SWITCH_BLOCKED},	{T0 + 80000000, 1, TRACE_SWITCH_IN},
    {T0 + 81200000, 1, TRACE_SWITCH_PREEMPTED}, {T0 + 89000000, 1, TRACE_SWITCH_IN},
    {T0 + 89300000, 1, TRACE_SWITCH_BLOCKED},
};

static const struct trace_thread threads[] = {{100, "scheduler 1"}, {101, "scheduler 2"}};

static uint32_t stacks[4][3];
static const uint32_t stack_len[4] = {2, 3, 2, 1};

static int setup(void)
{
	if (agg__new(&agg) || agg__frame(agg, "xp_stall:server/2", FRAME_ERLANG, &f_server) ||
	    agg__frame(agg, "xp_stall:rare_slow_path/1", FRAME_ERLANG, &f_slow) ||
	    agg__frame(agg, "memcpy", FRAME_NATIVE, &f_memcpy) ||
	    agg__frame(agg, "global::garbage_collect", FRAME_JIT_GLOBAL, &f_gc) ||
	    agg__frame(agg, "erts_schedule", FRAME_NATIVE, &f_sched))
		return -ENOMEM;
	stacks[0][0] = stacks[1][0] = f_server;
	stacks[0][1] = stacks[1][1] = f_slow;
	stacks[1][2] = f_memcpy;
	stacks[2][0] = f_server;
	stacks[2][1] = f_gc;
	stacks[3][0] = f_sched;
	return 0;
}

/* The input: samples in reverse order (the trace sorts them), with or without the switches. */
static void input(struct trace_input *in, struct trace_sample *s, bool with_switches)
{
	size_t i;

	for (i = 0; i < NSPECS; i++) {
		const struct spec *p = &specs[NSPECS - 1 - i];

		s[i] = (struct trace_sample){.time_ns = T0 + (int64_t)(p->ms * MS),
					     .thread = p->thread,
					     .process = p->group[0] == '<',
					     .gc = p->stack == 2,
					     .group = p->group,
					     .agg = agg,
					     .frames = stacks[p->stack],
					     .nframes = stack_len[p->stack]};
	}
	*in = (struct trace_input){.threads = threads,
				   .nthreads = 2,
				   .samples = s,
				   .nsamples = NSPECS,
				   .period_ns = 1000000,
				   .switches = with_switches ? switches : NULL,
				   .nswitches =
				       with_switches ? sizeof(switches) / sizeof(switches[0]) : 0,
				   .have_switches = with_switches,
				   .vm_pid = 4242,
				   .clock_note = "test"};
}

struct seen {
	char text[1024];
};

static int on_run(const struct trace_run *r, void *ctx)
{
	struct seen *s = ctx;
	size_t n = strlen(s->text);

	snprintf(s->text + n, sizeof(s->text) - n, "%u %s %.1f-%.1f%s%s", r->thread, r->group,
		 (double)(r->start_ns - T0) / MS, (double)(r->end_ns - T0) / MS,
		 r->gc_samples ? " gc" : "", r->preempted_ns ? " preempted" : "");
	n = strlen(s->text);
	if (r->start_unc_ns || r->end_unc_ns)
		snprintf(s->text + n, sizeof(s->text) - n, " unc %.1f/%.1f",
			 (double)r->start_unc_ns / MS, (double)r->end_unc_ns / MS);
	n = strlen(s->text);
	if (r->unsampled_ns)
		snprintf(s->text + n, sizeof(s->text) - n, " unsampled %.1f",
			 (double)r->unsampled_ns / MS);
	n = strlen(s->text);
	snprintf(s->text + n, sizeof(s->text) - n, ";");
	return 0;
}

static void test_runs(void)
{
	struct trace_sample s[NSPECS];
	struct trace_input in;
	struct seen seen = {""};

	input(&in, s, true);
	CHECK_INT("runs: returns 0", 0, report__trace_runs(&in, on_run, &seen));
	CHECK_STR("runs: with switches",
		  "0 " SRV " 9.5-19.5;0 " WRK " 19.5-21.5 gc;0 " SRV " 29.5-30.6;0 " SRV
		  " 39.8-47.5 unsampled 3.0;1 " SRV " 9.5-54.2 preempted;1 " SRV
		  " 80.0-89.3 unc 0.0/7.8;",
		  seen.text);
	/* Records lost: a switch may be missing, so 4 ms without a sample ends the run. */
	input(&in, s, true);
	in.records_lost = true;
	seen.text[0] = '\0';
	report__trace_runs(&in, on_run, &seen);
	CHECK_STR("runs: with switches, records lost",
		  "0 " SRV " 9.5-19.5;0 " WRK " 19.5-21.5 gc;0 " SRV " 29.5-30.6;0 " SRV
		  " 39.8-43.5;0 " SRV " 46.5-47.5;1 " SRV " 9.5-54.2 preempted;1 " SRV
		  " 80.0-89.3 unc 0.0/7.8;",
		  seen.text);
	input(&in, s, false);
	seen.text[0] = '\0';
	report__trace_runs(&in, on_run, &seen);
	/* Without switches the preempted 40 ms is a gap, and edges are half a period out. */
	CHECK_STR("runs: without switches",
		  "0 " SRV " 9.5-19.5;0 " WRK " 19.5-21.5 gc;0 " SRV " 29.5-30.5;0 " SRV
		  " 39.5-43.5;0 " SRV " 46.5-47.5;1 " SRV " 9.5-12.5;1 " SRV " 52.5-54.5;1 " SRV
		  " 79.9-81.5;",
		  seen.text);
}

static void test_split(void)
{
	char pid[32];
	const char *name;

	report__trace_split(SRV, pid, sizeof(pid), &name);
	CHECK_STR("split: pid", "<0.90.0>", pid);
	CHECK_STR("split: name", "xp_stall_server", name);
	report__trace_split("<0.7.0>", pid, sizeof(pid), &name);
	CHECK_STR("split: a bare pid has no name", "", name);
	report__trace_split(IDLE, pid, sizeof(pid), &name);
	CHECK_STR("split: a label has no pid", "", pid);
	CHECK("same: one pid, two names", report__trace_same(SRV, SRV2));
	CHECK("same: not another pid", !report__trace_same(SRV, WRK));
	CHECK("same: not a pid prefix", !report__trace_same("<0.9.0> a", "<0.90.0> a"));
}

static char *render(bool with_switches, int *err)
{
	struct trace_sample s[NSPECS];
	struct trace_mark mark = {T0 + 15 * MS, "trigger: long-run", "scheduler 1 ran \"x\""};
	struct trace_input in;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	input(&in, s, with_switches);
	in.marks = &mark;
	in.nmarks = 1;
	*err = report__trace(&in, f);
	fclose(f);
	return buf;
}

static void check_fixture(const char *path, const char *text)
{
	char *buf = NULL;
	size_t len = 0, n;
	char chunk[4096];
	FILE *f, *m;

	if (getenv("XP_UPDATE_FIXTURES") && (f = fopen(path, "w"))) {
		fputs(text, f);
		fclose(f);
	}
	f = fopen(path, "r");
	m = open_memstream(&buf, &len);
	while (f && m && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	if (m)
		fclose(m);
	if (f)
		fclose(f);
	CHECK("fixture profile.trace.json is current (else XP_UPDATE_FIXTURES=1)",
	      buf && !strcmp(buf, text));
	free(buf);
}

static void test_json(void)
{
	char path[] = "/tmp/xp-test-trace-XXXXXX", cmd[512];
	int err = -1, fd, rc;
	char *json = render(true, &err);

	CHECK_INT("json: returns 0", 0, err);
	if (!json)
		return;
	CHECK("json: the server's run named and with its pid",
	      strstr(json,
		     "\"name\":\"xp_stall_server\",\"cat\":\"process\",\"pid\":4242,\"tid\":101,"
		     "\"ts\":1795868400009500.000,\"dur\":44700.000,\"args\":{\"pid\":\"<0.90.0>"
		     "\",\"name\":\"xp_stall_server\"}}") != NULL);
	CHECK("json: the slow function nested",
	      strstr(json, "\"name\":\"xp_stall:rare_slow_path/1\",\"cat\":\"erlang\",\"pid\":4242,"
			   "\"tid\":101,\"ts\":1795868400009500.000,\"dur\":44700.000") != NULL);
	CHECK("json: the collection marked", strstr(json, "\"cat\":\"gc\"") != NULL);
	CHECK(
	    "json: the sleep marked",
	    strstr(json, "\"name\":\"[scheduler asleep: its thread blocked]\",\"cat\":\"idle\"") !=
		NULL);
	CHECK("json: the trigger marked",
	      strstr(json, "\"ph\":\"i\",\"s\":\"g\",\"cat\":\"trigger\","
			   "\"name\":\"trigger: long-run\"") != NULL);
	CHECK("json: escaped", strstr(json, "scheduler 1 ran \\\"x\\\"") != NULL);
	fd = mkstemp(path);
	if (fd >= 0 && write(fd, json, strlen(json)) == (ssize_t)strlen(json) &&
	    access("/usr/bin/python3", X_OK) == 0) {
		snprintf(cmd, sizeof(cmd), "python3 %s/trace_check.py validate %s >/dev/null",
			 E2E_DIR, path);
		rc = system(cmd);
		CHECK_INT("json: trace_check.py validates it", 0, rc);
	} else {
		printf("NOTE: python3 or a temporary file missing: not validated\n");
	}
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	if (access(E2E_DIR "/speedscope", F_OK) == 0)
		check_fixture(E2E_DIR "/speedscope/profile.trace.json", json);
	free(json);
}

int main(void)
{
	if (setup())
		return check_skip("cannot allocate an aggregate");
	test_runs();
	test_split();
	test_json();
	agg__free(agg);
	return check_done();
}
