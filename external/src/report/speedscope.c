/* speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json): shared
 * frames are the aggregate's frames by id, followed by one frame per group; profile 0 "all
 * processes" prefixes each stack with its group's frame, then one sampled profile per group.
 * Strings pass valid UTF-8 through and write \ufffd for each invalid byte.
 * Does not own: the aggregate, or the viewer (test/e2e/speedscope_test.sh loads it in one). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "report.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

static void put_string(FILE *f, const char *s)
{
	size_t n;

	fputc('"', f);
	for (; *s; s += n) {
		unsigned char c = (unsigned char)*s;

		n = report__utf8_len(s);
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else if (n == 0)
			fputs("\\ufffd", f);
		else
			fwrite(s, 1, n, f);
		if (n == 0)
			n = 1;
	}
	fputc('"', f);
}

static void put_frames(const struct agg *a, FILE *f)
{
	size_t nf = agg__nframes(a), ng = agg__ngroups(a), i;

	fputs("\"shared\":{\"frames\":[", f);
	for (i = 0; i < nf + ng; i++) {
		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", f);
		put_string(f, i < nf ? agg__frame_name(a, (uint32_t)i)
				     : agg__group_name(a, (uint32_t)(i - nf)));
		fputc('}', f);
	}
	fputs("]},\n", f);
}

/* Stacks [first, end) of the iteration order. group_frame: index of the frame to put at the root,
 * or -1 for none. */
static void put_profile(const struct agg *a, FILE *f, const char *name, size_t first, size_t end,
			int64_t group_frame)
{
	struct agg_stack s;
	uint64_t total = 0;
	size_t i;
	uint32_t k;

	for (i = first; i < end; i++) {
		agg__stack(a, i, &s);
		total += s.count;
	}
	fputs("{\"type\":\"sampled\",\"name\":", f);
	put_string(f, name);
	fprintf(f, ",\"unit\":\"none\",\"startValue\":0,\"endValue\":%" PRIu64 ",\n\"samples\":[",
		total);
	for (i = first; i < end; i++) {
		agg__stack(a, i, &s);
		fputs(i > first ? ",[" : "[", f);
		if (group_frame >= 0)
			fprintf(f, "%" PRId64 "%s", group_frame + (int64_t)s.group,
				s.nframes ? "," : "");
		for (k = 0; k < s.nframes; k++)
			fprintf(f, "%s%" PRIu32, k ? "," : "", s.frames[k]);
		fputc(']', f);
	}
	fputs("],\n\"weights\":[", f);
	for (i = first; i < end; i++) {
		agg__stack(a, i, &s);
		fprintf(f, "%s%" PRIu64, i > first ? "," : "", s.count);
	}
	fputs("]}", f);
}

/* The iteration order is by group, so each group's stacks are one run. */
static void put_group_profiles(const struct agg *a, FILE *f)
{
	size_t n = agg__nstacks(a), first = 0, i;
	struct agg_stack s, t;

	while (first < n) {
		agg__stack(a, first, &s);
		for (i = first + 1; i < n; i++) {
			agg__stack(a, i, &t);
			if (t.group != s.group)
				break;
		}
		fputs(",\n", f);
		put_profile(a, f, agg__group_name(a, s.group), first, i, -1);
		first = i;
	}
}

int report__speedscope(const struct agg *a, FILE *f, const char *title)
{
	if (!a || !f)
		return -EINVAL;
	fputs("{\"$schema\":\"" SPEEDSCOPE_SCHEMA "\",\n\"exporter\":\"extrospect\",\"name\":", f);
	put_string(f, title ? title : "extrospect");
	fputs(",\"activeProfileIndex\":0,\n", f);
	put_frames(a, f);
	fputs("\"profiles\":[\n", f);
	put_profile(a, f, "all processes", 0, agg__nstacks(a), (int64_t)agg__nframes(a));
	put_group_profiles(a, f);
	fputs("]}\n", f);
	return report__finish(f);
}
