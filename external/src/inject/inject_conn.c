/* The hidden C node of `extrospect inject`: cookie, connection and rex calls. libei says little
 * about a failed handshake (ERL_ERROR, erl_errno EIO at every stage), so the connection goes
 * through libei's own TCP callbacks wrapped to note what the node sent and whether our
 * challenge reply went out: a node that drops us after that reply refused the cookie. Does not
 * own: what is called or pushed (inject.c, inject_bundle.c). See inject_conn.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inject_conn.h"
#include "inject_epmd.h"
#include "inject_term.h"

#define CALL_SLICE_MS 200u
#define HS_HEAD	      64 /* the handshake's first bytes: the status packet and the challenge's length */

/* libei's TCP socket callbacks (erl_interface misc/ei_portio.c, exported since OTP 21). */
extern ei_socket_callbacks ei_default_socket_callbacks;

/* What the node sent during the handshake and when we last wrote. */
struct hs_trace {
	size_t nread;	       /* bytes received so far */
	size_t nread_at_write; /* nread when we last wrote */
	unsigned writes;       /* write calls */
	unsigned char head[HS_HEAD];
};

struct wrap_ctx {
	void *inner;
	struct hs_trace *tr;
};

struct inject_conn {
	ei_cnode ec;
	ei_socket_callbacks cbs;
	struct hs_trace tr;
	volatile sig_atomic_t *stop;
	int fd;
};

/* ---- the cookie ---------------------------------------------------------------------------- */

static int read_cookie_file(const char *path, char *out, size_t len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f) {
		int e = errno;

		snprintf(err, errlen, "cannot read the cookie file %s: %s", path, strerror(e));
		return -EINVAL;
	}
	if (!fgets(out, (int)len, f))
		out[0] = '\0';
	fclose(f);
	n = strcspn(out, "\r\n");
	out[n] = '\0';
	while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\t'))
		out[--n] = '\0';
	if (n == 0 || n >= len - 1) {
		snprintf(err, errlen, "the cookie file %s %s", path,
			 n == 0 ? "is empty" : "holds a cookie longer than erl accepts");
		return -EINVAL;
	}
	return 0;
}

int inject_cookie__get(const char *env_cookie, const char *cookie_file, char *out, size_t len,
		       char *source, size_t srclen, char *err, size_t errlen)
{
	const char *home = getenv("HOME");
	char path[4096];

	if (env_cookie && !cookie_file) {
		size_t n = strlen(env_cookie);

		if (!n || n >= len || n > EI_MAX_COOKIE_SIZE) {
			snprintf(err, errlen, "EXTROSPECT_COOKIE must be 1 to %d characters",
				 EI_MAX_COOKIE_SIZE);
			return -EINVAL;
		}
		snprintf(out, len, "%s", env_cookie);
		snprintf(source, srclen, "EXTROSPECT_COOKIE");
		return 0;
	}
	if (!cookie_file) {
		if (!home || !home[0]) {
			snprintf(err, errlen,
				 "HOME is not set: give --cookie-file or set EXTROSPECT_COOKIE");
			return -EINVAL;
		}
		snprintf(path, sizeof(path), "%s/.erlang.cookie", home);
		cookie_file = path;
	}
	snprintf(source, srclen, "%s", cookie_file);
	return read_cookie_file(cookie_file, out,
				len < EI_MAX_COOKIE_SIZE + 2 ? len : EI_MAX_COOKIE_SIZE + 2, err,
				errlen);
}

/* ---- libei's TCP callbacks, traced ---------------------------------------------------------- */

static int w_socket(void **ctx, void *setup)
{
	struct wrap_ctx *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return ENOMEM;
	err = ei_default_socket_callbacks.socket(&w->inner, NULL);
	if (err) {
		free(w);
		return err;
	}
	w->tr = setup;
	*ctx = w;
	return 0;
}

static int w_close(void *ctx)
{
	struct wrap_ctx *w = ctx;
	int err = ei_default_socket_callbacks.close(w->inner);

	free(w);
	return err;
}

static int w_listen(void *ctx, void *addr, int *len, int backlog)
{
	return EOPNOTSUPP; /* a client only: never listens nor accepts */
}

static int w_accept(void **ctx, void *addr, int *len, unsigned tmo)
{
	return EOPNOTSUPP;
}

static int w_connect(void *ctx, void *addr, int len, unsigned tmo)
{
	return ei_default_socket_callbacks.connect(((struct wrap_ctx *)ctx)->inner, addr, len, tmo);
}

static void note_write(struct wrap_ctx *w)
{
	if (w->tr) {
		w->tr->writes++;
		w->tr->nread_at_write = w->tr->nread;
	}
}

static int w_writev(void *ctx, const void *iov, int iovcnt, ssize_t *len, unsigned tmo)
{
	struct wrap_ctx *w = ctx;

	note_write(w);
	return ei_default_socket_callbacks.writev(w->inner, iov, iovcnt, len, tmo);
}

static int w_write(void *ctx, const char *buf, ssize_t *len, unsigned tmo)
{
	struct wrap_ctx *w = ctx;

	note_write(w);
	return ei_default_socket_callbacks.write(w->inner, buf, len, tmo);
}

static int w_read(void *ctx, char *buf, ssize_t *len, unsigned tmo)
{
	struct wrap_ctx *w = ctx;
	int err = ei_default_socket_callbacks.read(w->inner, buf, len, tmo);

	if (!err && w->tr && *len > 0) {
		struct hs_trace *tr = w->tr;

		if (tr->nread < HS_HEAD) {
			size_t n =
			    (size_t)*len < HS_HEAD - tr->nread ? (size_t)*len : HS_HEAD - tr->nread;

			memcpy(tr->head + tr->nread, buf, n);
		}
		tr->nread += (size_t)*len;
	}
	return err;
}

static int w_hs_header_size(void *ctx, int *sz)
{
	return ei_default_socket_callbacks.handshake_packet_header_size(
	    ((struct wrap_ctx *)ctx)->inner, sz);
}

static int w_connect_done(void *ctx)
{
	return ei_default_socket_callbacks.connect_handshake_complete(
	    ((struct wrap_ctx *)ctx)->inner);
}

static int w_accept_done(void *ctx)
{
	return EOPNOTSUPP;
}

static int w_get_fd(void *ctx, int *fd)
{
	return ei_default_socket_callbacks.get_fd(((struct wrap_ctx *)ctx)->inner, fd);
}

static void traced_callbacks(ei_socket_callbacks *cbs)
{
	*cbs = (ei_socket_callbacks){
	    .flags = ei_default_socket_callbacks.flags,
	    .socket = w_socket,
	    .close = w_close,
	    .listen = w_listen,
	    .EI_ACCEPT_NAME = w_accept,
	    .connect = w_connect,
	    .writev = ei_default_socket_callbacks.writev ? w_writev : NULL,
	    .write = w_write,
	    .read = w_read,
	    .handshake_packet_header_size = w_hs_header_size,
	    .connect_handshake_complete = w_connect_done,
	    .accept_handshake_complete = w_accept_done,
	    .get_fd = w_get_fd,
	};
}

/* ---- connecting ----------------------------------------------------------------------------- */

/* Our name: extrospect_inject_PID@ the local host, short or long like the node's (a short-names
 * node refuses a dotted host and the other way round); the node's own host when ours is not
 * fully qualified and the node uses long names. */
static int own_name(const char *host, char *alive, size_t alen, char *name, size_t nlen)
{
	char me[256] = "";
	bool long_names = strchr(host, '.') != NULL;
	char *dot;

	if (gethostname(me, sizeof(me) - 1) != 0 || !me[0])
		snprintf(me, sizeof(me), "%s", host);
	dot = strchr(me, '.');
	if (!long_names && dot)
		*dot = '\0';
	else if (long_names && !dot)
		snprintf(me, sizeof(me), "%s", host);
	snprintf(alive, alen, "extrospect_inject_%ld", (long)getpid());
	if ((size_t)snprintf(name, nlen, "%s@%s", alive, me) >= nlen)
		return -ENAMETOOLONG;
	return 0;
}

static int resolve_host(const char *host, struct in_addr *ip, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
	int rc = getaddrinfo(host, NULL, &hints, &res);

	if (rc != 0 || !res) {
		snprintf(err, errlen, "cannot resolve host '%s' to an IPv4 address: %s", host,
			 gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	*ip = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
	freeaddrinfo(res);
	return 0;
}

/* The status packet's text ("ok", "not_allowed", "nok", ...) when it arrived whole. */
static bool hs_status(const struct hs_trace *tr, char *out, size_t len)
{
	size_t n;

	if (tr->nread < 3 || tr->head[2] != 's')
		return false;
	n = ((size_t)tr->head[0] << 8 | tr->head[1]);
	if (n < 1 || n + 2 > HS_HEAD || n + 2 > tr->nread)
		return false;
	snprintf(out, len, "%.*s", (int)(n - 1), (const char *)tr->head + 3);
	return true;
}

/* Where the challenge packet (after the status packet) ends in the stream, or 0. */
static size_t hs_challenge_end(const struct hs_trace *tr)
{
	size_t st = ((size_t)tr->head[0] << 8 | tr->head[1]) + 2;

	if (st + 2 > HS_HEAD || st + 2 > tr->nread)
		return 0;
	return st + 2 + ((size_t)tr->head[st] << 8 | tr->head[st + 1]);
}

static int handshake_error(const struct inject_conn *c, const char *node, char *err, size_t errlen)
{
	const struct hs_trace *tr = &c->tr;
	char status[HS_HEAD];
	size_t ch_end;

	if (erl_errno == ETIMEDOUT) {
		snprintf(err, errlen, "node %s did not complete the handshake in time", node);
		return -ETIMEDOUT;
	}
	if (!hs_status(tr, status, sizeof(status))) {
		snprintf(err, errlen, "node %s closed the connection before the handshake began",
			 node);
		return -ECONNRESET;
	}
	if (strcmp(status, "ok") != 0 && strcmp(status, "ok_simultaneous") != 0) {
		snprintf(err, errlen, "node %s refused the connection (handshake status '%s')",
			 node, status);
		return strcmp(status, "not_allowed") == 0 ? -EACCES : -ECONNRESET;
	}
	ch_end = hs_challenge_end(tr);
	if (ch_end && tr->nread >= ch_end && tr->nread_at_write >= ch_end) {
		snprintf(err, errlen, "node %s refused the cookie", node);
		return -EACCES;
	}
	if (ch_end && tr->nread >= ch_end) {
		snprintf(err, errlen,
			 "node %s lacks distribution capabilities this client needs "
			 "(OTP older than 23?)",
			 node);
		return -EPROTONOSUPPORT;
	}
	snprintf(err, errlen, "node %s dropped the connection during the handshake", node);
	return -ECONNRESET;
}

static int connect_error(const struct inject_conn *c, int res, const char *node, char *err,
			 size_t errlen)
{
	int e = erl_errno;

	switch (res) {
	case ERL_CONNECT_FAIL:
		snprintf(err, errlen, "epmd lists node %s but connecting to it failed: %s", node,
			 strerror(e));
		return -ECONNRESET;
	case ERL_TIMEOUT:
		snprintf(err, errlen, "node %s did not answer in time", node);
		return -ETIMEDOUT;
	default:
		return handshake_error(c, node, err, errlen);
	}
}

static int init_node(struct inject_conn *c, const char *host, const char *cookie, char *err,
		     size_t errlen)
{
	char alive[64], name[MAXNODELEN + 1], me[256];
	unsigned creation = ((unsigned)time(NULL) ^ (unsigned)getpid()) & 0x7fffffff;

	if (own_name(host, alive, sizeof(alive), name, sizeof(name)) ||
	    strlen(strchr(name, '@') + 1) > EI_MAXHOSTNAMELEN) {
		snprintf(err, errlen, "host name too long for a node name: %s", host);
		return -EINVAL;
	}
	snprintf(me, sizeof(me), "%s", strchr(name, '@') + 1);
	traced_callbacks(&c->cbs);
	/* A C node is hidden: it does not set the published flag, so the node's nodes() stays as
	 * it was (only nodes(hidden) lists us while we are connected). */
	if (ei_connect_xinit_ussi(&c->ec, me, alive, name, NULL, cookie, creation ? creation : 1,
				  &c->cbs, sizeof(c->cbs), &c->tr) < 0) {
		snprintf(err, errlen, "erl_interface refused our node name %s", name);
		return -EINVAL;
	}
	return 0;
}

int inject_conn__open(const char *node, const char *cookie, unsigned tmo_ms,
		      volatile sig_atomic_t *stop, struct inject_conn **out, char *err,
		      size_t errlen)
{
	char alive[MAXNODELEN + 1], host[EI_MAXHOSTNAMELEN + 1];
	const char *at = strchr(node, '@');
	struct inject_conn *c = NULL;
	struct in_addr ip;
	int err_ = 0, fd, port = 0;

	*out = NULL;
	if (!at || at == node || !at[1] || (size_t)(at - node) >= sizeof(alive) ||
	    strlen(at + 1) >= sizeof(host)) {
		snprintf(err, errlen, "bad node name '%s' (expected NAME@HOST)", node);
		return -EINVAL;
	}
	snprintf(alive, sizeof(alive), "%.*s", (int)(at - node), node);
	snprintf(host, sizeof(host), "%s", at + 1);
	if (ei_init() != 0) {
		snprintf(err, errlen, "erl_interface failed to initialise");
		return -EIO;
	}
	err_ = resolve_host(host, &ip, err, errlen);
	if (!err_)
		err_ = inject_epmd__lookup(&ip, host, alive, tmo_ms, &port, err, errlen);
	if (err_)
		return err_;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->stop = stop;
	c->fd = -1;
	err_ = init_node(c, host, cookie, err, errlen);
	if (err_)
		goto cleanup;
	fd = ei_xconnect_host_port_tmo(&c->ec, &ip, port, tmo_ms);
	if (fd < 0) {
		err_ = connect_error(c, fd, node, err, errlen);
		goto cleanup;
	}
	c->fd = fd;
	*out = c;
	c = NULL;
cleanup:
	free(c);
	return err_;
}

void inject_conn__free(struct inject_conn *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		ei_close_connection(c->fd);
	free(c);
}

/* ---- calls ---------------------------------------------------------------------------------- */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* {rex, Reply}: keeps Reply alone in x, from index 0 (as ei_rpc does). */
static int strip_rex(ei_x_buff *x)
{
	char atom[MAXATOMLEN + 1];
	int idx = 0, ver, arity;

	/* libei's decoders trust the encoded lengths: the message is checked whole first. */
	if (x->index < 1 || inject_term__check(x->buff + 1, (size_t)x->index - 1) ||
	    ei_decode_version(x->buff, &idx, &ver) < 0 ||
	    ei_decode_tuple_header(x->buff, &idx, &arity) < 0 || arity != 2 ||
	    ei_decode_atom(x->buff, &idx, atom) < 0 || strcmp(atom, "rex") != 0)
		return -EPROTO;
	x->index -= idx;
	memmove(x->buff, x->buff + idx, (size_t)x->index);
	return 0;
}

int inject_conn__call(struct inject_conn *c, const char *mod, const char *fun,
		      const ei_x_buff *args, ei_x_buff *reply, unsigned tmo_ms, char *err,
		      size_t errlen)
{
	long long deadline = now_ms() + tmo_ms;
	erlang_msg msg;

	if (ei_rpc_to(&c->ec, c->fd, (char *)mod, (char *)fun, args->buff, args->index) < 0) {
		snprintf(err, errlen, "sending %s:%s to the node failed: %s", mod, fun,
			 strerror(erl_errno));
		return -ECONNRESET;
	}
	for (;;) {
		long long left = deadline - now_ms();
		int res;

		if (c->stop && *c->stop) {
			snprintf(err, errlen, "interrupted while waiting for %s:%s", mod, fun);
			return -EINTR;
		}
		if (left <= 0) {
			snprintf(err, errlen, "%s:%s did not answer within %u ms", mod, fun,
				 tmo_ms);
			return -ETIMEDOUT;
		}
		reply->index = 0;
		res = ei_rpc_from(&c->ec, c->fd, (int)(left < CALL_SLICE_MS ? left : CALL_SLICE_MS),
				  &msg, reply);
		if (res == ERL_TICK || res == ERL_TIMEOUT)
			continue;
		if (res == ERL_ERROR) {
			snprintf(err, errlen, "lost the connection to the node during %s:%s: %s",
				 mod, fun, strerror(erl_errno));
			return -ECONNRESET;
		}
		if (msg.msgtype != ERL_SEND && msg.msgtype != ERL_REG_SEND)
			continue;
		if (strip_rex(reply) == 0)
			return 0;
		/* Anything else sent to us is not the answer: keep waiting. */
	}
}
