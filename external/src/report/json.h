/* A small streaming JSON writer: objects, arrays, strings (escaped), integers, booleans, null.
 * Does not own: what is written (the reports). Nesting is bounded; misuse is a programming error.
 */
#ifndef XP_JSON_H
#define XP_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "outfile.h"

#define JSON_MAX_DEPTH 32

#define JSON_PAGE 4096 /* json__buffer's alignment, and what a sink's writes are multiples of */

struct json {
	FILE *f;
	struct outfile *of; /* json__buffer_to: flushes go to it, not through f's buffer */
	char *buf;	    /* json__buffer: output gathered here, NULL: straight to f */
	size_t len, cap;
	/* json__buffer_to: buffers of cap bytes, each full one handed to the output file's thread
	 * and filled again once written */
	struct outfile_spares spares;
	int depth;
	bool need_comma[JSON_MAX_DEPTH];
	bool after_key;
	bool truncated; /* json__init_mem: what did not fit was dropped */
};

void json__init(struct json *j, FILE *f);
/* Gather output in a buffer of cap bytes, written to f when full, at the end of each top-level
 * value and at json__flush: a million-row document costs a third less than through stdio.
 * Nothing else may write to f but after json__flush. -ENOMEM: left unbuffered. */
int json__buffer(struct json *j, size_t cap);
/* The same, flushed straight to an output file (f must be of->f): whole pages from the aligned
 * buffer go around the page cache, not copied into f's buffer first, and are written by the
 * output file's thread while the next buffer fills (outfile__write_behind): a disk's time is no
 * longer the writer's. */
int json__buffer_to(struct json *j, struct outfile *of, size_t cap);
void json__flush(struct json *j);
/* Write into buf (cap bytes, not NUL-terminated: j->len of them) and nowhere else, to keep a
 * piece of JSON text written once and copied many times (json__raw_addr). What does not fit is
 * dropped and j->truncated set. */
void json__init_mem(struct json *j, char *buf, size_t cap);
/* Flush and free the buffer; the writer goes on unbuffered. */
void json__unbuffer(struct json *j);
void json__object(struct json *j);
void json__end_object(struct json *j);
void json__array(struct json *j);
void json__end_array(struct json *j);
void json__key(struct json *j, const char *key);
/* "key": for a key written as a string literal, without the escape scan: a million-row document
 * writes twenty of them a row. Only for literals that need no escape. */
#define json__lit_key(j, lit) json__raw_key((j), "\"" lit "\":", sizeof(lit) + 2)
void json__raw_key(struct json *j, const char *quoted, size_t n);
void json__string(struct json *j, const char *s);
void json__int(struct json *j, int64_t v);
void json__uint(struct json *j, uint64_t v);
/* A finite number with that many decimals; NaN and infinities as null. */
void json__double(struct json *j, double v, int decimals);
void json__bool(struct json *j, bool v);
void json__null(struct json *j);
/* "0x..." or null when v == 0. */
void json__addr(struct json *j, uint64_t v);
#define JSON_ADDR_MAX 24 /* the longest json__addr_text, and the room it needs */
/* The same text into out, which must have JSON_ADDR_MAX bytes (all may be written): its length. */
size_t json__addr_text(uint64_t v, char *out);
/* A value written as text, then address v as json__addr writes it, then the character end: a
 * piece json__init_mem made that ends in a key, its value and the closing brace. */
void json__raw_addr(struct json *j, const char *text, size_t n, uint64_t v, char end);

/* A value written straight into the buffer, for many values alike (pstack --all's rows):
 * json__value writes the separator it needs; json__room gives where n bytes fit (flushing
 * first when they do not), NULL when the writer has no buffer that large (write it with the
 * calls above); json__wrote says where what was written there ends. In between, what is
 * written must be valid JSON: the texts below, or literals. */
void json__value(struct json *j);
char *json__room(struct json *j, size_t n);
void json__wrote(struct json *j, const char *end);
#define JSON_ESCAPED_MAX(n) (6 * (n) + 2) /* the room json__escape_to needs for n bytes */
/* s (n bytes) escaped and quoted at d, as json__string writes it: the end. */
char *json__escape_to(char *d, const char *s, size_t n);
/* v in decimal at d (20 bytes at most): the end. */
char *json__uint_to(char *d, uint64_t v);

/* Shorthands for "key": value. */
void json__kv_string(struct json *j, const char *key, const char *s); /* NULL -> null */
void json__kv_int(struct json *j, const char *key, int64_t v);
/* v, or null when it is not known. */
void json__kv_uint_known(struct json *j, const char *key, bool known, uint64_t v);
void json__kv_bool(struct json *j, const char *key, bool v);
void json__kv_addr(struct json *j, const char *key, uint64_t v);

#endif /* XP_JSON_H */
