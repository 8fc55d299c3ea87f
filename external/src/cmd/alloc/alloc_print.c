/* `extrospect alloc`'s output: the type rows, the top instances, the totals against smaps, as a
 * table or JSON, and the --sort columns' names. Does not own: reading, summing or sorting
 * (alloc_cmd.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "alloc_print.h"
#include "cli.h"
#include "commands.h"
#include "heap_print.h"
#include "info.h"
#include "smaps.h"

static const char *const col_names[ALLOC_COL_COUNT] = {"carriers", "blocks", "free", "largest",
						       "frag"};

const char *alloc__col_name(enum alloc_col c)
{
	return (unsigned)c < ALLOC_COL_COUNT ? col_names[c] : "?";
}

int alloc__col_of(const char *name)
{
	int c;

	for (c = 0; c < ALLOC_COL_COUNT; c++) {
		if (strcmp(name, col_names[c]) == 0)
			return c;
	}
	return -1;
}

static size_t shown(const struct alloc_ctx *c)
{
	return c->o->limit < c->ninst ? c->o->limit : c->ninst;
}

static const char *human(uint64_t b, char *buf, size_t len)
{
	heap__human(b, buf, len);
	return buf;
}

static void frag_text(const struct alloc_row *r, char *buf, size_t len)
{
	if (!r->have_largest)
		snprintf(buf, len, "-");
	else if (!r->free)
		snprintf(buf, len, "0.0%%");
	else
		snprintf(buf, len, "%.1f%%", (double)r->val[ALLOC_COL_FRAG] / 100.0);
}

static void row_text(FILE *f, const struct alloc_row *r)
{
	char inst[16], crr[16], blk[16], fr[16], lg[16], fg[16];

	if (r->ix < 0)
		snprintf(inst, sizeof(inst), "%u", r->instances);
	else
		snprintf(inst, sizeof(inst), "#%d", r->ix);
	if (r->have_largest)
		human(r->largest, lg, sizeof(lg));
	else
		snprintf(lg, sizeof(lg), "-");
	frag_text(r, fg, sizeof(fg));
	fprintf(f,
		"%-15s %5s %6" PRIu64 " %5" PRIu64 " %5" PRIu64 " %6" PRIu64 " %5" PRIu64
		" %8s %8s %8s %8s %6s\n",
		r->name, inst, r->mbc.no, r->sbc.no, r->pool.no, r->mseg, r->sys,
		human(r->val[ALLOC_COL_CARRIERS], crr, sizeof(crr)),
		human(r->blocks.size, blk, sizeof(blk)), human(r->free, fr, sizeof(fr)), lg, fg);
}

static void header(FILE *f, const char *what)
{
	fprintf(f, "%-15s %5s %6s %5s %5s %6s %5s %8s %8s %8s %8s %6s\n", what, "INST", "MBC",
		"SBC", "POOL", "MSEG", "SYS", "CARRIERS", "BLOCKS", "FREE", "LARGEST", "FRAG");
}

/* --watch: each type's change of carrier and block bytes since the last reading. */
static void growth_text(const struct alloc_ctx *c, FILE *f)
{
	size_t i, k;
	char a[16], b[16];

	fprintf(f, "\nover the last %.1f s:\n", c->interval_s);
	for (i = 0; i < c->ntypes; i++) {
		const struct alloc_row *r = &c->types[i];

		for (k = 0; k < c->nprev && c->prev_types[k].type != r->type; k++)
			;
		if (k == c->nprev)
			continue;
		int64_t dc = (int64_t)(r->val[ALLOC_COL_CARRIERS] -
				       c->prev_types[k].val[ALLOC_COL_CARRIERS]);
		int64_t db = (int64_t)(r->blocks.size - c->prev_types[k].blocks.size);

		fprintf(f, "  %-15s carriers %s%s  blocks %s%s\n", r->name, dc < 0 ? "-" : "+",
			human((uint64_t)(dc < 0 ? -dc : dc), a, sizeof(a)), db < 0 ? "-" : "+",
			human((uint64_t)(db < 0 ? -db : db), b, sizeof(b)));
	}
}

static void smaps_text(const struct alloc_ctx *c, FILE *f)
{
	uint64_t crr = c->total.val[ALLOC_COL_CARRIERS];
	char a[16], b[16], d[16], e[16];

	if (c->anon_err) {
		if (c->anon_err == -EAGAIN)
			fprintf(f,
				"anonymous rw memory: /proc/%d/smaps could not be read: the VM "
				"mapped memory while it was read, each of %d times\n",
				(int)c->t->pid, SMAPS_TRIES);
		else
			fprintf(f, "anonymous rw memory: /proc/%d/smaps could not be read: %s\n",
				(int)c->t->pid, strerror(-c->anon_err));
		return;
	}
	fprintf(f,
		"anonymous rw memory (smaps): %s mapped in %" PRIu64 " mappings, %s resident; "
		"carriers %s\n",
		human(c->anon.size, a, sizeof(a)), c->anon.mappings,
		human(c->anon.rss, b, sizeof(b)), human(crr, d, sizeof(d)));
	if (c->anon.size >= crr)
		fprintf(f,
			"unaccounted: %s mapped outside carriers (malloc outside the allocators, "
			"thread stacks, NIFs, mseg's cache)\n",
			human(c->anon.size - crr, e, sizeof(e)));
	else
		fprintf(f, "unaccounted: none (carriers exceed the anonymous rw mappings by %s)\n",
			human(crr - c->anon.size, e, sizeof(e)));
}

void alloc__print_text(const struct alloc_ctx *c, FILE *f)
{
	const struct target *t = c->t;
	size_t i;
	int k;

	fprintf(f, "extrospect alloc: BEAM pid %d, OTP %s (erts %s), %s\n", (int)t->pid,
		t->otp_release[0] ? t->otp_release : "?",
		t->erts_version[0] ? t->erts_version : "?",
		target__has_agent(t) ? "with the agent" : "without the agent");
	header(f, "ALLOCATOR");
	for (i = 0; i < c->ntypes; i++)
		row_text(f, &c->types[i]);
	row_text(f, &c->total);
	if (shown(c)) {
		fprintf(f, "\n");
		header(f, "INSTANCE");
		for (i = 0; i < shown(c); i++)
			row_text(f, &c->inst[i]);
	}
	fprintf(
	    f, "\n%u allocator types, %zu instances, read in %.1f ms (erts_allctrs_info from %s)\n",
	    c->r.types, c->ninst, c->ms, target__src_name(c->t->addr[XP_ADDR_ALLCTRS_INFO].source));
	smaps_text(c, f);
	for (k = 0; k < ALLOC_DROP_COUNT; k++) {
		if (c->r.drops[k])
			fprintf(f, "not read: %" PRIu64 " (%s)\n", c->r.drops[k],
				alloc__drop_name((enum alloc_drop)k));
	}
	if (c->prev_types)
		growth_text(c, f);
}

static void json_stat(struct json *j, const char *key, const struct alloc_stat *s)
{
	json__key(j, key);
	json__object(j);
	json__kv_int(j, "count", (int64_t)s->no);
	json__kv_int(j, "bytes", (int64_t)s->size);
	json__end_object(j);
}

static void json_row(struct json *j, const struct alloc_row *r)
{
	json__object(j);
	json__kv_string(j, "name", r->name);
	if (r->ix >= 0)
		json__kv_int(j, "instance", r->ix);
	else
		json__kv_int(j, "instances", r->instances);
	json_stat(j, "mbc_carriers", &r->mbc);
	json_stat(j, "sbc_carriers", &r->sbc);
	json_stat(j, "pool_carriers", &r->pool);
	json__kv_int(j, "mseg_carriers", (int64_t)r->mseg);
	json__kv_int(j, "sys_alloc_carriers", (int64_t)r->sys);
	json__kv_int(j, "carriers_bytes", (int64_t)r->val[ALLOC_COL_CARRIERS]);
	json_stat(j, "blocks", &r->blocks);
	json__kv_int(j, "free_bytes", (int64_t)r->free);
	json__kv_uint_known(j, "largest_free_block", r->have_largest, r->largest);
	json__key(j, "usage");
	json__double(j,
		     r->val[ALLOC_COL_CARRIERS]
			 ? (double)r->blocks.size / (double)r->val[ALLOC_COL_CARRIERS]
			 : 0.0,
		     4);
	json__key(j, "fragmentation");
	if (r->have_largest)
		json__double(j, r->free ? (double)r->frag_bytes / (double)r->free : 0.0, 4);
	else
		json__null(j);
	json__end_object(j);
}

static void json_smaps(const struct alloc_ctx *c, struct json *j)
{
	uint64_t crr = c->total.val[ALLOC_COL_CARRIERS];

	json__key(j, "anonymous_rw");
	if (c->anon_err) {
		json__null(j);
		return;
	}
	json__object(j);
	json__kv_int(j, "mapped_bytes", (int64_t)c->anon.size);
	json__kv_int(j, "resident_bytes", (int64_t)c->anon.rss);
	json__kv_int(j, "anonymous_bytes", (int64_t)c->anon.anon);
	json__kv_int(j, "mappings", (int64_t)c->anon.mappings);
	json__kv_int(j, "unaccounted_bytes", (int64_t)c->anon.size - (int64_t)crr);
	json__end_object(j);
}

void alloc__print_json(const struct alloc_ctx *c, struct json *j)
{
	size_t i;
	int k;

	json__object(j);
	json__kv_int(j, "os_pid", c->t->pid);
	json__kv_string(j, "otp_release", c->t->otp_release);
	json__kv_string(j, "erts_version", c->t->erts_version);
	json__kv_bool(j, "agent", target__has_agent(c->t));
	json__kv_string(j, "allctrs_info_source",
			target__src_name(c->t->addr[XP_ADDR_ALLCTRS_INFO].source));
	json__kv_string(j, "sort", alloc__col_name(c->sort));
	json__key(j, "types");
	json__array(j);
	for (i = 0; i < c->ntypes; i++)
		json_row(j, &c->types[i]);
	json__end_array(j);
	json__key(j, "total");
	json_row(j, &c->total);
	json__key(j, "instances");
	json__array(j);
	for (i = 0; i < shown(c); i++)
		json_row(j, &c->inst[i]);
	json__end_array(j);
	json_smaps(c, j);
	json__key(j, "not_read");
	json__object(j);
	for (k = 0; k < ALLOC_DROP_COUNT; k++)
		json__kv_int(j, alloc__drop_name((enum alloc_drop)k), (int64_t)c->r.drops[k]);
	json__end_object(j);
	json__key(j, "elapsed_ms");
	json__double(j, c->ms, 3);
	json__key(j, "cpu_ms");
	json__double(j, c->cpu_ms, 3);
	if (c->prev_types) {
		json__key(j, "interval_s");
		json__double(j, c->interval_s, 3);
	}
	info__json_mem_failures(c->t, j);
	json__end_object(j);
}
