/* extrospect: the sampler's entry point. The only place that exits or maps errors to exit codes.
 *
 * Exit codes (also in --help and docs/troubleshooting.md):
 *   0 success, 1 internal error, 2 usage error, 3 no such process, 4 not a BEAM VM,
 *   5 permission denied, 6 unsupported OTP (no built-in layout and no agent),
 *   7 the VM exited while being read, 8 node unreachable (inject), 9 cookie refused (inject),
 *   10 perf-map refused to replace a map it did not write, or events refused by the agent. */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "exitcode.h"
#include "perfmap.h"
#include "run.h"
#include "table.h"
#include "target.h"

#include "layout.h"
#include "xp_git_rev.h"

#ifndef XP_VERSION
#define XP_VERSION "0.1.0"
#endif

/* --version: the version, the git revision built, and the OTP releases of the built-in layout
 * rows (external/vm/layout.c), each once. */
static void print_version(void)
{
	unsigned n = 0, i, j;
	const struct xp_layout *rows = layout__rows(&n);

	printf("extrospect %s (git %s)\n", XP_VERSION, XP_GIT_REV);
	printf("supported OTP releases (built-in layouts):");
	for (i = 0; i < n; i++) {
		for (j = 0; j < i && strcmp(rows[j].otp_release, rows[i].otp_release); j++)
			;
		if (j == i)
			printf("%s OTP %s (erts %s.x, %s %s)", i ? "," : "", rows[i].otp_release,
			       rows[i].erts_series, rows[i].flavor == XP_FLAVOR_JIT ? "JIT" : "emu",
			       rows[i].arch);
	}
	printf("\nother erts versions: only with the agent loaded, for what it verifies\n");
}

/* The one mutable global: Ctrl-C / SIGTERM ask the sampling loop to stop and report (RUN_STOP);
 * a second one exits at once (128 + the signal, as a shell reports it), as py-spy does. SIGHUP,
 * for record --every only, ends the current interval now (RUN_ROTATE); SIGUSR1 asks for the
 * summary so far (RUN_REPORT); SIGUSR2, for record --ring only, a dump (RUN_DUMP). */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	static const char msg[] =
	    "extrospect: interrupted again: exiting without writing a report\n";

	if (sig == SIGHUP || sig == SIGUSR1 || sig == SIGUSR2) {
		if (!stop_requested)
			stop_requested = sig == SIGHUP	  ? RUN_ROTATE
					 : sig == SIGUSR1 ? RUN_REPORT
							  : RUN_DUMP;
		return;
	}
	if (stop_requested == RUN_STOP) {
		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
			/* nothing more to say */
		}
		_exit(128 + sig);
	}
	stop_requested = RUN_STOP;
}

/* Does every report of this run go to a file (record's and capture's -o, none of them "-" or
 * /dev/stdout)? Then a closed pipe is only the summary's reader's, and must not lose the files. */
static bool report_to_files(const struct cli_opts *o)
{
	size_t i;

	if (!o->noutputs && !o->output)
		return false;
	for (i = 0; i < o->noutputs; i++)
		if (!strcmp(o->outputs[i], "-") || !strcmp(o->outputs[i], "/dev/stdout"))
			return false;
	return !o->output || (strcmp(o->output, "-") && strcmp(o->output, "/dev/stdout"));
}

/* hup: record --every; usr2: record --ring; usr1: the sampling commands, whose loop (run__sample)
 * takes RUN_REPORT (the others read *stop as a plain stop flag); pipe: the report goes to files
 * (report_to_files), and a pipe closed under the summary (`record -d 30 -o f.svg PID 2>&1 | head
 * -n 1`) only fails the writes to it: the run goes on as asked and writes its files, where
 * SIGPIPE killed it with the recording unwritten. */
static void install_stop_handlers(bool hup, bool usr1, bool usr2, bool pipe)
{
	struct sigaction sa = {.sa_handler = on_stop_signal}, ign = {.sa_handler = SIG_IGN};

	sigemptyset(&sa.sa_mask);
	sigemptyset(&ign.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (pipe)
		sigaction(SIGPIPE, &ign, NULL);
	if (usr1)
		sigaction(SIGUSR1, &sa, NULL);
	if (hup)
		sigaction(SIGHUP, &sa, NULL);
	if (usr2)
		sigaction(SIGUSR2, &sa, NULL);
}

/* The errors that have an exit code of their own; any other is an internal error. */
static const struct {
	int err;
	enum exit_code code;
} exit_codes[] = {
    {TARGET_ENOPROC, EXIT_NO_PROCESS},	{TARGET_ENOTBEAM, EXIT_NOT_BEAM},
    {TARGET_EPERM, EXIT_PERMISSION},	{TARGET_EUNSUPPORTED, EXIT_UNSUPPORTED},
    {TARGET_EGONE, EXIT_TARGET_EXITED}, {PERFMAP_EREFUSED, EXIT_REFUSED},
    {CMD_EUSAGE, EXIT_USAGE},		{EVENTS_EREFUSED, EXIT_REFUSED},
};

static int exit_code_for(int err)
{
	size_t i;

	for (i = 0; i < sizeof(exit_codes) / sizeof(exit_codes[0]); i++) {
		if (exit_codes[i].err == err)
			return exit_codes[i].code;
	}
	return EXIT_INTERNAL;
}

static bool env_flag(const char *name)
{
	const char *v = getenv(name);

	return v && strcmp(v, "1") == 0;
}

static int run_command(const struct cli_opts *opts)
{
	const struct command *c = opts->command;
	struct target_opts topts = {
	    .no_agent = opts->no_agent,
	    .no_builtin_layout = env_flag("EXTROSPECT_NO_BUILTIN_LAYOUT"),
	};
	struct target *t = NULL;
	char msg[1024] = "";
	int err, code = EXIT_OK;

	/* perf.data may outlive the VM: this step does not attach. */
	if (opts->perf_data)
		return cmd__perfmap_fix_data(opts->perf_data, opts->pid);
	if (c->run_detached) {
		install_stop_handlers(false, false, false, false);
		return c->run_detached(opts, &stop_requested);
	}
	err = target__attach(opts->pid, &topts, &t);
	if (err) {
		fprintf(stderr, "extrospect: %s\n",
			t && t->err[0] ? t->err : strerror(err < 0 && err > -4096 ? -err : EIO));
		code = exit_code_for(err);
		goto cleanup;
	}
	/* Only once attached: Ctrl-C while attaching ends the program. */
	if (c->catches_stop)
		install_stop_handlers(opts->every_s > 0, c->opts & CO_SAMPLING, opts->ring_ns > 0,
				      report_to_files(opts));
	err = c->run(opts, t, &stop_requested, msg, sizeof(msg));
	if (err && err != TARGET_EGONE)
		fprintf(stderr, "extrospect: %s\n", msg[0] ? msg : strerror(-err));
	code = err ? exit_code_for(err) : EXIT_OK;
cleanup:
	target__free(t);
	return code;
}

/* The sampler's own heap, before any command allocates (issue 27). Page faults were a large part
 * of its CPU: 3,400 in a 30 s record of a compiler, 25,000 in a `pstack --all` of a million
 * processes, each a kernel entry (19 us apiece on the 2-core PVM guests of this project, where a
 * page freed a moment before comes back through the host), for a heap that glibc grew, trimmed
 * and mmap'd piecewise in 4 KiB pages. So the heap is grown in one step of HEAP_PAD and asked for
 * in huge pages (MADV_HUGEPAGE; advice only, as for bigmem.h: where THP is off, 4 KiB pages as
 * before); blocks up to 32 MiB (glibc's most) come from it rather than from mmap (a mapping is
 * faulted in again after every free); and it is not trimmed below 512 MiB, so that freed memory
 * is used again. Untouched pad is address space only. Faults fell to ~400 and ~800; the CPU of a
 * 30 s record of the compiler from 1.28-1.33 to 1.06-1.16 % of a core, and `pstack --all` from
 * 1.51-1.62 s to 1.19-1.28 s (docs/accuracy-and-cost.md). The heap stays at its largest until
 * the program exits. */
#define HEAP_PAD ((size_t)256 << 20)

static void heap_in_huge_pages(void)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo;
	void *first, *top;

	/* A block larger than what is left at the heap's top (the start-up's allocations), below
	 * the mmap threshold: the heap grows by it and HEAP_PAD, once, and is advised from it to
	 * the break. Freed, the top stays (below the trim threshold). */
	if (!mallopt(M_TOP_PAD, (int)HEAP_PAD) || !mallopt(M_TRIM_THRESHOLD, 2 * (int)HEAP_PAD) ||
	    !mallopt(M_MMAP_THRESHOLD, 32 << 20) || !(first = malloc(8 << 20)))
		return;
	lo = (uintptr_t)first / page * page;
	free(first);
	top = sbrk(0);
	if (top != (void *)-1 && lo < (uintptr_t)top)
		(void)madvise((void *)lo, (uintptr_t)top - lo, MADV_HUGEPAGE);
}

int main(int argc, char **argv)
{
	struct cli_opts opts;
	char err[256];

	switch (cli__parse(argc, argv, &opts, err, sizeof(err))) {
	case CLI_HELP:
		cli__help(stdout, opts.command);
		return EXIT_OK;
	case CLI_VERSION:
		print_version();
		return EXIT_OK;
	case CLI_MAN:
		cli__man_page(stdout, XP_VERSION);
		return fflush(stdout) ? EXIT_INTERNAL : EXIT_OK;
	case CLI_COMPLETION:
		cli__bash_completion(stdout);
		return fflush(stdout) ? EXIT_INTERNAL : EXIT_OK;
	case CLI_USAGE_ERROR:
		fprintf(stderr, "extrospect: %s\n", err);
		return EXIT_USAGE;
	case CLI_RUN:
		break;
	}
	heap_in_huge_pages();
	return run_command(&opts);
}
