/* record --push's sender (external/src/cmd/record/push.c) against local sockets: the request it
 * makes (path, encoded name, times, format, rate, body), that queueing never waits for the network,
 * that a refused server costs every profile (counted: none pushed, all dropped) without holding
 * the end longer than asked, and the URL forms it accepts or refuses. */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "push.h"

#define SERVE_MAX 4

struct server {
	int fd, port, n;
	char line[SERVE_MAX][512]; /* each request's first line */
	size_t body[SERVE_MAX];	   /* and its body's length */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int listen_any(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 8) ||
	    getsockname(fd, (struct sockaddr *)&a, &len))
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

/* One request: its headers, then Content-Length bytes; answered 200. */
static void serve_one(struct server *s, int c)
{
	char buf[8192];
	size_t got = 0, want;
	char *end, *cl;
	ssize_t r;

	while (got < sizeof(buf) - 1 && (r = recv(c, buf + got, sizeof(buf) - 1 - got, 0)) > 0) {
		got += (size_t)r;
		buf[got] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")))
			break;
	}
	end = strstr(buf, "\r\n\r\n");
	cl = strstr(buf, "Content-Length: ");
	if (!end || !cl)
		return;
	want = strtoul(cl + 16, NULL, 10);
	got -= (size_t)(end + 4 - buf);
	snprintf(s->line[s->n], sizeof(s->line[0]), "%.*s", (int)strcspn(buf, "\r"), buf);
	while (got < want && (r = recv(c, buf, sizeof(buf), 0)) > 0)
		got += (size_t)r;
	s->body[s->n++] = got;
	send(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 38, MSG_NOSIGNAL);
}

static void *serve(void *arg)
{
	struct server *s = arg;

	while (s->n < SERVE_MAX) {
		int c = accept(s->fd, NULL, NULL);

		if (c < 0)
			break;
		serve_one(s, c);
		close(c);
	}
	return NULL;
}

static uint8_t *bytes(size_t n)
{
	uint8_t *b = malloc(n);

	memset(b, 0x5a, n);
	return b;
}

static void test_request(void)
{
	struct server s = {0};
	struct pusher *p = NULL;
	struct push_stats st;
	char url[64], err[256] = "";
	pthread_t th;

	s.fd = listen_any(&s.port);
	if (!CHECK("listening", s.fd >= 0))
		return;
	pthread_create(&th, NULL, serve, &s);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/base/", s.port);
	CHECK_INT("new", 0, pusher__new(url, "app{env=x}", 997, &p, err, sizeof(err)));
	pusher__push(p, bytes(1000), 1000, 1700000000, 1700000060);
	pusher__push(p, bytes(10), 10, 1700000060, 1700000061);
	pusher__finish(p, 5, &st);
	CHECK_INT("pushed", 2, st.pushed);
	CHECK_INT("no failed attempt", 0, st.attempts);
	CHECK_INT("none dropped", 0, st.dropped);
	CHECK_INT("requests served", 2, s.n);
	CHECK_STR("request line",
		  "POST /base/ingest?name=app%7Benv%3Dx%7D&from=1700000000&until=1700000060"
		  "&format=pprof&sampleRate=997 HTTP/1.1",
		  s.line[0]);
	CHECK_INT("body", 1000, s.body[0]);
	CHECK_INT("second body", 10, s.body[1]);
	pusher__free(p);
	shutdown(s.fd, SHUT_RDWR);
	close(s.fd);
	pthread_join(th, NULL);
}

/* Nothing listens: pushes return at once, the queue keeps PUSH_QUEUE, and the end drops all. */
static void test_refused(void)
{
	struct pusher *p = NULL;
	struct push_stats st;
	char url[64], err[256] = "";
	int port, fd = listen_any(&port), i;
	double t0;

	close(fd); /* the port is now refused */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	CHECK_INT("new", 0, pusher__new(url, "app", 99, &p, err, sizeof(err)));
	t0 = now_s();
	for (i = 0; i < 20; i++)
		pusher__push(p, bytes(100), 100, i, i + 1);
	CHECK("20 pushes queued in under 50 ms", now_s() - t0 < 0.05);
	t0 = now_s();
	pusher__finish(p, 0.3, &st);
	CHECK("finish within 2 s", now_s() - t0 < 2);
	CHECK_INT("none pushed", 0, st.pushed);
	CHECK("at least one failed attempt", st.attempts >= 1);
	CHECK_INT("all 20 dropped (queue full, then at the end)", 20, st.dropped);
	CHECK("the error says why", strstr(st.last_error, "refused") != NULL);
	pusher__free(p);
}

static void test_urls(void)
{
	static const char *const bad[] = {"https://h:4040", "http://", "ftp://h",
					  "http://h:1234567"};
	struct pusher *p = NULL;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK_INT(bad[i], -EINVAL, pusher__new(bad[i], "a", 1, &p, err, sizeof(err)));
		CHECK("  with a message", err[0] != '\0');
	}
	CHECK_INT("http://host without a port", 0,
		  pusher__new("http://localhost", "a", 1, &p, err, sizeof(err)));
	pusher__free(p);
}

int main(void)
{
	test_request();
	test_refused();
	test_urls();
	return check_done();
}
