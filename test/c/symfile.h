/* Shared by the unit tests that build JIT maps: one module's GDB JIT symfile laid out as
 * beamasm_insert_gdb_info writes it (J/beam_jit_metadata.cpp, otp-internals.md §3.2), into a
 * 4096-byte buffer, each range with its line_info records when given. Returns its length, or 0 when
 * it would not fit. */
#ifndef XP_TEST_SYMFILE_H
#define XP_TEST_SYMFILE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef SYMFILE_CAP
#define SYMFILE_CAP 4096 /* the buffer's size; a test may ask for more */
#endif

struct symfile_line {
	uint32_t start; /* offset from the module's base */
	uint32_t line;
	const char *file;
};

struct symfile_range {
	uint32_t start, end; /* offsets from the module's base */
	const char *name;
};

struct symfile_lines { /* one range's line_infos */
	const struct symfile_line *l;
	uint32_t n;
};

/* line_info {u32 start_offset, u32 line_number, u16 file_length, file[]} at b + off. */
static inline size_t symfile_line_put(uint8_t *b, size_t off, const struct symfile_line *l)
{
	uint16_t fl = (uint16_t)(strlen(l->file) + 1);

	if (off + 12 + fl > SYMFILE_CAP)
		return 0;
	memcpy(b + off, &l->start, 4);
	memcpy(b + off + 4, &l->line, 4);
	memcpy(b + off + 8, &fl, 2);
	memcpy(b + off + 10, l->file, fl);
	return off + 12 + fl;
}

/* lines: NULL, or one entry per range. */
static inline size_t symfile_build_lines(uint8_t *b, const char *mod, uint64_t base,
					 uint32_t code_size, const struct symfile_range *r,
					 const struct symfile_lines *lines, size_t n)
{
	uint16_t nl = (uint16_t)(strlen(mod) + 1);
	size_t off = 32 + nl;

	memset(b, 0, SYMFILE_CAP);
	memcpy(b, &(uint32_t){1}, 4);
	memcpy(b + 8, &base, 8);
	memcpy(b + 16, &(uint32_t){(uint32_t)n}, 4);
	memcpy(b + 20, &code_size, 4);
	memcpy(b + 24, &nl, 2);
	memcpy(b + 26, mod, nl);
	for (size_t i = 0; i < n; i++) {
		uint16_t rl = (uint16_t)(strlen(r[i].name) + 1);

		if (off + 16 + rl > SYMFILE_CAP)
			return 0;
		memcpy(b + off, &r[i].start, 4);
		memcpy(b + off + 4, &r[i].end, 4);
		uint32_t nlines = lines ? lines[i].n : 0;

		memcpy(b + off + 8, &nlines, 4);
		memcpy(b + off + 12, &rl, 2);
		memcpy(b + off + 14, r[i].name, rl);
		off += 16 + rl;
		for (uint32_t k = 0; k < nlines && off; k++)
			off = symfile_line_put(b, off, &lines[i].l[k]);
		if (!off)
			return 0;
	}
	return off;
}

static inline size_t symfile_build(uint8_t *b, const char *mod, uint64_t base, uint32_t code_size,
				   const struct symfile_range *r, size_t n)
{
	return symfile_build_lines(b, mod, base, code_size, r, NULL, n);
}

#endif /* XP_TEST_SYMFILE_H */
