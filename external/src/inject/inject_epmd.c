/* epmd's PORT_PLEASE2_REQ for `extrospect inject` (erts doc "Distribution Protocol", EPMD
 * protocol): request [Len:16]['z'][Name], answer ['w'][Result:8][PortNo:16]... and epmd
 * closes. Non-blocking socket, poll(2) against one deadline, SO_ERROR read after connect.
 * See inject_epmd.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "inject_epmd.h"

#define EPMD_DEFAULT_PORT 4369
#define PORT_PLEASE2_REQ  'z'
#define PORT2_RESP	  'w'

unsigned inject_epmd__port_number(void)
{
	const char *env = getenv("ERL_EPMD_PORT");
	long v = env ? strtol(env, NULL, 10) : 0;

	return v > 0 && v < 65536 ? (unsigned)v : EPMD_DEFAULT_PORT;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for `events` on fd until the deadline: 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = {.fd = fd, .events = events};

	for (;;) {
		long long left = deadline - now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int connect_epmd(const struct in_addr *ip, long long deadline, int *out)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)inject_epmd__port_number()),
				 .sin_addr = *ip};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), e = 0, soerr = 0;
	socklen_t len = sizeof(soerr);

	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		e = errno == EINPROGRESS ? wait_fd(fd, POLLOUT, deadline) : -errno;
		if (!e && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
			e = -errno;
		else if (!e && soerr)
			e = -soerr;
	}
	if (e) {
		close(fd);
		return e;
	}
	*out = fd;
	return 0;
}

static int send_all(int fd, const unsigned char *buf, size_t len, long long deadline)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			int e = wait_fd(fd, POLLOUT, deadline);

			if (e)
				return e;
		} else {
			return n < 0 ? -errno : -EPIPE;
		}
	}
	return 0;
}

/* Reads until `want` bytes or end of stream; *got says how many arrived. */
static int recv_some(int fd, unsigned char *buf, size_t want, size_t *got, long long deadline)
{
	*got = 0;
	while (*got < want) {
		ssize_t n = recv(fd, buf + *got, want - *got, 0);

		if (n > 0) {
			*got += (size_t)n;
		} else if (n == 0) {
			return 0;
		} else if (errno == EAGAIN || errno == EINTR) {
			int e = wait_fd(fd, POLLIN, deadline);

			if (e)
				return e;
		} else {
			return -errno;
		}
	}
	return 0;
}

int inject_epmd__lookup(const struct in_addr *ip, const char *host, const char *alive,
			unsigned tmo_ms, int *port, char *err, size_t errlen)
{
	long long deadline = now_ms() + tmo_ms;
	size_t alen = strlen(alive), got = 0;
	unsigned char req[3 + 256], resp[4];
	int fd = -1, e;

	if (alen == 0 || alen > 255) {
		snprintf(err, errlen, "bad node name '%s'", alive);
		return -EINVAL;
	}
	req[0] = (unsigned char)((alen + 1) >> 8);
	req[1] = (unsigned char)(alen + 1);
	req[2] = PORT_PLEASE2_REQ;
	memcpy(req + 3, alive, alen);
	e = connect_epmd(ip, deadline, &fd);
	if (!e)
		e = send_all(fd, req, alen + 3, deadline);
	if (!e)
		e = recv_some(fd, resp, sizeof(resp), &got, deadline);
	if (fd >= 0)
		close(fd);
	if (e) {
		snprintf(err, errlen, "cannot reach epmd on %s port %u: %s (is the node running?)",
			 host, inject_epmd__port_number(), strerror(-e));
		return -ECONNREFUSED;
	}
	return inject_epmd__decode_reply(resp, got, host, alive, port, err, errlen);
}

int inject_epmd__decode_reply(const unsigned char *resp, size_t got, const char *host,
			      const char *alive, int *port, char *err, size_t errlen)
{
	if (got < 2 || resp[0] != PORT2_RESP) {
		snprintf(err, errlen, "%s port %u does not answer like epmd", host,
			 inject_epmd__port_number());
		return -EPROTO;
	}
	if (resp[1] != 0) {
		snprintf(err, errlen, "epmd on %s has no node named '%s' (is it running?)", host,
			 alive);
		return -ENXIO;
	}
	if (got < 4 || (resp[2] << 8 | resp[3]) == 0) {
		snprintf(err, errlen, "epmd on %s sent a short answer for '%s'", host, alive);
		return -EPROTO;
	}
	*port = resp[2] << 8 | resp[3];
	return 0;
}
