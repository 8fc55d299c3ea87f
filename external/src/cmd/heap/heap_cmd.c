/* `extrospect heap PID`: the command and its help. One reading (heap.c) printed as a table or
 * JSON (heap_print.c), or readings every --watch seconds (heap_watch.c). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "report/outfile.h"
#include "report/report.h"
#include "run.h"
#include "heap.h"
#include "heap_print.h"
#include "heap_watch.h"

const char heap__usage[] =
    "Usage: extrospect heap [--sort COLUMN] [-n N] [--json] [-o FILE] [--no-agent] PID\n"
    "\n"
    "The memory of every Erlang process of the BEAM VM with OS pid PID, read from its process\n"
    "table from outside (process_vm_readv; no signal, message or allocation in the VM), largest\n"
    "first. Columns (sizes in bytes, K/M/G = KiB/MiB/GiB):\n"
    "  TOTAL   heap + old heap + heap fragments (process_info total_heap_size, in bytes)\n"
    "  HEAP    the young heap (process_info heap_size)\n"
    "  OLD     the old generation: what survived a minor collection (long-lived data)\n"
    "  FRAG    heap fragments and message fragments not yet collected into the heap\n"
    "  STACK   the stack (process_info stack_size)\n"
    "  BIN     off-heap (refc) binaries the process references, as the VM counts them for its\n"
    "          binary GC (the vheap, young + old): the indicator of a binary leak\n"
    "  MSGQ    message-queue length (OTP 27+; '-' on OTP 25, whose VM keeps no count)\n"
    "  REDS    reductions up to the process's last schedule-out\n"
    "  STATUS  as process_info(P, status); then the registered name or initial call, and\n"
    "          the current function (of a process that is not running)\n"
    "A running process's values move while they are read: its row says 'running'. If the VM\n"
    "exits while it is read, what was read is printed and the exit status is 7.\n"
    "\n"
    "Options:\n"
    "  --sort COLUMN  total (default), heap, old, frag, stack, bin, msgq, reds or memory\n"
    "                 (memory: sizeof(Process) + every heap, a lower bound of process_info\n"
    "                 memory, which adds links, monitors, messages and the dictionary)\n"
    "  -n N           show the top N processes (default 20); -n all: every process, the rows\n"
    "                 written as they are named (a script's aggregate of a million processes)\n"
    "  --watch SECS   read again every SECS seconds (or 500ms, 5s, 1m) until Ctrl-C (or -d):\n"
    "                 rows sorted by the growth of the --sort column over the interval, with\n"
    "                 the growth since the first reading; 'long-lived: old/bin' flags a\n"
    "                 process whose old heap or binaries grew and never shrank over two\n"
    "                 intervals or more\n"
    "  -d SECS        with --watch: stop after SECS seconds (or 30s, 5m, 1h)\n"
    "  --json         with --watch: one JSON document per interval, one per line\n"
    "  --json         one JSON document: sizes in words as process_info gives them\n"
    "  -o FILE        write the table or document to FILE, whole or not at all (a temporary\n"
    "                 file renamed when complete), not to stdout; with --watch each reading\n"
    "                 is added to FILE as it is taken (the file holds every one so far)\n"
    "  --erlang-names print Elixir modules as Erlang does, not in Elixir form\n"
    "  --no-agent     ignore the extrospect agent even when the VM has it loaded\n"
    "\n"
    "Examples:\n"
    "  extrospect heap 4242                  # the 20 largest processes\n"
    "  extrospect heap --sort bin -n 5 4242  # who holds the most refc binaries (a leak?)\n"
    "  extrospect heap --sort msgq 4242      # the longest message queues (OTP 27+)\n"
    "  extrospect heap --watch 10 --sort old 4242   # who accumulates long-lived data\n"
    "  extrospect heap --watch 1m --json -o heap.jsonl 4242   # a reading a minute, kept\n"
    "  extrospect heap --json -n all 4242 | jq '.processes[] | select(.name == \"my_server\")'\n"
    "  extrospect heap --json -n all -o heap.json 4242   # a million rows, to a file\n";

int cmd__heap(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	      size_t errlen)
{
	struct heap_ctx c = {.o = o, .t = t, .stop = stop};
	struct outfile of = {0};
	FILE *out = stdout;
	struct json j;
	int rc, wrc;

	if (o->duration_s > 0 && o->watch_s <= 0) {
		snprintf(err, errlen, "-d/--duration goes with --watch");
		return CMD_EUSAGE;
	}
	if (o->sort && heap__col_of(o->sort) < 0) {
		snprintf(err, errlen,
			 "bad --sort (total, heap, old, frag, stack, bin, msgq, reds or memory)");
		return CMD_EUSAGE;
	}
	if (o->sort)
		c.sort = (enum heap_col)heap__col_of(o->sort);
	if ((rc = heap__setup(&c, err, errlen)))
		goto cleanup;
	if (o->watch_s > 0) {
		c.out = stdout;
		if (o->output && (rc = cmd__open_stream(o->output, &c.out, err, errlen)))
			goto cleanup;
		rc = heap__watch(&c);
		rc = cmd__close_stream(c.out, o->output, c.out_err, rc, err, errlen);
		goto cleanup;
	}
	/* Only the rows shown are kept and sorted: -n 20 of a million processes sorts 20. */
	if (o->limit && o->limit != UINT_MAX)
		c.top = o->limit;
	if ((rc = heap__read(&c)) && rc != TARGET_EGONE)
		goto cleanup;
	if (rc == TARGET_EGONE)
		fprintf(stderr, "extrospect: the VM exited while it was read: %zu processes read\n",
			c.n);
	else if (*stop)
		fprintf(stderr, "extrospect: interrupted: %zu of %" PRIu64 " processes read\n", c.n,
			c.st.used);
	/* -n all: a million rows, written as they are named, in large blocks; with -o from the
	 * JSON writer's own buffer (json__buffer_to), whose whole pages bypass the page cache. */
	if (o->output && (wrc = cmd__open_output(&of, o->output, err, errlen))) {
		rc = wrc;
		goto cleanup;
	}
	if (o->output)
		out = of.f;
	else
		report__buffer_stdout();
	if (o->json) {
		json__init(&j, out);
		if (o->output)
			json__buffer_to(&j, &of, 1 << 20); /* unbuffered when it cannot */
		heap__print_json(&c, &j);		   /* the writer ends the document's line */
		json__unbuffer(&j);
	} else {
		if (o->output)
			outfile__stream_behind(&of); /* written at once when it cannot */
		heap__print_text(&c, out);
	}
	rc = cmd__finish_output(o->output ? &of : NULL, o->output, rc, err, errlen);
cleanup:
	if (rc && rc != TARGET_EGONE && !err[0])
		snprintf(err, errlen, "heap: %s", strerror(-rc));
	atom__cache_off(&c.pr.atoms);
	free(c.rows);
	return rc;
}
