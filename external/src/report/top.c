/* The `top` tables: Erlang functions by self share (innermost Erlang frame of a stack, which
 * counts the native code it called) and total share (anywhere on the stack, once per stack), and
 * processes by share. Does not own: the live refresh (cmd/record/record.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

struct fn_row {
	uint32_t frame;
	uint64_t self, total;
};

static int cmp_fn(const void *a, const void *b)
{
	const struct fn_row *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return (x->frame > y->frame) - (x->frame < y->frame);
}

/* seen[] marks frames already counted for the current stack. */
static void count_stack(const struct agg *a, const struct agg_stack *st, struct fn_row *rows,
			uint32_t *seen, uint32_t stamp)
{
	uint32_t i, innermost = UINT32_MAX;

	for (i = 0; i < st->nframes; i++) {
		uint32_t f = st->frames[i];

		if (agg__frame_kind(a, f) != FRAME_ERLANG)
			continue;
		innermost = f;
		if (seen[f] != stamp) {
			seen[f] = stamp;
			rows[f].total += st->count;
		}
	}
	if (innermost != UINT32_MAX)
		rows[innermost].self += st->count;
}

int report__top_functions(const struct agg *a, FILE *f, unsigned limit)
{
	size_t nf = agg__nframes(a), i;
	uint64_t total = agg__total(a);
	struct fn_row *rows = calloc(nf ? nf : 1, sizeof(*rows));
	uint32_t *seen = calloc(nf ? nf : 1, sizeof(*seen));
	unsigned shown = 0;

	if (!rows || !seen) {
		free(rows);
		free(seen);
		return -ENOMEM;
	}
	for (i = 0; i < nf; i++)
		rows[i].frame = (uint32_t)i;
	for (i = 0; i < agg__nstacks(a); i++) {
		struct agg_stack st;

		agg__stack(a, i, &st);
		count_stack(a, &st, rows, seen, (uint32_t)i + 1);
	}
	qsort(rows, nf, sizeof(*rows), cmp_fn);
	fprintf(f, "%7s %7s  %s\n", "SELF%", "TOTAL%", "ERLANG FUNCTION");
	for (i = 0; i < nf && shown < limit; i++) {
		if (!rows[i].total)
			continue;
		fprintf(f, "%6.2f%% %6.2f%%  %s\n",
			total ? 100.0 * (double)rows[i].self / (double)total : 0,
			total ? 100.0 * (double)rows[i].total / (double)total : 0,
			agg__frame_name(a, rows[i].frame));
		shown++;
	}
	free(rows);
	free(seen);
	return 0;
}

struct group_row {
	uint32_t group;
	uint64_t count;
};

static int cmp_group(const void *a, const void *b)
{
	const struct group_row *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return (x->group > y->group) - (x->group < y->group);
}

int report__top_processes(const struct agg *a, FILE *f, unsigned limit)
{
	size_t ng = agg__ngroups(a), i;
	uint64_t total = agg__total(a);
	struct group_row *rows = calloc(ng ? ng : 1, sizeof(*rows));

	if (!rows)
		return -ENOMEM;
	for (i = 0; i < ng; i++)
		rows[i].group = (uint32_t)i;
	for (i = 0; i < agg__nstacks(a); i++) {
		struct agg_stack st;

		agg__stack(a, i, &st);
		rows[st.group].count += st.count;
	}
	qsort(rows, ng, sizeof(*rows), cmp_group);
	fprintf(f, "%7s  %s\n", "SHARE", "PROCESS");
	for (i = 0; i < ng && i < limit && rows[i].count; i++)
		fprintf(f, "%6.2f%%  %s\n",
			total ? 100.0 * (double)rows[i].count / (double)total : 0,
			agg__group_name(a, rows[i].group));
	free(rows);
	return 0;
}
