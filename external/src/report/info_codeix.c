/* `info`'s view of the active code index and the module ranges table checked against the JIT
 * map, text and JSON ("code_ranges" key). Does not own: reading and comparing them
 * (attach/codeix.c, vm/coderanges.c). */
#include <inttypes.h>

#include "info.h"
#include "json.h"

static bool has_counts(const struct target_codeix *c)
{
	return c->status == CODEIX_OK || c->status == CODEIX_MISMATCH;
}

void codeix__print_text(const struct target *t, FILE *f)
{
	const struct target_codeix *c = &t->codeix;
	const struct coderanges_jit *j = &c->jit;
	char verdict[160];
	uint64_t i;

	if (c->status == CODEIX_NOT_RUN)
		return;
	codeix__verdict(c, verdict, sizeof(verdict));
	fprintf(f, "\nCode index and module ranges\n");
	if (has_counts(c)) {
		fprintf(f,
			"  active code index %u; r[%u] holds %" PRIu64 " module ranges (%" PRIu64
			" purged)\n",
			c->code_ix, c->code_ix, j->ranges, j->purged);
		fprintf(f,
			"  JIT map: %" PRIu64 " modules; %" PRIu64 " match a range, %" PRIu64
			" ranges have none\n",
			j->jit_modules, j->jit_modules - j->jit_not_in_table, j->unmatched);
		fprintf(f,
			"  JIT modules not in the table: %" PRIu64 " (%" PRIu64
			" old code of a loaded "
			"module, %" PRIu64 " other",
			j->jit_not_in_table, j->jit_old, j->jit_other);
		for (i = 0; i < j->jit_other && i < CODERANGES_NAMES; i++)
			fprintf(f, "%s%s", i ? ", " : ": ", c->other_names[i]);
		fprintf(f, "%s)\n", j->jit_other > CODERANGES_NAMES ? ", ..." : "");
	}
	fprintf(f, "  %s\n", verdict);
}

void codeix__print_json(const struct target *t, struct json *jj)
{
	const struct target_codeix *c = &t->codeix;
	const struct coderanges_jit *j = &c->jit;
	char verdict[160];
	uint64_t i;

	codeix__verdict(c, verdict, sizeof(verdict));
	json__key(jj, "code_ranges");
	json__object(jj);
	json__kv_string(jj, "status", codeix__status_str(c->status));
	json__kv_string(jj, "verdict", verdict);
	json__key(jj, "active_code_ix");
	has_counts(c) ? json__uint(jj, c->code_ix) : json__null(jj);
	if (has_counts(c)) {
		json__kv_int(jj, "ranges", (int64_t)j->ranges);
		json__kv_int(jj, "purged", (int64_t)j->purged);
		json__kv_int(jj, "matched", (int64_t)j->matched);
		json__kv_int(jj, "unmatched", (int64_t)j->unmatched);
		json__kv_int(jj, "jit_modules", (int64_t)j->jit_modules);
		json__kv_int(jj, "jit_not_in_table", (int64_t)j->jit_not_in_table);
		json__kv_int(jj, "jit_old", (int64_t)j->jit_old);
		json__kv_int(jj, "jit_other", (int64_t)j->jit_other);
		json__key(jj, "jit_other_names");
		json__array(jj);
		for (i = 0; i < j->jit_other && i < CODERANGES_NAMES; i++)
			json__string(jj, c->other_names[i]);
		json__end_array(jj);
		json__kv_int(jj, "jit_reloads", c->jit_reloads);
	}
	json__end_object(jj);
}
