/* Asking epmd for a node's distribution port (PORT_PLEASE2_REQ), for `extrospect inject`.
 * Our own client rather than libei's: libei's connect with a time limit takes a refused
 * non-blocking connect for a success on some kernels (it never reads SO_ERROR), and then
 * reports "epmd down" like "no such node". Does not own: the handshake (inject_conn.c). */
#ifndef XP_INJECT_EPMD_H
#define XP_INJECT_EPMD_H

#include <netinet/in.h>
#include <stddef.h>

/* epmd's port: $ERL_EPMD_PORT, else 4369. */
unsigned inject_epmd__port_number(void);

/* The port of node `alive` on ip (host: its name, for messages). 0; -ECONNREFUSED when epmd
 * cannot be reached (refused, unreachable, timed out); -ENXIO when epmd has no such node;
 * -EPROTO for an answer that is not epmd's. */
int inject_epmd__lookup(const struct in_addr *ip, const char *host, const char *alive,
			unsigned tmo_ms, int *port, char *err, size_t errlen);
/* epmd's answer, the got bytes read of it (only the first 4 are looked at), as
 * inject_epmd__lookup judges it: 0 with *port, -ENXIO or -EPROTO. Exposed for the fuzz target. */
int inject_epmd__decode_reply(const unsigned char *resp, size_t got, const char *host,
			      const char *alive, int *port, char *err, size_t errlen);

#endif /* XP_INJECT_EPMD_H */
