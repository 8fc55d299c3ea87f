/* Shared by the unit tests that build JIT maps: one module's GDB JIT symfile laid out as
 * beamasm_insert_gdb_info writes it (J/beam_jit_metadata.cpp, reference §3.2), into a 4096-byte
 * buffer. Returns its length. */
#ifndef XP_TEST_SYMFILE_H
#define XP_TEST_SYMFILE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct symfile_range {
	uint32_t start, end; /* offsets from the module's base */
	const char *name;
};

static inline size_t symfile_build(uint8_t *b, const char *mod, uint64_t base, uint32_t code_size,
				   const struct symfile_range *r, size_t n)
{
	uint16_t nl = (uint16_t)(strlen(mod) + 1);
	size_t off = 32 + nl;

	memset(b, 0, 4096);
	memcpy(b, &(uint32_t){1}, 4);
	memcpy(b + 8, &base, 8);
	memcpy(b + 16, &(uint32_t){(uint32_t)n}, 4);
	memcpy(b + 20, &code_size, 4);
	memcpy(b + 24, &nl, 2);
	memcpy(b + 26, mod, nl);
	for (size_t i = 0; i < n; i++) {
		uint16_t rl = (uint16_t)(strlen(r[i].name) + 1);

		memcpy(b + off, &r[i].start, 4);
		memcpy(b + off + 4, &r[i].end, 4);
		memcpy(b + off + 12, &rl, 2);
		memcpy(b + off + 14, r[i].name, rl);
		off += 16 + rl;
	}
	return off;
}

#endif /* XP_TEST_SYMFILE_H */
