/* `extrospect capture`: sample like record, recording each sample for offline replay (capture.h),
 * and write the capture file. Does not own: recording, the format. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "commands.h"
#include "run.h"

const char capture__usage[] =
    "Usage: extrospect capture [OPTIONS] -o FILE PID\n"
    "\n"
    "Sample a running VM as record does, and save, for each sample that produced a stack, what\n"
    "resolving it took from outside the sampler's code: the perf sample, the in-kernel capture\n"
    "record, every memory read, the native unwind and native frame names, with the stack\n"
    "resolved live. test/c/test_replay.c resolves the samples again offline, without a VM or\n"
    "root, and compares. Format: external/src/sample/capfile.h (gzip, versioned).\n"
    "\n"
    "  -o, --output FILE     where to write (required)\n"
    "  -n, --limit N         keep the first N samples that produced a stack (default 300); the\n"
    "                        reads of the others are kept only as a pool\n"
    "\n"
    "%s"
    "\n"
    "Examples:\n"
    "  extrospect capture -d 3 -n 300 --name fl -o test/captures/otp25-fl.xpcap 4242\n"
    "  tools/refresh-captures.sh        # all the checked-in captures\n";

int cmd__capture(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
		 size_t errlen)
{
	struct run_ctx ctx = {.t = t, .stop = stop};
	struct sampler_hooks h;
	struct capture *c = NULL;
	int rc;

	cmd__sampler_opts(o, &ctx.opts);
	ctx.opts.group = GROUP_PID; /* each sample's line names its process, as replay compares */
	if ((rc = agg__new(&ctx.agg)))
		return rc;
	if ((rc = capture__new(t, &ctx.opts, ctx.agg, o->limit, &c))) {
		snprintf(err, errlen, "cannot record the JIT map: %s", strerror(-rc));
		goto cleanup;
	}
	capture__hooks(c, &h);
	ctx.hooks = &h;
	ctx.opts.on_record = capture__on_record;
	ctx.opts.record_ctx = c;
	if ((rc = run__sample(&ctx))) {
		snprintf(err, errlen, "%s", ctx.err);
		goto cleanup;
	}
	run__summary(&ctx, o->output, stderr);
	if (ctx.final.jit_refreshes)
		fprintf(stderr, "extrospect: warning: the JIT map changed during the capture; "
				"replay uses the map read at its start\n");
	if ((rc = capture__write(c, o->output))) {
		snprintf(err, errlen, "cannot write %s: %s", o->output, strerror(-rc));
		goto cleanup;
	}
	fprintf(stderr, "extrospect: wrote %s (%zu samples)\n", o->output, capture__nsamples(c));
	rc = ctx.target_exited ? TARGET_EGONE : 0;
cleanup:
	capture__free(c);
	agg__free(ctx.agg);
	return rc;
}
