/* Unit tests for what a process is called: proc_lib's '$initial_call' read from a process
 * dictionary laid out as OTP 27 lays it out (procdict.c), in a memory snapshot with an atom
 * table, each fault caught by its reason; the atom reader's text cache and its scan for the
 * table among decoys (atom.c); and the Elixir form of names (names.c). */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "layout.h"
#include "mem.h"
#include "names.h"
#include "procdict.h"
#include "process.h"

#define BASE  0x100000ull
#define ARENA 0x4000
#define NIL   XP_TERM_NIL

struct arena {
	uint8_t bytes[ARENA];
	uint64_t top; /* next free address */
	const struct xp_layout *row;
	uint64_t table, pages[1], proc;
	uint32_t natoms;
};

static uint64_t alloc(struct arena *a, size_t n)
{
	uint64_t at = a->top;

	a->top += (n + 7) & ~7ull;
	return at;
}

static void put(struct arena *a, uint64_t addr, uint64_t v)
{
	memcpy(a->bytes + (addr - BASE), &v, 8);
}

/* A new atom: its Atom struct and text; returns the atom term. */
static uint64_t atom(struct arena *a, const char *text)
{
	uint64_t at = alloc(a, 40), txt = alloc(a, strlen(text) + 1);
	int16_t n = (int16_t)strlen(text);
	uint32_t ix = a->natoms++;

	memcpy(a->bytes + (at - BASE) + a->row->off[XP_OFF_ATOM_LEN], &n, sizeof(n));
	put(a, at + (uint64_t)a->row->off[XP_OFF_ATOM_NAME], txt);
	memcpy(a->bytes + (txt - BASE), text, strlen(text));
	put(a, a->pages[0] + 8 * ix, at);
	memcpy(a->bytes + (a->table - BASE) + a->row->off[XP_OFF_ITAB_ENTRIES], &a->natoms, 4);
	return (uint64_t)ix << XP_ATOM_INDEX_SHIFT | XP_TAG_ATOM;
}

/* A boxed tuple of n terms on the "heap". */
static uint64_t tuple(struct arena *a, unsigned n, const uint64_t *el)
{
	uint64_t at = alloc(a, 8 * (n + 1));

	put(a, at, XP_TUPLE_HDR(n));
	for (unsigned i = 0; i < n; i++)
		put(a, at + 8 * (i + 1), el[i]);
	return at | XP_TAG_BOXED;
}

static uint64_t pair(struct arena *a, uint64_t k, uint64_t v)
{
	return tuple(a, 2, (uint64_t[]){k, v});
}

static uint64_t cons(struct arena *a, uint64_t head, uint64_t tail)
{
	uint64_t at = alloc(a, 16);

	put(a, at, head);
	put(a, at + 8, tail);
	return at | XP_TAG_LIST;
}

static uint64_t small(int64_t v)
{
	return (uint64_t)v << 4 | XP_TAG_SMALL;
}

/* A ProcDict of nslots slots (the data filled by the caller); returns its address. */
static uint64_t pdict(struct arena *a, uint32_t nslots, uint64_t *data)
{
	uint64_t at = alloc(a, XP_PDICT_DATA + 8 * nslots);
	uint32_t sizes[4] = {nslots - 1, nslots, nslots, 0};

	memcpy(a->bytes + (at - BASE), sizes, sizeof(sizes));
	put(a, at + XP_PDICT_NUM_ELEMENTS, 3);
	for (uint32_t i = 0; i < nslots; i++)
		put(a, at + XP_PDICT_DATA + 8 * i, data[i]);
	return at;
}

static void arena_init(struct arena *a)
{
	uint64_t seg;

	memset(a, 0, sizeof(*a));
	a->top = BASE + 64;
	a->row = layout__find("15.2.7", XP_FLAVOR_JIT, "x86_64");
	a->table = alloc(a, 256);
	seg = alloc(a, 8);
	a->pages[0] = alloc(a, 8 * 64);
	put(a, a->table + (uint64_t)a->row->off[XP_OFF_ITAB_SEG_TABLE], seg);
	put(a, seg, a->pages[0]);
	a->proc = alloc(a, 1024);
	put(a, a->proc + (uint64_t)a->row->off[XP_OFF_P_ID], 0x1234 << 4 | XP_TAG_PID);
}

/* procdict__initial_call on the arena's process, whose dictionary is at pd. */
static enum pdict_result read_initial(struct arena *a, uint64_t pd, bool with_dict_offset,
				      char *buf, size_t len)
{
	struct mem_region r = {.addr = BASE, .len = ARENA, .data = a->bytes};
	struct target_value off[XP_OFF_COUNT];
	struct pid_format pids = {.format = XP_PID_PIXDATA};
	struct process_view p = {.addr = a->proc, .pid = 0x1234 << 4 | XP_TAG_PID};
	struct atom_reader atoms;
	struct process_reader pr;
	struct mem *m = NULL;
	enum pdict_result res = PDICT_RESULT_COUNT;

	put(a, a->proc + (uint64_t)a->row->off[XP_OFF_P_DICTIONARY], pd);
	layout__values(a->row, off);
	off[XP_OFF_P_DICTIONARY].present = with_dict_offset;
	if (mem__open_snapshot(&m, &r, 1) || atom__reader_from_row(&atoms, m, a->row))
		goto cleanup;
	atoms.table = a->table;
	if (process__reader_init(&pr, m, off, &pids, &atoms))
		goto cleanup;
	res = procdict__initial_call(&pr, &p, buf, len);
cleanup:
	mem__free(m);
	return res;
}

static void test_found(void)
{
	struct arena *a = malloc(sizeof(*a));
	uint64_t slots[4], mfa;
	char buf[256];

	arena_init(a);
	mfa = tuple(a, 3, (uint64_t[]){atom(a, "my_server"), atom(a, "init"), small(1)});
	slots[0] = NIL;
	slots[1] = pair(a, atom(a, "$ancestors"), NIL);
	/* Two keys in one slot: a list, the one sought second. */
	slots[2] = cons(a, pair(a, atom(a, "foo"), small(7)),
			cons(a, pair(a, atom(a, "$initial_call"), mfa), NIL));
	slots[3] = pair(a, small(5), small(6)); /* a non-atom key is passed over */
	CHECK_INT("found in a slot's list", PDICT_FOUND,
		  read_initial(a, pdict(a, 4, slots), true, buf, sizeof(buf)));
	CHECK_STR("'$initial_call' text", "my_server:init/1", buf);

	mfa = tuple(a, 3, (uint64_t[]){atom(a, "Elixir.MyApp.Worker"), atom(a, "init"), small(1)});
	slots[2] = pair(a, atom(a, "$initial_call"), mfa);
	CHECK_INT("an Elixir module", PDICT_FOUND,
		  read_initial(a, pdict(a, 4, slots), true, buf, sizeof(buf)));
	CHECK_STR("quoted as Erlang prints it", "'Elixir.MyApp.Worker':init/1", buf);
	free(a);
}

static void test_faults(void)
{
	struct arena *a = malloc(sizeof(*a));
	uint64_t slots[2], pd;
	char buf[256] = "x";

	arena_init(a);
	slots[0] = pair(a, atom(a, "$ancestors"), NIL);
	slots[1] = NIL;
	CHECK_INT("no dictionary", PDICT_ABSENT, read_initial(a, 0, true, buf, sizeof(buf)));
	CHECK_STR("buf emptied", "", buf);
	CHECK_INT("no such key", PDICT_ABSENT,
		  read_initial(a, pdict(a, 2, slots), true, buf, sizeof(buf)));
	CHECK_INT("no offset for Process.dictionary", PDICT_NO_OFFSET,
		  read_initial(a, pdict(a, 2, slots), false, buf, sizeof(buf)));
	CHECK_INT("misaligned dictionary", PDICT_BAD_HEADER,
		  read_initial(a, pdict(a, 2, slots) + 4, true, buf, sizeof(buf)));
	CHECK_INT("dictionary outside memory", PDICT_READ_FAILED,
		  read_initial(a, 0x7000000, true, buf, sizeof(buf)));
	pd = pdict(a, 2, slots);
	memcpy(a->bytes + (pd + XP_PDICT_ARRAY_SIZE - BASE), &(uint32_t){0}, 4);
	CHECK_INT("zero slots", PDICT_BAD_HEADER, read_initial(a, pd, true, buf, sizeof(buf)));
	memcpy(a->bytes + (pd + XP_PDICT_ARRAY_SIZE - BASE), &(uint32_t){PDICT_MAX_SLOTS + 1}, 4);
	CHECK_INT("too many slots", PDICT_TOO_LARGE, read_initial(a, pd, true, buf, sizeof(buf)));
	slots[1] = small(3);
	CHECK_INT("a slot holding a small", PDICT_BAD_TERM,
		  read_initial(a, pdict(a, 2, slots), true, buf, sizeof(buf)));
	slots[1] = pair(a, atom(a, "$initial_call"), atom(a, "not_a_tuple"));
	CHECK_INT("a value that is no {M, F, A}", PDICT_BAD_TERM,
		  read_initial(a, pdict(a, 2, slots), true, buf, sizeof(buf)));
	slots[1] = pair(a, atom(a, "$initial_call"),
			tuple(a, 3, (uint64_t[]){atom(a, "m"), atom(a, "f"), small(1)}));
	pd = pdict(a, 2, slots);
	put(a, a->proc + (uint64_t)a->row->off[XP_OFF_P_ID], 0x4321 << 4 | XP_TAG_PID);
	CHECK_INT("the process exited (another pid in its place)", PDICT_GONE,
		  read_initial(a, pd, true, buf, sizeof(buf)));
	CHECK_STR("nothing reported for it", "", buf);
	free(a);
}

/* A fresh snapshot of the arena for both readers (the cache stays with r). */
static void reopen(struct arena *a, struct mem **m, struct atom_reader *r,
		   struct atom_reader *plain)
{
	struct mem_region reg = {.addr = BASE, .len = ARENA, .data = a->bytes};

	mem__free(*m);
	*m = NULL;
	CHECK_INT("snapshot", 0, mem__open_snapshot(m, &reg, 1));
	r->mem = plain->mem = *m;
}

/* atom__cache_on: a text is read once, then served from the cache (the arena's bytes changed
 * under it do not show); a failed read is not kept; an index is never served another's text. */
static void test_atom_cache(void)
{
	struct arena *a = malloc(sizeof(*a));
	struct atom_reader r, plain;
	struct mem_region reg;
	struct mem *m = NULL;
	uint64_t alpha, gamma, name_at;
	char buf[64], tiny[3];

	arena_init(a);
	alpha = atom(a, "alpha");
	gamma = atom(a, "gamma");
	reg = (struct mem_region){.addr = BASE, .len = ARENA, .data = a->bytes};
	if (mem__open_snapshot(&m, &reg, 1) || atom__reader_from_row(&r, m, a->row)) {
		CHECK_INT("snapshot and reader", 0, 1);
		free(a);
		return;
	}
	r.table = a->table;
	plain = r;
	CHECK_INT("cache on", 0, atom__cache_on(&r));
	CHECK_INT("alpha read", 0, atom__text(&r, alpha, buf, sizeof(buf)));
	CHECK_STR("alpha text", "alpha", buf);
	/* The text changed in memory: the cached reader keeps what it read, the plain one sees it.
	 */
	name_at = 0;
	memcpy(&name_at, a->bytes + (a->pages[0] - BASE), 8);
	memcpy(&name_at, a->bytes + (name_at + (uint64_t)a->row->off[XP_OFF_ATOM_NAME] - BASE), 8);
	memcpy(a->bytes + (name_at - BASE), "ALPHA", 5);
	reopen(a, &m, &r, &plain); /* a snapshot is a copy */
	CHECK_INT("alpha again", 0, atom__text(&r, alpha, buf, sizeof(buf)));
	CHECK_STR("alpha from the cache", "alpha", buf);
	CHECK_INT("alpha uncached", 0, atom__text(&plain, alpha, buf, sizeof(buf)));
	CHECK_STR("alpha read anew", "ALPHA", buf);
	CHECK_INT("cached, into too small a buffer", -EINVAL,
		  atom__text(&r, alpha, tiny, sizeof(tiny)));
	CHECK_STR("too small: emptied", "", tiny);
	/* The same slot, another index (past the table's end): not alpha's text. */
	CHECK_INT("index + 4096 is not alpha", -EINVAL,
		  atom__text_by_index(&r, (uint32_t)(alpha >> XP_ATOM_INDEX_SHIFT) + 4096, buf,
				      sizeof(buf)));
	/* gamma's name pointer outside memory: fails, and is read again once it is back. */
	memcpy(&name_at, a->bytes + (a->pages[0] + 8 - BASE), 8);
	put(a, name_at + (uint64_t)a->row->off[XP_OFF_ATOM_NAME], 0x7000000);
	reopen(a, &m, &r, &plain);
	CHECK_INT("gamma unreadable", 1, atom__text(&r, gamma, buf, sizeof(buf)) != 0);
	put(a, name_at + (uint64_t)a->row->off[XP_OFF_ATOM_NAME], name_at + 40);
	reopen(a, &m, &r, &plain);
	CHECK_INT("gamma readable again", 0, atom__text(&r, gamma, buf, sizeof(buf)));
	CHECK_STR("gamma text", "gamma", buf);
	atom__cache_off(&r);
	CHECK_INT("cache off", 1, r.cache == NULL);
	mem__free(m);
	free(a);
}

static void count_read(void *ctx, uint64_t addr, const void *buf, size_t len, int rc)
{
	(void)addr;
	(void)buf;
	(void)len;
	(void)rc;
	++*(unsigned *)ctx;
}

/* An index table's two words the scan reads, entries and seg_table, at addr. */
static void table_at(struct arena *a, uint64_t addr, uint32_t entries, uint64_t seg)
{
	memcpy(a->bytes + (addr - BASE) + a->row->off[XP_OFF_ITAB_ENTRIES], &entries, 4);
	put(a, addr + (uint64_t)a->row->off[XP_OFF_ITAB_SEG_TABLE], seg);
}

/* atom__scan_table over a region of 40 decoys that share one seg_table (its page's atom 0 is NULL:
 * the "nope" atom written there is undone with the arena's bytes), and a copy of the atom table:
 * found, with the decoys' table checked once (an OTP 29 .bss held 2,924 candidates, 1,732 with one
 * pointer), and each check from the seg_table the scan read, not re-reading the table's two words:
 * 11 reads in all (the region; 2 to reject the decoys' table, its page and the NULL atom pointer in
 * it, not followed; 4 each for "false" and "true"), 20 when each check read the table again, an
 * atom's length and name apart, and every pointer met; a second copy makes it ambiguous. */
static void test_atom_scan(void)
{
	struct arena *a = malloc(sizeof(*a));
	struct atom_reader r;
	struct mem_region reg;
	struct mem *m = NULL;
	uint64_t bogus, page, region, found = 0, seg;
	unsigned reads = 0;
	const size_t decoys = 40, stride = 64, len = (decoys + 3) * stride;

	arena_init(a);
	atom(a, "false");
	atom(a, "true");
	memcpy(&seg, a->bytes + (a->table - BASE) + a->row->off[XP_OFF_ITAB_SEG_TABLE], 8);
	/* The decoys' seg_table: page 0 holds an atom whose text is "nope". */
	bogus = alloc(a, 8);
	page = alloc(a, 64);
	put(a, bogus, page);
	{
		struct arena saved_pages = *a;

		a->pages[0] = page;
		a->natoms = 0;
		atom(a, "nope");
		saved_pages.top = a->top;
		*a = saved_pages;
	}
	region = alloc(a, len);
	for (size_t k = 0; k < decoys; k++)
		table_at(a, region + k * stride, 3, bogus);
	table_at(a, region + decoys * stride, 2, seg);
	reg = (struct mem_region){.addr = BASE, .len = ARENA, .data = a->bytes};
	if (mem__open_snapshot(&m, &reg, 1) || atom__reader_from_row(&r, m, a->row)) {
		CHECK_INT("scan: snapshot and reader", 0, 1);
		free(a);
		return;
	}
	mem__set_tap(m, count_read, &reads);
	CHECK_INT("scan: found", 0, atom__scan_table(&r, region, len, &found));
	CHECK("scan: the table's copy", found == region + decoys * stride);
	CHECK_INT("scan: reads (the region, the decoys' table once, the table's atoms 0 and 1)", 11,
		  (int)reads);
	mem__free(m);
	m = NULL;
	table_at(a, region + (decoys + 1) * stride, 2, seg);
	if (mem__open_snapshot(&m, &reg, 1) == 0) {
		r.mem = m;
		CHECK_INT("scan: two copies are ambiguous", -EEXIST,
			  atom__scan_table(&r, region, len, &found));
	}
	mem__free(m);
	free(a);
}

static void display(const char *in, bool erlang_names, const char *want)
{
	char buf[256], name[300];

	names__display(in, erlang_names, buf, sizeof(buf));
	snprintf(name, sizeof(name), "%s%s", in, erlang_names ? " (--erlang-names)" : "");
	CHECK_STR(name, want, buf);
}

static void test_elixir_form(void)
{
	char buf[64] = "'Elixir.MyApp.Repo':query/4";

	display("'Elixir.MyApp.Repo':query/4", false, "MyApp.Repo.query/4");
	display("'Elixir.MyApp.Repo':query/4", true, "'Elixir.MyApp.Repo':query/4");
	display("Elixir.MyApp.Repo:query/4", false, "MyApp.Repo.query/4");
	display("'Elixir.ElixirDemo.Worker':loop/1 (lib/worker.ex:12)", false,
		"ElixirDemo.Worker.loop/1 (lib/worker.ex:12)");
	display("'Elixir.ElixirDemo.Worker':'-loop/1-fun-0-'/0", false,
		"ElixirDemo.Worker.\"-loop/1-fun-0-\"/0");
	display("'Elixir.Enum':'empty?'/1", false, "Enum.empty?/1");
	display("'Elixir.Kernel':'+'/2", false, "Kernel.\"+\"/2");
	display("'Elixir.ElixirDemo.Worker'", false, "ElixirDemo.Worker");
	display("Elixir.ElixirDemo.Worker", false, "ElixirDemo.Worker");
	display("lists:foldl/3", false, "lists:foldl/3");
	display("'Elixir':foo/1", false, "'Elixir':foo/1");
	display("'Elixir.':foo/1", false, "'Elixir.':foo/1");
	display("'elixir_compiler':eval/2", false, "'elixir_compiler':eval/2");
	display("'Elixir.Broken", false, "'Elixir.Broken");
	names__display_inplace(buf, sizeof(buf), false);
	CHECK_STR("in place", "MyApp.Repo.query/4", buf);
}

int main(void)
{
	test_found();
	test_faults();
	test_atom_cache();
	test_atom_scan();
	test_elixir_form();
	return check_done();
}
