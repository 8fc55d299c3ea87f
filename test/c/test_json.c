/* Unit tests for the JSON writer (json.c): names from the VM (atoms, paths) are untrusted bytes,
 * and --json must stay valid JSON in valid UTF-8 whatever they hold: well-formed UTF-8 is kept,
 * every byte that starts no well-formed sequence (overlong forms, surrogates, code points above
 * U+10FFFF, cut sequences, stray continuation bytes) becomes \ufffd, controls are escaped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "json.h"

/* The string s as the writer emits it, in a malloc'd buffer. */
static char *emit(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json j;

	if (!f)
		return NULL;
	json__init(&j, f);
	json__string(&j, s);
	fclose(f);
	return buf;
}

static void expect(const char *name, const char *in, const char *want)
{
	char *got = emit(in);

	CHECK_STR(name, want, got ? got : "(null)");
	free(got);
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

int main(void)
{
	expect_known();
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
