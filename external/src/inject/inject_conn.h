/* `extrospect inject`'s link to a node: a hidden C node (erl_interface) that connects with a
 * cookie, tells apart why a connection failed (epmd, node, handshake stage), and makes rex calls
 * with a time limit that a stop request cuts short. Does not own: what is called (inject.c), the
 * agent files (inject_bundle.c), decoding replies (inject_term.c). */
#ifndef XP_INJECT_CONN_H
#define XP_INJECT_CONN_H

#include <signal.h>
#include <stddef.h>

/* libei is built thread-safe: ei.h then makes erl_errno a per-thread lvalue. */
#ifndef _REENTRANT
#define _REENTRANT
#endif
#include <ei.h>

struct inject_conn;

/* Why a connection or a call failed, as negative errno values:
 *   -EHOSTUNREACH  the host does not resolve to an IPv4 address
 *   -ECONNREFUSED  epmd cannot be reached (not running, refused, timed out)
 *   -ENXIO         epmd answers but has no node of that name
 *   -ECONNRESET    the node's port refused us or the connection dropped
 *   -ETIMEDOUT     the node did not answer in time
 *   -EACCES        the node refused the handshake after our challenge reply: the cookie
 *   -EPROTONOSUPPORT  the node's handshake lacks what this client needs (too old)
 *   -EINTR         stopped by a signal
 *   -EINVAL        a bad or missing cookie (local); -ENOMEM; -EPROTO (a reply not understood). */

/* The cookie: the first line of `cookie_file` if set, else `env_cookie` (EXTROSPECT_COOKIE's
 * value) if set, else the first line of $HOME/.erlang.cookie (as erl). `source` names where it
 * came from, for messages; no message ever holds the cookie itself. */
int inject_cookie__get(const char *env_cookie, const char *cookie_file, char *out, size_t len,
		       char *source, size_t srclen, char *err, size_t errlen);

/* Connects to `node` (NAME@HOST) as a hidden node named after this process, within tmo_ms. */
int inject_conn__open(const char *node, const char *cookie, unsigned tmo_ms,
		      volatile sig_atomic_t *stop, struct inject_conn **out, char *err,
		      size_t errlen);
void inject_conn__free(struct inject_conn *c);

/* Calls mod:fun(Args...) on the node through rex; `args` holds the encoded argument list (no
 * version byte). On 0, `reply` holds the call's result term from index 0 (no version byte); a
 * {badrpc, Reason} result is returned as it is, for the caller to report. */
int inject_conn__call(struct inject_conn *c, const char *mod, const char *fun,
		      const ei_x_buff *args, ei_x_buff *reply, unsigned tmo_ms, char *err,
		      size_t errlen);

#endif /* XP_INJECT_CONN_H */
