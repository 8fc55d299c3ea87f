/* extrospect: the sampler's entry point. The only place that exits or maps errors to exit codes.
 *
 * Exit codes (also in --help and README.md):
 *   0 success, 1 internal error, 2 usage error, 3 no such process, 4 not a BEAM VM,
 *   5 permission denied, 6 unsupported OTP (no built-in layout and no agent; watch: no agent or
 *   no free spy thread),
 *   7 the VM exited while being read, 8 node unreachable (inject), 9 cookie refused (inject),
 *   10 perf-map refused to replace a map it did not write. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "exitcode.h"
#include "info.h"
#include "perfmap.h"
#include "target.h"

#ifndef XP_VERSION
#define XP_VERSION "0.1.0"
#endif

/* The one mutable global: Ctrl-C / SIGTERM ask the sampling loop to stop and report. */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void install_stop_handlers(void)
{
	struct sigaction sa = {.sa_handler = on_stop_signal};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static int exit_code_for(int err)
{
	switch (err) {
	case TARGET_ENOPROC:
		return EXIT_NO_PROCESS;
	case TARGET_ENOTBEAM:
		return EXIT_NOT_BEAM;
	case TARGET_EPERM:
		return EXIT_PERMISSION;
	case TARGET_EUNSUPPORTED:
		return EXIT_UNSUPPORTED;
	case TARGET_EGONE:
		return EXIT_TARGET_EXITED;
	case PERFMAP_EREFUSED:
		return EXIT_REFUSED;
	case CMD_EUSAGE:
		return EXIT_USAGE;
	default:
		return EXIT_INTERNAL;
	}
}

static bool env_flag(const char *name)
{
	const char *v = getenv(name);

	return v && strcmp(v, "1") == 0;
}

static int run_attached(const struct cli_opts *o, struct target *t, char *msg, size_t len)
{
	switch (o->command) {
	case CLI_RECORD:
		return cmd__record(o, t, &stop_requested, msg, len);
	case CLI_TOP:
		return cmd__top(o, t, &stop_requested, msg, len);
	case CLI_PSTACK:
		return cmd__pstack(o, t, &stop_requested, msg, len);
	case CLI_BLAME:
		return cmd__blame(o, t, &stop_requested, msg, len);
	case CLI_SCHED:
		return cmd__sched(o, t, &stop_requested, msg, len);
	case CLI_PERFMAP:
		return cmd__perfmap(o, t, &stop_requested, msg, len);
	case CLI_CAPTURE:
		return cmd__capture(o, t, &stop_requested, msg, len);
	case CLI_WATCH:
		return cmd__watch(o, t, &stop_requested, msg, len);
	default:
		return -EINVAL;
	}
}

static int run_command(const struct cli_opts *opts)
{
	struct target_opts topts = {
	    .no_agent = opts->no_agent,
	    .no_builtin_layout = env_flag("EXTROSPECT_NO_BUILTIN_LAYOUT"),
	};
	struct target *t = NULL;
	int err, code = EXIT_OK;

	/* perf.data may outlive the VM: this step does not attach. */
	if (opts->command == CLI_PERFMAP && opts->perf_data)
		return cmd__perfmap_fix_data(opts->perf_data, opts->pid);
	if (opts->command == CLI_INJECT) {
		install_stop_handlers();
		return cmd__inject(opts, &stop_requested);
	}
	err = target__attach(opts->pid, &topts, &t);
	if (err == 0 && opts->command != CLI_INFO) {
		char msg[256] = "";

		install_stop_handlers();
		err = run_attached(opts, t, msg, sizeof(msg));
		if (err && err != TARGET_EGONE)
			fprintf(stderr, "extrospect: %s\n", msg[0] ? msg : strerror(-err));
		code = err ? exit_code_for(err) : EXIT_OK;
		goto cleanup;
	}
	if (err) {
		fprintf(stderr, "extrospect: %s\n",
			t && t->err[0] ? t->err : strerror(err < 0 && err > -4096 ? -err : EIO));
		code = exit_code_for(err);
		goto cleanup;
	}
	if (opts->json)
		info__print_json(t, stdout);
	else
		info__print_text(t, stdout);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "extrospect: cannot write output: %s\n", strerror(errno));
		code = EXIT_INTERNAL;
	}
cleanup:
	target__free(t);
	return code;
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
		printf("extrospect %s\n", XP_VERSION);
		return EXIT_OK;
	case CLI_USAGE_ERROR:
		fprintf(stderr, "extrospect: %s\n", err);
		return EXIT_USAGE;
	case CLI_RUN:
		break;
	}
	return run_command(&opts);
}
