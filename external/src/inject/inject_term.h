/* Reading the terms a node answers `extrospect inject` with (erl_interface's external format):
 * text, atoms, integers, tagged tuples and map lookups, each checking the type before it
 * decodes and bounding what it copies out (libei's decoders trust the encoded lengths, so a
 * reply is first checked whole by inject_term__check); and the OTP release check.
 * Does not own: the calls (inject.c, inject_conn.c). */
#ifndef XP_INJECT_TERM_H
#define XP_INJECT_TERM_H

#include <stdbool.h>
#include <stddef.h>

/* The oldest OTP release the agent supports. */
#define INJECT_MIN_OTP 25

/* Does buf[0..len) hold one whole term, nested at most 256 deep, of the kinds a reply may be
 * (no funs)? 0 or -EPROTO. The decoders below trust the encoded lengths and libei
 * recurses per level: a reply passes this first (inject_conn.c). */
int inject_term__check(const char *buf, size_t len);
/* A string, [] or binary at *idx as text (cut to len - 1 bytes); advances *idx. 0 or -EPROTO. */
int inject_term__text(const char *buf, int *idx, char *out, size_t len);
/* Is the term at idx the atom `name`? */
bool inject_term__is_atom(const char *buf, int idx, const char *name);
/* An integer at idx. 0 or -EPROTO. */
int inject_term__long(const char *buf, int idx, long long *out);
/* Is the term at idx a tuple whose first element is the atom `tag`? *second: its 2nd element. */
bool inject_term__tagged(const char *buf, int idx, const char *tag, int *second);
/* The value under the atom key `key` in the map at idx. 0, -ENOENT or -EPROTO. */
int inject_term__map_get(const char *buf, int idx, const char *key, int *vidx);
/* The term at idx in Erlang syntax on one line, cut to fit len (ending in "..."). */
void inject_term__print(const char *buf, int idx, char *out, size_t len);

/* The major release of erlang:system_info(otp_release) ("27" -> 27, "R16B03" -> 16), or -1. */
int inject_term__otp_major(const char *release);
/* 0 when `release` is at least `min`; -EPROTONOSUPPORT (err set) when older or unknown. */
int inject_term__check_release(const char *release, int min, char *err, size_t errlen);

#endif /* XP_INJECT_TERM_H */
