/* The BEAM's GDB JIT interface (otp-internals.md §3.2): walk __jit_debug_descriptor's entry list
 * with bounded reads, parse each custom symfile (J/beam_jit_metadata.cpp, same layout in 25, 27,
 * 29), and resolve code addresses to the newest range covering them, and to their source line from
 * the range's line table. Everything read is untrusted. This file walks and parses;
 * jitmap_index.c indexes the result and answers lookups.
 * Does not own: reading memory (mem.c), or finding the descriptor's symbol (the caller does;
 * jitmap__scan only finds it structurally when there is no symbol, as on OTP 28+). */
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jitmap.h"
#include "jitmap_int.h"

/* Symfile records (J/beam_jit_metadata.cpp 25:68-111, 27:74, 29:76). The writer packs records
 * back to back with no alignment: each record's fixed part is its sizeof, and the name/file that
 * follows (NUL included) is counted from the struct's end, not from the name's offset. */
#define DI_SIZE		32 /* sizeof(struct debug_info) */
#define DI_MOD_NAME	26 /* offsetof(debug_info, payload.mod.name) */
#define RI_SIZE		16 /* sizeof(struct range_info), name at 14 */
#define RI_NAME		14
#define LI_SIZE		12 /* sizeof(struct line_info), file at 10 */
#define LI_FILE		10
#define HEADER_EMULATOR 0
#define HEADER_MODULE	1

#define STR_CHUNK (64u << 10)

struct jit_entry {
	uint64_t next, prev, symfile_addr, symfile_size;
};

/* A field of width 2, 4 or 8 at any alignment (x86-64: little-endian). */
static uint64_t get(const uint8_t *p, size_t width)
{
	uint64_t v = 0;

	memcpy(&v, p, width);
	return v;
}

int jitmap__grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

const char *jitmap__strdup(struct jitmap *map, const char *s, size_t n)
{
	struct str_chunk *c = map->strings;
	char *dst;

	if (!c || c->cap - c->used < n + 1) {
		size_t want = map->str_chunk ? map->str_chunk : STR_CHUNK;
		size_t cap = n + 1 > want ? n + 1 : want;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = map->strings;
		c->used = 0;
		c->cap = cap;
		map->strings = c;
	}
	dst = c->data + c->used;
	memcpy(dst, s, n);
	dst[n] = '\0';
	c->used += n + 1;
	return dst;
}

/* A name of n bytes, NUL included, at off: inside the blob, NUL-terminated exactly at its end. */
static int blob_name(const uint8_t *b, size_t len, size_t off, size_t n, const char **out)
{
	if (!n || off > len || n > len - off)
		return -EPROTO;
	if (memchr(b + off, '\0', n) != b + off + n - 1)
		return -EPROTO;
	*out = (const char *)b + off;
	return 0;
}

/* "M:F/A" bodies are functions; "M:F/A-CodeInfoPrologue", "mod::codeHeader", "mod::codeFooter"
 * and "global::fragment" are not. Module and function are printed with %T (quoted atoms), so
 * the first ':' outside quotes separates them; a second ':' right after it marks a pseudo-range. */
bool jitmap__is_function(const char *name, size_t n)
{
	static const char prologue[] = "-CodeInfoPrologue";
	const size_t plen = sizeof(prologue) - 1;
	bool quoted = false;

	if (n >= plen && !memcmp(name + n - plen, prologue, plen))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (quoted && name[i] == '\\')
			i++;
		else if (name[i] == '\'')
			quoted = !quoted;
		else if (!quoted && name[i] == ':')
			return i > 0 && name[i + 1] != ':' && name[i + 1] != '\0';
	}
	return false;
}

/* One module symfile being parsed. map == NULL only validates. */
struct parse {
	struct jitmap *map;
	const uint8_t *b;
	size_t len;
	uint64_t base;
	uint32_t code_size, gen;
	uint32_t files0; /* the module's file names: map->files[files0..nfiles) */
	bool unsorted;	 /* the current range's lines are out of order: dropped */
};

/* name (n bytes, then its NUL) against a string literal, by length first. */
#define NAME_IS(name, n, lit)	  ((n) == sizeof(lit) - 1 && !memcmp(name, lit, sizeof(lit) - 1))
#define NAME_STARTS(name, n, lit) ((n) >= sizeof(lit) - 1 && !memcmp(name, lit, sizeof(lit) - 1))
#define NAME_ENDS(name, n, lit)                                                                    \
	((n) >= sizeof(lit) - 1 && !memcmp((name) + (n) - (sizeof(lit) - 1), lit, sizeof(lit) - 1))

static int add_range(struct parse *p, const uint8_t *r, const char *name, size_t nlen)
{
	struct jitmap *map = p->map;
	struct jit_range *jr;

	if (jitmap__grow((void **)&map->ranges, &map->cap_ranges, map->nranges + 1, sizeof(*jr)))
		return -ENOMEM;
	jr = &map->ranges[map->nranges];
	jr->start = p->base + get(r, 4);
	jr->end = p->base + get(r + 4, 4);
	jr->name = jitmap__strdup(map, name, nlen);
	jr->module = (uint32_t)map->nmods;
	jr->generation = p->gen;
	jr->lines = (uint32_t)map->nlines;
	jr->nlines = 0;
	if (!jr->name)
		return -ENOMEM;
	/* Compared by length first, and searched for "::code" only in a name that holds one: a
	 * strcmp, a strncmp and two strstr a range (25,000 ranges) were, with file_index's strcmp,
	 * 5 % of an attach's CPU. */
	jr->fragment = NAME_STARTS(name, nlen, "global::");
	jr->frame = !NAME_ENDS(name, nlen, "-CodeInfoPrologue") &&
		    !(memmem(name, nlen, "::code", 6) &&
		      (strstr(jr->name, "::codeHeader") || strstr(jr->name, "::codeFooter")));
	jr->sched_loop = NAME_IS(name, nlen, "global::process_main");
	jr->exit_code = NAME_IS(name, nlen, "erts_beamasm:normal_exit/0") ||
			NAME_IS(name, nlen, "erts_beamasm:continue_exit/0");
	jr->yield_test = NAME_IS(name, nlen, "global::i_test_yield_shared");
	map->nranges++;
	map->stats.ranges++;
	map->stats.functions += jitmap__is_function(name, nlen);
	return 0;
}

/* The index of file (n bytes, no NUL) in the module's table, added when new; LOC_FILES when the
 * table is full (ERTS itself has 8 bits for it: beam_code.h LOC_FILE), or -ENOMEM. */
static int file_index(struct parse *p, const char *file, size_t n)
{
	struct jitmap *map = p->map;
	uint32_t i;

	for (i = (uint32_t)map->nfiles; i-- > p->files0;) /* newest first: the one just used */
		if (!strcmp(map->files[i], file))	  /* file ends at n: blob_name checked it */
			return (int)(i - p->files0);
	if (map->nfiles - p->files0 >= LOC_FILES || map->nfiles >= UINT32_MAX)
		return LOC_FILES;
	if (jitmap__grow((void **)&map->files, &map->cap_files, map->nfiles + 1,
			 sizeof(*map->files)))
		return -ENOMEM;
	map->files[map->nfiles] = jitmap__strdup(map, file, n);
	if (!map->files[map->nfiles])
		return -ENOMEM;
	return (int)(map->nfiles++ - p->files0);
}

/* A line_info of the range just added. A line ERTS could not have written (0, beyond 24 bits)
 * or a file beyond the table is kept as "no line" so that it still ends the line before it. */
static int add_line(struct parse *p, const uint8_t *li, const char *file, size_t n)
{
	struct jitmap *map = p->map;
	struct jit_range *jr = &map->ranges[map->nranges - 1];
	uint32_t off = get(li, 4), line = get(li + 4, 4), loc = 0;
	int fi;

	if (p->unsorted || map->nlines >= UINT32_MAX)
		return 0;
	/* OTP writes them in address order; lookups rely on it. Out of order: no table. */
	if (jr->nlines && map->lines[map->nlines - 1].off > off) {
		map->nlines = jr->lines;
		jr->nlines = 0;
		p->unsorted = true;
		return 0;
	}
	fi = file_index(p, file, n);
	if (fi < 0)
		return fi;
	if (line && line <= LOC_LINE_MAX && fi < (int)LOC_FILES)
		loc = (uint32_t)fi << 24 | line;
	if (jitmap__grow((void **)&map->lines, &map->cap_lines, map->nlines + 1,
			 sizeof(*map->lines)))
		return -ENOMEM;
	map->lines[map->nlines++] = (struct jit_line){off, loc};
	jr->nlines++;
	return 0;
}

/* One range_info and its line_infos at *off. */
static int parse_range(struct parse *p, size_t *off)
{
	const uint8_t *b = p->b;
	size_t len = p->len, o = *off;
	uint32_t start, end, nlines;
	const char *name, *file;
	uint16_t nlen;

	if (o > len || len - o < RI_SIZE)
		return -EPROTO;
	start = get(b + o, 4);
	end = get(b + o + 4, 4);
	nlines = get(b + o + 8, 4);
	nlen = get(b + o + 12, 2);
	if (start > end || end > p->code_size || blob_name(b, len, o + RI_NAME, nlen, &name))
		return -EPROTO;
	if (len - o < (size_t)RI_SIZE + nlen)
		return -EPROTO;
	if (p->map && add_range(p, b + o, name, nlen - 1u))
		return -ENOMEM;
	p->unsorted = false;
	o += RI_SIZE + nlen;
	if (nlines > (len - o) / (LI_SIZE + 1))
		return -EPROTO;
	for (uint32_t i = 0; i < nlines; i++) {
		uint16_t flen;

		if (len - o < LI_SIZE)
			return -EPROTO;
		flen = get(b + o + 8, 2);
		if (blob_name(b, len, o + LI_FILE, flen, &file) || len - o < (size_t)LI_SIZE + flen)
			return -EPROTO;
		if (p->map && add_line(p, b + o, file, flen - 1u))
			return -ENOMEM;
		o += LI_SIZE + flen;
	}
	if (p->map)
		p->map->stats.lines += p->map->ranges[p->map->nranges - 1].nlines;
	*off = o;
	return 0;
}

/* A module symfile; must be consumed exactly. With map == NULL only validates. */
static int parse_module(struct jitmap *map, const uint8_t *b, size_t len, uint64_t entry,
			uint32_t gen)
{
	struct parse p = {.map = map, .b = b, .len = len, .gen = gen};
	uint32_t nranges = get(b + 16, 4);
	uint16_t nlen = get(b + 24, 2);
	size_t off = DI_SIZE + (size_t)nlen;
	struct jit_module_info *mi;
	const char *name;
	int err;

	p.base = get(b + 8, 8);
	p.code_size = get(b + 20, 4);
	p.files0 = map ? (uint32_t)map->nfiles : 0;
	if (blob_name(b, len, DI_MOD_NAME, nlen, &name) || off > len)
		return -EPROTO;
	if (p.base > UINT64_MAX - p.code_size || nranges > (len - off) / (RI_SIZE + 1))
		return -EPROTO;
	for (uint32_t i = 0; i < nranges; i++) {
		err = parse_range(&p, &off);
		if (err)
			return err;
	}
	if (off != len)
		return -EPROTO;
	if (!map)
		return 0;
	if (jitmap__grow((void **)&map->mods, &map->cap_mods, map->nmods + 1, sizeof(*mi)))
		return -ENOMEM;
	mi = &map->mods[map->nmods];
	mi->name = jitmap__strdup(map, name, nlen - 1u);
	if (!mi->name)
		return -ENOMEM;
	mi->base = p.base;
	mi->code_size = p.code_size;
	mi->nranges = nranges;
	mi->entry_addr = entry;
	mi->carried = false;
	mi->files = p.files0;
	mi->nfiles = (uint32_t)map->nfiles - p.files0;
	map->nmods++;
	map->stats.modules++;
	return 0;
}

static int add_emulator(struct jitmap *map, const uint8_t *b, uint64_t entry)
{
	struct jit_module_info *mi;

	if (jitmap__grow((void **)&map->mods, &map->cap_mods, map->nmods + 1, sizeof(*mi)))
		return -ENOMEM;
	mi = &map->mods[map->nmods++];
	memset(mi, 0, sizeof(*mi));
	mi->name = "";
	mi->entry_addr = entry;
	/* The walk goes newest first; the first emulator entry seen is the live one. */
	if (!map->stats.emulator) {
		map->stats.frame_layout = (int32_t)get(b + 8, 4);
		map->stats.normal_exit = get(b + 16, 8);
	}
	map->stats.emulator++;
	return 0;
}

int jitmap__add_symfile(struct jitmap *map, const uint8_t *blob, size_t len, uint64_t entry_addr,
			uint32_t generation)
{
	struct jitmap_stats saved_stats;
	size_t saved, saved_lines, saved_files;
	uint32_t header;
	int err;

	if (!map || !blob)
		return -EINVAL;
	saved = map->nranges;
	saved_lines = map->nlines;
	saved_files = map->nfiles;
	saved_stats = map->stats;
	if (len < DI_SIZE)
		return -EPROTO;
	header = get(blob, 4);
	if (header == HEADER_EMULATOR)
		return len == DI_SIZE ? add_emulator(map, blob, entry_addr) : -EPROTO;
	if (header != HEADER_MODULE)
		return -EPROTO;
	/* Validate first so a malformed blob adds nothing. */
	err = parse_module(NULL, blob, len, entry_addr, generation);
	if (err)
		return err;
	free(map->segs);
	map->segs = NULL;
	map->nsegs = 0;
	err = parse_module(map, blob, len, entry_addr, generation);
	if (err) {
		map->nranges = saved;
		map->nlines = saved_lines;
		map->nfiles = saved_files;
		map->stats = saved_stats;
	}
	return err;
}

int jitmap__new(struct jitmap **out)
{
	struct jitmap *map;

	if (!out)
		return -EINVAL;
	map = calloc(1, sizeof(*map));
	if (!map)
		return -ENOMEM;
	map->stats.frame_layout = -1;
	*out = map;
	return 0;
}

int jitmap__read_descriptor(struct mem *m, uint64_t addr, struct jit_descriptor *out)
{
	struct jit_descriptor d;
	int err;

	if (!m || !out)
		return -EINVAL;
	err = mem__read(m, addr, &d, sizeof(d));
	if (err)
		return err;
	if (d.version != 1 || d.action > 2)
		return -EPROTO;
	*out = d;
	return 0;
}

/* The entry after the one being loaded, read with its symfile (one syscall for the two, not two:
 * a walk at attach reads ~330 entries): rc is its read's result, valid when at is the next
 * entry's address. */
struct next_entry {
	uint64_t at; /* 0: not read */
	struct jit_entry e;
	int rc;
};

/* Read one entry's symfile and add it; 0, or why the entry was skipped. *budget is what the walk
 * may still read: a hostile or corrupt VM cannot make it read (and parse) without bound. The
 * entry e->next is read in the same call into *nx when it is aligned. */
static int load_symfile(struct mem *m, struct jitmap *map, const struct jit_entry *e, uint64_t addr,
			uint32_t gen, uint8_t **buf, size_t *cap, uint64_t *budget,
			struct next_entry *nx)
{
	size_t len = (size_t)e->symfile_size;
	struct mem_req q[2];
	int err;

	nx->at = 0;
	if (e->symfile_size < DI_SIZE || e->symfile_size > JIT_MAX_SYMFILE)
		return -EPROTO;
	if (e->symfile_size > *budget)
		return -E2BIG;
	*budget -= e->symfile_size;
	if (jitmap__grow((void **)buf, cap, len, 1))
		return -ENOMEM;
	q[0] = (struct mem_req){.addr = e->symfile_addr, .buf = *buf, .len = len};
	q[1] = (struct mem_req){.addr = e->next, .buf = &nx->e, .len = sizeof(nx->e)};
	if (e->next && !(e->next & 7) && mem__read_many(m, q, 2) == 0) {
		nx->at = e->next;
		nx->rc = q[1].rc;
		err = q[0].rc;
	} else {
		err = mem__read(m, e->symfile_addr, *buf, len);
	}
	if (err)
		return err;
	return jitmap__add_symfile(map, *buf, len, addr, gen);
}

/* The entries a walk has visited: an open-addressing set of addresses, grown at half full. */
struct seen {
	uint64_t *v;
	size_t cap, n;
};

static size_t seen_slot(const struct seen *s, uint64_t a)
{
	size_t i = (size_t)((a >> 3) * 0x9e3779b97f4a7c15ull) & (s->cap - 1);

	while (s->v[i] && s->v[i] != a)
		i = (i + 1) & (s->cap - 1);
	return i;
}

/* 1 when a was seen before, 0 when added now, -ENOMEM. */
static int seen_add(struct seen *s, uint64_t a)
{
	size_t i;

	if (2 * (s->n + 1) > s->cap) {
		struct seen g = {.cap = s->cap ? 2 * s->cap : 1024};

		g.v = calloc(g.cap, sizeof(*g.v));
		if (!g.v)
			return -ENOMEM;
		for (size_t k = 0; k < s->cap; k++)
			if (s->v[k])
				g.v[seen_slot(&g, s->v[k])] = s->v[k];
		g.n = s->n;
		free(s->v);
		*s = g;
	}
	i = seen_slot(s, a);
	if (s->v[i])
		return 1;
	s->v[i] = a;
	s->n++;
	return 0;
}

/* Walk newest to oldest. Every link must point back (prev) to the entry we came from, which
 * notices a concurrent unlink on 27+, which free()s entries (beamasm_delete_gdb_info,
 * J/beam_jit_metadata.cpp 27:245), and an entry already visited ends the walk: a cycle whose
 * prev links agree (only a corrupt or hostile VM makes one) is not walked round again.
 * A broken link stops the walk; what was read so far is kept. The head's prev is not checked:
 * OTP 25 sets it only when the list was empty (beamasm_update_gdb_info, J/beam_jit_metadata.cpp
 * 25:229), so the newest entry's prev is whatever malloc left there (27 sets it to NULL).
 * With stop != 0 the walk ends at the entry at stop (not read into map; *reached says whether it
 * was met, its prev link checked like any other), for jitmap__extend. */
int jitmap__walk(struct mem *m, struct jitmap *map, uint64_t addr, const struct jit_head *stop,
		 bool *reached)
{
	uint64_t from = 0, budget = JIT_MAX_TOTAL;
	struct next_entry nx = {0};
	struct seen seen = {0};
	uint8_t *buf = NULL;
	size_t cap = 0;
	int err = 0, again;
	uint32_t gen;

	for (gen = 0; addr; gen++) {
		struct jit_entry e;

		if (gen >= JIT_MAX_ENTRIES || (again = seen_add(&seen, addr)) == 1) {
			map->stats.chain_broken = 1;
			break;
		}
		if (again < 0 || (addr & 7))
			err = again < 0 ? again : -EPROTO;
		else if (nx.at != addr)
			err = mem__read(m, addr, &e, sizeof(e));
		else if (!(err = nx.rc)) /* read with the last symfile (a failure: read alone there)
					  */
			e = nx.e;
		if (!err && gen && e.prev != from)
			err = -EPROTO;
		if (err) {
			if (!gen || err == -ENOMEM)
				goto cleanup; /* broken at the head: nothing to report; or no memory
					       */
			map->stats.bad_entries++;
			map->stats.chain_broken = 1;
			err = 0;
			break;
		}
		if (stop && addr == stop->addr) {
			*reached = e.symfile_addr == stop->symfile_addr &&
				   e.symfile_size == stop->symfile_size;
			break;
		}
		if (!gen)
			map->head = (struct jit_head){addr, e.symfile_addr, e.symfile_size, 0};
		map->stats.entries++;
		err = load_symfile(m, map, &e, addr, gen, &buf, &cap, &budget, &nx);
		if (err)
			map->stats.bad_entries++;
		else if (!gen)
			map->head.base = get(buf + 8, 8);
		if (err == -E2BIG) {
			map->stats.chain_broken =
			    1; /* read JIT_MAX_TOTAL bytes: the rest is garbage */
			err = 0;
			break;
		}
		err = 0;
		from = addr;
		addr = e.next;
	}
	map->walked = gen;
cleanup:
	free(seen.v);
	free(buf);
	return err;
}

int jitmap__load(struct mem *m, uint64_t desc_addr, struct jitmap **out)
{
	struct jit_descriptor d;
	struct jitmap *map = NULL;
	int err;

	if (!m || !out)
		return -EINVAL;
	err = jitmap__read_descriptor(m, desc_addr, &d);
	if (err)
		return err;
	err = jitmap__new(&map);
	if (err)
		return err;
	map->desc = d;
	err = jitmap__walk(m, map, d.first_entry, NULL, NULL);
	if (err)
		goto cleanup;
	jitmap__finish(map);
	*out = map;
	return 0;
cleanup:
	jitmap__free(map);
	return err;
}

const struct jit_descriptor *jitmap__descriptor(const struct jitmap *m)
{
	return &m->desc;
}

bool jitmap__head_current(struct mem *m, const struct jitmap *map, const struct jit_descriptor *d)
{
	struct jit_entry e;
	uint8_t di[16];

	if (!m || !map || !d || !map->head.addr || d->first_entry != map->head.addr)
		return false;
	if (mem__read(m, map->head.addr, &e, sizeof(e)) ||
	    e.symfile_addr != map->head.symfile_addr || e.symfile_size != map->head.symfile_size)
		return false;
	return mem__read(m, e.symfile_addr, di, sizeof(di)) == 0 &&
	       get(di + 8, 8) == map->head.base;
}

void jitmap__free(struct jitmap *map)
{
	if (!map)
		return;
	while (map->strings) {
		struct str_chunk *next = map->strings->next;

		free(map->strings);
		map->strings = next;
	}
	free(map->segs);
	free(map->lcache);
	free(map->files);
	free(map->lines);
	free(map->mods);
	free(map->ranges);
	free(map);
}
