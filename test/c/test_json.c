/* Unit tests for the JSON writer (json.c): names from the VM (atoms, paths) are untrusted bytes,
 * and --json must stay valid JSON in valid UTF-8 whatever they hold: well-formed UTF-8 is kept,
 * every byte that starts no well-formed sequence (overlong forms, surrogates, code points above
 * U+10FFFF, cut sequences, stray continuation bytes) becomes \ufffd, controls are escaped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "json.h"

/* The string s as the writer emits it, in a malloc'd buffer: straight to the FILE (cap 0), or
 * through a buffer of cap bytes (a small one is flushed in the middle of strings). */
static char *emit_cap(const char *s, size_t cap)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json j;

	if (!f)
		return NULL;
	json__init(&j, f);
	if (cap && json__buffer(&j, cap)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	json__string(&j, s);
	json__unbuffer(&j);
	fclose(f);
	return buf;
}

static void expect(const char *name, const char *in, const char *want)
{
	static const size_t caps[] = {0, 1, 7, 4096};
	char label[160];

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		char *got = emit_cap(in, caps[i]);

		snprintf(label, sizeof(label), "%s (buffer %zu)", name, caps[i]);
		CHECK_STR(label, want, got ? got : "(null)");
		free(got);
	}
}

/* Every byte value at every offset of a 24-byte string, against a byte-at-a-time reference:
 * the writer tests eight bytes at once, so an escape must be found in any lane of a word, and
 * in the tail after the last whole word. A lone byte >= 0x80 starts no UTF-8 sequence. */
static void expect_every_lane(void)
{
	char in[25], want[64], label[64];
	int bad = 0;

	for (int c = 1; c < 256; c++) {
		for (int at = 0; at < 24; at++) {
			char *got;
			const char *esc = NULL;
			char u[8];

			memset(in, 'a', 24);
			in[24] = '\0';
			in[at] = (char)c;
			if (c == '"')
				esc = "\\\"";
			else if (c == '\\')
				esc = "\\\\";
			else if (c == '\n')
				esc = "\\n";
			else if (c < 0x20 || c == 0x7f)
				esc = (snprintf(u, sizeof(u), "\\u%04x", c), u);
			else if (c >= 0x80)
				esc = "\\ufffd";
			snprintf(want, sizeof(want), "\"%.*s%s%s\"", at, in,
				 esc ? esc : (char[]){(char)c, 0}, in + at + 1);
			got = emit_cap(in, 4096);
			if (!got || strcmp(got, want) != 0) {
				if (!bad++) {
					snprintf(label, sizeof(label), "byte 0x%02x at %d", c, at);
					CHECK_STR(label, want, got ? got : "(null)");
				}
			}
			free(got);
		}
	}
	CHECK("every byte in every lane", bad == 0);
}

/* An object of two json__kv_uint_known members, known and not. */
static void expect_known(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json j;

	if (!f)
		return;
	json__init(&j, f);
	json__object(&j);
	json__kv_uint_known(&j, "a", true, 18446744073709551615ull);
	json__kv_uint_known(&j, "b", false, 7);
	json__end_object(&j);
	fclose(f);
	CHECK_STR("kv_uint_known", "{\"a\":18446744073709551615,\"b\":null}\n",
		  buf ? buf : "(null)");
	free(buf);
}

/* A buffered document is flushed at its end: nothing is left behind in the buffer. */
static void expect_flushed(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json j;

	if (!f)
		return;
	json__init(&j, f);
	CHECK("buffer", json__buffer(&j, 4) == 0);
	json__object(&j);
	json__kv_string(&j, "key", "a value longer than four bytes");
	json__end_object(&j);
	fflush(f);
	CHECK_STR("flushed at the end", "{\"key\":\"a value longer than four bytes\"}\n",
		  buf ? buf : "(null)");
	json__unbuffer(&j);
	fclose(f);
	free(buf);
}

/* json__addr_text against printf, every digit count and digit value: it spreads the nibbles of
 * the address over a word instead of a loop. */
static void expect_addr_text(void)
{
	char got[JSON_ADDR_MAX + 1], want[JSON_ADDR_MAX + 1];
	uint64_t v, x = 0x9e3779b97f4a7c15ULL;
	int bad = 0;

	for (int i = 0; i < 100000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		v = i < 64 ? (uint64_t)1 << i : i < 128 ? ~(uint64_t)0 >> (i - 64) : x >> (i % 64);
		got[json__addr_text(v, got)] = '\0';
		if (v)
			snprintf(want, sizeof(want), "\"0x%llx\"", (unsigned long long)v);
		else
			snprintf(want, sizeof(want), "null");
		bad += strcmp(got, want) != 0;
	}
	got[json__addr_text(0xfedcba9876543210ULL, got)] = '\0';
	CHECK_STR("addr all digits", "\"0xfedcba9876543210\"", got);
	CHECK("addr text as printf", bad == 0);
}

/* A piece of JSON kept in memory, then copied as a value: the frames' text of pstack --all. */
static void expect_mem(void)
{
	char small[8], piece[64];
	struct json m;

	json__init_mem(&m, piece, sizeof(piece));
	json__object(&m);
	json__lit_key(&m, "kind");
	json__string(&m, "erlang");
	CHECK("mem piece kept",
	      !m.truncated && m.len == 16 && !memcmp(piece, "{\"kind\":\"erlang\"", 16));
	json__init_mem(&m, small, sizeof(small));
	json__string(&m, "longer than eight");
	CHECK("mem piece too long", m.truncated && m.len <= sizeof(small));
}

int main(void)
{
	expect_known();
	expect_addr_text();
	expect_mem();
	expect_every_lane();
	expect_flushed();
	expect("long ascii", "proc_lib:init_p/5 and some more text after it",
	       "\"proc_lib:init_p/5 and some more text after it\"");
	expect("escape after a whole word", "abcdefgh\"ijklmnop\\q",
	       "\"abcdefgh\\\"ijklmnop\\\\q\"");
	expect("ascii", "mod:fun/2", "\"mod:fun/2\"");
	expect("quotes and backslash", "'a\"b\\\\c'", "\"'a\\\"b\\\\\\\\c'\"");
	expect("controls", "a\nb\x01\x7f", "\"a\\nb\\u0001\\u007f\"");
	/* Atoms may hold any Unicode since OTP 20: kept as they are. */
	expect("2-byte", "caf\xc3\xa9", "\"caf\xc3\xa9\"");
	expect("3-byte", "\xe2\x82\xac", "\"\xe2\x82\xac\"");
	expect("4-byte", "\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");
	expect("U+10FFFF", "\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"");
	/* Ill-formed: one \ufffd per byte that starts no sequence. */
	expect("overlong NUL", "\xc0\x80", "\"\\ufffd\\ufffd\"");
	expect("overlong 3-byte", "\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");
	expect("overlong 4-byte", "\xf0\x8f\xbf\xbf", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	expect("surrogate", "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
	expect("above U+10FFFF", "\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	expect("f5 lead", "\xf5\x80\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	expect("cut at the end", "a\xe2\x82", "\"a\\ufffd\\ufffd\"");
	expect("cut by ascii", "\xe2\x82z", "\"\\ufffd\\ufffdz\"");
	expect("stray continuation", "\x80x", "\"\\ufffdx\"");
	expect("lone lead before valid", "\xc3\xc3\xa9", "\"\\ufffd\xc3\xa9\"");
	return check_done();
}
