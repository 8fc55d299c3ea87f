/* Unit tests for `extrospect inject`'s local parts: the OTP release check (the only way to see
 * the "too old" refusal, as no OTP < 25 runs here), decoding the node's answers, reading the
 * cookie, and the epmd client against a fake epmd in a child process (absent node, a port,
 * something that is not epmd, nobody listening). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "inject_conn.h"
#include "inject_epmd.h"
#include "inject_term.h"

static void release_checks(void)
{
	char err[200] = "";

	CHECK_INT("otp_major 25", 25, inject_term__otp_major("25"));
	CHECK_INT("otp_major 29", 29, inject_term__otp_major("29"));
	CHECK_INT("otp_major R16B03", 16, inject_term__otp_major("R16B03"));
	CHECK_INT("otp_major R15B", 15, inject_term__otp_major("R15B"));
	CHECK_INT("otp_major empty", -1, inject_term__otp_major(""));
	CHECK_INT("otp_major junk", -1, inject_term__otp_major("abc"));
	CHECK_INT("otp_major trailing junk", -1, inject_term__otp_major("25x"));
	CHECK_INT("otp_major NULL", -1, inject_term__otp_major(NULL));
	CHECK_INT("release 25 >= 25", 0, inject_term__check_release("25", 25, err, sizeof(err)));
	CHECK_INT("release 29 >= 25", 0, inject_term__check_release("29", 25, err, sizeof(err)));
	CHECK_INT("release 24 < 25", -EPROTONOSUPPORT,
		  inject_term__check_release("24", 25, err, sizeof(err)));
	CHECK_STR("release 24 message", "the node runs OTP 24; the agent needs OTP 25 or newer",
		  err);
	CHECK_INT("release R16B03 < 25", -EPROTONOSUPPORT,
		  inject_term__check_release("R16B03", 25, err, sizeof(err)));
	CHECK_INT("unreadable release", -EPROTONOSUPPORT,
		  inject_term__check_release("next", 25, err, sizeof(err)));
	CHECK_INT("the floor is OTP 25", 25, INJECT_MIN_OTP);
}

static void term_checks(void)
{
	ei_x_buff x;
	char text[16];
	long long v = 0;
	int idx = 0, vidx = -1, r = -1;

	ei_x_new(&x);
	ei_x_encode_map_header(&x, 3);
	ei_x_encode_atom(&x, "result");
	ei_x_encode_atom(&x, "ok");
	ei_x_encode_string(&x, "not an atom key");
	ei_x_encode_long(&x, 7);
	ei_x_encode_atom(&x, "runs");
	ei_x_encode_long(&x, 2);
	CHECK_INT("map_get runs", 0, inject_term__map_get(x.buff, 0, "runs", &vidx));
	CHECK_INT("runs decodes", 0, inject_term__long(x.buff, vidx, &v));
	CHECK_INT("runs value", 2, v);
	CHECK_INT("map_get result", 0, inject_term__map_get(x.buff, 0, "result", &vidx));
	CHECK("result is ok", inject_term__is_atom(x.buff, vidx, "ok"));
	CHECK_INT("map_get absent", -ENOENT, inject_term__map_get(x.buff, 0, "nope", &vidx));
	CHECK_INT("map_get on a non-map", -EPROTO, inject_term__map_get(x.buff, vidx, "x", &r));
	CHECK_INT("whole map checks", 0, inject_term__check(x.buff, (size_t)x.index));
	CHECK_INT("cut map refused", -EPROTO, inject_term__check(x.buff, (size_t)x.index - 1));
	ei_x_free(&x);

	/* A binary that claims more bytes than came, a fun, and a nesting too deep (fuzz_term). */
	CHECK_INT("binary longer than sent", -EPROTO, inject_term__check("m\0\0\1\0ab", 7));
	CHECK_INT("fun refused", -EPROTO, inject_term__check("qs\1ms\1fa\2", 10));
	/* An old float's 31 bytes go to sscanf as a C string (ei_decode_double): refused without a
	 * NUL among them (fuzz.term found sscanf reading past the message), checked with one. */
	CHECK_INT("old float without a NUL refused", -EPROTO,
		  inject_term__check("c1111111111111111111111111111111", 32));
	CHECK_INT("old float with its NULs checks", 0,
		  inject_term__check("c1.00000000000000000000e+00\0\0\0\0", 32));
	CHECK_INT("old float cut refused", -EPROTO, inject_term__check("c1.0\0", 5));
	ei_x_new(&x);
	for (int i = 0; i < 300; i++)
		ei_x_encode_tuple_header(&x, 1);
	ei_x_encode_atom(&x, "deep");
	CHECK_INT("300 levels refused", -EPROTO, inject_term__check(x.buff, (size_t)x.index));
	ei_x_free(&x);

	ei_x_new(&x);
	ei_x_encode_tuple_header(&x, 2);
	ei_x_encode_atom(&x, "badrpc");
	ei_x_encode_atom(&x, "nodedown");
	CHECK("badrpc tagged", inject_term__tagged(x.buff, 0, "badrpc", &r));
	CHECK("badrpc reason", inject_term__is_atom(x.buff, r, "nodedown"));
	CHECK("not error-tagged", !inject_term__tagged(x.buff, 0, "error", NULL));
	inject_term__print(x.buff, 0, text, sizeof(text));
	CHECK_STR("print cut to fit", "{badrpc, nod...", text);
	ei_x_free(&x);

	ei_x_new(&x);
	ei_x_encode_string(&x, "27");
	ei_x_encode_binary(&x, "15.2.7", 6);
	ei_x_encode_empty_list(&x);
	ei_x_encode_atom(&x, "false");
	CHECK_INT("text from a string", 0, inject_term__text(x.buff, &idx, text, sizeof(text)));
	CHECK_STR("string text", "27", text);
	CHECK_INT("text from a binary", 0, inject_term__text(x.buff, &idx, text, sizeof(text)));
	CHECK_STR("binary text", "15.2.7", text);
	CHECK_INT("text from []", 0, inject_term__text(x.buff, &idx, text, sizeof(text)));
	CHECK_STR("[] text", "", text);
	CHECK_INT("text from an atom", -EPROTO,
		  inject_term__text(x.buff, &idx, text, sizeof(text)));
	ei_x_free(&x);
}

static void cookie_checks(void)
{
	char path[] = "/tmp/xp-test-cookie-XXXXXX", out[600], src[256], err[256];
	int fd = mkstemp(path);

	if (fd < 0 || write(fd, "SeCrEt \n2nd line\n", 17) != 17) {
		CHECK("temp cookie file", false);
		return;
	}
	close(fd);
	CHECK_INT(
	    "cookie file", 0,
	    inject_cookie__get(NULL, path, out, sizeof(out), src, sizeof(src), err, sizeof(err)));
	CHECK_STR("first line, trailing blanks cut", "SeCrEt", out);
	CHECK_STR("source is the file", path, src);
	CHECK_INT(
	    "EXTROSPECT_COOKIE", 0,
	    inject_cookie__get("abc", NULL, out, sizeof(out), src, sizeof(src), err, sizeof(err)));
	CHECK_STR("EXTROSPECT_COOKIE value", "abc", out);
	CHECK_STR("EXTROSPECT_COOKIE source", "EXTROSPECT_COOKIE", src);
	CHECK_INT(
	    "--cookie-file wins over EXTROSPECT_COOKIE", 0,
	    inject_cookie__get("abc", path, out, sizeof(out), src, sizeof(src), err, sizeof(err)));
	CHECK_STR("--cookie-file's value", "SeCrEt", out);
	CHECK_INT(
	    "empty EXTROSPECT_COOKIE", -EINVAL,
	    inject_cookie__get("", NULL, out, sizeof(out), src, sizeof(src), err, sizeof(err)));
	CHECK("the message does not hold the value", !strstr(err, "abc"));
	if (truncate(path, 0) != 0)
		CHECK("truncate the cookie file", false);
	CHECK_INT(
	    "empty cookie file", -EINVAL,
	    inject_cookie__get(NULL, path, out, sizeof(out), src, sizeof(src), err, sizeof(err)));
	unlink(path);
	CHECK_INT(
	    "missing cookie file", -EINVAL,
	    inject_cookie__get(NULL, path, out, sizeof(out), src, sizeof(src), err, sizeof(err)));
}

/* A listening socket on 127.0.0.1 and its port. */
static int listen_any(unsigned *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

/* One lookup against a child that reads the request and sends `answer`. */
static int fake_epmd(const char *answer, size_t len, int *port, char *req, size_t reqlen)
{
	struct in_addr lo = {.s_addr = htonl(INADDR_LOOPBACK)};
	char env[16], err[256];
	unsigned lport;
	int lfd = listen_any(&lport), p[2], e, st;
	pid_t child;

	if (lfd < 0 || pipe(p))
		return -999;
	child = fork();
	if (child == 0) {
		int c = accept(lfd, NULL, NULL);
		char buf[300];
		ssize_t n = c >= 0 ? read(c, buf, sizeof(buf)) : -1;

		if (n > 0 && write(p[1], buf, (size_t)n) != n)
			_exit(2);
		if (c >= 0 && write(c, answer, len) != (ssize_t)len)
			_exit(3);
		_exit(0);
	}
	close(p[1]);
	snprintf(env, sizeof(env), "%u", lport);
	setenv("ERL_EPMD_PORT", env, 1);
	e = inject_epmd__lookup(&lo, "localhost", "xp_node", 3000, port, err, sizeof(err));
	memset(req, 0, reqlen);
	if (read(p[0], req, reqlen) < 0)
		req[0] = '\0';
	close(p[0]);
	close(lfd);
	waitpid(child, &st, 0);
	return e;
}

static void epmd_checks(void)
{
	struct in_addr lo = {.s_addr = htonl(INADDR_LOOPBACK)};
	char req[64], env[16], err[256];
	unsigned lport;
	int port = 0, lfd;

	CHECK_INT("epmd: the node's port", 0,
		  fake_epmd("w\0\x12\x34\x4d\0\0\x06\0\x05", 10, &port, req, sizeof(req)));
	CHECK_INT("epmd: port value", 0x1234, port);
	CHECK("epmd: PORT_PLEASE2_REQ sent", memcmp(req, "\0\x08zxp_node", 10) == 0);
	CHECK_INT("epmd: no such node", -ENXIO, fake_epmd("w\x01", 2, &port, req, sizeof(req)));
	CHECK_INT("epmd: not epmd", -EPROTO, fake_epmd("HTTP/1.0", 8, &port, req, sizeof(req)));
	CHECK_INT("epmd: closed without answer", -EPROTO,
		  fake_epmd("", 0, &port, req, sizeof(req)));
	/* Nobody listening: a port we held and let go. */
	lfd = listen_any(&lport);
	if (lfd >= 0)
		close(lfd);
	snprintf(env, sizeof(env), "%u", lport);
	setenv("ERL_EPMD_PORT", env, 1);
	CHECK_INT("epmd: nobody listening", -ECONNREFUSED,
		  inject_epmd__lookup(&lo, "localhost", "xp_node", 3000, &port, err, sizeof(err)));
	CHECK("epmd: refusal message names the port", strstr(err, env) != NULL);
	unsetenv("ERL_EPMD_PORT");
	CHECK_INT("epmd: default port", 4369, inject_epmd__port_number());
}

int main(void)
{
	release_checks();
	term_checks();
	cookie_checks();
	epmd_checks();
	return check_done();
}
