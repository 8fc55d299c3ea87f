/* Unit tests for jitmap.c. Offline: symfiles captured from a live OTP 25 VM (fixtures/jit_otp25_*,
 * made with tools/capture-jit.c), every truncation and seeded garbage, and synthetic entry chains
 * (cycles, holes) served by the mem snapshot backend. Live: a fresh `erl -noshell` (host OTP 25,
 * and the OTP 27 / 29 chroots when present), the descriptor by .dynsym and by structural scan.
 * Over 500 lines: the tests of one object, one short function each, kept in its one file. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "jitmap.h"

#define SYMFILE_CAP 8192 /* the 255-file test needs more than the default */
#include "symfile.h"

#define NORMAL_EXIT_25 0x7f8730200c30ull /* from jit_otp25_emulator.bin */

struct blob {
	uint8_t *data;
	size_t len;
};

static struct blob fixture(const char *name)
{
	char path[PATH_MAX], dir[PATH_MAX];
	struct blob b = {NULL, 0};
	FILE *f;
	long n;

	snprintf(dir, sizeof(dir), "%s", __FILE__);
	snprintf(path, sizeof(path), "%s/fixtures/jit_otp25_%s.bin", dirname(dir), name);
	f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET))
		goto out;
	b.data = malloc(n);
	if (b.data && fread(b.data, 1, n, f) == (size_t)n)
		b.len = n;
out:
	if (f)
		fclose(f);
	CHECK(path, b.len > 0);
	return b;
}

static const char *name_at(const struct jitmap *map, uint64_t addr)
{
	const struct jit_range *r = jitmap__lookup(map, addr);

	return r ? r->name : "(none)";
}

static void test_fixtures(struct blob *fx)
{
	struct jitmap *map = NULL;
	const struct jitmap_stats *s;
	const struct jit_range *r;

	jitmap__new(&map);
	CHECK_INT("add logger_sup", 0, jitmap__add_symfile(map, fx[0].data, fx[0].len, 0x100, 0));
	CHECK_INT("add erl_init", 0, jitmap__add_symfile(map, fx[1].data, fx[1].len, 0x200, 1));
	CHECK_INT("add emulator", 0, jitmap__add_symfile(map, fx[2].data, fx[2].len, 0x300, 2));
	CHECK_INT("add global", 0, jitmap__add_symfile(map, fx[3].data, fx[3].len, 0x400, 3));
	CHECK("no lookup before finish", !jitmap__lookup(map, 0x7f8730205080));
	jitmap__finish(map);
	s = jitmap__stats(map);
	CHECK_INT("fixture modules", 3, s->modules);
	CHECK_INT("fixture emulator", 1, s->emulator);
	CHECK_INT("fixture ranges", 10 + 20 + 75, s->ranges);
	CHECK_INT("fixture functions", 4 + 9, s->functions);
	CHECK_INT("fixture frame_layout", 0, s->frame_layout);
	CHECK_U64("fixture normal_exit", NORMAL_EXIT_25, s->normal_exit);
	CHECK_INT("fixture module count", 4, jitmap__module_count(map));
	CHECK_STR("module 1 name", "erl_init", jitmap__module(map, 1)->name);
	CHECK_U64("module 1 base", 0x7f8730204f40ull, jitmap__module(map, 1)->base);
	CHECK_INT("module 1 code_size", 2216, jitmap__module(map, 1)->code_size);
	CHECK_INT("module 1 nranges", 20, jitmap__module(map, 1)->nranges);
	CHECK_U64("module 1 entry", 0x200, jitmap__module(map, 1)->entry_addr);
	CHECK_STR("module 2 is the emulator", "", jitmap__module(map, 2)->name);
	CHECK_STR("module 3 name", "global", jitmap__module(map, 3)->name);

	CHECK_STR("lookup start/2 first byte", "erl_init:start/2", name_at(map, 0x7f8730205080));
	CHECK_STR("lookup start/2 last byte", "erl_init:start/2", name_at(map, 0x7f8730205167));
	CHECK_STR("lookup prologue", "erl_init:restart/0-CodeInfoPrologue",
		  name_at(map, 0x7f8730205168));
	CHECK_STR("lookup quoted fun", "erl_init:'-restart/0-fun-0-'/0",
		  name_at(map, 0x7f87302056d8));
	CHECK_STR("lookup header", "erl_init::codeHeader", name_at(map, 0x7f8730204f40));
	CHECK_STR("lookup footer", "erl_init::codeFooter", name_at(map, 0x7f87302057e7));
	CHECK_STR("lookup past module", "(none)", name_at(map, 0x7f87302057e8));
	CHECK_STR("lookup gc fragment", "global::garbage_collect", name_at(map, 0x7f87301ff810));
	CHECK_STR("lookup logger_sup", "logger_sup:init/1", name_at(map, 0x7f873054b340));
	CHECK_STR("lookup below all", "(none)", name_at(map, 0x1000));
	r = jitmap__find(map, "logger_sup:start_link/0");
	CHECK("find start_link", r != NULL);
	if (r) {
		CHECK_U64("find start", 0x7f873054b2d0ull, r->start);
		CHECK_U64("find end", 0x7f873054b310ull, r->end);
		CHECK_STR("find module", "logger_sup", jitmap__module(map, r->module)->name);
		CHECK_INT("find generation", 0, r->generation);
	}
	CHECK("find missing", !jitmap__find(map, "lists:reverse/2"));
	jitmap__free(map);
}

/* Every proper prefix is malformed, and a rejected blob adds nothing to the map. */
static void test_truncated(struct blob *fx, size_t nfx)
{
	struct jitmap *map = NULL;
	unsigned bad = 0, tried = 0;
	char what[64] = "none";

	jitmap__new(&map);
	for (size_t i = 0; i < nfx; i++) {
		for (size_t len = 0; len < fx[i].len; len++) {
			uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees overreads */
			int rc;

			memcpy(copy, fx[i].data, len);
			rc = jitmap__add_symfile(map, copy, len, 0, 0);
			tried++;
			if (rc != -EPROTO && !bad++)
				snprintf(what, sizeof(what), "fixture %zu len %zu -> %d", i, len,
					 rc);
			free(copy);
		}
	}
	CHECK_STR("every truncated prefix is -EPROTO", "none", what);
	CHECK_INT("truncations tried", 32 + 954 + 609 + 3279, tried);
	CHECK_INT("truncations added nothing", 0, jitmap__stats(map)->ranges);
	CHECK_INT("truncations added no module", 0, jitmap__module_count(map));
	jitmap__free(map);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Whatever a garbage blob parses into must be self-consistent. */
static bool map_sane(const struct jitmap *map)
{
	for (size_t i = 0; i < jitmap__range_count(map); i++) {
		const struct jit_range *r = jitmap__range(map, i);
		const struct jit_module_info *mi = jitmap__module(map, r->module);

		if (!mi || r->start > r->end || r->start < mi->base ||
		    r->end > mi->base + mi->code_size)
			return false;
	}
	return true;
}

static void test_garbage(struct blob *fx, size_t nfx)
{
	uint64_t seed = 0x5eed5eed12345678ull;
	unsigned parsed = 0, insane = 0, odd_rc = 0, bad_line = 0;

	for (unsigned iter = 0; iter < 20000; iter++) {
		const struct blob *src = &fx[iter % nfx];
		size_t len = iter & 1 ? src->len : xorshift(&seed) % 4096;
		uint8_t *b = malloc(len ? len : 1);
		struct jitmap *map = NULL;
		int rc;

		if (iter & 1) { /* mutate a few bytes of a real blob */
			memcpy(b, src->data, len);
			for (unsigned k = 1 + xorshift(&seed) % 4; k; k--)
				b[xorshift(&seed) % len] = (uint8_t)xorshift(&seed);
		} else { /* random bytes claiming to be a module */
			for (size_t k = 0; k < len; k++)
				b[k] = (uint8_t)xorshift(&seed);
			if (len >= 4)
				memcpy(b, &(uint32_t){1}, 4);
		}
		jitmap__new(&map);
		rc = jitmap__add_symfile(map, b, len, 0, 0);
		jitmap__finish(map);
		parsed += rc == 0;
		odd_rc += rc != 0 && rc != -EPROTO;
		insane += !map_sane(map);
		jitmap__lookup(map, xorshift(&seed));
		for (size_t k = 0; k < jitmap__range_count(map); k++) {
			const struct jit_range *r = jitmap__range(map, k);
			const char *file;
			uint32_t line;

			if (jitmap__line(map, r,
					 r->start + xorshift(&seed) % (r->end - r->start + 1),
					 &file, &line))
				bad_line += !line || !file || strlen(file) > 0xffff;
		}
		jitmap__free(map);
		free(b);
	}
	printf("INFO garbage: %u of 20000 blobs parsed\n", parsed);
	CHECK_INT("garbage: only 0 or -EPROTO", 0, odd_rc);
	CHECK_INT("garbage: parsed maps are sane", 0, insane);
	CHECK_INT("garbage: lines found are sane", 0, bad_line);
}

/* Targeted corruptions of the logger_sup fixture, each of which must be refused. */
static void test_corrupt(const struct blob *fx)
{
	static const struct {
		const char *what;
		size_t off, width;
		uint64_t value;
	} cases[] = {
	    {"module name_length 0xffff", 24, 2, 0xffff},
	    {"module name_length 0", 24, 2, 0},
	    {"module name_length 10", 24, 2, 10}, /* "logger_sup" without its NUL */
	    {"module name unterminated", 26 + 10, 1, 'x'},
	    {"range_count huge", 16, 4, 0xffffffff},
	    {"range_count one less", 16, 4, 9},
	    {"code_size below end_off", 20, 4, 100},
	    {"header 2", 0, 4, 2},
	    {"range 0 end > code_size", 32 + 11 + 4, 4, 1369},
	    {"range 0 start > end", 32 + 11, 4, 0xe1},
	    {"range 0 name_length 0xffff", 32 + 11 + 12, 2, 0xffff},
	    {"range 0 name_length 1", 32 + 11 + 12, 2, 1},
	    {"range 0 line_count 1", 32 + 11 + 8, 4, 1},
	};
	uint8_t *b = malloc(fx->len);
	struct jitmap *map = NULL;

	jitmap__new(&map);
	memcpy(b, fx->data, fx->len);
	CHECK_INT("corrupt: pristine copy parses", 0, jitmap__add_symfile(map, b, fx->len, 0, 0));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(b, fx->data, fx->len);
		memcpy(b + cases[i].off, &cases[i].value, cases[i].width);
		CHECK_INT(cases[i].what, -EPROTO, jitmap__add_symfile(map, b, fx->len, 0, 0));
	}
	memset(b, 0, 33); /* header 0: the emulator entry is exactly sizeof(debug_info) */
	CHECK_INT("emulator too long", -EPROTO, jitmap__add_symfile(map, b, 33, 0, 0));
	CHECK_INT("emulator exact", 0, jitmap__add_symfile(map, b, 32, 0, 0));
	CHECK_INT("corrupt: only the pristine copy added", 10, jitmap__stats(map)->ranges);
	jitmap__free(map);
	free(b);
}

/* ---- line tables ------------------------------------------------------------------------------
 */

/* "file:line" of addr in the range covering it, or "-" when the line is unknown. */
static const char *line_at(const struct jitmap *map, uint64_t addr)
{
	static char buf[256];
	const char *file;
	uint32_t line;

	if (!jitmap__line(map, jitmap__lookup(map, addr), addr, &file, &line))
		return "-";
	snprintf(buf, sizeof(buf), "%s:%u", file, line);
	return buf;
}

/* The logger_sup fixture (OTP 25) carries 4 line_infos: start_link/0 {0xde: 36, 0x14b: 43},
 * init/1 {0x14b: 43, 0x1a8: 53}; the first of each is the function head's, before its body. */
static void test_lines_fixture(const struct blob *fx)
{
	struct jitmap *map = NULL, *other = NULL;
	const struct jit_range *r;
	const char *f1 = NULL, *f2 = NULL;
	uint64_t base;
	uint32_t line;

	jitmap__new(&map);
	CHECK_INT("lines: add logger_sup", 0,
		  jitmap__add_symfile(map, fx[0].data, fx[0].len, 0, 0));
	CHECK_INT("lines: add global", 0, jitmap__add_symfile(map, fx[3].data, fx[3].len, 0, 1));
	jitmap__finish(map);
	base = jitmap__module(map, 0)->base;
	CHECK_INT("lines: stats", 4, jitmap__stats(map)->lines);
	CHECK_INT("lines: one file in logger_sup", 1, jitmap__module(map, 0)->nfiles);
	CHECK_STR("lines: start_link/0 body start", "logger_sup.erl:36",
		  line_at(map, base + 0x110));
	CHECK_STR("lines: start_link/0 before 0x14b", "logger_sup.erl:36",
		  line_at(map, base + 0x14a));
	CHECK_STR("lines: start_link/0 at 0x14b", "logger_sup.erl:43", line_at(map, base + 0x14b));
	CHECK_STR("lines: init/1 body start", "logger_sup.erl:43", line_at(map, base + 0x180));
	CHECK_STR("lines: init/1 before 0x1a8", "logger_sup.erl:43", line_at(map, base + 0x1a7));
	CHECK_STR("lines: init/1 at 0x1a8", "logger_sup.erl:53", line_at(map, base + 0x1a8));
	CHECK_STR("lines: init/1 last byte", "logger_sup.erl:53", line_at(map, base + 0x24f));
	/* A prologue pc is its function's (jitmap__frame_name), at the function's first line. */
	CHECK_STR("lines: init/1 prologue", "logger_sup.erl:43", line_at(map, base + 0x150));
	CHECK_STR("lines: module_info/0 (none)", "-", line_at(map, base + 0x280));
	CHECK_STR("lines: header", "-", line_at(map, base + 0x10));
	CHECK_STR("lines: footer", "-", line_at(map, base + 0x400));
	CHECK_STR("lines: fragment", "-", line_at(map, 0x7f87301ff810));
	r = jitmap__find(map, "logger_sup:init/1");
	CHECK("prologue_body: init/1's prologue is followed by its body",
	      r && jitmap__prologue_body(map, jitmap__lookup(map, base + 0x150)) == r);
	CHECK("prologue_body: a body is not a prologue", !jitmap__prologue_body(map, r));
	CHECK("prologue_body: a fragment is not a prologue",
	      !jitmap__prologue_body(map, jitmap__lookup(map, 0x7f87301ff810)));
	CHECK("lines: init/1 outside its range", !jitmap__line(map, r, base + 0x250, &f1, &line));
	CHECK("lines: init/1 below its range", !jitmap__line(map, r, base + 0x17f, &f1, &line));
	CHECK("lines: NULL range", !jitmap__line(map, NULL, base + 0x180, &f1, &line));
	CHECK("lines: NULL map", !jitmap__line(NULL, r, base + 0x180, &f1, &line));
	jitmap__line(map, r, base + 0x180, &f1, &line);
	jitmap__line(map, jitmap__find(map, "logger_sup:start_link/0"), base + 0x110, &f2, &line);
	CHECK("lines: file names interned per module", f1 && f1 == f2);
	/* A range of another map is refused, not read through this map's tables. */
	jitmap__new(&other);
	jitmap__finish(other);
	CHECK("lines: range of another map", !jitmap__line(other, r, base + 0x180, &f1, &line));
	jitmap__free(other);
	jitmap__free(map);
}

#define LBASE 0x40000ull

/* What add_range derives from a name: a frame (not a prologue, module header or footer), a
 * shared fragment, the scheduler loop, the exit code; near misses of each are not. */
static void test_range_flags(void)
{
	static const struct symfile_range rs[] = {
	    {0x000, 0x010, "m::codeHeader"},
	    {0x010, 0x020, "m:f/1-CodeInfoPrologue"},
	    {0x020, 0x030, "m:f/1"},
	    {0x030, 0x040, "'a::codeX':f/1"},
	    {0x040, 0x050, "global::process_main"},
	    {0x050, 0x060, "global::process_main2"},
	    {0x060, 0x070, "erts_beamasm:normal_exit/0"},
	    {0x070, 0x080, "erts_beamasm:continue_exit/0"},
	    {0x080, 0x090, "erts_beamasm:normal_exit/01"},
	    {0x090, 0x0a0, "x:global::"},
	    {0x0a0, 0x0b0, "m:-CodeInfoPrologue/1"},
	    {0x0b0, 0x0c0, "m::codeFooter"},
	};
	/* frame, fragment, sched_loop, exit_code */
	static const bool want[][4] = {
	    {0, 0, 0, 0}, {0, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}, {1, 1, 1, 0}, {1, 1, 0, 0},
	    {1, 0, 0, 1}, {1, 0, 0, 1}, {1, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}, {0, 0, 0, 0},
	};
	static uint8_t b[SYMFILE_CAP];
	struct jitmap *map = NULL;
	size_t n, i;

	jitmap__new(&map);
	n = symfile_build(b, "m", LBASE, 0xc0, rs, 12);
	CHECK_INT("flags: add", 0, jitmap__add_symfile(map, b, n, 0, 1));
	jitmap__finish(map);
	for (i = 0; i < 12; i++) {
		const struct jit_range *r = jitmap__lookup(map, LBASE + rs[i].start);
		char name[96];
		bool ok = r && r->frame == want[i][0] && r->fragment == want[i][1] &&
			  r->sched_loop == want[i][2] && r->exit_code == want[i][3];

		snprintf(name, sizeof(name), "flags: %s", rs[i].name);
		CHECK(name, ok);
	}
	jitmap__free(map);
}

/* Synthetic tables: heads before the body, an included file, a "no line" entry, equal starts,
 * an out-of-order table (dropped), lines ERTS cannot write, and a newer load of the module. */
static void test_lines_synthetic(void)
{
	static const struct symfile_line f_lines[] = {{0x30, 10, "m.erl"}, {0x60, 12, "m.erl"},
						      {0x80, 0, "m.erl"},  {0x90, 14, "inc/m.hrl"},
						      {0xa0, 16, "m.erl"}, {0xa0, 17, "m.erl"}};
	static const struct symfile_line g_lines[] = {{0x150, 20, "m.erl"}, {0x120, 21, "m.erl"}};
	static const struct symfile_line h_lines[] = {{0x200, 1u << 24, "m.erl"},
						      {0x250, 30, "m.erl"}};
	static const struct symfile_line new_lines[] = {{0x40, 99, "m2.erl"}};
	static const struct symfile_range rs[] = {
	    {0, 0x40, "m::codeHeader"},
	    {0x40, 0x100, "m:f/1"},
	    {0x100, 0x200, "m:g/0"},
	    {0x200, 0x300, "m:h/0"},
	};
	static const struct symfile_lines ls[] = {
	    {NULL, 0}, {f_lines, 6}, {g_lines, 2}, {h_lines, 2}};
	static const struct symfile_range rs_new[] = {{0x40, 0x100, "m:f/1"}};
	static const struct symfile_lines ls_new[] = {{new_lines, 1}};
	static uint8_t b[SYMFILE_CAP];
	struct jitmap *map = NULL;
	size_t n;

	jitmap__new(&map);
	n = symfile_build_lines(b, "m", LBASE, 0x300, rs, ls, 4);
	CHECK_INT("lines syn: add", 0, jitmap__add_symfile(map, b, n, 0, 1));
	jitmap__finish(map);
	CHECK_INT("lines syn: kept (the unordered table dropped)", 8, jitmap__stats(map)->lines);
	CHECK_INT("lines syn: files", 2, jitmap__module(map, 0)->nfiles);
	CHECK_STR("lines syn: head line before the body", "m.erl:10", line_at(map, LBASE + 0x40));
	CHECK_STR("lines syn: 0x5f", "m.erl:10", line_at(map, LBASE + 0x5f));
	CHECK_STR("lines syn: 0x60", "m.erl:12", line_at(map, LBASE + 0x60));
	CHECK_STR("lines syn: line 0 is no line", "-", line_at(map, LBASE + 0x80));
	CHECK_STR("lines syn: line 0 until the next", "-", line_at(map, LBASE + 0x8f));
	CHECK_STR("lines syn: included file", "inc/m.hrl:14", line_at(map, LBASE + 0x90));
	CHECK_STR("lines syn: equal starts: the last", "m.erl:17", line_at(map, LBASE + 0xa0));
	CHECK_STR("lines syn: last byte", "m.erl:17", line_at(map, LBASE + 0xff));
	CHECK_STR("lines syn: unordered table dropped", "-", line_at(map, LBASE + 0x160));
	CHECK_STR("lines syn: line beyond 24 bits", "-", line_at(map, LBASE + 0x210));
	CHECK_STR("lines syn: after it", "m.erl:30", line_at(map, LBASE + 0x250));
	CHECK_STR("lines syn: header", "-", line_at(map, LBASE + 0x10));
	jitmap__free(map);

	/* A newer load at the same place (generation 0): its range, its lines. */
	jitmap__new(&map);
	n = symfile_build_lines(b, "m", LBASE, 0x300, rs, ls, 4);
	jitmap__add_symfile(map, b, n, 0, 1);
	n = symfile_build_lines(b, "m", LBASE, 0x100, rs_new, ls_new, 1);
	CHECK_INT("lines syn: add newer", 0, jitmap__add_symfile(map, b, n, 0, 0));
	jitmap__finish(map);
	CHECK_STR("lines syn: newest load's line", "m2.erl:99", line_at(map, LBASE + 0x60));
	CHECK_STR("lines syn: older load elsewhere", "m.erl:30", line_at(map, LBASE + 0x250));
	jitmap__free(map);
}

/* ERTS packs a file index in 8 bits: a module naming more files keeps the first 255. */
static void test_lines_many_files(void)
{
	static struct symfile_line ls[300];
	static char names[300][8];
	static uint8_t b[SYMFILE_CAP];
	struct symfile_range r = {0, 300 * 4, "m:f/0"};
	struct symfile_lines l = {ls, 300};
	struct jitmap *map = NULL;
	size_t n;

	for (uint32_t i = 0; i < 300; i++) {
		snprintf(names[i], sizeof(names[i]), "%u", i);
		ls[i] = (struct symfile_line){i * 4, i + 1, names[i]};
	}
	jitmap__new(&map);
	n = symfile_build_lines(b, "m", LBASE, 300 * 4, &r, &l, 1);
	CHECK("lines files: built", n > 0);
	CHECK_INT("lines files: add", 0, jitmap__add_symfile(map, b, n, 0, 0));
	jitmap__finish(map);
	CHECK_INT("lines files: table capped", 255, jitmap__module(map, 0)->nfiles);
	CHECK_STR("lines files: first", "0:1", line_at(map, LBASE));
	CHECK_STR("lines files: 255th", "254:255", line_at(map, LBASE + 254 * 4 + 3));
	CHECK_STR("lines files: 256th has no line", "-", line_at(map, LBASE + 255 * 4));
	CHECK_STR("lines files: last has no line", "-", line_at(map, LBASE + 299 * 4));
	jitmap__free(map);
}

/* A line_info whose file is not NUL-terminated where its length says: the whole blob is refused
 * and leaves no line behind. */
static void test_lines_malformed(void)
{
	static const struct symfile_line ls[] = {{0x40, 5, "m.erl"}, {0x50, 6, "m.erl"}};
	static const struct symfile_range rs[] = {{0x40, 0x100, "m:f/1"}};
	static const struct symfile_lines l = {ls, 2};
	static uint8_t b[SYMFILE_CAP];
	struct jitmap *map = NULL;
	size_t n = symfile_build_lines(b, "m", LBASE, 0x100, rs, &l, 1);
	size_t li2 = n - (12 + 6); /* the second line_info */

	jitmap__new(&map);
	b[li2 + 10 + 5] = 'x'; /* its file's NUL */
	CHECK_INT("lines malformed: unterminated file", -EPROTO,
		  jitmap__add_symfile(map, b, n, 0, 0));
	b[li2 + 10 + 5] = '\0';
	memcpy(b + li2 + 8, &(uint16_t){0}, 2);
	CHECK_INT("lines malformed: file_length 0", -EPROTO, jitmap__add_symfile(map, b, n, 0, 0));
	memcpy(b + li2 + 8, &(uint16_t){0xffff}, 2);
	CHECK_INT("lines malformed: file_length past the end", -EPROTO,
		  jitmap__add_symfile(map, b, n, 0, 0));
	CHECK_INT("lines malformed: nothing kept", 0, jitmap__stats(map)->lines);
	memcpy(b + li2 + 8, &(uint16_t){6}, 2);
	CHECK_INT("lines malformed: repaired", 0, jitmap__add_symfile(map, b, n, 0, 0));
	jitmap__finish(map);
	CHECK_STR("lines malformed: repaired lookup", "m.erl:6", line_at(map, LBASE + 0x50));
	jitmap__free(map);
}

/* ---- synthetic chains through the snapshot backend ------------------------------------------ */

#define DESC_ADDR     0x10000ull
#define ENTRY_ADDR(i) (0x20000ull + 0x100 * (i))
#define SYM_ADDR(i)   (0x100000ull + 0x10000 * (i))
#define MAX_CHAIN     8

struct fake_entry {
	const struct blob *sym;
	uint64_t next, prev, sym_addr, sym_size;
	bool no_entry, no_sym; /* leave unmapped */
};

/* A straight chain: entry i at ENTRY_ADDR(i), its symfile at SYM_ADDR(i); tests then break it. */
static void chain_init(struct fake_entry *e, const struct blob *const *syms, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		e[i] = (struct fake_entry){.sym = syms[i],
					   .next = i + 1 < n ? ENTRY_ADDR(i + 1) : 0,
					   .prev = i ? ENTRY_ADDR(i - 1) : 0,
					   .sym_addr = SYM_ADDR(i),
					   .sym_size = syms[i]->len};
	}
}

static int chain_load(const struct fake_entry *e, size_t n, uint32_t version, struct jitmap **map)
{
	struct mem_region r[1 + 2 * MAX_CHAIN];
	uint64_t desc[3] = {version, 0, n ? ENTRY_ADDR(0) : 0}, words[MAX_CHAIN][4];
	size_t nr = 0;
	struct mem *m = NULL;
	int err;

	r[nr++] = (struct mem_region){DESC_ADDR, sizeof(desc), desc};
	for (size_t i = 0; i < n; i++) {
		words[i][0] = e[i].next;
		words[i][1] = e[i].prev;
		words[i][2] = e[i].sym_addr;
		words[i][3] = e[i].sym_size;
		if (!e[i].no_entry)
			r[nr++] = (struct mem_region){ENTRY_ADDR(i), sizeof(words[i]), words[i]};
		if (!e[i].no_sym)
			r[nr++] = (struct mem_region){SYM_ADDR(i), e[i].sym->len, e[i].sym->data};
	}
	err = mem__open_snapshot(&m, r, nr);
	if (!err)
		err = jitmap__load(m, DESC_ADDR, map);
	mem__free(m);
	return err;
}

struct syn_range {
	uint32_t start, end;
	const char *name;
};

/* A module symfile laid out as beamasm_insert_gdb_info writes it (J/beam_jit_metadata.cpp). */
static struct blob syn_symfile(const char *mod, uint64_t base, uint32_t code_size,
			       const struct syn_range *r, size_t n)
{
	struct blob b = {calloc(1, 4096), 0};
	uint16_t nl = (uint16_t)(strlen(mod) + 1);
	size_t off = 32 + nl;

	memcpy(b.data, &(uint32_t){1}, 4);
	memcpy(b.data + 8, &base, 8);
	memcpy(b.data + 16, &(uint32_t){(uint32_t)n}, 4);
	memcpy(b.data + 20, &code_size, 4);
	memcpy(b.data + 24, &nl, 2);
	memcpy(b.data + 26, mod, nl);
	for (size_t i = 0; i < n; i++) {
		uint16_t rl = (uint16_t)(strlen(r[i].name) + 1);

		memcpy(b.data + off, &r[i].start, 4);
		memcpy(b.data + off + 4, &r[i].end, 4);
		memcpy(b.data + off + 12, &rl, 2);
		memcpy(b.data + off + 14, r[i].name, rl);
		off += 16 + rl;
	}
	b.len = off;
	return b;
}

static void test_chain(struct blob *fx)
{
	const struct blob *syms[] = {&fx[0], &fx[1], &fx[2], &fx[3]};
	struct fake_entry e[MAX_CHAIN];
	struct jitmap *map = NULL;
	const struct jitmap_stats *s;

	chain_init(e, syms, 4);
	CHECK_INT("chain load", 0, chain_load(e, 4, 1, &map));
	s = jitmap__stats(map);
	CHECK_INT("chain entries", 4, s->entries);
	CHECK_INT("chain modules", 3, s->modules);
	CHECK_INT("chain emulator", 1, s->emulator);
	CHECK_INT("chain bad", 0, s->bad_entries);
	CHECK_INT("chain broken", 0, s->chain_broken);
	CHECK_U64("chain normal_exit", NORMAL_EXIT_25, s->normal_exit);
	CHECK_STR("chain lookup", "erl_init:run/3", name_at(map, 0x7f8730205300));
	CHECK_INT("chain generation", 1, jitmap__lookup(map, 0x7f8730205300)->generation);
	CHECK_U64("chain module entry", ENTRY_ADDR(3), jitmap__module(map, 3)->entry_addr);
	jitmap__free(map);

	chain_init(e, syms, 4);
	e[1].next = ENTRY_ADDR(0); /* 0 -> 1 -> 0: entry 0 seen again with another predecessor */
	CHECK_INT("cycle load", 0, chain_load(e, 4, 1, &map));
	CHECK_INT("cycle entries", 2, jitmap__stats(map)->entries);
	CHECK_INT("cycle broken", 1, jitmap__stats(map)->chain_broken);
	CHECK_STR("cycle kept what was read", "erl_init:run/3", name_at(map, 0x7f8730205300));
	jitmap__free(map);

	chain_init(e, syms, 4);
	e[3].next = ENTRY_ADDR(0); /* 0 -> 1 -> 2 -> 3 -> 0 with every prev agreeing: only a */
	e[0].prev = ENTRY_ADDR(3); /* hostile VM makes one; it is walked once, not 50,000 times */
	CHECK_INT("consistent cycle load", 0, chain_load(e, 4, 1, &map));
	CHECK_INT("consistent cycle entries", 4, jitmap__stats(map)->entries);
	CHECK_INT("consistent cycle modules", 3, jitmap__stats(map)->modules);
	CHECK_INT("consistent cycle broken", 1, jitmap__stats(map)->chain_broken);
	jitmap__free(map);

	chain_init(e, syms, 1);
	e[0].next = ENTRY_ADDR(0);
	CHECK_INT("self loop load", 0, chain_load(e, 1, 1, &map));
	CHECK_INT("self loop entries", 1, jitmap__stats(map)->entries);
	CHECK_INT("self loop broken", 1, jitmap__stats(map)->chain_broken);
	jitmap__free(map);

	chain_init(e, syms, 4);
	e[1].no_entry = true; /* freed by a concurrent purge (27+) */
	CHECK_INT("hole load", 0, chain_load(e, 4, 1, &map));
	CHECK_INT("hole entries", 1, jitmap__stats(map)->entries);
	CHECK_INT("hole bad", 1, jitmap__stats(map)->bad_entries);
	CHECK_INT("hole broken", 1, jitmap__stats(map)->chain_broken);
	CHECK_STR("hole kept head", "logger_sup:init/1", name_at(map, 0x7f873054b340));
	jitmap__free(map);

	chain_init(e, syms, 4);
	e[1].no_sym = true;
	CHECK_INT("lost symfile load", 0, chain_load(e, 4, 1, &map));
	CHECK_INT("lost symfile entries", 4, jitmap__stats(map)->entries);
	CHECK_INT("lost symfile bad", 1, jitmap__stats(map)->bad_entries);
	CHECK_INT("lost symfile modules", 2, jitmap__stats(map)->modules);
	CHECK_INT("lost symfile not broken", 0, jitmap__stats(map)->chain_broken);
	jitmap__free(map);

	chain_init(e, syms, 4);
	e[1].next = ENTRY_ADDR(2) + 4; /* misaligned link */
	CHECK_INT("misaligned load", 0, chain_load(e, 4, 1, &map));
	CHECK_INT("misaligned entries", 2, jitmap__stats(map)->entries);
	CHECK_INT("misaligned broken", 1, jitmap__stats(map)->chain_broken);
	jitmap__free(map);

	chain_init(e, syms, 4);
	e[2].sym_size = JIT_MAX_SYMFILE + 1ull;
	CHECK_INT("huge symfile load", 0, chain_load(e, 4, 1, &map));
	CHECK_INT("huge symfile bad", 1, jitmap__stats(map)->bad_entries);
	CHECK_INT("huge symfile no emulator", 0, jitmap__stats(map)->emulator);
	jitmap__free(map);

	chain_init(e, syms, 4);
	e[0].no_entry = true;
	CHECK_INT("head unreadable", -EFAULT, chain_load(e, 4, 1, &map));
	CHECK_INT("bad version", -EPROTO, chain_load(e, 4, 2, &map));
	CHECK_INT("empty chain", 0, chain_load(e, 0, 1, &map));
	CHECK_INT("empty chain entries", 0, jitmap__stats(map)->entries);
	CHECK_INT("empty chain frame_layout", -1, jitmap__stats(map)->frame_layout);
	jitmap__free(map);
}

/* The head of a live OTP 25 chain started with -eval (fixtures/jit_otp25_eval_entries.bin: each
 * entry's address and its 4 words, then the symfiles of ordsets and erl_anno, as captured). OTP 25
 * never sets the newest entry's prev (J/beam_jit_metadata.cpp 25:229): this VM ran with
 * GLIBC_TUNABLES=glibc.malloc.tcache_count=0:glibc.malloc.perturb=165, which makes that garbage
 * 0x5a5a5a5a5a5a5a5a every time; without it the value depends on the heap's history (-eval loads
 * ordsets last, into a reused chunk). The next link of erl_anno leads to memory not captured. */
static void test_eval_head(void)
{
	struct blob ent = fixture("eval_entries"), ord = fixture("ordsets"),
		    anno = fixture("erl_anno");
	uint64_t w[2][5], desc[3] = {1, 0, 0};
	struct jitmap *map = NULL;
	struct mem_region r[5];
	struct mem *m = NULL;

	if (ent.len != sizeof(w) || !ord.len || !anno.len)
		goto cleanup;
	memcpy(w, ent.data, sizeof(w));
	desc[2] = w[0][0];
	CHECK_U64("eval head prev is malloc garbage", 0x5a5a5a5a5a5a5a5aull, w[0][2]);
	CHECK_U64("eval second entry points back", w[0][0], w[1][2]);
	r[0] = (struct mem_region){DESC_ADDR, sizeof(desc), desc};
	r[1] = (struct mem_region){w[0][0], 32, &w[0][1]};
	r[2] = (struct mem_region){w[1][0], 32, &w[1][1]};
	r[3] = (struct mem_region){w[0][3], ord.len, ord.data};
	r[4] = (struct mem_region){w[1][3], anno.len, anno.data};
	if (mem__open_snapshot(&m, r, 5))
		goto cleanup;
	CHECK_INT("eval head load", 0, jitmap__load(m, DESC_ADDR, &map));
	CHECK_INT("eval head entries", 2, jitmap__stats(map)->entries);
	CHECK_INT("eval head modules", 2, jitmap__stats(map)->modules);
	CHECK_INT("eval head lost third entry", 1, jitmap__stats(map)->bad_entries);
	CHECK_STR("eval head module", "ordsets", jitmap__module(map, 0)->name);
	CHECK("eval head ordsets:union/2", jitmap__find(map, "ordsets:union/2") != NULL);
	CHECK("eval head erl_anno:new/1", jitmap__find(map, "erl_anno:new/1") != NULL);
	jitmap__free(map);
	map = NULL;
	mem__free(m);
	w[1][2] = 0x5a5a5a5a5a5a5a5aull; /* below the head, a wrong prev still breaks the chain */
	if (mem__open_snapshot(&m, r, 5))
		goto cleanup;
	CHECK_INT("eval bad second prev load", 0, jitmap__load(m, DESC_ADDR, &map));
	CHECK_INT("eval bad second prev entries", 1, jitmap__stats(map)->entries);
	CHECK_INT("eval bad second prev broken", 1, jitmap__stats(map)->chain_broken);
	CHECK("eval bad second prev keeps head", jitmap__find(map, "ordsets:union/2") != NULL);
cleanup:
	jitmap__free(map);
	mem__free(m);
	free(ent.data);
	free(ord.data);
	free(anno.data);
}

/* OTP 25 keeps purged entries, and a newer module may reuse their addresses: newest wins. */
static void test_overlap(struct blob *fx)
{
	static const struct syn_range nr[] = {{0, 0x100, "newmod:f/0"},
					      {0x100, 0x100, "newmod::codeFooter"}};
	struct blob newer = syn_symfile("newmod", 0x7f8730205100ull, 0x100, nr, 2);
	const struct blob *syms[2] = {&newer, &fx[1]};
	struct fake_entry e[2];
	struct jitmap *map = NULL;

	chain_init(e, syms, 2);
	CHECK_INT("overlap load", 0, chain_load(e, 2, 1, &map));
	CHECK_INT("overlap bad", 0, jitmap__stats(map)->bad_entries);
	CHECK_STR("overlap newest wins", "newmod:f/0", name_at(map, 0x7f8730205100));
	CHECK_STR("overlap newest last byte", "newmod:f/0", name_at(map, 0x7f87302051ff));
	CHECK_STR("overlap older before", "erl_init:start/2", name_at(map, 0x7f87302050ff));
	CHECK_STR("overlap older after", "erl_init:restart/0", name_at(map, 0x7f8730205200));
	CHECK_INT("overlap functions", 9 + 1, jitmap__stats(map)->functions);
	jitmap__free(map);

	syms[0] = &fx[1];
	syms[1] = &newer;
	chain_init(e, syms, 2);
	CHECK_INT("overlap reversed load", 0, chain_load(e, 2, 1, &map));
	CHECK_STR("overlap reversed", "erl_init:start/2", name_at(map, 0x7f8730205150));
	CHECK_STR("overlap reversed next", "erl_init:restart/0-CodeInfoPrologue",
		  name_at(map, 0x7f8730205170));
	jitmap__free(map);
	free(newer.data);
}

/* The scan over a fake .data: decoys that pass the cheap test, a descriptor straddling the scan's
 * chunk boundary, a second copy (ambiguous), and an unmapped hole before the descriptor. */
static void test_scan(struct blob *fx)
{
	const struct blob *syms[] = {&fx[0], &fx[1], &fx[2], &fx[3]};
	const uint64_t data = 0x1000000, real = data + 0x10000 - 8, hole = 0x2000000;
	uint64_t desc[3] = {1, 0, ENTRY_ADDR(0)}, decoy1[3] = {1 | 1ull << 32, 0, 0x123458},
		 decoy2[3] = {1, ENTRY_ADDR(0), ENTRY_ADDR(1)}, words[4][4], *bytes, *page,
		 found = 0;
	struct mem_region r[12];
	struct fake_entry e[4];
	struct mem *m = NULL;
	size_t nr = 0;

	bytes = calloc(1, 0x20000);
	page = calloc(1, 0x1000);
	memcpy((uint8_t *)page + 0x10, desc, sizeof(desc));
	memcpy((uint8_t *)bytes + 0x100, decoy1, sizeof(decoy1));
	memcpy((uint8_t *)bytes + 0x200, decoy2, sizeof(decoy2));
	memcpy((uint8_t *)bytes + (real - data), desc, sizeof(desc));
	chain_init(e, syms, 4);
	for (size_t i = 0; i < 4; i++) {
		words[i][0] = e[i].next;
		words[i][1] = e[i].prev;
		words[i][2] = e[i].sym_addr;
		words[i][3] = e[i].sym_size;
		r[nr++] = (struct mem_region){ENTRY_ADDR(i), sizeof(words[i]), words[i]};
		r[nr++] = (struct mem_region){SYM_ADDR(i), e[i].sym->len, e[i].sym->data};
	}
	r[nr++] = (struct mem_region){data, 0x20000, bytes};
	r[nr++] = (struct mem_region){hole + 0x2000, 0x1000, page}; /* only page 2 of 4 mapped */
	mem__open_snapshot(&m, r, nr);
	CHECK_INT("scan finds", 0, jitmap__scan(m, data, 0x20000, 3, &found, NULL));
	CHECK_U64("scan address across chunk boundary", real, found);
	CHECK_INT("scan min_modules too high", -ENOENT,
		  jitmap__scan(m, data, 0x20000, 4, &found, NULL));
	CHECK_INT("scan across holes", 0, jitmap__scan(m, hole, 0x4000, 3, &found, NULL));
	CHECK_U64("scan across holes address", hole + 0x2010, found);
	CHECK_INT("scan ambiguous", -EEXIST,
		  jitmap__scan(m, data, hole + 0x4000 - data, 3, &found, NULL));
	CHECK_INT("scan nothing", -ENOENT, jitmap__scan(m, data, 0x1000, 0, &found, NULL));
	/* The map the check loaded, handed out: what jitmap__load makes of the address found. */
	{
		struct jitmap *scanned = (struct jitmap *)1, *loaded = NULL;

		CHECK_INT("scan with its map", 0,
			  jitmap__scan(m, data, 0x20000, 3, &found, &scanned));
		CHECK_INT("load the same", 0, jitmap__load(m, found, &loaded));
		CHECK("scan's map: the load's modules and ranges",
		      scanned && loaded &&
			  jitmap__stats(scanned)->modules == jitmap__stats(loaded)->modules &&
			  jitmap__range_count(scanned) == jitmap__range_count(loaded) &&
			  jitmap__range_count(scanned) > 0);
		jitmap__free(scanned);
		jitmap__free(loaded);
		scanned = (struct jitmap *)1;
		CHECK_INT("ambiguous, with its map", -EEXIST,
			  jitmap__scan(m, data, hole + 0x4000 - data, 3, &found, &scanned));
		CHECK("ambiguous: no map", scanned == NULL);
		scanned = (struct jitmap *)1;
		CHECK_INT("nothing, with its map", -ENOENT,
			  jitmap__scan(m, data, 0x1000, 0, &found, &scanned));
		CHECK("nothing: no map", scanned == NULL);
	}
	mem__free(m);
	free(page);
	free(bytes);
}

/* ---- live VMs ---------------------------------------------------------------------------------
 */

struct vm {
	const char *label, *root; /* root: a chroot holding another OTP, or NULL for the host */
	pid_t child, beam;
};

struct beam_image {
	uint64_t desc;		       /* from .dynsym, 0 when not exported (OTP 28+) */
	uint64_t scan_start, scan_end; /* .data .. end of .bss, load bias applied */
};

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Start `erl -noshell`; it is ready when it has renamed its pid file into place. */
static int vm_start(struct vm *vm)
{
	char inner[128], ready[PATH_MAX], eval[512];
	const char *root = vm->root ? vm->root : "";

	snprintf(inner, sizeof(inner), "/tmp/xp_test_jitmap.%d", (int)getpid());
	snprintf(ready, sizeof(ready), "%s%s", root, inner);
	unlink(ready);
	snprintf(
	    eval, sizeof(eval),
	    "ok = file:write_file(\"%s.tmp\", os:getpid()), ok = file:rename(\"%s.tmp\", \"%s\").",
	    inner, inner, inner);
	vm->child = fork();
	if (vm->child == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (vm->root)
			execlp("chroot", "chroot", vm->root, "erl", "-noshell", "-eval", eval,
			       NULL);
		else
			execlp("erl", "erl", "-noshell", "-eval", eval, NULL);
		_exit(127);
	}
	for (double t0 = now_ms(); vm->child > 0 && now_ms() - t0 < 60000;) {
		FILE *f = fopen(ready, "r");
		int pid = 0;

		if (f && fscanf(f, "%d", &pid) == 1 && pid > 0) {
			fclose(f);
			unlink(ready);
			vm->beam = pid;
			return 0;
		}
		if (f)
			fclose(f);
		if (waitpid(vm->child, NULL, WNOHANG) == vm->child) {
			vm->child = 0;
			return -ECHILD;
		}
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL); /* poll interval */
	}
	return -ETIMEDOUT;
}

/* Kill what we started; as child subreaper we also reap the VM's helpers (erl_child_setup,
 * inet_gethost), which exit by themselves once beam.smp is gone. */
static void vm_stop(struct vm *vm)
{
	if (vm->beam > 0 && vm->beam != vm->child)
		kill(vm->beam, SIGKILL);
	if (vm->child > 0)
		kill(vm->child, SIGKILL);
	for (double t0 = now_ms(); now_ms() - t0 < 5000;) {
		pid_t pid = waitpid(-1, NULL, WNOHANG);

		if (pid < 0)
			break; /* ECHILD: all reaped */
		if (pid == 0)
			nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
	}
}

/* beam.smp's load address: the start of its mapping at file offset 0. The path in maps is already
 * in our own root's view (a chroot's files show up under the chroot directory). */
static int beam_base(pid_t pid, char *path, size_t pathlen, uint64_t *base)
{
	char maps[64], line[PATH_MAX + 128], file[PATH_MAX];
	unsigned long start, end, off;
	int err = -ENOENT;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "r");
	if (!f)
		return -errno;
	while (err && fgets(line, sizeof(line), f)) {
		size_t n;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %4095s", &start, &end, &off, file) != 4)
			continue;
		n = strlen(file);
		if (off == 0 && n >= 9 && !strcmp(file + n - 9, "/beam.smp")) {
			snprintf(path, pathlen, "%s", file);
			*base = start;
			err = 0;
		}
	}
	fclose(f);
	return err;
}

static void elf_sections(Elf *elf, uint64_t bias, struct beam_image *img)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	elf_getshdrstrndx(elf, &shstrndx);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".data"))
			img->scan_start = sh.sh_addr + bias;
		if (!strcmp(name, ".bss"))
			img->scan_end = sh.sh_addr + sh.sh_size + bias;
		if (sh.sh_type != SHT_DYNSYM)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);

		for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *sn;

			if (gelf_getsym(d, (int)i, &sym) &&
			    (sn = elf_strptr(elf, sh.sh_link, sym.st_name)) &&
			    !strcmp(sn, "__jit_debug_descriptor"))
				img->desc = sym.st_value + bias;
		}
	}
}

static int beam_image(pid_t pid, struct beam_image *img)
{
	char path[PATH_MAX];
	uint64_t base = 0, first_load = UINT64_MAX;
	size_t nph = 0;
	Elf *elf = NULL;
	int fd, err;

	memset(img, 0, sizeof(*img));
	err = beam_base(pid, path, sizeof(path), &base);
	if (err)
		return err;
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_getphdrnum(elf, &nph)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    ph.p_vaddr < first_load)
			first_load = ph.p_vaddr & ~0xfffull;
	}
	elf_sections(elf, base - first_load, img);
	err = img->scan_start && img->scan_end > img->scan_start ? 0 : -ENOENT;
cleanup:
	elf_end(elf);
	close(fd);
	return err;
}

/* Every OTP writes line tables: lists:nth/2 has lines from "lists.erl" (OTP's own modules are
 * compiled with the file's base name, as their stack traces show). */
static void live_check_lines(const char *label, const struct jitmap *map)
{
	const struct jit_range *r = jitmap__find(map, "lists:nth/2");
	const char *file = NULL;
	uint32_t line = 0;
	char name[128];

	printf("INFO %s: %" PRIu64 " line_infos kept\n", label, jitmap__stats(map)->lines);
	snprintf(name, sizeof(name), "%s line tables", label);
	CHECK(name, jitmap__stats(map)->lines > 1000);
	snprintf(name, sizeof(name), "%s lists:nth/2 has a line", label);
	if (!CHECK(name, r && jitmap__line(map, r, r->end - 1, &file, &line)))
		return;
	printf("INFO %s: lists:nth/2 last byte at %s:%u\n", label, file, line);
	snprintf(name, sizeof(name), "%s lists:nth/2 file", label);
	CHECK_STR(name, "lists.erl", file);
}

static void live_check_map(const char *label, const struct jitmap *map, double ms)
{
	const struct jitmap_stats *s = jitmap__stats(map);
	const struct jit_range *r = jitmap__find(map, "lists:reverse/2");
	char name[128];

	printf("INFO %s: load %.2f ms, %" PRIu64 " entries, %" PRIu64 " modules, %" PRIu64
	       " functions, %" PRIu64 " ranges, %" PRIu64 " bad, frame_layout %d\n",
	       label, ms, s->entries, s->modules, s->functions, s->ranges, s->bad_entries,
	       s->frame_layout);
	snprintf(name, sizeof(name), "%s modules >= 20", label);
	CHECK(name, s->modules >= 20);
	snprintf(name, sizeof(name), "%s every entry parsed", label);
	CHECK_INT(name, 0, s->bad_entries + s->chain_broken);
	snprintf(name, sizeof(name), "%s one emulator entry", label);
	CHECK_INT(name, 1, s->emulator);
	snprintf(name, sizeof(name), "%s has lists:reverse/2", label);
	if (!CHECK(name, r != NULL))
		return;
	snprintf(name, sizeof(name), "%s lookup lists:reverse/2 start", label);
	CHECK_STR(name, "lists:reverse/2", name_at(map, r->start));
	snprintf(name, sizeof(name), "%s lookup lists:reverse/2 last byte", label);
	CHECK_STR(name, "lists:reverse/2", name_at(map, r->end - 1));
	snprintf(name, sizeof(name), "%s lookup global::garbage_collect", label);
	CHECK(name, jitmap__find(map, "global::garbage_collect") != NULL);
	live_check_lines(label, map);
}

static void live_vm(struct vm *vm)
{
	struct beam_image img;
	struct jitmap *map = NULL;
	struct mem *m = NULL;
	uint64_t found = 0;
	char name[128];
	double t0, t1;
	int rc;

	snprintf(name, sizeof(name), "%s start erl", vm->label);
	if (!CHECK_INT(name, 0, vm_start(vm)))
		goto cleanup;
	snprintf(name, sizeof(name), "%s locate beam.smp", vm->label);
	if (!CHECK_INT(name, 0, beam_image(vm->beam, &img)) || mem__open_live(&m, vm->beam))
		goto cleanup;
	t0 = now_ms();
	rc = jitmap__scan(m, img.scan_start, img.scan_end - img.scan_start, 20, &found, NULL);
	t1 = now_ms();
	printf("INFO %s: scan of %" PRIu64 " KiB .data/.bss %.2f ms -> 0x%" PRIx64
	       ", .dynsym 0x%" PRIx64 "\n",
	       vm->label, (img.scan_end - img.scan_start) >> 10, t1 - t0, found, img.desc);
	snprintf(name, sizeof(name), "%s scan finds the descriptor", vm->label);
	CHECK_INT(name, 0, rc);
	if (img.desc) {
		snprintf(name, sizeof(name), "%s scan agrees with .dynsym", vm->label);
		CHECK_U64(name, img.desc, found);
	}
	t0 = now_ms();
	rc = jitmap__load(m, img.desc ? img.desc : found, &map);
	t1 = now_ms();
	snprintf(name, sizeof(name), "%s load", vm->label);
	if (CHECK_INT(name, 0, rc))
		live_check_map(vm->label, map, t1 - t0);
cleanup:
	jitmap__free(map);
	mem__free(m);
	vm_stop(vm);
}

static bool in_path(const char *prog)
{
	char buf[PATH_MAX], *save = NULL, *path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	bool found = false;

	for (char *d = path ? strtok_r(path, ":", &save) : NULL; d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(buf, sizeof(buf), "%s/%s", d, prog);
		found = access(buf, X_OK) == 0;
	}
	free(path);
	return found;
}

/* Returns false when the host has no erl (the caller skips). */
static bool test_live(void)
{
	struct vm vms[] = {
	    {"otp-host", NULL, 0, 0},
	    {"otp27-chroot", "/var/cache/extrospect/otp-trixie", 0, 0},
	    {"otp29-chroot", "/var/cache/extrospect/otp-sid", 0, 0},
	};
	char erl[PATH_MAX];

	if (!in_path("erl"))
		return false;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	for (size_t i = 0; i < sizeof(vms) / sizeof(vms[0]); i++) {
		if (vms[i].root) {
			snprintf(erl, sizeof(erl), "%s/usr/bin/erl", vms[i].root);
			if (geteuid() != 0 || access(erl, X_OK)) {
				printf("INFO %s: not run (needs root and %s)\n", vms[i].label, erl);
				continue;
			}
		}
		live_vm(&vms[i]);
	}
	return true;
}

int main(void)
{
	struct blob fx[4];

	setvbuf(stdout, NULL, _IOLBF, 0);
	fx[0] = fixture("logger_sup");
	fx[1] = fixture("erl_init");
	fx[2] = fixture("emulator");
	fx[3] = fixture("global");
	for (size_t i = 0; i < 4; i++)
		if (!fx[i].len)
			return check_done();
	test_fixtures(fx);
	test_truncated(fx, 4);
	test_garbage(fx, 4);
	test_corrupt(&fx[0]);
	test_lines_fixture(fx);
	test_lines_synthetic();
	test_range_flags();
	test_lines_many_files();
	test_lines_malformed();
	test_chain(fx);
	test_eval_head();
	test_overlap(fx);
	test_scan(fx);
	if (!test_live())
		return check_skip("live part: no `erl` in PATH (offline checks above ran)");
	for (size_t i = 0; i < 4; i++)
		free(fx[i].data);
	return check_done();
}
