/* `extrospect info PID`: what attach found, as text or JSON (moved out of the command table,
 * table.c). Does not own: the rendering (report/info.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "info.h"

const char info__usage[] =
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
    "  --json        print one JSON object (keys documented in docs/guide.md)\n"
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
int cmd__info(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	      size_t errlen)
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
