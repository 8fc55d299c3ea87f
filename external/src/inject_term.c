/* Decoding the node's answers for `extrospect inject`, and the release check. Every decoder
 * works on a copy of the index, checks the term's type first and fails with -EPROTO on a term
 * of another shape. See inject_term.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ei.h>

#include "inject_term.h"

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
