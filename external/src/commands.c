/* `record` and `top`. See commands.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "report/report.h"
#include "run.h"

void cmd__sampler_opts(const struct cli_opts *o, struct sampler_opts *so)
{
	*so = (struct sampler_opts){.freq_hz = o->freq_hz,
				    .duration_s = o->duration_s,
				    .event = o->cycles ? PERF_EV_CYCLES : PERF_EV_CPU_CLOCK,
				    .all_threads = o->all_threads,
				    .include_idle = o->include_idle,
				    .only_erlang = o->only_erlang,
				    .lines = o->lines,
				    .erlang_pid = o->erlang_pid,
				    .name = o->name,
				    .skid = o->skid_summary,
				    .keep_priority = o->keep_priority};
}

static int write_report(const struct cli_opts *o, const struct agg *a, pid_t pid, char *err,
			size_t errlen)
{
	char title[64];
	FILE *f;
	int rc;

	snprintf(title, sizeof(title), "extrospect: BEAM pid %d", (int)pid);
	f = fopen(o->output, "w");
	if (!f) {
		snprintf(err, errlen, "cannot write %s: %s", o->output, strerror(errno));
		return -errno;
	}
	if (o->format == CLI_FMT_SVG)
		rc = report__svg(a, f, title);
	else if (o->format == CLI_FMT_SPEEDSCOPE)
		rc = report__speedscope(a, f, title);
	else
		rc = report__collapsed(a, f);
	if (fclose(f) != 0 && !rc)
		rc = -EIO;
	if (rc)
		snprintf(err, errlen, "cannot write %s: %s", o->output, strerror(-rc));
	return rc;
}

/* Sample into a fresh aggregate (ctx->agg, freed by the caller even on failure). */
static int sample(const struct cli_opts *o, struct run_ctx *ctx, char *err, size_t errlen)
{
	int rc;

	cmd__sampler_opts(o, &ctx->opts);
	if ((rc = agg__new(&ctx->agg)))
		return rc;
	rc = run__sample(ctx);
	if (rc)
		snprintf(err, errlen, "%s", ctx->err);
	return rc;
}

int cmd__record(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
		size_t errlen)
{
	struct run_ctx ctx = {.t = t, .stop = stop, .progress = isatty(STDERR_FILENO)};
	struct agg *a;
	int rc;

	rc = sample(o, &ctx, err, errlen);
	a = ctx.agg;
	if (rc)
		goto cleanup;
	run__summary(&ctx, o->output, stderr);
	if ((rc = write_report(o, a, t->pid, err, errlen)))
		goto cleanup;
	fprintf(stderr, "extrospect: wrote %s (%zu stacks, %zu processes)\n", o->output,
		agg__nstacks(a), agg__ngroups(a));
	rc = ctx.target_exited ? TARGET_EGONE : 0;
cleanup:
	agg__free(a);
	return rc;
}

struct top_view {
	const struct cli_opts *o;
};

static void print_tables(const struct cli_opts *o, const struct agg *a, FILE *f)
{
	report__top_functions(a, f, o->limit);
	fputc('\n', f);
	report__top_processes(a, f, o->limit);
}

/* The live view: the whole screen redrawn once a second. */
static void top_tick(struct run_ctx *ctx, const struct sampler_stats *st)
{
	const struct top_view *v = ctx->user;

	printf("\033[H\033[2Jextrospect top: pid %d, %.0fs, %llu samples (%llu kept)  Ctrl-C to "
	       "quit\n\n",
	       (int)ctx->t->pid, st->elapsed_s, (unsigned long long)st->samples,
	       (unsigned long long)st->kept);
	print_tables(v->o, ctx->agg, stdout);
	fflush(stdout);
}

int cmd__top(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	     size_t errlen)
{
	struct top_view view = {.o = o};
	struct run_ctx ctx = {.t = t, .stop = stop, .user = &view};
	bool live = isatty(STDOUT_FILENO) && o->duration_s <= 0;
	struct agg *a;
	int rc;

	ctx.tick = live ? top_tick : NULL;
	ctx.progress = !live && isatty(STDERR_FILENO);
	rc = sample(o, &ctx, err, errlen);
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
