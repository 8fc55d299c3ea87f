/* Fuzz target: the Erlang stack walker (erlang_stack.c) over arbitrary stack words, with the
 * synthetic JIT map of test/c/test_erlang_stack.c. Input: u8 flags, u8 trace word counts, u8
 * leaf, u8 e's low bits, u64 fp, then the stack words from E up. Flags: bit 0 FP layout, 1 the
 * words reach hend, 2 a call-site check, 3 E near the top of the address space, 4-7 the call-site
 * check's seed. A word whose top byte is 0xEE
 * stands for dictionary entry (its low byte): a return address, normal_exit, a trace CP, an
 * unaligned fragment return, or a stack address above E (for FP chains), so that the fuzzer
 * reaches deep walks without guessing 64-bit addresses.
 * Then the memoised walk (erlang_stack__walk_memo) must give the same result: of the words after a
 * walk of their own bottom part (the words from data[3] % n on), and after a walk of themselves. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "erlang_stack.h"
#include "estack_map.h"

/* The cut at ESTACK_MAX_FRAMES is left to test_erlang_stack: a walk that deep is slow, and
 * libFuzzer's compare tracing finds any switch to it. */
#define MAX_WORDS 4096

static const uint64_t dict[] = {
    BASE_APP + 0x150,  BASE_APP + 0x260,
    BASE_APP + 0x060,  BASE_APP + 0x010,
    BASE_APP + 0x51,   BASE_ASM + 0x000,
    BASE_ASM + 0x040,  BASE_ASM + 0x080,
    BASE_ASM + 0x093,  BASE_ASM + 0x0c0,
    BASE_APP + 0x100,  BASE_APP + 0x300,
    BASE_ASM + 0x100,  0,
    0x7f00dead0000ULL,
};
#define NDICT (sizeof(dict) / sizeof(dict[0]))

static struct jitmap *map;
static struct estack_result result, again; /* 256 KiB each: not on the stack */
static struct estack_memo memo;
static uint64_t words[MAX_WORDS];

/* Some unaligned return addresses follow a call to some fragments: a fixed pseudo-random half. */
static bool returns_from(void *ctx, uint64_t ra, const struct jit_range *callee)
{
	uint64_t h = (ra ^ callee->start ^ (uintptr_t)ctx) * 0x9e3779b97f4a7c15ULL;

	return (h >> 63) != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct estack_cfg c;
	const struct jit_range *leaf = NULL;
	uint64_t e, fp;
	uint8_t flags, cut;
	size_t n;

	if (!map && !(map = estack_map__new()))
		return 0;
	if (size < 12)
		return 0;
	flags = data[0];
	cut = data[3];
	erlang_stack__cfg(&c, map, flags & 1 ? XP_LAYOUT_FP : XP_LAYOUT_RA, 0,
			  layout__find("13.1.5", XP_FLAVOR_JIT, "x86_64"));
	if (flags & 4) {
		c.returns_from = returns_from;
		c.returns_ctx = (void *)(uintptr_t)(flags >> 4);
	}
	for (int i = 0; i < ESTACK_TRACE_COUNT; i++)
		c.trace_words[i] = (data[1] >> (2 * i)) & 3;
	if (data[2] < 2 * NDICT)
		leaf = jitmap__lookup(map, dict[data[2] % NDICT]);
	e = (flags & 8 ? 0xfffffffffffff000ULL : 0x7f0000800000ULL) + ((uint64_t)data[3] << 3);
	memcpy(&fp, data + 4, 8);
	data += 12;
	size -= 12;
	n = size / 8 < MAX_WORDS ? size / 8 : MAX_WORDS;
	for (size_t i = 0; i < n; i++) {
		memcpy(&words[i], data + 8 * i, 8);
		if (words[i] >> 56 == 0xee) {
			size_t k = words[i] & 0xff;

			words[i] = k < NDICT ? dict[k] : e + 8 * (k - NDICT);
		}
	}
	if (fp >> 56 == 0xee)
		fp = e + 8 * (fp & 0xff);
	erlang_stack__walk(&c, words, n, e, fp, flags & 2, leaf, &result);
	if (result.nframes > ESTACK_MAX_FRAMES || result.end >= ESTACK_END_COUNT)
		__builtin_trap();
	for (size_t i = 0; i < result.nframes; i++)
		if (result.frames[i].fn && !result.frames[i].fn->name)
			__builtin_trap();
	erlang_stack__end_name(result.end);
	for (int round = 0; round < 3; round++) {
		size_t d = round == 0 && n ? cut % n : 0;

		erlang_stack__walk_memo(&c, &memo, words + d, n - d, e + 8 * d, fp, flags & 2, leaf,
					&again);
		if (d)
			continue;
		if (again.nframes != result.nframes || again.end != result.end ||
		    again.unresolved != result.unresolved || again.more != result.more ||
		    again.more_unknown != result.more_unknown ||
		    again.top_unaligned != result.top_unaligned ||
		    again.top_pushed != result.top_pushed || again.rescanned != result.rescanned ||
		    memcmp(again.frames, result.frames, result.nframes * sizeof(*result.frames)))
			__builtin_trap();
	}
	return 0;
}
