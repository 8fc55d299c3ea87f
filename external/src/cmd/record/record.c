/* `record` and `top`. See commands.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "continuous.h"
#include "report/outfile.h"
#include "perf_loss.h"
#include "record/flight.h"
#include "record/ring.h"
#include "report/report.h"
#include "run.h"

const char cmd__sampling_usage[] =
    "Sampling options:\n"
    "  -F, --rate HZ         samples per second per scheduler thread (default 997, a prime)\n"
    "  -d, --duration SECS   stop after SECS seconds, or a duration: 500ms, 30s, 5m, 1h\n"
    "                        (default: until Ctrl-C)\n"
    "  --event cpu-clock|cycles  the sampling event (default cpu-clock)\n"
    "  --threads schedulers|all  sample scheduler threads (default) or every VM thread\n"
    "  --erlang-pid '<0.123.0>'  keep one Erlang process (OTP 28+ without the agent: once\n"
    "                        the process table is found by a scan, as pstack --all does;\n"
    "                        else refused, exit 6, and pids print as <pid 0x...>)\n"
    "  --name NAME           keep the process registered as NAME; with none so, the processes\n"
    "                        the flame graph's root and top name NAME (their initial call:\n"
    "                        --name my_worker:init/1 keeps every such worker)\n"
    "  --only-erlang         leave out native frames\n"
    "  --fold-recursion      (record, top, blame) N consecutive frames of one function (direct\n"
    "                        recursion) become one frame, \"mod:f/1 [recursive x2000]\": a\n"
    "                        2,000-deep recursion is one line, not 2,000; off by default\n"
    "  --lines               (record, top, blame) name Erlang frames with their source line, as\n"
    "                        a stack trace's {file, line}: \"mod:fun/2 (mod.erl:12)\"; a caller's\n"
    "                        line is its call's. Each line is then a frame of its own\n"
    "  --group name|pid|none what a process's samples go under (record's root frame, top's\n"
    "                        process table). name (default): what the process is, as observer\n"
    "                        and recon name it: its registered name, else proc_lib's\n"
    "                        '$initial_call' (my_server:init/1, not proc_lib:init_p/5), else\n"
    "                        its initial call, so that all workers of one kind make one flame.\n"
    "                        pid: one root per process, \"<0.123.0> name\". none: one root.\n"
    "                        sched and capture always keep one per process\n"
    "  --erlang-names        print Elixir modules as Erlang does ('Elixir.MyApp.Repo':get/2),\n"
    "                        not in Elixir form (MyApp.Repo.get/2, the default)\n"
    "  --include-idle        keep scheduler time spent without a process (idle, spinning)\n"
    "  --skid-summary        report how long after each sample its process was read, and how\n"
    "                        often a later read contradicted the sample\n"
    "  --keep-priority       do not rank the sampler 5 nice levels above the VM (it does so\n"
    "                        when allowed, to read each sample's process within ~0.1 ms)\n"
    "  --no-bpf              do not copy each sample's Erlang stack in the kernel (a BPF program\n"
    "                        on the perf events, used when root or CAP_BPF allows): read it\n"
    "                        after the sample instead, which loses fast runtime calls\n"
    "  --user-only           do not sample time spent in the kernel on a scheduler's behalf\n"
    "                        (page faults, syscalls; shown as a [kernel] frame on top of the\n"
    "                        code that entered it); without root or CAP_PERFMON it is not\n"
    "                        sampled anyway, and the summary says so\n"
    "  -v, --verbose         add the sampler's own counters to the summary: memory reads that\n"
    "                        failed (by reason), the in-kernel capture's records, native\n"
    "                        unwinds by how they ended, stacks walked from another start,\n"
    "                        and the CPU it used itself: to attach, sampling, the report\n"
    "  --no-agent            ignore the agent\n";

const char record__usage[] =
    "Usage: extrospect record [OPTIONS] -o FILE [-o FILE...] PID\n"
    "       extrospect record [OPTIONS] --every INTERVAL [-o DIR/] [--push URL] PID\n"
    "       extrospect record [OPTIONS] --ring DURATION [--trigger T...] -o DIR/ PID\n"
    "\n"
    "Sample a running VM and write where it spent its time, per Erlang process, as a flame\n"
    "graph or a pprof profile. Stacks are mixed: Erlang frames, the JIT's shared fragments\n"
    "(global::...) and native frames (BIFs, NIFs, the runtime). The root frame of each stack\n"
    "says what the process is: its registered name (rabbit_channel), else proc_lib's\n"
    "'$initial_call' (my_server:init/1), else its initial call, so that processes of one kind\n"
    "share one root; --group pid gives each process its own (\"<0.123.0> rabbit_channel\").\n"
    "Ctrl-C stops sampling and still writes the file; SIGUSR1 prints the summary so far on\n"
    "stderr and goes on.\n"
    "\n"
    "  -o, --output FILE     where to write (required); up to 4 times: one recording, several\n"
    "                        files, each in the format its name says\n"
    "  --format svg|speedscope|collapsed|pprof|trace\n"
    "                        default: from FILE's extension (.svg, .json, .pb.gz or .pprof,\n"
    "                        else collapsed). pprof is profile.proto gzipped, as go tool pprof,\n"
    "                        Pyroscope, Parca and Grafana read it: sample types samples/count\n"
    "                        and cpu/nanoseconds (1e9/HZ per sample; samples only with\n"
    "                        --event cycles), labels pid, registered_name or initial_call, and\n"
    "                        scheduler; native frames in their file's mapping with its build-id.\n"
    "                        trace (.trace.json): a timeline in the Chrome trace event format\n"
    "                        (Perfetto, chrome://tracing, speedscope): one track per scheduler\n"
    "                        thread, each run of one process on it one slice (its registered\n"
    "                        name, '$initial_call' or pid; args pid and name) with the sampled\n"
    "                        functions nested under it, ts in wall-clock microseconds since the\n"
    "                        epoch. A run's edges are within half a sampling period of the\n"
    "                        truth; it ends where another process is sampled, or after 2.5\n"
    "                        periods with no sample, not counting time its thread was preempted\n"
    "                        by the OS. Samples then go under one root per process (--group pid)\n"
    "\n"
    "Flight recorder (catching a rare slow moment; runs until Ctrl-C or SIGTERM):\n"
    "  --ring DURATION       hold the last DURATION of samples in memory (1s to 1h: 30s, 5m):\n"
    "                        16 bytes a sample, about 15.6 KiB a second per busy scheduler at\n"
    "                        997 Hz, plus each distinct stack once: about 93 KiB a second per\n"
    "                        busy scheduler in all on bench/ring's VM (the summary says what is\n"
    "                        held)\n"
    "  -o DIR/               on a trigger, one dump into DIR covering the ring's window and\n"
    "                        --after: STAMP-TRIGGER.trace.json (the timeline), .folded (its\n"
    "                        collapsed stacks) and .txt (a one-screen summary: the trigger, the\n"
    "                        longest runs and where they were), STAMP its UTC time\n"
    "  --after DURATION      go on recording this long after a trigger (default 2s; 0: none)\n"
    "  --max-dumps N         exit after N dumps\n"
    "  --min-gap DURATION    no dump within DURATION of the last one (a flapping trigger)\n"
    "  --trigger long-run=DURATION  one process seen running on a scheduler without a break\n"
    "                        for DURATION (a NIF or BIF that does not yield, a long computation):\n"
    "                        from the samples, a compare per sample\n"
    "  --trigger gc=DURATION one garbage collection of one process this long, from its\n"
    "                        consecutive samples in GC code: a compare per sample. Both\n"
    "                        durations 5ms to 1h: a few samples at the least\n"
    "  --trigger msgq=NAME:N the message queue of the process registered as NAME held N\n"
    "                        messages (OTP 27+): its Process read from outside every 100 ms\n"
    "                        (one read of a few hundred bytes), found once by reading every\n"
    "                        registered process's name (again at most once a second while it is\n"
    "                        not found); fires again only after the queue fell under N/2\n"
    "  --trigger runq=N      N or more processes waiting in one scheduler's run queue (its\n"
    "                        ErtsRunQueue's per-priority lengths; ports not counted): every\n"
    "                        normal scheduler's queue read from outside at each turn of the\n"
    "                        sampling loop, at most every 20 ms (10 to 50 times a second), one\n"
    "                        process_vm_readv of ~300 bytes a scheduler; each read checked (the\n"
    "                        queue's index, its pointer back to its scheduler, its lengths);\n"
    "                        refused (exit 6) when a first read fails them; fires again only\n"
    "                        after every queue fell under N/2. Without it the queues are still\n"
    "                        read, when they can be, for the summary's \"while its run queue "
    "held\"\n"
    "  SIGUSR2               dump now (an application's own latency alarm, an operator)\n"
    "  A dump is written through the same complete-or-nothing path as -o FILE. Triggers while a\n"
    "  dump is pending are counted, not dumped. A VM that exits, or Ctrl-C, while one is pending\n"
    "  still gets it, ending at the last sample, and the dump says so.\n"
    "\n"
    "Continuous profiling (one sampler for the whole run, no sample lost between intervals):\n"
    "  --every INTERVAL      one pprof profile per INTERVAL (60s, 5m, 1h; 1s to 1d), named by\n"
    "                        its start time in UTC: DIR/20261126T060512.345Z.pb.gz\n"
    "  --keep N              keep the newest N profiles in DIR (default 24)\n"
    "  --push URL            also POST each to a Pyroscope-compatible ingest endpoint:\n"
    "                        URL/ingest?name=APP{LABELS}&from=&until=&format=pprof&sampleRate=HZ.\n"
    "                        Plain http:// only (for https, push to a local Grafana Alloy or a\n"
    "                        proxy). A separate thread sends, retrying with backoff (1 s doubling\n"
    "                        to 60 s); at most 16 profiles wait, the oldest dropped beyond\n"
    "  --app-name NAME       the application name (default: the node's -sname/-name, else beam)\n"
    "  --label KEY=VALUE     a label of every pushed profile (up to 8)\n"
    "  SIGHUP ends the current interval now; SIGTERM or Ctrl-C writes the partial interval,\n"
    "  sends what is still queued (up to 10 s, no more retries), and exits.\n"
    "\n"
    "%s"
    "\n"
    "Examples:\n"
    "  extrospect record -d 30 -o vm.svg 4242            # interactive flame graph\n"
    "  extrospect record -d 30 -o vm.json 4242           # open in https://speedscope.app\n"
    "  extrospect record -d 30 -o vm.pb.gz 4242 && go tool pprof -top vm.pb.gz\n"
    "  extrospect record -o vm.folded --format collapsed 4242 && flamegraph.pl vm.folded\n"
    "  extrospect record -d 10 -o vm.svg -o vm.pb.gz 4242  # one recording, two formats\n"
    "  extrospect record --name rabbit_channel_sup -d 10 -o ch.svg 4242\n"
    "  extrospect record --lines -d 10 -o lines.svg 4242   # which line of each function\n"
    "  extrospect record --group pid -d 10 -o procs.svg 4242  # one root per process\n"
    "  extrospect record --every 60s --keep 1440 -o /var/lib/extrospect/ 4242\n"
    "  extrospect record --every 15s --push http://pyroscope:4040 --label env=prod 4242\n"
    "  extrospect record -d 5 -o vm.trace.json 4242       # a timeline: ui.perfetto.dev\n"
    "  extrospect record --ring 30s --trigger long-run=200ms --max-dumps 5 -o /var/tmp/xp/ 4242\n"
    "  extrospect record --ring 1m --min-gap 5m -o /var/tmp/xp/ 4242 & kill -USR2 $!\n"
    "  extrospect record --ring 30s --trigger msgq=my_server:10000 --trigger gc=50ms -o d/ 4242\n"
    "  extrospect record --ring 30s --trigger runq=500 --min-gap 1m -o /var/tmp/xp/ 4242\n";

const char top__usage[] =
    "Usage: extrospect top [OPTIONS] PID\n"
    "\n"
    "Show the hottest Erlang functions (SELF: innermost Erlang frame, including the BIFs,\n"
    "NIFs and runtime code it called; TOTAL: anywhere on the stack) and the busiest\n"
    "processes. On a terminal it refreshes every second until Ctrl-C; otherwise, or with -d,\n"
    "it prints one table at the end.\n"
    "\n"
    "  -n, --limit N         rows per table (default 20)\n"
    "\n"
    "%s"
    "\n"
    "Examples:\n"
    "  extrospect top 4242\n"
    "  extrospect top -d 10 4242 > top.txt\n"
    "  extrospect top --erlang-pid '<0.811.0>' 4242\n"
    "  extrospect top --lines --only-erlang -d 10 4242   # the hottest lines, not functions\n"
    "  extrospect record --fold-recursion -d 10 -o deep.svg 4242   # one frame per recursion\n";

static int write_one(const char *path, enum cli_format fmt, const struct agg *a, const char *title,
		     const struct pprof_meta *m, struct trace_input *tin, char *err, size_t errlen)
{
	struct outfile of;
	int rc;

	if ((rc = cmd__open_output(&of, path, err, errlen)))
		return rc;
	if (fmt == CLI_FMT_SVG)
		rc = report__svg(a, of.f, title);
	else if (fmt == CLI_FMT_SPEEDSCOPE)
		rc = report__speedscope(a, of.f, title);
	else if (fmt == CLI_FMT_PPROF)
		rc = report__pprof(a, m, of.f);
	else if (fmt == CLI_FMT_TRACE)
		rc = report__trace(tin, of.f);
	else
		rc = report__collapsed(a, of.f);
	/* Complete or nothing: a full disk leaves no truncated report behind. */
	if ((rc = outfile__close(&of, rc)))
		snprintf(err, errlen, "cannot write %s: %s (nothing written)", path, strerror(-rc));
	return rc;
}

/* Every -o from the one recording. */
static int write_report(const struct cli_opts *o, const struct agg *a, const struct run_ctx *ctx,
			int64_t start_ns, struct trace_input *tin, char *err, size_t errlen)
{
	char title[64], comment[160], *notes;
	struct pprof_meta m;
	size_t i;
	int rc;

	snprintf(title, sizeof(title), "extrospect: BEAM pid %d", (int)ctx->t->pid);
	cmd__pprof_meta(o, ctx->t, &m, comment, sizeof(comment));
	m.time_ns = start_ns;
	m.duration_ns = (int64_t)(ctx->final.elapsed_s * 1e9);
	m.notes = notes = perf_loss__text(&ctx->final_perf, ctx->t);
	for (i = 0; i < o->noutputs; i++) {
		if ((rc =
			 write_one(o->outputs[i], o->formats[i], a, title, &m, tin, err, errlen))) {
			free(notes);
			return rc;
		}
		/* Groups are processes with --group pid, kinds of process by default. */
		fprintf(stderr, "extrospect: wrote %s (%zu stacks, %zu %s)\n", o->outputs[i],
			agg__nstacks(a), agg__ngroups(a),
			o->group == GROUP_PID ? "processes" : "roots");
	}
	free(notes);
	return 0;
}

/* Sample into a fresh aggregate (ctx->agg, freed by the caller even on failure); with a ring,
 * every kept sample is held in it too (--format trace). */
static int sample(const struct cli_opts *o, struct run_ctx *ctx, struct ring *ring, char *err,
		  size_t errlen)
{
	int rc;

	cmd__sampler_opts(o, &ctx->opts);
	ctx->opts.labels = ctx->labels;
	if ((rc = agg__new(&ctx->agg)))
		return rc;
	if (ring) {
		ring__init(ring, ctx->t, ctx->agg, 0);
		ctx->opts.on_record = ring__on_record;
		ctx->opts.on_switch = ring__on_switch;
		ctx->opts.record_ctx = ring;
		ctx->opts.group = GROUP_PID; /* a run is one process's */
	}
	rc = run__sample(ctx);
	if (rc)
		snprintf(err, errlen, "%s", ctx->err);
	return rc;
}

int cmd__record(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
		size_t errlen)
{
	struct run_ctx ctx = {
	    .t = t, .stop = stop, .progress = isatty(STDERR_FILENO), .verbose = o->verbose};
	int64_t start_ns = cmd__wall_ns();
	struct trace_input tin = {0};
	struct ring ring = {0};
	bool trace = false;
	struct agg *a;
	size_t i;
	int rc;

	if (o->every_s)
		return cmd__record_every(o, t, stop, err, errlen);
	if (o->ring_ns)
		return cmd__record_ring(o, t, stop, err, errlen);
	for (i = 0; i < o->noutputs; i++) {
		ctx.labels |= o->formats[i] == CLI_FMT_PPROF;
		trace |= o->formats[i] == CLI_FMT_TRACE;
	}
	rc = sample(o, &ctx, trace ? &ring : NULL, err, errlen);
	a = ctx.agg;
	if (rc)
		goto cleanup;
	run__summary(&ctx, o->output, stderr);
	ring.records_lost = ctx.final_perf.lost != 0;
	if (trace && (rc = flight__trace_all(&ring, o, &tin)))
		goto cleanup;
	if ((rc = write_report(o, a, &ctx, start_ns, &tin, err, errlen)))
		goto cleanup;
	rc = ctx.target_exited ? TARGET_EGONE : 0;
cleanup:
	ring__input_free(&tin);
	ring.gen[0].agg = NULL; /* ctx.agg, freed here */
	ring__free(&ring);
	agg__free(a);
	if (o->verbose && ctx.cpu_ended_s > 0)
		run__cpu_report(&ctx, stderr);
	return rc;
}

/* The live view (a terminal on stdout, no -d). Each second one frame replaces the last in a
 * single write: cursor home, every line cleared to its end, the rest of the screen cleared, so
 * the terminal never shows a blank or half-drawn screen (a clear then a write per line flickered).
 * The frame fits the window, read each second (resizes follow): lines clipped to its width and
 * the tables cut to its height, so the header and the hottest rows never scroll away. */
struct top_view {
	const struct cli_opts *o;
};

/* Lines of the frame besides table rows: header, blank, two table headings, blank between, and
 * the last line left empty so the final newline does not scroll the screen. */
#define TOP_FRAME_FIXED 6

static void print_tables(const struct cli_opts *o, const struct agg *a, FILE *f)
{
	report__top_functions(a, f, o->limit);
	fputc('\n', f);
	report__top_processes(a, f, o->limit);
}

static unsigned count_lines(const char *p, size_t n)
{
	unsigned lines = 0;

	while (n--)
		lines += *p++ == '\n';
	return lines;
}

/* The frame's text, its tables fitted to ROWS lines (0: unknown, -n rows each). */
static int top_frame_text(const struct run_ctx *ctx, const struct sampler_stats *st, unsigned rows,
			  char **text, size_t *len)
{
	const struct agg *a = ctx->agg;
	unsigned limit = ((const struct top_view *)ctx->user)->o->limit;
	unsigned fn_rows = limit, proc_rows = limit, avail = 0, keep, n;
	FILE *m = open_memstream(text, len);
	size_t mark;

	if (!m)
		return -errno;
	if (rows > TOP_FRAME_FIXED + 1) {
		/* Processes keep up to a third of the rows (at least one); functions take the
		 * rest, then processes whatever functions left. A smaller window scrolls. */
		avail = rows - TOP_FRAME_FIXED;
		keep = avail / 3 ? avail / 3 : 1;
		keep = agg__ngroups(a) < keep ? (unsigned)agg__ngroups(a) : keep;
		fn_rows = avail - keep < limit ? avail - keep : limit;
	}
	fprintf(m, "extrospect top: pid %d, %.0fs, %llu samples (%llu kept)  Ctrl-C to quit\n\n",
		(int)ctx->t->pid, st->elapsed_s, (unsigned long long)st->samples,
		(unsigned long long)st->kept);
	fflush(m);
	mark = *len;
	report__top_functions(a, m, fn_rows ? fn_rows : 1);
	fflush(m);
	n = count_lines(*text + mark, *len - mark); /* the heading and the rows */
	if (avail && n) {
		avail -= n - 1 < avail ? n - 1 : avail;
		proc_rows = avail < limit ? avail : limit;
	}
	fputc('\n', m);
	report__top_processes(a, m, proc_rows ? proc_rows : 1);
	if (fclose(m) != 0)
		return -ENOMEM;
	return 0;
}

/* Bytes of LINE (length N) that fit in COLS - 1 columns, never cutting a UTF-8 sequence (a byte
 * is at most one column: clipping by bytes never overflows). The last column stays free: a
 * line filling it leaves the cursor pending a wrap, where some terminals erase it. */
static size_t clip_line(const char *line, size_t n, unsigned cols)
{
	if (!cols || n < cols)
		return n;
	n = cols - 1;
	while (n && ((unsigned char)line[n] & 0xc0) == 0x80)
		n--;
	return n;
}

/* A tty write may be cut short by Ctrl-C's signal: finish it, or the screen keeps half a frame. */
static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void top_tick(struct run_ctx *ctx, const struct sampler_stats *st)
{
	struct winsize ws = {0};
	char *text = NULL, *out = NULL;
	size_t len = 0, outlen = 0, i = 0;
	FILE *m;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0)
		ws.ws_row = ws.ws_col = 0;
	if (top_frame_text(ctx, st, ws.ws_row, &text, &len))
		goto cleanup;
	m = open_memstream(&out, &outlen);
	if (!m)
		goto cleanup;
	fputs("\033[H", m);
	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (text + i)) : len - i;

		fwrite(text + i, 1, clip_line(text + i, n, ws.ws_col), m);
		fputs("\033[K\n", m);
		i += n + 1;
	}
	fputs("\033[J", m);
	if (fclose(m) == 0) {
		fflush(stdout);
		write_all(STDOUT_FILENO, out, outlen);
	}
cleanup:
	free(out);
	free(text);
}

int cmd__top(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	     size_t errlen)
{
	struct top_view view = {.o = o};
	struct run_ctx ctx = {.t = t, .stop = stop, .user = &view, .verbose = o->verbose};
	bool live = isatty(STDOUT_FILENO) && o->duration_s <= 0;
	struct agg *a;
	int rc;

	ctx.tick = live ? top_tick : NULL;
	ctx.progress = !live && isatty(STDERR_FILENO);
	rc = sample(o, &ctx, NULL, err, errlen);
	a = ctx.agg;
	if (rc)
		goto cleanup;
	if (live)
		printf("\033[H\033[2J");
	print_tables(o, a, stdout);
	fflush(stdout);
	run__summary(&ctx, "the table", stderr);
	rc = ctx.target_exited ? TARGET_EGONE : 0;
cleanup:
	agg__free(a);
	return rc;
}
