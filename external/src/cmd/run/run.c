/* The sampling loop. See run.h. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ptab.h"
#include "info.h"
#include "perf_loss.h"
#include "report/outfile.h"
#include "report/report.h"
#include "run.h"

#ifndef XP_VERSION
#define XP_VERSION "0.1.0"
#endif

/* Without the in-kernel capture the sampler is woken by every sample (perf wakeup_events), and
 * this timeout only bounds how late a duration end, a progress line or a refresh can be. With
 * it, samples are read in batches: when a ring is half full, else every RUN_POLL_MS. An idle
 * VM costs a wake-up per RUN_POLL_MS, not one per millisecond. Each wake-up costs more than its
 * syscalls (a batch starts with cold caches: the VM's schedulers ran on these cores meanwhile):
 * at 997 Hz on the bench workload 100 ms took 7 % less of the sampler's CPU than 50, 200 ms
 * 14 % less (2026-11-29). 100 keeps a trigger, the flight recorder's turn or top's refresh
 * within a tenth of a second; a run with none of them (a plain record: only its end, its
 * progress line and a signal, which interrupts the wait, are timed) waits RUN_POLL_BATCH_MS,
 * about as long as the batched rings take to fill half at 997 Hz, until a process exits before
 * its dictionary was read (short-lived workers, named by their initial call instead): from
 * then on RUN_POLL_MS, as what waiting longer would lose is then seen to be lost. */
#define RUN_POLL_MS	  100
#define RUN_POLL_BATCH_MS 250

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t dropped_total(const struct sampler_stats *st)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < DROP_COUNT; i++)
		n += st->dropped[i];
	return n;
}

static void progress_line(const struct sampler_stats *st, double elapsed)
{
	fprintf(stderr,
		"\r\033[Kextrospect: %" PRIu64 " samples, %" PRIu64 " kept, %" PRIu64
		" dropped, %.1fs",
		st->samples, st->kept, dropped_total(st), elapsed);
	fflush(stderr);
}

/* A sample taken in native code has its process's state read when the sampler wakes for it.
 * Ranked RUN_NICE_AHEAD nice levels above the VM, the sampler gets a CPU as the kernel wakes it,
 * not when a busy scheduler thread's time slice ends: on 2 busy cores the read delay's p90 went
 * from about 1 ms to 0.1 ms. It still runs only when a sample arrives, so its CPU time is the
 * same. Without CAP_SYS_NICE the priority stays as it was. */
#define RUN_NICE_AHEAD 5

void run__raise_priority(pid_t vm)
{
	int vm_nice, mine, want;

	errno = 0;
	vm_nice = getpriority(PRIO_PROCESS, (id_t)vm);
	if (errno)
		return;
	mine = getpriority(PRIO_PROCESS, 0);
	if (errno)
		return;
	want = vm_nice - RUN_NICE_AHEAD < -20 ? -20 : vm_nice - RUN_NICE_AHEAD;
	if (want < mine)
		(void)setpriority(PRIO_PROCESS, 0, want);
}

/* RUN_POLL_MS (RUN_POLL_BATCH_MS with no turn, no live view and no process gone before its
 * name was read), or less when the run ends sooner. */
static int poll_ms(const struct run_ctx *ctx, const struct sampler_stats *st, double elapsed)
{
	const struct sampler_opts *o = &ctx->opts;
	const int ms =
	    ctx->turn || ctx->tick || st->pdict[PDICT_GONE] ? RUN_POLL_MS : RUN_POLL_BATCH_MS;
	double left = o->duration_s - elapsed;

	if (o->duration_s <= 0 || left * 1000.0 >= ms)
		return ms;
	return left > 0 ? 1 + (int)(left * 1000.0) : 0;
}

/* Pids are decoded through the process table's masks on 27+ (process__pid_format). Without the
 * agent on 28+ nothing names the table: find it as pstack does, by a scan that also verifies
 * the encoding on live pids. Not found: pids stay <pid 0x...> and --erlang-pid is refused. */
static int locate_ptab(struct target *t)
{
	struct ptab pt;
	char why[256];

	if (t->addr[XP_ADDR_PROCESS_TABLE].present)
		return 0;
	return ptab__locate(t, &pt, why, sizeof(why)) == -ENOMEM ? -ENOMEM : 0;
}

/* SIGUSR1 asks for the summary so far on stderr, as `dd` reports on SIGUSR1: a long or
 * continuous recording can be watched (bench/soak reads it every window) without stopping. */
static void report_so_far(struct run_ctx *ctx, struct sampler *s)
{
	memcpy(&ctx->final, sampler__stats(s), sizeof(ctx->final));
	memcpy(&ctx->final_perf, sampler__perf_stats(s), sizeof(ctx->final_perf));
	sampler__more_stats(s, &ctx->final_unwind, &ctx->final_kcap);
	ctx->cpu_ended_s = run__cpu_s(); /* so far: --verbose's sampling CPU until now */
	fprintf(stderr,
		"extrospect: so far (SIGUSR1): %zu distinct stacks in %zu groups, %zu frame "
		"names\n",
		agg__nstacks(ctx->agg), agg__ngroups(ctx->agg), agg__nframes(ctx->agg));
	run__summary(ctx, "the output", stderr);
	fflush(stderr);
}

/* Once a second, as a backstop to the events' hang-up: is the VM still there, and still the
 * program it was (exe: its identity at the start, 0 unknown)? An execve keeps the pid but ends
 * the VM: its threads are gone and its memory is another program's. -ESRCH when it is over. */
static int still_the_vm(struct run_ctx *ctx, uint64_t exe, int rc)
{
	uint64_t now;

	if (proc__exists(ctx->t->pid) == -ENOENT)
		return -ESRCH;
	if (exe && proc__exe_id(ctx->t->pid, &now) == 0 && now != exe) {
		ctx->target_execd = true;
		return -ESRCH;
	}
	return rc;
}

bool run__take(volatile sig_atomic_t *stop, sig_atomic_t what)
{
	sigset_t all, old;
	bool r;

	if (*stop != what)
		return false;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	r = *stop == what;
	if (r)
		*stop = 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

int run__sample(struct run_ctx *ctx)
{
	struct sampler *s = NULL;
	double start, last_tick, last_progress, last_exists;
	uint64_t exe;
	int rc;

	if (!ctx->opts.keep_priority)
		run__raise_priority(ctx->t->pid);
	if ((rc = locate_ptab(ctx->t)))
		return rc;
	rc = sampler__new(ctx->t, &ctx->opts, ctx->agg, &s, ctx->err, sizeof(ctx->err));
	if (rc)
		return rc;
	if (ctx->hooks)
		sampler__set_hooks(s, ctx->hooks);
	ctx->cpu_began_s = run__cpu_s();
	fprintf(stderr, "extrospect: sampling %zu %s of pid %d at %u Hz%s\n", sampler__nthreads(s),
		ctx->opts.all_threads ? "threads" : "scheduler threads", (int)ctx->t->pid,
		ctx->opts.freq_hz,
		ctx->tick || ctx->opts.duration_s > 0 ? "" : "; Ctrl-C stops and reports");
	if (proc__exe_id(ctx->t->pid, &exe))
		exe = 0; /* unknown: only its exit is watched */
	start = last_tick = last_progress = last_exists = now_s();
	while (*ctx->stop != RUN_STOP) {
		double now = now_s();
		struct sampler_stats *st = (struct sampler_stats *)sampler__stats(s);

		st->elapsed_s = now - start;
		if (ctx->opts.duration_s > 0 && now - start >= ctx->opts.duration_s)
			break;
		rc = sampler__poll(s, poll_ms(ctx, st, now - start));
		/* Exited threads hang up their events (-ESRCH); /proc is asked once a second as a
		 * backstop, not on every turn of this loop. */
		if (rc != -ESRCH && now - last_exists >= 1.0) {
			last_exists = now;
			rc = still_the_vm(ctx, exe, rc);
		}
		if (rc == -ESRCH) {
			ctx->target_exited = true;
			break;
		}
		if (rc < 0 && rc != -EINTR) {
			snprintf(ctx->err, sizeof(ctx->err), "sampling failed: %s", strerror(-rc));
			break;
		}
		rc = 0;
		if (ctx->turn && (rc = ctx->turn(ctx, s)) < 0)
			break;
		/* top's live view owns the terminal: no summary there. */
		if (run__take(ctx->stop, RUN_REPORT) && !ctx->tick)
			report_so_far(ctx, s);
		if (ctx->progress && now - last_progress >= 0.5) {
			progress_line(st, now - start);
			last_progress = now;
		}
		if (ctx->tick && now - last_tick >= 1.0) {
			ctx->tick(ctx, st);
			last_tick = now;
		}
	}
	if (ctx->progress)
		fprintf(stderr, "\r\033[K");
	/* Keep the final numbers for the summary. */
	memcpy(&ctx->final, sampler__stats(s), sizeof(ctx->final));
	memcpy(&ctx->final_perf, sampler__perf_stats(s), sizeof(ctx->final_perf));
	sampler__more_stats(s, &ctx->final_unwind, &ctx->final_kcap);
	ctx->cpu_ended_s = run__cpu_s();
	sampler__free(s);
	return rc < 0 && rc != -ESRCH ? rc : 0;
}

/* What the sampler itself cost, from this process's CPU clock (every thread, user and system):
 * starting up and attaching, then sampling, per sample and as a share of one core. */
static void own_cpu(const struct run_ctx *ctx, FILE *f)
{
	const struct sampler_stats *st = &ctx->final;
	double run = ctx->cpu_ended_s - ctx->cpu_began_s;

	fprintf(f, "  own CPU: %.0f ms to start and attach, %.0f ms sampling",
		1e3 * ctx->cpu_began_s, 1e3 * run);
	if (st->elapsed_s > 0)
		fprintf(f, " for %.1f s (%.2f%% of a core)", st->elapsed_s,
			100 * run / st->elapsed_s);
	if (st->samples)
		fprintf(f, ", %.1f us a sample", 1e6 * run / (double)st->samples);
	fputc('\n', f);
}

void run__cpu_report(const struct run_ctx *ctx, FILE *f)
{
	double now = run__cpu_s();

	fprintf(f, "  own CPU: %.0f ms for the report and after; %.0f ms in all\n",
		1e3 * (now - ctx->cpu_ended_s), 1e3 * now);
}

/* --verbose: the sampler's own counters, for judging a profile or reporting a problem. */
static void verbose_summary(const struct run_ctx *ctx, FILE *f)
{
	const struct unwind_stats *u = &ctx->final_unwind;
	const struct kcap_stats *k = &ctx->final_kcap;

	fprintf(f, "Sampler counters (--verbose)\n");
	info__print_mem_failures(ctx->t, f);
	perf_loss__print_rings(&ctx->final_perf, f);
	fprintf(f,
		"  native unwinds: %" PRIu64 " (%" PRIu64 " frames, %" PRIu64
		" by the fast path); ended:",
		u->unwinds, u->frames, u->fast);
	for (int i = 0; i < UNWIND_STOP_COUNT; i++) {
		if (u->stops[i])
			fprintf(f, " %s %" PRIu64, unwinder__stop_name(i), u->stops[i]);
	}
	fprintf(f,
		"\n  native stack words: %" PRIu64 " from the sample's copy, %" PRIu64
		" read live, %" PRIu64 " unreadable\n",
		u->read_stack, u->read_live, u->read_failed);
	fprintf(f, "  native frame rules: %" PRIu64 " looked up, %" PRIu64 " of them cached\n",
		u->fde_lookups, u->fde_hits);
	if (k->records)
		fprintf(f,
			"  in-kernel capture records: %" PRIu64 " (%" PRIu64 " paired, %" PRIu64
			" unpaired, %" PRIu64 " malformed)\n",
			k->records, k->matched, k->unmatched, k->malformed);
	fprintf(f, "  stacks walked from another start than the first inferred: %" PRIu64 "\n",
		ctx->final.alternative_start);
	fprintf(f,
		"  native stacks deeper than perf's copy, unwound through the capture's: %" PRIu64
		"\n",
		ctx->final.native_extended);
	fprintf(f, "  samples in the yield test, named by the function yielding: %" PRIu64 "\n",
		ctx->final.yield_test);
	own_cpu(ctx, f);
}

/* Under "ended unresolved": the first word of those walks that named no function, by word. */
static void unresolved_words(const struct sampler_stats *st, FILE *f)
{
	for (int i = 0; i < SAMPLER_UNRESOLVED_KEPT && st->unresolved[i].n; i++)
		fprintf(f, "      at 0x%" PRIx64 " (%s): %" PRIu64 "\n", st->unresolved[i].ra,
			st->unresolved[i].where, st->unresolved[i].n);
	if (st->unresolved_more)
		fprintf(f, "      at other words: %" PRIu64 "\n", st->unresolved_more);
}

void run__summary(const struct run_ctx *ctx, const char *what, FILE *f)
{
	const struct sampler_stats *st = &ctx->final;
	const struct perf_stats *ps = &ctx->final_perf;
	uint64_t valid = st->estack_end[ESTACK_END_BOTTOM];
	int i;

	fprintf(f,
		"extrospect: %" PRIu64 " samples in %.1fs: %" PRIu64 " kept, %" PRIu64
		" scheduler time without a process%s, %" PRIu64 " filtered out, %" PRIu64
		" dropped\n",
		st->samples, st->elapsed_s, st->kept, st->excluded_idle,
		ctx->opts.include_idle ? "" : " (excluded; --include-idle keeps it)",
		st->excluded_filter, dropped_total(st));
	for (i = 0; i < DROP_COUNT; i++) {
		if (st->dropped[i])
			fprintf(f, "  dropped: %-22s %" PRIu64 "\n", sampler__drop_name(i),
				st->dropped[i]);
	}
	if (ps->lost || ps->throttled)
		fprintf(f, "  perf: %" PRIu64 " records lost, %" PRIu64 " throttles\n", ps->lost,
			ps->throttled);
	perf_loss__print(ps, ctx->t, f);
	if (st->erlang)
		fprintf(
		    f, "  Erlang stacks: %" PRIu64 " walked, %.1f%% complete to the stack bottom\n",
		    st->erlang, 100.0 * (double)valid / (double)st->erlang);
	for (i = 0; i < ESTACK_END_COUNT; i++) {
		if (i != ESTACK_END_BOTTOM && st->estack_end[i])
			fprintf(f, "    ended %-16s %" PRIu64 "\n", erlang_stack__end_name(i),
				st->estack_end[i]);
		if (i == ESTACK_END_UNRESOLVED)
			unresolved_words(st, f);
		if (i == ESTACK_END_MOVED_ON && st->moved_reread)
			fprintf(f,
				"      of them short of the bottom, the process's stack seen moved "
				"when read again: %" PRIu64 "\n",
				st->moved_reread);
	}
	if (st->exiting)
		fprintf(f,
			"  process exiting (its heap, messages and links freed; no Erlang stack "
			"left): %" PRIu64
			" samples, kept as that process's under [process exiting]\n",
			st->exiting);
	if (st->system_task)
		fprintf(f,
			"  scheduler work for a process (signals, system tasks, GC when "
			"scheduled): %" PRIu64 " samples, kept as that process's\n",
			st->system_task);
	if (st->dirty_task)
		fprintf(f,
			"  dirty system tasks for a process (collections too large for a normal "
			"scheduler): %" PRIu64
			" samples, kept as that process's where it resumes (%" PRIu64
			" with its state read after the sample)\n",
			st->dirty_task, st->dirty_task_late);
	if (st->gc_state)
		fprintf(f,
			"  in a garbage collection (the process's state says so): %" PRIu64
			" samples, labelled [garbage collection]\n",
			st->gc_state);
	if (st->gc_moved)
		fprintf(f,
			"    of them copied as the collection ended, the stack already in the new "
			"heap: %" PRIu64 ", walked from there\n",
			st->gc_moved);
	if (st->gc_remapped)
		fprintf(f,
			"    of them copied as the collection shrank the heap in place, the stack "
			"already moved to its new end: %" PRIu64 ", walked from there\n",
			st->gc_remapped);
	if (st->gc_moved_late)
		fprintf(f,
			"    of them read after the sample as the collection ended: %" PRIu64
			", kept without their callers\n",
			st->gc_moved_late);
	if (st->stack_unreadable_kept)
		fprintf(f,
			"  native samples whose Erlang stack was unreadable (its heap freed or "
			"being moved): %" PRIu64
			", kept as their process's with the callers unknown\n",
			st->stack_unreadable_kept);
	if (st->deep_stale)
		fprintf(f,
			"  stacks deeper than their copy at the sample: %" PRIu64
			" cut where the copy ends (the rest had changed when read)\n",
			st->deep_stale);
	for (i = 0; i < UNWIND_STOP_COUNT; i++) {
		if (st->unwind_cut[i])
			fprintf(f,
				"  native unwind stopped short of JIT code (%s): %" PRIu64
				" samples, kept with their Erlang callers unknown\n",
				unwinder__stop_name(i), st->unwind_cut[i]);
	}
	if (ps->kernel_excluded)
		fprintf(f, "  time in the kernel: not sampled (%s)\n",
			ctx->opts.user_only ? "--user-only"
					    : "not permitted: needs root or CAP_PERFMON, or "
					      "kernel.perf_event_paranoid <= 1");
	else if (st->kernel)
		fprintf(f,
			"  time in the kernel on a scheduler's behalf: %" PRIu64
			" samples, kept as [kernel] on top of the code that entered it\n",
			st->kernel);
	if (st->kcapture_why[0])
		fprintf(f, "  in-kernel capture: off (%s): stacks were read after the sample\n",
			st->kcapture_why);
	else if (st->erlang)
		fprintf(f,
			"  in-kernel capture: %" PRIu64 " of %" PRIu64
			" Erlang samples walked as copied at the sample\n",
			st->captured, st->erlang);
	if (!st->kcapture_why[0] &&
	    (st->not_captured[NOT_CAPTURED_NO_RECORD] || st->not_captured[NOT_CAPTURED_OTHER]))
		fprintf(f,
			"  in-kernel capture: no copy of the sample's process for %" PRIu64
			" samples (no record: ring full or copy failed) and %" PRIu64
			" (a copy of another process): read after the sample\n",
			st->not_captured[NOT_CAPTURED_NO_RECORD],
			st->not_captured[NOT_CAPTURED_OTHER]);
	if (ps->bpf_unattached)
		fprintf(f, "  in-kernel capture: not attached to %" PRIu64 " threads\n",
			ps->bpf_unattached);
	report__pdict_summary(st->pdict, f);
	if (st->maps_refreshes)
		fprintf(f,
			"  memory maps re-read %" PRIu64
			" times for libraries loaded since attach\n",
			st->maps_refreshes);
	if (st->jit_refreshes) {
		fprintf(f,
			"  JIT map re-read %" PRIu64 " times as code was loaded or purged (%" PRIu64
			" entries, %" PRIu64 " ranges; %" PRIu64 " ranges of purged code dropped",
			st->jit_refreshes, st->jit_entries, st->jit_ranges, st->jit_pruned);
		if (st->jit_carried)
			fprintf(f, ", %" PRIu64 " kept for samples taken before the last re-read",
				st->jit_carried);
		fputs(")\n", f);
	}
	if (ctx->opts.skid)
		skid__print(&st->skid, f);
	if (ctx->verbose)
		verbose_summary(ctx, f);
	if (ctx->target_execd)
		fprintf(f,
			"extrospect: the VM (pid %d) exited during the run: it exec'd another "
			"program; %s is partial\n",
			(int)ctx->t->pid, what);
	else if (ctx->target_exited)
		fprintf(f, "extrospect: the VM (pid %d) exited during the run; %s is partial\n",
			(int)ctx->t->pid, what);
}

void cmd__sampler_opts(const struct cli_opts *o, struct sampler_opts *so)
{
	*so = (struct sampler_opts){.freq_hz = o->freq_hz,
				    .duration_s = o->duration_s,
				    .event = o->cycles ? PERF_EV_CYCLES : PERF_EV_CPU_CLOCK,
				    .all_threads = o->all_threads,
				    .include_idle = o->include_idle,
				    .only_erlang = o->only_erlang,
				    .fold_recursion = o->fold_recursion,
				    .lines = o->lines,
				    .erlang_pid = o->erlang_pid,
				    .name = o->name,
				    .skid = o->skid_summary,
				    .keep_priority = o->keep_priority,
				    .no_bpf = o->no_bpf,
				    .user_only = o->user_only,
				    .group = o->group,
				    .erlang_names = o->erlang_names};
}

void cmd__pprof_meta(const struct cli_opts *o, const struct target *t, struct pprof_meta *m,
		     char *comment, size_t commentlen)
{
	snprintf(comment, commentlen, "extrospect %s: BEAM pid %d, %u Hz %s", XP_VERSION,
		 (int)t->pid, o->freq_hz, o->cycles ? "cycles" : "cpu-clock");
	*m = (struct pprof_meta){.period_ns = o->cycles ? 0 : 1000000000ull / o->freq_hz,
				 .lines = o->lines,
				 .pid = t->pid,
				 .comment = comment};
}

double run__cpu_s(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return 0;
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int64_t cmd__wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int cmd__open_output(struct outfile *of, const char *path, char *err, size_t errlen)
{
	int rc = outfile__open(of, path);

	if (rc)
		snprintf(err, errlen, "cannot write %s: %s", path, report__output_error(rc));
	return rc;
}

int cmd__finish_output(struct outfile *of, const char *path, int rc, char *err, size_t errlen)
{
	int wrc;

	if (!of) {
		if (fflush(stdout) != 0 && !rc) {
			snprintf(err, errlen, "cannot write output: %s", strerror(errno));
			rc = -EIO;
		}
		return rc;
	}
	wrc = outfile__close(of, rc && rc != TARGET_EGONE ? rc : 0);
	if (wrc && (!rc || rc == TARGET_EGONE)) {
		snprintf(err, errlen, "cannot write %s: %s (nothing written)", path,
			 strerror(-wrc));
		return wrc;
	}
	if (!wrc)
		fprintf(stderr, "extrospect: wrote %s\n", path);
	return rc;
}

int cmd__open_stream(const char *path, FILE **out, char *err, size_t errlen)
{
	int rc = report__open_output(path, out);

	if (rc)
		snprintf(err, errlen, "cannot write %s: %s", path, report__output_error(rc));
	return rc;
}

int cmd__close_stream(FILE *out, const char *path, int write_err, int rc, char *err, size_t errlen)
{
	bool bad;
	int cerr;

	if (write_err) {
		snprintf(err, errlen, "cannot write %s: %s", path ? path : "output",
			 strerror(-write_err));
		rc = write_err;
	}
	if (!path)
		return rc;
	bad = ferror(out) != 0; /* a write failed (errno is long gone) */
	cerr = fclose(out) != 0 ? errno : 0;

	if (!bad && !cerr) {
		fprintf(stderr, "extrospect: wrote %s\n", path);
		return rc;
	}
	if (rc && rc != TARGET_EGONE)
		return rc;
	snprintf(err, errlen, "cannot write %s: %s", path, strerror(cerr ? cerr : EIO));
	return -EIO;
}
