/* Folded stacks ("collapsed", Brendan Gregg's flamegraph.pl input, also read by speedscope):
 *   <group>;<root frame>;...;<leaf frame> <count>\n
 * one line per distinct stack by name, sorted by names. Names are written byte for byte except
 * that '%', ';', '\n' and '\r' become %25, %3B, %0A and %0D (percent-encoding, reversible), so a
 * ';' in an Erlang atom cannot split a frame. Spaces are kept: readers take the last field as the
 * count. Does not own: the aggregate. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Each frame's text as written, made once per frame id: most names need no escaping and are
 * written from the aggregate's own copy. A line is built in one buffer and goes out in one fwrite:
 * a name at a time through stdio, and strcmp in the sort, were most of a deep profile's output
 * time (issue 27: 64 MB of collapsed text for 30 s of the compiler). */
struct out {
	const char **txt; /* per frame id */
	uint32_t *len;
	char **owned; /* per frame id: the escaped copy txt points to, or NULL */
	size_t n;
	char *line;
	size_t cap;
	size_t *fo; /* fo[k]: where frame k's ';' is in line, for k up to the line's frames */
	size_t fcap;
};

/* s with '%', ';', '\n' and '\r' percent-encoded, in *owned (NULL: s needs none); NULL when out
 * of memory. */
static const char *text(const char *s, uint32_t *len, char **owned)
{
	static const char *const esc[] = {
	    ['%'] = "%25", [';'] = "%3B", ['\n'] = "%0A", ['\r'] = "%0D"};
	size_t n = strcspn(s, "%;\n\r"), o;
	char *e;

	*owned = NULL;
	if (!s[n]) {
		*len = (uint32_t)n;
		return s;
	}
	if (!(e = malloc(3 * strlen(s) + 1)))
		return NULL;
	for (o = 0; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '%' || c == ';' || c == '\n' || c == '\r') {
			memcpy(e + o, esc[c], 3);
			o += 3;
		} else {
			e[o++] = (char)c;
		}
	}
	e[o] = '\0';
	*owned = e;
	*len = (uint32_t)o;
	return e;
}

static int out_init(struct out *o, const struct agg *a)
{
	size_t i;

	o->n = agg__nframes(a);
	o->txt = calloc(o->n + 1, sizeof(*o->txt));
	o->len = calloc(o->n + 1, sizeof(*o->len));
	o->owned = calloc(o->n + 1, sizeof(*o->owned));
	if (!o->txt || !o->len || !o->owned)
		return -ENOMEM;
	for (i = 0; i < o->n; i++)
		if (!(o->txt[i] = text(agg__frame_name(a, (uint32_t)i), &o->len[i], &o->owned[i])))
			return -ENOMEM;
	return 0;
}

static void out_free(struct out *o)
{
	size_t i;

	for (i = 0; o->owned && i < o->n; i++)
		free(o->owned[i]);
	free(o->owned);
	free(o->txt);
	free(o->len);
	free(o->line);
	free(o->fo);
}

/* Appends n bytes at *at, with room for a count after them. */
static int put(struct out *o, size_t *at, const char *s, size_t n)
{
	if (*at + n + 32 > o->cap) {
		size_t cap = o->cap ? o->cap : 4096;
		char *p;

		while (*at + n + 32 > cap)
			cap *= 2;
		if (!(p = realloc(o->line, cap)))
			return -ENOMEM;
		o->line = p;
		o->cap = cap;
	}
	memcpy(o->line + *at, s, n);
	*at += n;
	return 0;
}

/* How stacks i and j (of the aggregate's order) compare by names: the group, then frame names root
 * first, then depth, compared as the ranks of the names (kinds do not show in this format, so
 * stacks that differ only by a frame's kind compare equal and are merged into one line). *same:
 * the frames from the root with the same names, -1 for another group. The frames with the same
 * ids are passed over two at a time (issue 27: a compiler's neighbouring lines share about 180). */
static int cmp_names(const struct agg *a, size_t i, size_t j, long *same)
{
	struct agg_stack s, u;
	uint32_t k, n;

	agg__stack(a, i, &s);
	agg__stack(a, j, &u);
	*same = -1;
	if (s.group != u.group)
		return agg__group_rank(a, s.group) < agg__group_rank(a, u.group) ? -1 : 1;
	n = s.nframes < u.nframes ? s.nframes : u.nframes;
	for (k = agg__ids_shared(s.frames, u.frames, n); k < n;
	     k += 1 + agg__ids_shared(s.frames + k + 1, u.frames + k + 1, n - k - 1)) {
		uint32_t p = agg__frame_name_rank(a, s.frames[k]),
			 q = agg__frame_name_rank(a, u.frames[k]);

		if (p != q) {
			*same = k;
			return p < q ? -1 : 1;
		}
	}
	*same = n;
	return s.nframes < u.nframes ? -1 : s.nframes > u.nframes;
}

static int cmp_index(const void *x, const void *y, void *arg)
{
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	long same;
	int c = cmp_names(arg, i, j, &same);

	return c ? c : (i > j) - (i < j);
}

/* Writes stack i's line with count. The line buffer still holds the last line written, whose first
 * keep frames (-1: none, another group) have this stack's names: only the rest is written again
 * (a compiler's deep stacks share most of their frames with the line before). */
static int put_line(const struct agg *a, struct out *o, FILE *f, size_t i, long keep,
		    uint64_t count)
{
	struct agg_stack s;
	size_t at = 0;
	uint32_t k = 0, len;
	int err = 0, n;

	agg__stack(a, i, &s);
	if (s.nframes + 1 > o->fcap) {
		size_t cap = o->fcap ? o->fcap : 256, *p;

		while (cap < s.nframes + 1)
			cap *= 2;
		if (!(p = realloc(o->fo, cap * sizeof(*p))))
			return -ENOMEM;
		o->fo = p;
		o->fcap = cap;
	}
	if (keep < 0) {
		char *owned;
		const char *g = text(agg__group_name(a, s.group), &len, &owned);

		if (!g)
			return -ENOMEM;
		err = put(o, &at, g, len);
		free(owned);
	} else {
		k = (uint32_t)keep;
		at = o->fo[k];
	}
	for (; !err && k < s.nframes; k++) {
		uint32_t id = s.frames[k] < o->n ? s.frames[k] : (uint32_t)o->n;

		o->fo[k] = at;
		if (!(err = put(o, &at, ";", 1)))
			err = put(o, &at, o->txt[id] ? o->txt[id] : "", o->len[id]);
	}
	if (err)
		return err;
	o->fo[s.nframes] = at;
	n = snprintf(o->line + at, o->cap - at, " %llu\n", (unsigned long long)count);
	fwrite(o->line, 1, at + (size_t)n, f);
	return 0;
}

#define COLLAPSED_AHEAD 4

int report__collapsed(const struct agg *a, FILE *f)
{
	size_t n = agg__nstacks(a), i, *idx = NULL;
	struct out o = {0};
	struct agg_stack s;
	uint64_t count = 0;
	bool sorted = true, by_names;
	long *same = NULL, keep = LONG_MAX;
	int err;

	if (!a || !f)
		return -EINVAL;
	if (!n)
		return report__finish(f);
	idx = malloc(n * sizeof(*idx));
	same = malloc(n * sizeof(*same));
	if (!idx || !same || (err = out_init(&o, a))) {
		free(idx);
		free(same);
		out_free(&o);
		return -ENOMEM;
	}
	/* The aggregate's order is by (name, kind): by names too when no name has two kinds (its
	 * sort then says what neighbours share: the same ids are the same names), and otherwise
	 * unless two kinds of one name interleave, which the check finds without a sort. same[i]:
	 * stack i's frames with the names of stack i - 1's, or -1. */
	by_names = agg__order_by_names(a);
	same[0] = -1;
	for (i = 0; i < n; i++) {
		idx[i] = i;
		if (by_names)
			same[i] = agg__same_as_last(a, i);
		else if (i && cmp_names(a, i - 1, i, &same[i]) > 0)
			sorted = false;
	}
	if (!sorted) {
		qsort_r(idx, n, sizeof(*idx), cmp_index, (void *)a);
		for (i = 1; i < n; i++)
			cmp_names(a, idx[i - 1], idx[i], &same[i]);
	}
	for (i = 0, err = 0; !err && i < n; i++) {
		if (i + COLLAPSED_AHEAD < n) {
			struct agg_stack t;
			long k = same[i + COLLAPSED_AHEAD];

			/* The frames a later line writes, asked for now: the stacks are in the
			 * aggregate's memory in the order they were first seen, not this one. */
			agg__stack(a, idx[i + COLLAPSED_AHEAD], &t);
			if (t.frames)
				__builtin_prefetch(t.frames + (k > 0 ? k : 0));
		}
		agg__stack(a, idx[i], &s);
		count += s.count;
		/* What this line keeps of the last one written: the least in between. */
		keep = same[i] < keep ? same[i] : keep;
		if (i + 1 < n && same[i + 1] == s.nframes) {
			agg__stack(a, idx[i + 1], &s);
			if (same[i + 1] == s.nframes)
				continue; /* the same names: one line */
		}
		err = put_line(a, &o, f, idx[i], keep, count);
		count = 0;
		keep = LONG_MAX;
	}
	free(idx);
	free(same);
	out_free(&o);
	return err ? err : report__finish(f);
}
