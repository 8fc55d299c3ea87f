/* `extrospect pstack PID`: what every scheduler is doing now (one sample each, or its scheduler
 * data when it produced none), and with --all the stack of every process in the process table.
 * Owns: the command, its help and the document's header. See pstack.h for the parts, and
 * pstack_frames.c for what they share. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "report/outfile.h"
#include "report/report.h"
#include "run.h"
#include "info.h"
#include "pstack.h"

const char pstack__usage[] =
    "Usage: extrospect pstack [--all] [--erlang-only] [--json] [-o FILE] [--no-agent] PID\n"
    "\n"
    "What every scheduler of the BEAM VM with OS pid PID is doing right now: one sample of\n"
    "each normal and dirty scheduler thread (a 40 ms window at most), showing its state and,\n"
    "when it runs an Erlang process, that process's pid, name and mixed native + Erlang stack.\n"
    "A scheduler that gives no sample in the window (asleep) is reported from /proc and its\n"
    "scheduler data. The VM is never stopped: everything is read with process_vm_readv.\n"
    "\n"
    "Options:\n"
    "  --all           also print the stack of every Erlang process, read from the process\n"
    "                  table: status, message-queue length (OTP 27+), heap and stack size,\n"
    "                  current function and the frames from stop to the stack bottom (exact\n"
    "                  for a process that is not running; a running one is on a scheduler)\n"
    "  --erlang-only   leave out native (C) frames\n"
    "  --json          one JSON document on stdout\n"
    "  -o FILE         write to FILE instead of stdout: whole or not at all (a temporary file\n"
    "                  renamed over FILE once complete), and around the page cache, which\n"
    "                  costs the kernel far less for the hundreds of MB of --all\n"
    "  --erlang-names  print Elixir modules as Erlang does ('Elixir.MyApp.Repo':get/2), not\n"
    "                  in Elixir form (MyApp.Repo.get/2, the default)\n"
    "  --no-agent      ignore the extrospect agent even when the VM has it loaded\n"
    "\n"
    "A process is named as observer and recon name it: its registered name, else proc_lib's\n"
    "'$initial_call' read from its dictionary (my_server:init/1, where its initial call is\n"
    "proc_lib:init_p/5), else its initial call. Stacks are innermost frame first. Without the "
    "agent on OTP 28+ the process table is found\n"
    "by a scan of beam.smp's data; when that fails, --all says so and pids print as <pid 0x..>.\n"
    "\n"
    "Examples:\n"
    "  extrospect pstack 4242                   # every scheduler, now\n"
    "  extrospect pstack --erlang-only 4242     # the same, Erlang frames only\n"
    "  extrospect pstack --all 4242 | less      # and every process's stack\n"
    "  extrospect pstack --all --json 4242 | jq '.processes[] | select(.name == \"my_server\")'\n"
    "  extrospect pstack --all --json -o procs.json 4242   # a million processes: ~500 MB\n";

static void json_header(const struct pstack_ctx *c, struct json *j)
{
	const struct target *t = c->t;

	json__kv_int(j, "os_pid", t->pid);
	json__kv_string(j, "otp_release", t->otp_release);
	json__kv_string(j, "erts_version", t->erts_version);
	json__kv_bool(j, "agent", target__has_agent(t));
	json__kv_string(j, "frame_layout", t->frame_layout == XP_LAYOUT_FP ? "fp" : "ra");
	json__kv_bool(j, "pids_decoded", c->pr.pids.known);
}

/* After the snapshot: what could not be read while taking it. */
static void json_footer(const struct pstack_ctx *c, struct json *j)
{
	info__json_mem_failures(c->t, j);
}

static void text_header(const struct pstack_ctx *c, FILE *f)
{
	const struct target *t = c->t;

	fprintf(f, "extrospect pstack: BEAM pid %d, OTP %s (erts %s), %s\n", (int)t->pid,
		t->otp_release[0] ? t->otp_release : "?",
		t->erts_version[0] ? t->erts_version : "?",
		target__has_agent(t) ? "with the agent" : "without the agent");
	if (!c->pr.pids.known)
		fprintf(f, "note: the pid encoding of this VM is unknown (no agent and no process "
			   "table): pids print as <pid 0x..>\n");
}

static int setup(struct pstack_ctx *c, char *err, size_t errlen)
{
	char why[256];
	int rc;

	if (!c->t->jit) {
		snprintf(err, errlen, "no JIT map: cannot name Erlang code (%s)",
			 strerror(-c->t->jit_err));
		return -ENOTSUP;
	}
	/* Before the process reader: a scanned table makes pids decodable (OTP 28+, no agent). */
	rc = ptab__locate(c->t, &c->ptab, why, sizeof(why));
	if (rc == -ENOMEM)
		return rc;
	c->have_ptab = rc == 0;
	if (!c->have_ptab && c->o->all) {
		snprintf(err, errlen, "--all: %s", why);
		return TARGET_EUNSUPPORTED;
	}
	if (process__reader(&c->pr, c->t)) {
		snprintf(err, errlen, "the Process layout of this VM is unknown");
		return TARGET_EUNSUPPORTED;
	}
	c->pr.erlang_names = c->o->erlang_names;
	erlang_stack__cfg(&c->ecfg, c->t->jit, c->t->frame_layout,
			  (uint64_t)c->t->addr[XP_ADDR_NORMAL_EXIT].value, c->t->layout);
	c->words = malloc(PSTACK_STACK_BYTES);
	c->er = malloc(sizeof(*c->er));
	if (!c->words || !c->er || agg__new(&c->agg) || pstack__frame_cache(c))
		return -ENOMEM;
	return 0;
}

int cmd__pstack(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
		size_t errlen)
{
	struct pstack_ctx c = {.o = o, .t = t, .stop = stop};
	struct outfile of = {0};
	FILE *out = stdout;
	struct json j;
	int rc;

	if ((rc = setup(&c, err, errlen)) || (rc = pstack__schedulers(&c, err, errlen)))
		goto cleanup;
	if (o->output && (rc = cmd__open_output(&of, o->output, err, errlen)))
		goto cleanup;
	if (o->output)
		out = of.f;
	/* A million processes make hundreds of MB: write them in large blocks (the JSON writer's
	 * own buffer: stdio's in front of it would copy every block once more; with -o they go to
	 * the file from it, and its whole pages bypass the page cache). With -o a thread of the
	 * output file's writes them while the next fills (the text's blocks copied for it): the
	 * disk's time, 0.3-0.9 s of a million processes' JSON here, is not the listing's. */
	if (o->json) {
		json__init(&j, out);
		/* unbuffered when it cannot: slower, as good */
		if (o->output)
			json__buffer_to(&j, &of, 1 << 20);
		else
			json__buffer(&j, 1 << 20);
		json__object(&j);
		json_header(&c, &j);
		pstack__json_schedulers(&c, &j);
		if (o->all)
			rc = pstack__processes(&c, out, &j, err, errlen);
		json_footer(&c, &j);
		json__end_object(&j);
		json__unbuffer(&j);
		fputc('\n', out);
	} else {
		if (!o->output)
			report__buffer_stdout();
		else
			outfile__stream_behind(&of); /* written at once when it cannot */
		text_header(&c, out);
		pstack__print_schedulers(&c, out);
		if (o->all)
			rc = pstack__processes(&c, out, NULL, err, errlen);
	}
	rc = cmd__finish_output(o->output ? &of : NULL, o->output, rc, err, errlen);
cleanup:
	free(c.scheds);
	free(c.words);
	free(c.er);
	pstack__frame_cache_free(&c);
	agg__free(c.agg);
	return rc;
}
