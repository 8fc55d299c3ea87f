/* Streaming JSON writer. See json.h. Strings are written as UTF-8 with control characters and
 * invalid bytes escaped, so untrusted text read from the VM cannot break the document. */
#include <inttypes.h>

#include "json.h"

void json__init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->need_comma[0] = false;
	j->after_key = false;
}

static void sep(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->need_comma[j->depth])
		putc_unlocked(',', j->f);
	j->need_comma[j->depth] = true;
}

static void open(struct json *j, char c)
{
	sep(j);
	putc_unlocked(c, j->f);
	if (j->depth < JSON_MAX_DEPTH - 1)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void close_(struct json *j, char c)
{
	if (j->depth > 0)
		j->depth--;
	putc_unlocked(c, j->f);
	if (j->depth == 0)
		putc_unlocked('\n', j->f);
}

void json__object(struct json *j)
{
	open(j, '{');
}

void json__end_object(struct json *j)
{
	close_(j, '}');
}

void json__array(struct json *j)
{
	open(j, '[');
}

void json__end_array(struct json *j)
{
	close_(j, ']');
}

/* The length of the well-formed UTF-8 sequence at p (RFC 3629, Unicode table 3-7: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (*p >= 0xc2 && *p <= 0xdf)
		n = 2;
	else if (*p >= 0xe0 && *p <= 0xef)
		n = 3;
	else if (*p >= 0xf0 && *p <= 0xf4)
		n = 4;
	else
		return 0;
	if (*p == 0xe0)
		lo = 0xa0;
	else if (*p == 0xed)
		hi = 0x9f;
	else if (*p == 0xf0)
		lo = 0x90;
	else if (*p == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	}
	return n;
}

/* Copy one well-formed UTF-8 sequence, or write U+FFFD for a byte that starts none (atom names
 * and paths come from the VM: anything may be there). Returns the bytes consumed. */
static size_t write_utf8(FILE *f, const unsigned char *p)
{
	size_t n = utf8_len(p);

	if (n == 0) {
		fputs("\\ufffd", f);
		return 1;
	}
	fwrite(p, 1, n, f);
	return n;
}

/* Runs of plain characters go out in one write: a million-process document is mostly them. */
static void write_escaped(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *run;

	putc_unlocked('"', f);
	while (*p) {
		for (run = p; *p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\'; p++)
			;
		if (p > run)
			fwrite_unlocked(run, 1, (size_t)(p - run), f);
		if (!*p)
			break;
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs_unlocked("\\n", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			p += write_utf8(f, p) - 1;
		p++;
	}
	putc_unlocked('"', f);
}

/* Decimal digits of v, without printf's parsing of a format: JSON writes millions of them. */
static void write_u64(FILE *f, uint64_t v)
{
	char b[24];
	size_t i = sizeof(b);

	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite_unlocked(b + i, 1, sizeof(b) - i, f);
}

void json__key(struct json *j, const char *key)
{
	sep(j);
	write_escaped(j->f, key);
	putc_unlocked(':', j->f);
	j->after_key = true;
}

void json__string(struct json *j, const char *s)
{
	if (!s) {
		json__null(j);
		return;
	}
	sep(j);
	write_escaped(j->f, s);
}

void json__int(struct json *j, int64_t v)
{
	sep(j);
	if (v < 0) {
		putc_unlocked('-', j->f);
		write_u64(j->f, -(uint64_t)v);
	} else {
		write_u64(j->f, (uint64_t)v);
	}
}

void json__uint(struct json *j, uint64_t v)
{
	sep(j);
	write_u64(j->f, v);
}

void json__double(struct json *j, double v, int decimals)
{
	sep(j);
	if (v != v || v > 1e300 || v < -1e300)
		fputs("null", j->f);
	else
		fprintf(j->f, "%.*f", decimals, v);
}

void json__bool(struct json *j, bool v)
{
	sep(j);
	fputs(v ? "true" : "false", j->f);
}

void json__null(struct json *j)
{
	sep(j);
	fputs("null", j->f);
}

void json__addr(struct json *j, uint64_t v)
{
	char b[24];
	size_t i = sizeof(b);

	if (!v) {
		json__null(j);
		return;
	}
	sep(j);
	b[--i] = '"';
	do {
		b[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	b[--i] = 'x';
	b[--i] = '0';
	b[--i] = '"';
	fwrite_unlocked(b + i, 1, sizeof(b) - i, j->f);
}

void json__kv_string(struct json *j, const char *key, const char *s)
{
	json__key(j, key);
	json__string(j, s);
}

void json__kv_int(struct json *j, const char *key, int64_t v)
{
	json__key(j, key);
	json__int(j, v);
}

void json__kv_uint_known(struct json *j, const char *key, bool known, uint64_t v)
{
	json__key(j, key);
	if (known)
		json__uint(j, v);
	else
		json__null(j);
}

void json__kv_bool(struct json *j, const char *key, bool v)
{
	json__key(j, key);
	json__bool(j, v);
}

void json__kv_addr(struct json *j, const char *key, uint64_t v)
{
	json__key(j, key);
	json__addr(j, v);
}
