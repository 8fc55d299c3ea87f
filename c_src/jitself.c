/* GDB JIT descriptor scan and walk, from inside the VM. See jitself.h. Record layouts:
 * J/beam_jit_metadata.cpp (25:66-111; 27/29 rename module_info only): debug_info is 32 bytes with
 * the module name at 26, range_info is 16 bytes + name, line_info 12 bytes + file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jitself.h"
#include "saferead.h"

#define DESC_SIZE	24
#define DEBUG_INFO_SIZE 32
#define RANGE_INFO_SIZE 16
#define LINE_INFO_SIZE	12
#define WALK_RETRIES	4

struct entry {
	uint64_t next, prev, symfile, size;
};

struct walk {
	const char *must_module;
	struct jitself_want *want;
	unsigned nwant;
	struct jitself_result *res;
};

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint16_t rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

/* Look for the wanted ranges in one module's symfile blob. */
static int parse_ranges(const uint8_t *blob, uint64_t size, struct walk *w, unsigned i_want)
{
	uint64_t base, off;
	uint32_t nranges, r, l;
	uint16_t name_len = rd16(blob + 24);

	memcpy(&base, blob + 8, 8);
	nranges = rd32(blob + 16);
	off = DEBUG_INFO_SIZE + name_len;
	for (r = 0; r < nranges; r++) {
		const uint8_t *ri = blob + off;
		uint32_t start, end, nlines;
		uint16_t rlen;

		if (off + RANGE_INFO_SIZE > size)
			return -EPROTO;
		start = rd32(ri);
		end = rd32(ri + 4);
		nlines = rd32(ri + 8);
		rlen = rd16(ri + 12);
		if (off + RANGE_INFO_SIZE + rlen > size || rlen == 0 || ri[14 + rlen - 1] != '\0')
			return -EPROTO;
		if (strcmp((const char *)ri + 14, w->want[i_want].range) == 0 && start <= end) {
			w->want[i_want].start = base + start;
			w->want[i_want].end = base + end;
			return 0;
		}
		off += RANGE_INFO_SIZE + rlen;
		for (l = 0; l < nlines; l++) {
			if (off + LINE_INFO_SIZE > size)
				return -EPROTO;
			off += LINE_INFO_SIZE + rd16(blob + off + 8);
		}
	}
	return -ENOENT;
}

static void want_module(const char *name, uint64_t symfile, uint64_t size, struct walk *w)
{
	uint8_t *blob = NULL;
	unsigned i;

	for (i = 0; i < w->nwant; i++) {
		if (w->want[i].start || strcmp(name, w->want[i].module) != 0)
			continue;
		if (!blob) {
			if (size < DEBUG_INFO_SIZE || size > JITSELF_MAX_SYMFILE)
				return;
			blob = malloc(size);
			if (!blob || saferead__bytes(symfile, blob, size))
				goto cleanup;
		}
		parse_ranges(blob, size, w, i);
	}
cleanup:
	free(blob);
}

/* One entry's symfile: the emulator entry (header 0) or a module entry (header 1). */
static int visit(const struct entry *e, struct walk *w)
{
	uint8_t head[DEBUG_INFO_SIZE + 256];
	int32_t header;
	uint16_t name_len;

	if (e->size < DEBUG_INFO_SIZE || e->size > JITSELF_MAX_SYMFILE)
		return -EPROTO;
	if (saferead__bytes(e->symfile, head, DEBUG_INFO_SIZE))
		return -EFAULT;
	memcpy(&header, head, 4);
	if (header == 0) {
		memcpy(&w->res->frame_layout, head + 8, 4);
		memcpy(&w->res->normal_exit, head + 16, 8);
		w->res->emulator_found = 1;
		return 0;
	}
	if (header != 1)
		return -EPROTO;
	name_len = rd16(head + 24);
	if (name_len == 0 || name_len > 255 || DEBUG_INFO_SIZE + (uint64_t)name_len > e->size ||
	    saferead__bytes(e->symfile + 26, head + 26, name_len) ||
	    head[26 + name_len - 1] != '\0')
		return -EPROTO;
	w->res->modules++;
	if (w->must_module && strcmp((const char *)head + 26, w->must_module) == 0)
		w->res->module_found = 1;
	want_module((const char *)head + 26, e->symfile, e->size, w);
	return 0;
}

static int walk_once(uint64_t desc, struct walk *w)
{
	uint32_t hdr[2];
	uint64_t first, cur, prev = 0;
	struct entry e;
	int err;

	if (saferead__bytes(desc, hdr, 8) || saferead__u64(desc + 16, &first))
		return -EFAULT;
	if (hdr[0] != 1 || hdr[1] > 2 || first == 0)
		return -EPROTO;
	for (cur = first; cur; cur = e.next) {
		if (w->res->entries >= JITSELF_MAX_ENTRIES || (cur & 7))
			return -EPROTO;
		if (saferead__bytes(cur, &e, sizeof(e)))
			return -EAGAIN;
		/* 25 leaves the head's prev uninitialised; every other prev names its predecessor.
		 */
		if (prev && e.prev != prev)
			return -EAGAIN;
		err = visit(&e, w);
		if (err == -EFAULT)
			return -EAGAIN;
		if (err)
			return err;
		w->res->entries++;
		prev = cur;
	}
	return 0;
}

int jitself__walk(uint64_t desc, const char *must_module, struct jitself_want *want, unsigned nwant,
		  struct jitself_result *res)
{
	struct walk w = {.must_module = must_module, .want = want, .nwant = nwant, .res = res};
	unsigned attempt, i;
	int err = -EAGAIN;

	for (attempt = 0; attempt < WALK_RETRIES && err == -EAGAIN; attempt++) {
		memset(res, 0, sizeof(*res));
		res->frame_layout = -1;
		for (i = 0; i < nwant; i++)
			want[i].start = want[i].end = 0;
		err = walk_once(desc, &w);
	}
	return err;
}

static int prefilter(uint64_t a, void *ctx)
{
	uint32_t hdr[2];
	uint64_t first;

	memcpy(hdr, (const void *)(uintptr_t)a, 8);
	memcpy(&first, (const void *)(uintptr_t)(a + 16), 8);
	return hdr[0] == 1 && hdr[1] <= 2 && first && (first & 7) == 0 &&
	       saferead__plausible(first);
}

/* A descriptor whose list walks and holds the emulator (and must_module, when given). */
static int confirm(uint64_t a, void *ctx)
{
	const char *must_module = ctx;
	struct jitself_result res;

	return !jitself__walk(a, must_module, NULL, 0, &res) && res.emulator_found &&
	       (!must_module || res.module_found);
}

int jitself__scan(const struct selfelf *se, const char *must_module, uint64_t *addr,
		  unsigned *candidates)
{
	return selfelf__scan_unique(se, DESC_SIZE, prefilter, confirm, (void *)must_module, addr,
				    candidates);
}
