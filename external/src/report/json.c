/* Streaming JSON writer. See json.h. Strings are written as UTF-8 with control characters and
 * invalid bytes escaped, so untrusted text read from the VM cannot break the document. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "outfile.h"

void json__init(struct json *j, FILE *f)
{
	j->f = f;
	j->of = NULL;
	j->buf = NULL;
	j->len = j->cap = 0;
	j->spares.n = 0;
	j->depth = 0;
	j->need_comma[0] = false;
	j->after_key = false;
	j->truncated = false;
}

int json__buffer(struct json *j, size_t cap)
{
	char *b = NULL;

	/* Aligned for a sink's writes around the page cache (json__buffer_to). */
	if (!cap || posix_memalign((void **)&b, JSON_PAGE, cap) != 0)
		return -ENOMEM;
	json__unbuffer(j);
	j->buf = b;
	j->len = 0;
	j->cap = cap;
	return 0;
}

int json__buffer_to(struct json *j, struct outfile *of, size_t cap)
{
	int rc = json__buffer(j, cap);

	j->of = rc ? NULL : of;
	if (!rc) /* without spares, written at once: slower, as good */
		outfile__spares_new(&j->spares, cap);
	return rc;
}

/* The whole pages of the buffer, n bytes, handed to the output file's thread; the oldest spare,
 * once written, is filled from here on, the rest of the buffer moved to it first. */
static void spill_behind(struct json *j, size_t n)
{
	uint64_t t = outfile__write_behind(j->of, j->buf, n);
	char *next = outfile__spare_take(j->of, &j->spares);

	outfile__spare_put(&j->spares, j->buf, t);
	memcpy(next, j->buf + n, j->len - n);
	j->buf = next;
	j->len -= n;
}

void json__init_mem(struct json *j, char *buf, size_t cap)
{
	json__init(j, NULL);
	j->buf = buf;
	j->cap = cap;
}

/* What the buffer holds goes to f: all of it, or (not all) to an output file's sink only its
 * whole pages, the rest moved to the front, so that every write the sink gets is whole pages from
 * an aligned address (outfile__write). */
static void spill(struct json *j, bool all)
{
	size_t n = j->len;

	if (!j->f || !j->buf || !n)
		return; /* in memory (json__init_mem): kept */
	if (j->of && !all && n >= JSON_PAGE)
		n -= n % JSON_PAGE;
	if (j->of && !all && n >= JSON_PAGE && j->spares.n) {
		spill_behind(j, n);
		return;
	}
	if (j->of) /* after every write handed over (outfile__write) */
		outfile__write(j->of, j->buf, n); /* an error is outfile__close's to say */
	else
		fwrite_unlocked(j->buf, 1, n, j->f);
	memmove(j->buf, j->buf + n, j->len - n);
	j->len -= n;
}

void json__flush(struct json *j)
{
	spill(j, true);
}

void json__unbuffer(struct json *j)
{
	if (!j->f)
		return; /* the caller's memory */
	json__flush(j);
	outfile__spares_free(j->of, &j->spares); /* each once its write is done */
	free(j->buf);
	j->buf = NULL;
	j->cap = 0;
	j->of = NULL;
}

/* Flushes first when n bytes do not fit; false when they must go straight to f (larger than the
 * buffer). */
static bool room(struct json *j, size_t n)
{
	spill(j, false);
	if (j->cap - j->len < n)
		spill(j, true);
	return j->f && n <= j->cap - j->len;
}

static void put(struct json *j, const void *p, size_t n)
{
	if (j->buf && (j->cap - j->len >= n || room(j, n))) {
		char *d = j->buf + j->len;
		const char *q = p;

		j->len += n;
		/* Most are a few bytes: two overlapping fixed-size copies, no call. */
		if (n >= 8 && n <= 16) {
			memcpy(d, q, 8);
			memcpy(d + n - 8, q + n - 8, 8);
		} else if (n >= 4 && n < 8) {
			memcpy(d, q, 4);
			memcpy(d + n - 4, q + n - 4, 4);
		} else if (n > 16) {
			memcpy(d, q, n);
		} else {
			while (n--)
				*d++ = *q++;
		}
	} else if (j->f) {
		fwrite_unlocked(p, 1, n, j->f);
	} else {
		j->truncated = true; /* in memory, full: dropped */
	}
}

static void putch(struct json *j, char c)
{
	if (j->buf && j->len < j->cap)
		j->buf[j->len++] = c;
	else
		put(j, &c, 1);
}

static void puts_(struct json *j, const char *s)
{
	put(j, s, strlen(s));
}

static void sep(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->need_comma[j->depth])
		putch(j, ',');
	j->need_comma[j->depth] = true;
}

static void open(struct json *j, char c)
{
	sep(j);
	putch(j, c);
	if (j->depth < JSON_MAX_DEPTH - 1)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void close_(struct json *j, char c)
{
	if (j->depth > 0)
		j->depth--;
	putch(j, c);
	if (j->depth == 0) {
		putch(j, '\n');
		json__flush(j);
	}
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

/* The bytes written as they are: printable ASCII but '"' and '\\' (NUL is not one of them). */
static const unsigned char plain[256] = {
    [0x20] = 1, [0x21] = 1, [0x23 ... 0x5b] = 1, [0x5d ... 0x7e] = 1};

#define ONES	    0x0101010101010101ULL
#define HIGHS	    0x8080808080808080ULL
#define HAS_ZERO(v) (((v)-ONES) & ~(v)&HIGHS)

/* Does any of the 8 bytes of x need an escape (not in plain[])? Exact as a whole, not per byte. */
static bool word_needs_escape(uint64_t x)
{
	/* a byte >= 0x80; one < 0x20 (the others below 0x80, so the borrow test is exact); '"',
	 * '\\' or DEL */
	return ((x & HIGHS) | ((x - 0x20 * ONES) & ~x & HIGHS) | HAS_ZERO(x ^ (0x22 * ONES)) |
		HAS_ZERO(x ^ (0x5c * ONES)) | HAS_ZERO(x ^ (0x7f * ONES))) != 0;
}

/* How many bytes from p (of n) need no escape, eight at a time: a million-row document is
 * mostly such runs. */
static size_t plain_run(const unsigned char *p, size_t n)
{
	size_t i = 0;
	uint64_t x;

	for (; i + 8 <= n; i += 8) {
		memcpy(&x, p + i, 8);
		if (word_needs_escape(x))
			break;
	}
	while (i < n && plain[p[i]])
		i++;
	return i;
}

/* The escape of the byte or UTF-8 sequence at p that plain_run stopped at, into e (6 bytes at
 * most, never more than 6 a byte of p): its length, and *used the bytes of p it stands for. A
 * well-formed sequence is copied; a byte that starts none is U+FFFD (atom names and paths come
 * from the VM: anything may be there). */
static size_t escape_one(const unsigned char *p, char *e, size_t *used)
{
	size_t n;

	*used = 1;
	if (*p == '"' || *p == '\\') {
		e[0] = '\\';
		e[1] = (char)*p;
		return 2;
	}
	if (*p == '\n') {
		memcpy(e, "\\n", 2);
		return 2;
	}
	if (*p < 0x20 || *p == 0x7f) {
		memcpy(e, "\\u00", 4);
		e[4] = "0123456789abcdef"[*p >> 4];
		e[5] = "0123456789abcdef"[*p & 15];
		return 6;
	}
	if (!(n = utf8_len(p))) {
		memcpy(e, "\\ufffd", 6);
		return 6;
	}
	memcpy(e, p, n);
	*used = n;
	return n;
}

char *json__room(struct json *j, size_t n)
{
	if (!j->buf || n > j->cap)
		return NULL;
	if (j->cap - j->len < n)
		room(j, n);
	return j->cap - j->len >= n ? j->buf + j->len : NULL;
}

void json__wrote(struct json *j, const char *end)
{
	j->len = (size_t)(end - j->buf);
}

void json__value(struct json *j)
{
	sep(j);
}

char *json__escape_to(char *d, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	size_t run, used;

	*d++ = '"';
	while (p < end) {
		run = plain_run(p, (size_t)(end - p));
		memcpy(d, p, run);
		d += run;
		p += run;
		if (p < end) {
			d += escape_one(p, d, &used);
			p += used;
		}
	}
	*d++ = '"';
	return d;
}

char *json__uint_to(char *d, uint64_t v)
{
	char b[24];
	size_t i = sizeof(b);

	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	memcpy(d, b + i, sizeof(b) - i);
	return d + sizeof(b) - i;
}

/* Runs of plain characters go out in one write: a million-process document is mostly them.
 * Straight into the buffer when it has room for the worst case, six bytes a byte. */
static void write_escaped(struct json *j, const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
	size_t run, used, n = (size_t)(end - p);
	char e[8];

	if (j->buf && j->cap - j->len >= 2 && n <= (j->cap - j->len - 2) / 6) {
		json__wrote(j, json__escape_to(j->buf + j->len, s, n));
		return;
	}
	putch(j, '"');
	while (p < end) {
		run = plain_run(p, (size_t)(end - p));
		if (run)
			put(j, p, run);
		p += run;
		if (p < end) {
			put(j, e, escape_one(p, e, &used));
			p += used;
		}
	}
	putch(j, '"');
}

/* Decimal digits of v, without printf's parsing of a format: JSON writes millions of them. */
static void write_u64(struct json *j, uint64_t v)
{
	char b[24];

	put(j, b, (size_t)(json__uint_to(b, v) - b));
}

void json__key(struct json *j, const char *key)
{
	sep(j);
	write_escaped(j, key);
	putch(j, ':');
	j->after_key = true;
}

void json__raw_key(struct json *j, const char *quoted, size_t n)
{
	sep(j);
	put(j, quoted, n);
	j->after_key = true;
}

void json__string(struct json *j, const char *s)
{
	if (!s) {
		json__null(j);
		return;
	}
	sep(j);
	write_escaped(j, s);
}

void json__int(struct json *j, int64_t v)
{
	sep(j);
	if (v < 0) {
		putch(j, '-');
		write_u64(j, -(uint64_t)v);
	} else {
		write_u64(j, (uint64_t)v);
	}
}

void json__uint(struct json *j, uint64_t v)
{
	sep(j);
	write_u64(j, v);
}

void json__double(struct json *j, double v, int decimals)
{
	sep(j);
	char b[320];

	if (v != v || v > 1e300 || v < -1e300) {
		puts_(j, "null");
		return;
	}
	snprintf(b, sizeof(b), "%.*f", decimals, v);
	puts_(j, b);
}

void json__bool(struct json *j, bool v)
{
	sep(j);
	puts_(j, v ? "true" : "false");
}

void json__null(struct json *j)
{
	sep(j);
	puts_(j, "null");
}

/* The 8 hex digits of x, most significant first, as a word to store as it is (little-endian):
 * its nibbles spread one a byte, then each made a digit, without a loop. */
static uint64_t hex8(uint32_t x)
{
	uint64_t v = x;

	v = (v | v << 16) & 0x0000ffff0000ffffULL;
	v = (v | v << 8) & 0x00ff00ff00ff00ffULL;
	v = (v | v << 4) & 0x0f0f0f0f0f0f0f0fULL; /* byte i: nibble i, from the least */
	v = __builtin_bswap64(v);
	/* '0' + n, and 'a' - '0' - 10 more where n > 9 (n + 6 carries into bit 4) */
	return v + 0x3030303030303030ULL + (((v + 0x0606060606060606ULL) >> 4) & ONES) * 39;
}

size_t json__addr_text(uint64_t v, char *out)
{
	uint64_t hi = hex8((uint32_t)(v >> 32)), lo = hex8((uint32_t)v);
	size_t n = (size_t)(67 - __builtin_clzll(v | 1)) / 4; /* digits without leading zeros */

	if (!v) {
		memcpy(out, "null", 4);
		return 4;
	}
	/* The last n digits of hi, lo stored as words (shifted, not read back from memory: a load
	 * across two fresh stores waits for both); out has room for the bytes past them. */
	memcpy(out, "\"0x", 3);
	if (n > 8) {
		hi >>= 8 * (16 - n);
		memcpy(out + 3, &hi, 8);
		memcpy(out + 3 + n - 8, &lo, 8);
	} else {
		lo >>= 8 * (8 - n);
		memcpy(out + 3, &lo, 8);
	}
	out[3 + n] = '"';
	return n + 4;
}

/* The address straight into the buffer when it has room. */
static void put_addr(struct json *j, uint64_t v)
{
	char b[JSON_ADDR_MAX];

	if (j->buf && j->cap - j->len >= JSON_ADDR_MAX)
		j->len += json__addr_text(v, j->buf + j->len);
	else
		put(j, b, json__addr_text(v, b));
}

void json__addr(struct json *j, uint64_t v)
{
	sep(j);
	put_addr(j, v);
}

void json__raw_addr(struct json *j, const char *text, size_t n, uint64_t v, char end)
{
	sep(j);
	put(j, text, n);
	put_addr(j, v);
	putch(j, end);
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
