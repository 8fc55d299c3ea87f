/* `extrospect alloc PID`: the VM's memory allocators read from outside: every instance of every
 * alloc_util allocator (binary_alloc, eheap_alloc, ...), its carriers and blocks, the free
 * space of its multiblock carriers and how fragmented it is, summed per type and set against
 * the anonymous rw memory of /proc/PID/smaps. Nothing in the VM is written, locked or reset.
 * Owns: the command, its help, summing and sorting; printing and the columns' names are
 * alloc_print.c. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc_cmd.h"
#include "alloc_locate.h"
#include "alloc_print.h"
#include "cli.h"
#include "commands.h"
#include "report/outfile.h"
#include "run.h"
#include "target.h"

#define SLICE_MS 100 /* --watch's wait is cut in slices to see Ctrl-C */

const char alloc__usage[] =
    "Usage: extrospect alloc [--sort COLUMN] [-n N] [--watch SECS [-d SECS]] [--json]\n"
    "                        [-o FILE] [--no-agent] PID\n"
    "\n"
    "The memory allocators of the BEAM VM with OS pid PID, read from outside (process_vm_readv;\n"
    "nothing in the VM is written, locked or reset), named as OTP names them: one row per\n"
    "allocator type (binary_alloc, eheap_alloc, ets_alloc, ...), then the top N instances\n"
    "(INST 0 is the global instance, N scheduler N's). Columns (K/M/G = KiB/MiB/GiB):\n"
    "  MBC / SBC   multiblock / singleblock carriers (+ pooled multiblock carriers: POOL)\n"
    "  MSEG / SYS  carriers from mseg_alloc (mmap) / sys_alloc (malloc)\n"
    "  CARRIERS    bytes of every carrier: what the allocator holds from the OS\n"
    "  BLOCKS      bytes in allocated blocks: what the VM uses\n"
    "  FREE        multiblock carrier bytes not in blocks (headers included)\n"
    "  LARGEST     the largest free block, pooled carriers included (AOFF strategies: aoff,\n"
    "              aoffcbf, aoffcaobf, ...; '-' for the others, whose carriers do not record it)\n"
    "  FRAG        (FREE - LARGEST) / FREE per instance: free memory no single allocation can\n"
    "              use (external fragmentation); a type sums its instances. recon_alloc's\n"
    "              fragmentation/1 gives usage instead, BLOCKS / CARRIERS (JSON: usage)\n"
    "Then carriers against the anonymous rw memory of /proc/PID/smaps, and what the\n"
    "allocators do not account for (malloc outside them, thread stacks, NIFs, mseg's cache).\n"
    "Needs erts_allctrs_info: from the agent, beam.smp's symbols (OTP <= 27) or a scan of its\n"
    "data (28+). Exit status 6 when it cannot be found or no layout row describes it.\n"
    "\n"
    "Options:\n"
    "  --sort COLUMN  carriers (default), blocks, free, largest or frag\n"
    "  -n N           show the top N instances (default 20)\n"
    "  --watch SECS   read again every SECS seconds (or 500ms, 5s, 1m) until Ctrl-C (or -d):\n"
    "                 each type's change of carrier and block bytes over the interval\n"
    "  -d SECS        with --watch: stop after SECS seconds (or 30s, 5m, 1h)\n"
    "  --json         one JSON document (with --watch: one per interval, one per line)\n"
    "  -o FILE        write the table or document to FILE, whole or not at all (a temporary\n"
    "                 file renamed when complete), not to stdout; with --watch each reading\n"
    "                 is added to FILE as it is taken (the file holds every one so far)\n"
    "  --no-agent     ignore the extrospect agent even when the VM has it loaded\n"
    "\n"
    "Examples:\n"
    "  extrospect alloc 4242                     # where the VM's memory is, per allocator\n"
    "  extrospect alloc --sort frag -n 5 4242    # the most fragmented instances\n"
    "  extrospect alloc --watch 10 4242          # which allocator grows\n"
    "  extrospect alloc --watch 5m --json -o alloc.jsonl 4242   # kept, a reading every 5 min\n"
    "  extrospect alloc --json 4242 | jq '.types[] | select(.name == \"binary_alloc\")'\n"
    "  extrospect alloc --json -o alloc.json 4242   # to a file, for a ticket or a diff\n";

static double clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void stat_add(struct alloc_stat *s, uint64_t no, uint64_t size)
{
	s->no += no;
	s->size += size;
}

/* Add instance a into row r (a type's or the total's, or r alone for the instance's row). */
static void add_inst(struct alloc_row *r, const struct alloc_inst *a)
{
	uint64_t free = alloc__mbc_free(a);

	stat_add(&r->mbc, a->mbc_mseg.no + a->mbc_sys.no, a->mbc_mseg.size + a->mbc_sys.size);
	stat_add(&r->sbc, a->sbc_mseg.no + a->sbc_sys.no, a->sbc_mseg.size + a->sbc_sys.size);
	stat_add(&r->pool, a->pool_carriers.no, a->pool_carriers.size);
	r->mseg += a->mbc_mseg.no + a->sbc_mseg.no;
	r->sys += a->mbc_sys.no + a->sbc_sys.no;
	stat_add(&r->blocks, a->mbc_blocks.no + a->sbc_blocks.no + a->pool_blocks.no,
		 a->mbc_blocks.size + a->sbc_blocks.size + a->pool_blocks.size);
	r->free += free;
	if (r->instances++ == 0)
		r->have_largest = true;
	r->have_largest &= a->have_largest;
	if (a->largest_free > r->largest)
		r->largest = a->largest_free;
	r->frag_bytes += free > a->largest_free ? free - a->largest_free : 0;
}

static void finish(struct alloc_row *r)
{
	r->val[ALLOC_COL_CARRIERS] = r->mbc.size + r->sbc.size + r->pool.size;
	r->val[ALLOC_COL_BLOCKS] = r->blocks.size;
	r->val[ALLOC_COL_FREE] = r->free;
	r->val[ALLOC_COL_LARGEST] = r->have_largest ? r->largest : 0;
	r->val[ALLOC_COL_FRAG] = r->have_largest && r->free ? r->frag_bytes * 10000 / r->free : 0;
}

static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct alloc_row *x = a, *y = b;
	enum alloc_col k = *(const enum alloc_col *)arg;

	if (x->val[k] != y->val[k])
		return x->val[k] > y->val[k] ? -1 : 1;
	if (x->type != y->type)
		return x->type - y->type;
	return x->ix - y->ix;
}

static int summarize(struct alloc_ctx *c)
{
	size_t i;

	c->inst = calloc(c->r.n ? c->r.n : 1, sizeof(*c->inst));
	c->types = calloc(ALLOC_MAX_TYPES, sizeof(*c->types));
	if (!c->inst || !c->types)
		return -ENOMEM;
	memset(&c->total, 0, sizeof(c->total));
	snprintf(c->total.name, sizeof(c->total.name), "total");
	c->total.ix = -1;
	for (i = 0; i < c->r.n; i++) {
		const struct alloc_inst *a = &c->r.inst[i];
		struct alloc_row *t = c->ntypes ? &c->types[c->ntypes - 1] : NULL;

		if (!t || t->type != a->type) {
			t = &c->types[c->ntypes++];
			memcpy(t->name, a->name, sizeof(t->name));
			t->type = a->type;
			t->ix = -1;
		}
		add_inst(t, a);
		add_inst(&c->total, a);
		memcpy(c->inst[i].name, a->name, sizeof(a->name));
		c->inst[i].type = a->type;
		c->inst[i].ix = a->ix;
		add_inst(&c->inst[i], a);
		finish(&c->inst[i]);
	}
	c->ninst = c->r.n;
	for (i = 0; i < c->ntypes; i++)
		finish(&c->types[i]);
	finish(&c->total);
	qsort_r(c->types, c->ntypes, sizeof(*c->types), cmp_rows, &c->sort);
	qsort_r(c->inst, c->ninst, sizeof(*c->inst), cmp_rows, &c->sort);
	return 0;
}

static void clear(struct alloc_ctx *c)
{
	alloc__reading_free(&c->r);
	free(c->inst);
	c->inst = NULL;
	c->ninst = 0;
	c->ntypes = 0;
}

int alloc__read_all(struct alloc_ctx *c)
{
	double start = clock_ms(CLOCK_MONOTONIC), cpu = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
	uint64_t gone = mem__failures(c->t->mem, MEM_FAIL_GONE);
	int err;

	free(c->types); /* the caller kept what it needed (prev_types) */
	c->types = NULL;
	clear(c);
	err = alloc__read(c->t->mem, c->t->layout, (uint64_t)c->t->addr[XP_ADDR_ALLCTRS_INFO].value,
			  true, &c->r);
	c->ms = clock_ms(CLOCK_MONOTONIC) - start;
	if (!err)
		err = summarize(c);
	c->anon_err = smaps__anon_rw(c->t->pid, &c->anon);
	c->cpu_ms = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - cpu;
	if (mem__failures(c->t->mem, MEM_FAIL_GONE) > gone)
		return TARGET_EGONE;
	return err;
}

void alloc__ctx_free(struct alloc_ctx *c)
{
	clear(c);
	free(c->types);
	free(c->prev_types);
	c->types = c->prev_types = NULL;
}

/* One reading to out: stdout or --watch -o's stream, flushed (0, or the negative errno of a
 * failed write), or -o's file (its errors are outfile__close's to report). */
static int print(const struct alloc_ctx *c, FILE *out, bool flush)
{
	struct json j;

	if (c->o->json) {
		json__init(&j, out);
		alloc__print_json(c, &j);
	} else {
		alloc__print_text(c, out);
	}
	errno = 0;
	if (flush && (fflush(out) != 0 || ferror(out)))
		return errno ? -errno : -EIO;
	return 0;
}

/* Readings every watch_s seconds until *stop or -d; each printed to out with its type rows'
 * change. A failed write stops it: *out_err says why. */
static int watch(struct alloc_ctx *c, volatile sig_atomic_t *stop, FILE *out, int *out_err)
{
	double t0 = clock_ms(CLOCK_MONOTONIC), last = t0, end = t0 + c->o->duration_s * 1e3;
	int err = 0;

	while (!*stop && !err) {
		double next = last + c->o->watch_s * 1e3;

		while (!*stop && clock_ms(CLOCK_MONOTONIC) < next &&
		       (c->o->duration_s <= 0 || clock_ms(CLOCK_MONOTONIC) < end))
			nanosleep(&(struct timespec){0, SLICE_MS * 1000000L}, NULL);
		if (*stop || (c->o->duration_s > 0 && clock_ms(CLOCK_MONOTONIC) >= end))
			break;
		free(c->prev_types);
		c->prev_types = c->types;
		c->nprev = c->ntypes;
		c->types = NULL;
		c->interval_s = (clock_ms(CLOCK_MONOTONIC) - last) / 1e3;
		last = clock_ms(CLOCK_MONOTONIC);
		err = alloc__read_all(c);
		if ((!err || err == TARGET_EGONE) && (*out_err = print(c, out, true)))
			err = *out_err;
	}
	return err;
}

int cmd__alloc(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	       size_t errlen)
{
	struct alloc_ctx c = {.o = o, .t = t};
	struct outfile of = {0};
	int rc, wrc;

	if (o->duration_s > 0 && o->watch_s <= 0) {
		snprintf(err, errlen, "-d/--duration goes with --watch");
		return CMD_EUSAGE;
	}
	if (o->sort && alloc__col_of(o->sort) < 0) {
		snprintf(err, errlen, "bad --sort (carriers, blocks, free, largest or frag)");
		return CMD_EUSAGE;
	}
	if (o->sort)
		c.sort = (enum alloc_col)alloc__col_of(o->sort);
	rc = alloc__locate(t, err, errlen);
	if (rc == -ENOTSUP || rc == -ENOENT)
		rc = TARGET_EUNSUPPORTED;
	if (rc)
		goto cleanup;
	rc = alloc__read_all(&c);
	if (rc && rc != TARGET_EGONE)
		goto cleanup;
	if (o->watch_s > 0) { /* every reading added to stdout or -o's file as it is taken */
		FILE *out = stdout;
		int out_err;

		if (o->output && (wrc = cmd__open_stream(o->output, &out, err, errlen))) {
			rc = wrc;
			goto cleanup;
		}
		out_err = print(&c, out, true);
		if (!out_err && !rc)
			rc = watch(&c, stop, out, &out_err);
		rc = cmd__close_stream(out, o->output, out_err, rc, err, errlen);
	} else if (o->output) { /* whole or not at all: heap's -o */
		if ((wrc = cmd__open_output(&of, o->output, err, errlen))) {
			rc = wrc;
			goto cleanup;
		}
		print(&c, of.f, false);
		rc = cmd__finish_output(&of, o->output, rc, err, errlen);
	} else if (print(&c, stdout, true)) {
		rc = -EIO;
	}
	if (rc == TARGET_EGONE)
		fprintf(stderr, "extrospect: the VM exited while it was read\n");
cleanup:
	if (rc && rc != TARGET_EGONE && !err[0])
		snprintf(err, errlen, "alloc: %s", strerror(-rc));
	alloc__ctx_free(&c);
	return rc;
}
