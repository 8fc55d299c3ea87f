/* Unit tests for the report formats (external/src/report/) on small known aggregates: exact
 * collapsed text, exact speedscope JSON (and that jq parses it), SVG frame count, titles, labels,
 * omission of narrow frames, XML well-formedness (xmllint), escaping of odd names, empty
 * aggregates, write errors, output independent of insertion order. Also keeps the browser test's
 * fixtures in test/e2e/speedscope/ equal to what the code writes (XP_UPDATE_FIXTURES=1 rewrites).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "report/report.h"

#ifndef XP_FIXTURES_DIR
#define XP_FIXTURES_DIR "test/c/fixtures"
#endif
#define E2E_DIR XP_FIXTURES_DIR "/../../e2e/speedscope"

#define G1  "<0.123.0> rabbit_channel"
#define G2  "scheduler idle"
#define ODD "a;b & <c> \"q\" 'x' 50% \\ \x01 \xc3\xa9 \xff"

struct in_stack {
	const char *group;
	const char *frames[4];
	enum frame_kind kinds[4];
	uint64_t count;
};

#define E FRAME_ERLANG
static const struct in_stack input[] = {
    {G1, {"rabbit_channel:handle_cast/2", "lists:foldl/3"}, {E, E}, 3},
    {G1, {"rabbit_channel:handle_cast/2", "mod:'odd name'/2"}, {E, E}, 2},
    {G1, {"rabbit_channel:handle_cast/2", "lists:foldl/3", "memcpy"}, {E, E, FRAME_NATIVE}, 1},
    {G1, {ODD}, {E}, 1},
    {G1, {"'-fun/1-lc$^0/1-0-'", "beam_jit_call_bif"}, {E, FRAME_JIT_GLOBAL}, 1},
    {G2, {"[sleep]"}, {FRAME_LABEL}, 4},
    {G2, {"memcpy"}, {FRAME_NATIVE}, 1},
    {G2, {"memcpy"}, {FRAME_LABEL}, 1},
};
#undef E
#define NINPUT (sizeof(input) / sizeof(input[0]))

static struct agg *build(const struct in_stack *in, size_t n, int reverse)
{
	struct agg *a = NULL;
	uint32_t g, f[4], k;
	size_t i;

	if (agg__new(&a))
		return NULL;
	for (i = 0; i < n; i++) {
		const struct in_stack *s = &in[reverse ? n - 1 - i : i];

		agg__group(a, s->group, &g);
		for (k = 0; k < 4 && s->frames[k]; k++)
			agg__frame(a, s->frames[k], s->kinds[k], &f[k]);
		if (agg__add(a, g, f, k, s->count))
			fprintf(stderr, "agg__add failed\n");
	}
	return a;
}

enum fmt { COLLAPSED, SPEEDSCOPE, SVG };

/* The report as a string (caller frees), or NULL; *err gets the report's return value. */
static char *render(const struct agg *a, enum fmt fmt, const char *title, int *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	*err = fmt == COLLAPSED	   ? report__collapsed(a, f)
	       : fmt == SPEEDSCOPE ? report__speedscope(a, f, title)
				   : report__svg(a, f, title);
	fclose(f);
	return buf;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

/* Runs cmd on the text in a temporary file: its exit status, or -1 when it could not run. */
static int run_on(const char *cmd, const char *text)
{
	char path[] = "/tmp/xp_report_XXXXXX", line[512];
	int fd = mkstemp(path), st = -1;
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!f)
		return -1;
	fputs(text, f);
	fclose(f);
	snprintf(line, sizeof(line), "%s %s >/dev/null 2>&1", cmd, path);
	st = system(line);
	unlink(path);
	return st == -1 ? -1 : WEXITSTATUS(st);
}

static int have(const char *tool)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

/* clang-format off */
static const char expect_collapsed[] =
	G1 ";'-fun/1-lc$^0/1-0-';beam_jit_call_bif 1\n"
	G1 ";a%3Bb & <c> \"q\" 'x' 50%25 \\ \x01 \xc3\xa9 \xff 1\n"
	G1 ";rabbit_channel:handle_cast/2;lists:foldl/3 3\n"
	G1 ";rabbit_channel:handle_cast/2;lists:foldl/3;memcpy 1\n"
	G1 ";rabbit_channel:handle_cast/2;mod:'odd name'/2 2\n"
	G2 ";[sleep] 4\n"
	G2 ";memcpy 2\n";
/* clang-format on */

static void test_collapsed(const struct agg *a)
{
	int err = 1;
	char *out = render(a, COLLAPSED, NULL, &err);

	CHECK_INT("collapsed returns 0", 0, err);
	CHECK_STR("collapsed text", expect_collapsed, out);
	free(out);
}

/* One name in two kinds whose stacks interleave in the aggregate's (name, kind) order: collapsed
 * merges them into one line, in name order, whatever the order they were added in. */
static void test_collapsed_kinds(void)
{
	static const struct in_stack in[] = {
	    {"g", {"x", "y"}, {FRAME_ERLANG, FRAME_ERLANG}, 1},
	    {"g", {"x", "z"}, {FRAME_ERLANG, FRAME_ERLANG}, 2},
	    {"g", {"x", "y"}, {FRAME_NATIVE, FRAME_ERLANG}, 4},
	    {"g", {"x"}, {FRAME_LABEL}, 8},
	    {"f", {"x;%"}, {FRAME_NATIVE}, 16},
	};
	int rev, err = 1;

	for (rev = 0; rev < 2; rev++) {
		struct agg *a = build(in, 5, rev);
		char *out = render(a, COLLAPSED, NULL, &err);

		CHECK_INT("kinds: collapsed returns 0", 0, err);
		CHECK_STR("kinds: merged by name, sorted",
			  "f;x%3B%25 16\ng;x 8\ng;x;y 5\ng;x;z 2\n", out);
		free(out);
		agg__free(a);
	}
}

/* Frames by id in interning order, then the groups. Ids: 0 handle_cast, 1 foldl, 2 odd name,
 * 3 memcpy (native), 4 ODD, 5 fun, 6 jit, 7 [sleep], 8 memcpy (label); 9 G1, 10 G2. */
static const char expect_speedscope[] =
    "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
    "\"exporter\":\"extrospect\",\"name\":\"t \\\"1\\\"\",\"activeProfileIndex\":0,\n"
    "\"shared\":{\"frames\":[\n"
    "{\"name\":\"rabbit_channel:handle_cast/2\"},\n"
    "{\"name\":\"lists:foldl/3\"},\n"
    "{\"name\":\"mod:'odd name'/2\"},\n"
    "{\"name\":\"memcpy\"},\n"
    "{\"name\":\"a;b & <c> \\\"q\\\" 'x' 50% \\\\ \\u0001 \xc3\xa9 \\ufffd\"},\n"
    "{\"name\":\"'-fun/1-lc$^0/1-0-'\"},\n"
    "{\"name\":\"beam_jit_call_bif\"},\n"
    "{\"name\":\"[sleep]\"},\n"
    "{\"name\":\"memcpy\"},\n"
    "{\"name\":\"<0.123.0> rabbit_channel\"},\n"
    "{\"name\":\"scheduler idle\"}]},\n"
    "\"profiles\":[\n"
    "{\"type\":\"sampled\",\"name\":\"all processes\",\"unit\":\"none\",\"startValue\":0,"
    "\"endValue\":14,\n"
    "\"samples\":[[9,5,6],[9,4],[9,0,1],[9,0,1,3],[9,0,2],[10,7],[10,3],[10,8]],\n"
    "\"weights\":[1,1,3,1,2,4,1,1]},\n"
    "{\"type\":\"sampled\",\"name\":\"<0.123.0> rabbit_channel\",\"unit\":\"none\","
    "\"startValue\":0,\"endValue\":8,\n"
    "\"samples\":[[5,6],[4],[0,1],[0,1,3],[0,2]],\n"
    "\"weights\":[1,1,3,1,2]},\n"
    "{\"type\":\"sampled\",\"name\":\"scheduler idle\",\"unit\":\"none\",\"startValue\":0,"
    "\"endValue\":6,\n"
    "\"samples\":[[7],[3],[8]],\n"
    "\"weights\":[4,1,1]}]}\n";

static void test_speedscope(const struct agg *a)
{
	int err = 1;
	char *out = render(a, SPEEDSCOPE, "t \"1\"", &err);

	CHECK_INT("speedscope returns 0", 0, err);
	CHECK_STR("speedscope text", expect_speedscope, out);
	if (have("jq")) {
		CHECK_INT("jq parses it", 0,
			  out ? run_on("jq -e .profiles[2].weights[0]==4", out) : -1);
	} else {
		printf("NOTE: jq not installed: speedscope JSON not parsed back here "
		       "(test/e2e/speedscope_test.sh parses it in node and a browser)\n");
	}
	free(out);
}

static void check_xml(const char *name, const char *svg)
{
	char label[96];

	snprintf(label, sizeof(label), "%s: xmllint --noout", name);
	if (!have("xmllint")) {
		printf(
		    "NOTE: xmllint not installed (apt-get install libxml2-utils): %s not checked "
		    "for well-formedness\n",
		    name);
		return;
	}
	CHECK_INT(label, 0, svg ? run_on("xmllint --noout", svg) : -1);
}

static void test_svg(const struct agg *a)
{
	int err = 1;
	char *out = render(a, SVG, "t & <1>", &err);
	const char *s = out ? out : "";

	CHECK_INT("svg returns 0", 0, err);
	CHECK_INT("13 frames (all, 2 groups, 10 stack nodes)", 13, count_of(s, "<g class=\""));
	CHECK_INT("13 frame rects", 13, count_of(s, "\" rx=\"2\" ry=\"2\"/>"));
	CHECK_INT("5 Erlang", 5, count_of(s, "<g class=\"erl\">"));
	CHECK_INT("2 native", 2, count_of(s, "<g class=\"nat\">"));
	CHECK_INT("1 JIT", 1, count_of(s, "<g class=\"jit\">"));
	CHECK_INT("5 labels", 5, count_of(s, "<g class=\"lbl\">"));
	CHECK("title: root", strstr(s, "<title>all (14 samples, 100.00%)</title>"));
	CHECK("title: foldl", strstr(s, "<title>lists:foldl/3 (4 samples, 28.57%)</title>"));
	CHECK("title: escaped",
	      strstr(s, "<title>a;b &amp; &lt;c&gt; &quot;q&quot; &#39;x&#39; 50% \\ &#xfffd; "
			"\xc3\xa9 &#xfffd; (1 samples, 7.14%)</title>"));
	CHECK("heading escaped",
	      strstr(s, "<text id=\"title\" x=\"600\" y=\"24\">t &amp; &lt;1&gt;"));
	CHECK("no frame omitted", strstr(s, ">14 samples, 0 frames narrower than 0.1 px omitted<"));
	CHECK("legend", strstr(s, ">JIT global fragment</text>"));
	CHECK("search button", strstr(s, "<text id=\"search\""));
	CHECK("no external reference", !strstr(s, "href") && !strstr(s, "http://w"
									"ww.w3.org/1999"));
	check_xml("svg", out);
	free(out);
}

static void test_svg_narrow(void)
{
	/* 1 sample of 1e8 is 1.2e-5 px wide: its group and frame are left out */
	static const struct in_stack in[] = {
	    {"big", {"x:y/0"}, {FRAME_ERLANG}, 100000000 - 1},
	    {"tiny", {"z:z/0"}, {FRAME_ERLANG}, 1},
	};
	struct agg *a = build(in, 2, 0);
	int err = 1;
	char *out = render(a, SVG, NULL, &err);

	CHECK_INT("svg (narrow) returns 0", 0, err);
	CHECK("narrow frames counted",
	      out && strstr(out, ">100000000 samples, 2 frames narrower than 0.1 px omitted<"));
	CHECK_INT("narrow: drawn frames", 3, out ? count_of(out, "<g class=\"") : 0);
	CHECK("narrow: tiny not drawn", out && !strstr(out, "tiny"));
	check_xml("svg (narrow)", out);
	free(out);
	agg__free(a);
}

static void test_svg_labels(void)
{
	static const struct in_stack in[] = {
	    {"g", {"x:y/0"}, {FRAME_ERLANG}, 1000},
	    {"g", {"very_long_module_name:very_long_function_name/3"}, {FRAME_ERLANG}, 100},
	    {"g",
	     {"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	      "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"},
	     {FRAME_NATIVE},
	     100},
	    {"g", {"ab"}, {FRAME_NATIVE}, 1},
	};
	struct agg *a = build(in, 4, 0);
	int err = 1;
	char *out = render(a, SVG, NULL, &err);
	const char *s = out ? out : "";

	/* 100 of 1201 samples is 98.25 px: (98.25 - 6) / 7.08 gives 13 characters */
	CHECK("long name cut with ..", strstr(s, ">very_long_m..</text>"));
	CHECK("cut between code points",
	      strstr(s, ">\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
			"\xc3\xa9\xc3\xa9\xc3\xa9..</text>"));
	CHECK("short name whole", strstr(s, ">x:y/0</text>"));
	CHECK("no label under 3 characters", strstr(s, "\"></text></g>"));
	free(out);
	agg__free(a);
}

static void test_empty(void)
{
	struct agg *a = NULL;
	int err = 1;
	char *out;

	agg__new(&a);
	out = render(a, COLLAPSED, NULL, &err);
	CHECK_INT("empty collapsed returns 0", 0, err);
	CHECK_STR("empty collapsed is empty", "", out);
	free(out);
	out = render(a, SPEEDSCOPE, NULL, &err);
	CHECK_STR("empty speedscope",
		  "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
		  "\"exporter\":\"extrospect\",\"name\":\"extrospect\",\"activeProfileIndex\":0,\n"
		  "\"shared\":{\"frames\":[]},\n"
		  "\"profiles\":[\n"
		  "{\"type\":\"sampled\",\"name\":\"all processes\",\"unit\":\"none\","
		  "\"startValue\":0,\"endValue\":0,\n"
		  "\"samples\":[],\n"
		  "\"weights\":[]}]}\n",
		  out);
	free(out);
	out = render(a, SVG, NULL, &err);
	CHECK_INT("empty svg returns 0", 0, err);
	CHECK("empty svg says so", out && strstr(out, ">No samples</text>"));
	CHECK_INT("empty svg has no frames", 0, out ? count_of(out, "<g class=\"") : 1);
	check_xml("empty svg", out);
	free(out);
	agg__free(a);
	CHECK_INT("NULL aggregate", -EINVAL, report__collapsed(NULL, stdout));
}

/* Collapsed and SVG depend on names only; speedscope lists frames by id, i.e. in interning order,
 * so it is only the same for the same input. */
static void test_stable(const struct agg *a)
{
	static const char *const what[] = {"collapsed", "speedscope", "svg"};
	struct agg *b = build(input, NINPUT, 1);
	char name[96];
	enum fmt fmt;
	int err;

	for (fmt = COLLAPSED; fmt <= SVG; fmt++) {
		char *x = render(a, fmt, "t", &err);
		char *y = render(fmt == SPEEDSCOPE ? a : b, fmt, "t", &err);

		snprintf(name, sizeof(name), "%s: same bytes %s", what[fmt],
			 fmt == SPEEDSCOPE ? "twice" : "whatever the insertion order");
		CHECK(name, x && y && !strcmp(x, y));
		free(x);
		free(y);
	}
	agg__free(b);
}

static void test_write_error(const struct agg *a)
{
	FILE *f = fopen("/dev/full", "w");

	if (!f) {
		printf("NOTE: no /dev/full: write errors not checked\n");
		return;
	}
	CHECK_INT("collapsed to /dev/full", -EIO, report__collapsed(a, f));
	clearerr(f);
	CHECK_INT("speedscope to /dev/full", -EIO, report__speedscope(a, f, NULL));
	clearerr(f);
	CHECK_INT("svg to /dev/full", -EIO, report__svg(a, f, NULL));
	fclose(f);
}

/* The browser test loads these; they must be what the code writes today. */
static void check_fixture(const char *path, const char *text)
{
	char *buf = NULL, name[160];
	size_t len = 0, n;
	FILE *f;

	if (getenv("XP_UPDATE_FIXTURES") && (f = fopen(path, "w"))) {
		fputs(text, f);
		fclose(f);
	}
	f = fopen(path, "r");
	if (f) {
		FILE *m = open_memstream(&buf, &len);
		char chunk[4096];

		while (m && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			fwrite(chunk, 1, n, m);
		if (m)
			fclose(m);
		fclose(f);
	}
	snprintf(name, sizeof(name), "fixture %s is current (else XP_UPDATE_FIXTURES=1)",
		 strrchr(path, '/') + 1);
	CHECK(name, buf && !strcmp(buf, text));
	free(buf);
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Text lines of buf ("\n" ended), sorted; *n gets their number. buf is split in place. */
static char **sorted_lines(char *buf, size_t *n)
{
	char **v = NULL, *p;
	size_t cap = 0;

	*n = 0;
	for (p = buf; p && *p;) {
		char *e = strchr(p, '\n');

		if (*n == cap && !(v = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v))))
			return NULL;
		v[(*n)++] = p;
		if (e)
			*e++ = '\0';
		p = e;
	}
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_str);
	return v;
}

/* Random deep stacks sharing most of their frames (as a compiler's do), names of two kinds and
 * with characters to escape, three groups: the collapsed text (each line written from what the
 * line before it shares) holds exactly the lines made whole from each stack's names, counts
 * summed for equal names, each once. */
static void test_collapsed_random(void)
{
	static const char *const names[] = {"m:f/1", "m:g/2", "a;b", "50%", "lists:map/2", "x"};
	struct agg *a = NULL;
	unsigned seed = 777;
	uint32_t g, f[200], i, k, depth, bad = 0;
	char *out, *whole = NULL, name[64], **got, **want;
	size_t wlen = 0, ngot, nwant, j;
	FILE *w = open_memstream(&whole, &wlen);
	int err = 1;

	agg__new(&a);
	for (i = 0; i < 2000; i++) {
		seed = seed * 1103515245u + 12345u;
		snprintf(name, sizeof(name), "<0.%u.0>", (seed >> 16) % 3);
		agg__group(a, name, &g);
		depth = 1 + (seed >> 8) % 200;
		for (k = 0; k < depth; k++) {
			seed = seed * 1103515245u + 12345u;
			snprintf(name, sizeof(name), "%s%u", names[k % 6],
				 (seed >> 16) % 32 ? 0 : (seed >> 21) % 2);
			agg__frame(a, name, (seed >> 24) % 4 ? FRAME_ERLANG : FRAME_NATIVE, &f[k]);
		}
		agg__add(a, g, f, depth, 1 + (seed >> 12) % 5);
	}
	out = render(a, COLLAPSED, NULL, &err);
	CHECK_INT("random: collapsed returns 0", 0, err);
	/* Each stack made whole, escaped as the format says. */
	for (j = 0; j < agg__nstacks(a); j++) {
		struct agg_stack s;

		agg__stack(a, j, &s);
		fputs(agg__group_name(a, s.group), w);
		for (k = 0; k < s.nframes; k++) {
			const char *c;

			fputc(';', w);
			for (c = agg__frame_name(a, s.frames[k]); *c; c++)
				fputs(*c == ';' ? "%3B" : *c == '%' ? "%25" : (char[]){*c, 0}, w);
		}
		fprintf(w, " %llu\n", (unsigned long long)s.count);
	}
	fclose(w);
	got = sorted_lines(out, &ngot);
	want = sorted_lines(whole, &nwant);
	/* want: sum the counts of equal texts (kinds merged) */
	for (j = 0, k = 0; j < nwant; k++) {
		char *sp = strrchr(want[j], ' ');
		unsigned long long c = 0;
		size_t m = j;

		for (; m < nwant && !strncmp(want[m], want[j], (size_t)(sp - want[j] + 1)) &&
		       strrchr(want[m], ' ') - want[m] == sp - want[j];
		     m++)
			c += strtoull(strrchr(want[m], ' ') + 1, NULL, 10);
		*sp = '\0';
		if (k >= ngot || strncmp(got[k], want[j], strlen(want[j])) ||
		    got[k][strlen(want[j])] != ' ' ||
		    strtoull(got[k] + strlen(want[j]) + 1, NULL, 10) != c)
			bad++;
		j = m;
	}
	CHECK_INT("random: every line whole, once, with its count", 0, bad);
	CHECK_INT("random: no other lines", (int)k, (int)ngot);
	free(got);
	free(want);
	free(whole);
	free(out);
	agg__free(a);
}

static void test_fixtures(const struct agg *a)
{
	int err;
	char *json = render(a, SPEEDSCOPE, "extrospect e2e", &err);
	char *svg = render(a, SVG, "extrospect e2e", &err);
	char *folded = render(a, COLLAPSED, NULL, &err);

	if (access(E2E_DIR, F_OK)) {
		printf("NOTE: %s not found: fixtures not checked\n", E2E_DIR);
	} else {
		check_fixture(E2E_DIR "/profile.speedscope.json", json ? json : "");
		check_fixture(E2E_DIR "/profile.svg", svg ? svg : "");
		check_fixture(E2E_DIR "/profile.collapsed.txt", folded ? folded : "");
	}
	free(json);
	free(svg);
	free(folded);
}

int main(void)
{
	struct agg *a = build(input, NINPUT, 0);

	if (!a)
		return check_skip("cannot allocate an aggregate");
	test_collapsed(a);
	test_collapsed_kinds();
	test_collapsed_random();
	test_speedscope(a);
	test_svg(a);
	test_svg_narrow();
	test_svg_labels();
	test_empty();
	test_stable(a);
	test_write_error(a);
	test_fixtures(a);
	agg__free(a);
	return check_done();
}
