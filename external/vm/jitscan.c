/* Finding the GDB JIT descriptor with no symbol to name it (OTP 28+ hides every internal name):
 * scan beam.smp's writable data for words shaped like a descriptor, then keep only candidates whose
 * entry chain parses into a plausible JIT map. Does not own: parsing (jitmap.c). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jitmap.h"

static uint64_t get(const uint8_t *p, size_t width)
{
	uint64_t v = 0;

	memcpy(&v, p, width);
	return v;
}

#define SCAN_CHUNK (64u << 10)
#define SCAN_PAGE  4096u
#define USER_TOP   0x0000800000000000ull /* x86-64 user space ends here */

static bool user_ptr(uint64_t p)
{
	return p && !(p & 7) && p < USER_TOP;
}

/* The cheap test: what every live descriptor looks like (relevant_entry is left set on 25 and
 * reset to NULL on 27+). */
static bool scan_candidate(const uint8_t *p)
{
	uint64_t relevant = get(p + 8, 8);

	return get(p, 4) == 1 && get(p + 4, 4) <= 2 && user_ptr(get(p + 16, 8)) &&
	       (!relevant || user_ptr(relevant));
}

/* The real test: the chain starts at a head (prev NULL) and parses, with an emulator entry and
 * enough modules. The walk itself accepts any prev at the head, as OTP 25 leaves it unset; but a
 * word pointing into the middle of a list would parse as well, and 27+ (the only OTPs scanned:
 * 25 exports the symbol) set the head's prev to NULL (J/beam_jit_metadata.cpp 27:141). */
static bool scan_validate(struct mem *m, uint64_t addr, uint64_t first, unsigned min_modules,
			  struct jitmap **out)
{
	struct jitmap *map = NULL;
	uint64_t prev;
	bool ok;

	/* first_entry as the chunk read it (scan_candidate tested it): not read again, a read a
	 * candidate (an OTP 29 .data and .bss held ~500). */
	if (mem__read_u64(m, first + 8, &prev) || prev)
		return false;
	if (jitmap__load(m, addr, &map))
		return false;
	ok = jitmap__stats(map)->modules >= min_modules && jitmap__stats(map)->emulator >= 1;
	if (ok && out) {
		jitmap__free(*out);
		*out = map;
	} else {
		jitmap__free(map);
	}
	return ok;
}

/* Read as much as possible from pos: a chunk plus a descriptor's overlap, else the rest of the
 * page. Returns the bytes read, 0 when the page is unreadable. */
static size_t scan_read(struct mem *m, uint64_t pos, uint64_t end, uint8_t *buf)
{
	uint64_t want = end - pos;

	if (want > SCAN_CHUNK + sizeof(struct jit_descriptor))
		want = SCAN_CHUNK + sizeof(struct jit_descriptor);
	if (!mem__read(m, pos, buf, want))
		return want;
	want = SCAN_PAGE - (pos & (SCAN_PAGE - 1));
	if (want > end - pos)
		want = end - pos;
	return mem__read(m, pos, buf, want) ? 0 : want;
}

int jitmap__scan(struct mem *m, uint64_t start, uint64_t len, unsigned min_modules, uint64_t *addr,
		 struct jitmap **map)
{
	const size_t dsz = sizeof(struct jit_descriptor);
	uint64_t pos = (start + 7) & ~7ull, end = start + len, found = 0;
	uint8_t *buf;
	int err = -ENOENT;

	if (map)
		*map = NULL;
	if (!m || !addr || start > UINT64_MAX - len || pos < start)
		return -EINVAL;
	buf = malloc(SCAN_CHUNK + dsz);
	if (!buf)
		return -ENOMEM;
	while (pos < end && end - pos >= dsz) {
		size_t got = scan_read(m, pos, end, buf), o;

		if (!got) {
			pos = (pos | (SCAN_PAGE - 1)) + 1;
			continue;
		}
		for (o = 0; o + dsz <= got; o += 8) {
			if (!scan_candidate(buf + o) ||
			    !scan_validate(m, pos + o, get(buf + o + 16, 8), min_modules, map))
				continue;
			if (found) {
				err = -EEXIST;
				goto cleanup;
			}
			found = pos + o;
			err = 0;
		}
		pos += o ? o : 8;
	}
	if (!err)
		*addr = found;
cleanup:
	if (err && map) {
		jitmap__free(*map);
		*map = NULL;
	}
	free(buf);
	return err;
}
