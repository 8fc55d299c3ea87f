/* Decoding the node's answers for `extrospect inject`, and the release check. Every decoder
 * works on a copy of the index, checks the term's type first and fails with -EPROTO on a term
 * of another shape. See inject_term.h. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ei.h>

#include "inject_term.h"

/* ---- the whole term within the bytes received ----------------------------------------------
 * libei's decoders, ei_skip_term and ei_s_print_term read as far as the encoded lengths say, and
 * recurse once per nesting level: a reply is checked once here, iteratively, before any of them
 * runs on it (inject_conn.c). Tags: erts doc "External Term Format". Funs are refused: no reply
 * carries one, and libei 5.x's ei_decode_fun leaks what it allocated for an export whose name is
 * no atom (ei_s_print_term). */

#define TERM_MAX_DEPTH 256

struct term_walk {
	const unsigned char *p;
	size_t at, len;
	uint64_t left[TERM_MAX_DEPTH]; /* terms still to read at each open level */
	int depth;
};

static bool walk_take(struct term_walk *w, size_t n, uint64_t *v)
{
	if (n > w->len - w->at)
		return false;
	*v = 0;
	for (size_t i = 0; i < n && i < 8; i++)
		*v = *v << 8 | w->p[w->at + i]; /* big-endian */
	w->at += n;
	return true;
}

static bool walk_skip(struct term_walk *w, uint64_t n)
{
	if (n > w->len - w->at)
		return false;
	w->at += (size_t)n;
	return true;
}

/* Open a level of n terms (a tuple's elements, a list's and its tail, a map's keys and values). */
static bool walk_open(struct term_walk *w, uint64_t n)
{
	if (n == 0)
		return true;
	if (w->depth + 1 >= TERM_MAX_DEPTH)
		return false;
	w->left[++w->depth] = n;
	return true;
}

/* How each accepted tag is laid out after its tag byte: `fixed` bytes; or a `size`-byte
 * big-endian count n, then n * `per` bytes (TK_TERMS: n * `per` terms) and `fixed` more; a NODE
 * kind starts with its node's atom after the count. */
enum term_kind { TK_BYTES, TK_TERMS, TK_NODE };
struct term_shape {
	unsigned char tag;
	enum term_kind kind;
	unsigned char size, per, fixed;
};

static const struct term_shape shapes[] = {
    {ERL_SMALL_INTEGER_EXT, TK_BYTES, 0, 0, 1},
    {ERL_INTEGER_EXT, TK_BYTES, 0, 0, 4},
    {ERL_FLOAT_EXT, TK_BYTES, 0, 0, 31},
    {NEW_FLOAT_EXT, TK_BYTES, 0, 0, 8},
    {ERL_NIL_EXT, TK_BYTES, 0, 0, 0},
    {ERL_ATOM_EXT, TK_BYTES, 2, 1, 0},
    {ERL_ATOM_UTF8_EXT, TK_BYTES, 2, 1, 0},
    {ERL_SMALL_ATOM_EXT, TK_BYTES, 1, 1, 0},
    {ERL_SMALL_ATOM_UTF8_EXT, TK_BYTES, 1, 1, 0},
    {ERL_STRING_EXT, TK_BYTES, 2, 1, 0},
    {ERL_BINARY_EXT, TK_BYTES, 4, 1, 0},
    {ERL_BIT_BINARY_EXT, TK_BYTES, 4, 1, 1},
    {ERL_SMALL_BIG_EXT, TK_BYTES, 1, 1, 1},
    {ERL_LARGE_BIG_EXT, TK_BYTES, 4, 1, 1},
    {ERL_SMALL_TUPLE_EXT, TK_TERMS, 1, 1, 0},
    {ERL_LARGE_TUPLE_EXT, TK_TERMS, 4, 1, 0},
    {ERL_LIST_EXT, TK_TERMS, 4, 1, 1}, /* the elements, then the tail */
    {ERL_MAP_EXT, TK_TERMS, 4, 2, 0},
    {ERL_PID_EXT, TK_NODE, 0, 0, 9},
    {ERL_NEW_PID_EXT, TK_NODE, 0, 0, 12},
    {ERL_PORT_EXT, TK_NODE, 0, 0, 5},
    {ERL_NEW_PORT_EXT, TK_NODE, 0, 0, 8},
    {ERL_V4_PORT_EXT, TK_NODE, 0, 0, 12},
    {ERL_REFERENCE_EXT, TK_NODE, 0, 0, 5},
    {ERL_NEW_REFERENCE_EXT, TK_NODE, 2, 4, 1},
    {ERL_NEWER_REFERENCE_EXT, TK_NODE, 2, 4, 4},
};

/* The atom naming a pid's, port's or reference's node. */
static bool walk_node_atom(struct term_walk *w)
{
	uint64_t tag, n;

	if (!walk_take(w, 1, &tag))
		return false;
	if (tag != ERL_ATOM_EXT && tag != ERL_ATOM_UTF8_EXT && tag != ERL_SMALL_ATOM_EXT &&
	    tag != ERL_SMALL_ATOM_UTF8_EXT)
		return false;
	return walk_take(w, tag == ERL_ATOM_EXT || tag == ERL_ATOM_UTF8_EXT ? 2 : 1, &n) &&
	       walk_skip(w, n);
}

static bool walk_one(struct term_walk *w)
{
	const struct term_shape *t = NULL;
	uint64_t tag, n = 0;

	if (!walk_take(w, 1, &tag))
		return false;
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]) && !t; i++)
		t = shapes[i].tag == tag ? &shapes[i] : NULL;
	if (!t || (t->size && !walk_take(w, t->size, &n)))
		return false; /* a fun, or no term at all */
	/* An old float is 31 bytes of "%.20e" text padded with NULs, which libei's ei_decode_double
	 * hands to sscanf as a C string: without a NUL, sscanf reads past the message. */
	if (tag == ERL_FLOAT_EXT &&
	    (w->len - w->at < t->fixed || !memchr(w->p + w->at, '\0', t->fixed)))
		return false;
	switch (t->kind) {
	case TK_BYTES:
		return walk_skip(w, n * t->per + t->fixed);
	case TK_TERMS:
		return walk_open(w, n * t->per + t->fixed);
	case TK_NODE: /* a reference's word count comes before its node: ERTS_MAX_REF_NUMBERS, 5 */
		return n <= 5 && walk_node_atom(w) && walk_skip(w, n * t->per + t->fixed);
	}
	return false;
}

int inject_term__check(const char *buf, size_t len)
{
	struct term_walk w = {.p = (const unsigned char *)buf, .len = len, .left = {1}};

	if (!buf)
		return -EPROTO;
	while (w.depth >= 0) {
		if (w.left[w.depth] == 0) {
			w.depth--;
			continue;
		}
		w.left[w.depth]--;
		if (!walk_one(&w))
			return -EPROTO;
	}
	return 0;
}

int inject_term__text(const char *buf, int *idx, char *out, size_t len)
{
	int type, size, i = *idx;
	long blen;
	char *tmp;

	if (len == 0 || ei_get_type(buf, &i, &type, &size) < 0)
		return -EPROTO;
	if (type != ERL_STRING_EXT && type != ERL_NIL_EXT && type != ERL_BINARY_EXT)
		return -EPROTO;
	tmp = malloc((size_t)size + 1);
	if (!tmp)
		return -ENOMEM;
	if (type == ERL_BINARY_EXT) {
		if (ei_decode_binary(buf, &i, tmp, &blen) < 0 || blen != size)
			goto bad;
		tmp[size] = '\0';
	} else if (ei_decode_string(buf, &i, tmp) < 0) {
		goto bad;
	}
	snprintf(out, len, "%.*s", size, tmp);
	free(tmp);
	*idx = i;
	return 0;
bad:
	free(tmp);
	return -EPROTO;
}

bool inject_term__is_atom(const char *buf, int idx, const char *name)
{
	char atom[MAXATOMLEN_UTF8];

	return ei_decode_atom(buf, &idx, atom) == 0 && strcmp(atom, name) == 0;
}

int inject_term__long(const char *buf, int idx, long long *out)
{
	return ei_decode_longlong(buf, &idx, out) == 0 ? 0 : -EPROTO;
}

bool inject_term__tagged(const char *buf, int idx, const char *tag, int *second)
{
	int arity;

	if (ei_decode_tuple_header(buf, &idx, &arity) < 0 || arity < 1 ||
	    !inject_term__is_atom(buf, idx, tag))
		return false;
	if (second) {
		if (arity < 2 || ei_skip_term(buf, &idx) < 0)
			return false;
		*second = idx;
	}
	return true;
}

int inject_term__map_get(const char *buf, int idx, const char *key, int *vidx)
{
	int arity, i;

	if (ei_decode_map_header(buf, &idx, &arity) < 0)
		return -EPROTO;
	for (i = 0; i < arity; i++) {
		bool match = inject_term__is_atom(buf, idx, key);

		if (ei_skip_term(buf, &idx) < 0)
			return -EPROTO;
		if (match) {
			*vidx = idx;
			return 0;
		}
		if (ei_skip_term(buf, &idx) < 0)
			return -EPROTO;
	}
	return -ENOENT;
}

void inject_term__print(const char *buf, int idx, char *out, size_t len)
{
	char *s = NULL;
	size_t n;

	if (len == 0)
		return;
	if (ei_s_print_term(&s, buf, &idx) < 0 || !s) {
		snprintf(out, len, "<undecodable term>");
		free(s);
		return;
	}
	n = strlen(s);
	if (n < len)
		snprintf(out, len, "%s", s);
	else if (len > 4)
		snprintf(out, len, "%.*s...", (int)(len - 4), s);
	else
		out[0] = '\0';
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	free(s);
}

int inject_term__otp_major(const char *release)
{
	const char *p = release;
	char *end;
	long v;

	if (!p)
		return -1;
	if (*p == 'R') /* R16B03 and older */
		p++;
	if (!isdigit((unsigned char)*p))
		return -1;
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || v <= 0 || v > 10000 || end == p)
		return -1;
	/* "27" alone, or "R16B03"-like: a letter may follow only the R form. */
	if (*end && !(release[0] == 'R' && isalpha((unsigned char)*end)))
		return -1;
	return (int)v;
}

int inject_term__check_release(const char *release, int min, char *err, size_t errlen)
{
	int major = inject_term__otp_major(release);

	if (major < 0) {
		snprintf(err, errlen,
			 "the node reports an OTP release extrospect cannot read ('%s')",
			 release ? release : "");
		return -EPROTONOSUPPORT;
	}
	if (major < min) {
		snprintf(err, errlen, "the node runs OTP %s; the agent needs OTP %d or newer",
			 release, min);
		return -EPROTONOSUPPORT;
	}
	return 0;
}
