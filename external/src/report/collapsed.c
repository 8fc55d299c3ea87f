/* Folded stacks ("collapsed", Brendan Gregg's flamegraph.pl input, also read by speedscope):
 *   <group>;<root frame>;...;<leaf frame> <count>\n
 * one line per distinct stack by name, sorted by names. Names are written byte for byte except
 * that '%', ';', '\n' and '\r' become %25, %3B, %0A and %0D (percent-encoding, reversible), so a
 * ';' in an Erlang atom cannot split a frame. Spaces are kept: readers take the last field as the
 * count. Does not own: the aggregate. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Runs of plain bytes go out in one fwrite: a byte at a time was most of a deep profile's
 * output time (78 MB of collapsed text for 5 s of a 2 000-deep stack, issue 27). */
static void put_name(FILE *f, const char *s)
{
	static const char *const esc[] = {
	    ['%'] = "%25", [';'] = "%3B", ['\n'] = "%0A", ['\r'] = "%0D"};

	for (;;) {
		size_t n = strcspn(s, "%;\n\r");

		if (n)
			fwrite(s, 1, n, f);
		if (!s[n])
			return;
		fputs(esc[(unsigned char)s[n]], f);
		s += n + 1;
	}
}

/* By group name, then frame names root first, then depth: kinds do not show in this format, so
 * stacks that differ only by a frame's kind compare equal and are merged into one line. */
static int cmp_names(const struct agg *a, size_t i, size_t j)
{
	struct agg_stack s, u;
	uint32_t k, n;
	int c;

	agg__stack(a, i, &s);
	agg__stack(a, j, &u);
	c = strcmp(agg__group_name(a, s.group), agg__group_name(a, u.group));
	n = s.nframes < u.nframes ? s.nframes : u.nframes;
	for (k = 0; !c && k < n; k++)
		c = strcmp(agg__frame_name(a, s.frames[k]), agg__frame_name(a, u.frames[k]));
	if (c)
		return c;
	return s.nframes < u.nframes ? -1 : s.nframes > u.nframes;
}

static int cmp_index(const void *x, const void *y, void *arg)
{
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	int c = cmp_names(arg, i, j);

	return c ? c : (i > j) - (i < j);
}

static void put_line(const struct agg *a, FILE *f, size_t i, uint64_t count)
{
	struct agg_stack s;
	uint32_t k;

	agg__stack(a, i, &s);
	put_name(f, agg__group_name(a, s.group));
	for (k = 0; k < s.nframes; k++) {
		fputc(';', f);
		put_name(f, agg__frame_name(a, s.frames[k]));
	}
	fprintf(f, " %llu\n", (unsigned long long)count);
}

int report__collapsed(const struct agg *a, FILE *f)
{
	size_t n = agg__nstacks(a), i, *idx = NULL;
	struct agg_stack s;
	uint64_t count = 0;

	if (!a || !f)
		return -EINVAL;
	if (!n)
		return report__finish(f);
	idx = malloc(n * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		idx[i] = i;
	qsort_r(idx, n, sizeof(*idx), cmp_index, (void *)a);
	for (i = 0; i < n; i++) {
		agg__stack(a, idx[i], &s);
		count += s.count;
		if (i + 1 < n && !cmp_names(a, idx[i], idx[i + 1]))
			continue;
		put_line(a, f, idx[i], count);
		count = 0;
	}
	free(idx);
	return report__finish(f);
}
