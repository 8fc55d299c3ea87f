/* pstack's text writer (pstack_text, external/src/cmd/pstack/pstack_frames.c), which writes a
 * million rows without printf: numbers as printf's %-3u and %" PRId64 " write them, for every
 * width from one digit to twenty and both ends of int64; and pieces smaller than, equal to and
 * larger than its buffer, in order, whatever was gathered before. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pstack.h"

/* Every value the row writes: frame numbers (width 3), sizes and signed queue lengths. */
static void test_numbers(void)
{
	static const uint64_t u[] = {0,		1,	     9,		  10,
				     99,	100,	     999,	  1000,
				     12345,	4294967295u, 4294967296u, UINT64_MAX - 1,
				     UINT64_MAX};
	static const int64_t s[] = {INT64_MIN, INT64_MIN + 1, -1000, -1, 0, 1, INT64_MAX};
	char want[4096], got[4096], b[8];
	struct pstack_text t = {.b = b, .cap = sizeof(b)};
	FILE *f = fmemopen(got, sizeof(got), "w");
	size_t w = 0, i;

	if (!f) {
		CHECK("fmemopen", false);
		return;
	}
	t.f = f;
	for (i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		w += (size_t)snprintf(want + w, sizeof(want) - w, "%-3" PRIu64 "|%" PRIu64 "|",
				      u[i], u[i]);
		pstack_text__uint(&t, u[i], 3);
		pstack_text__put(&t, "|", 1);
		pstack_text__uint(&t, u[i], 0);
		pstack_text__put(&t, "|", 1);
	}
	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		w += (size_t)snprintf(want + w, sizeof(want) - w, "%" PRId64 "|", s[i]);
		pstack_text__int(&t, s[i]);
		pstack_text__put(&t, "|", 1);
	}
	pstack_text__flush(&t);
	fputc('\0', f);
	fclose(f);
	CHECK_STR("numbers as printf writes them", want, got);
}

/* Pieces of 1 to 40 bytes through an 8-byte buffer: those larger than it go straight to the
 * stream, after what was gathered. */
static void test_pieces(void)
{
	char want[8192], got[8192], b[8], piece[64];
	struct pstack_text t = {.b = b, .cap = sizeof(b)};
	FILE *f = fmemopen(got, sizeof(got), "w");
	size_t w = 0, len;
	bool within = true;

	if (!f) {
		CHECK("fmemopen", false);
		return;
	}
	t.f = f;
	for (size_t i = 0; i < 120; i++) {
		len = 1 + (i * 7) % 40;
		for (size_t k = 0; k < len; k++)
			piece[k] = (char)('a' + (i + k) % 26);
		memcpy(want + w, piece, len);
		w += len;
		pstack_text__put(&t, piece, len);
		within &= t.n <= t.cap;
	}
	CHECK("gathered within the buffer", within);
	want[w] = '\0';
	pstack_text__str(&t, "");
	pstack_text__flush(&t);
	CHECK_U64("nothing left after a flush", 0, t.n);
	fputc('\0', f);
	fclose(f);
	CHECK_STR("pieces in order", want, got);
}

int main(void)
{
	test_numbers();
	test_pieces();
	return check_done();
}
