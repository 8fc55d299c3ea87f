/* The push thread. See push.h. One connection per profile (Connection: close): a push a
 * minute needs no pool. Every socket operation (connect, send, receive) is bounded by
 * PUSH_IO_TIMEOUT_S, so an attempt in flight at the end can hold it that long more. */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "push.h"

#define PUSH_IO_TIMEOUT_S  5
#define PUSH_BACKOFF_MIN_S 1
#define PUSH_BACKOFF_MAX_S 60

struct push_item {
	uint8_t *buf;
	size_t len;
	int64_t from, until;
};

struct pusher {
	char host[96], port[8], path[512], name[1024];
	unsigned rate;
	pthread_t thread;
	bool started, stopping;
	double deadline; /* CLOCK_MONOTONIC s: when stopping, give up then */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct push_item q[PUSH_QUEUE];
	size_t head, n;
	struct push_stats st;
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_url(struct pusher *p, const char *url, char *err, size_t errlen)
{
	const char *h = url + strlen("http://"), *slash, *colon;
	size_t hl, pl;

	if (strncmp(url, "http://", 7) != 0) {
		snprintf(err, errlen, "--push %s: only http:// (for https, use a local agent)",
			 url);
		return -EINVAL;
	}
	slash = strchr(h, '/');
	hl = slash ? (size_t)(slash - h) : strlen(h);
	colon = memchr(h, ':', hl);
	if (!hl || hl >= sizeof(p->host) || (colon && (size_t)(h + hl - colon - 1) >= 7)) {
		snprintf(err, errlen, "--push %s: cannot read the host and port", url);
		return -EINVAL;
	}
	snprintf(p->host, sizeof(p->host), "%.*s", (int)(colon ? colon - h : (long)hl), h);
	snprintf(p->port, sizeof(p->port), "%.*s", colon ? (int)(h + hl - colon - 1) : 2,
		 colon ? colon + 1 : "80");
	snprintf(p->path, sizeof(p->path), "%s", slash ? slash : "");
	pl = strlen(p->path);
	while (pl && p->path[pl - 1] == '/')
		p->path[--pl] = '\0';
	if (pl < 7 || strcmp(p->path + pl - 7, "/ingest"))
		snprintf(p->path + pl, sizeof(p->path) - pl, "/ingest");
	return 0;
}

/* Percent-encode everything but RFC 3986's unreserved characters. */
static void url_encode(const char *s, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s && o + 4 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~') {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
}

static int connect_to(const struct pusher *p, int *out)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL, *ai;
	struct timeval tv = {.tv_sec = PUSH_IO_TIMEOUT_S};
	int fd = -1, rc;

	if ((rc = getaddrinfo(p->host, p->port, &hints, &res)))
		return rc == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		rc = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return rc ? rc : -ECONNREFUSED;
	*out = fd;
	return 0;
}

static int send_all(int fd, const void *buf, size_t n)
{
	const char *c = buf;

	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One POST; 0 on a 2xx answer, else -errno or the HTTP status (positive), why in err. */
static int post(struct pusher *p, const struct push_item *it, char *err, size_t errlen)
{
	char name[3 * sizeof(p->name)], head[4096], resp[64] = "";
	int fd = -1, rc, status = 0, n;
	ssize_t r;

	url_encode(p->name, name, sizeof(name));
	n = snprintf(head, sizeof(head),
		     "POST %s?name=%s&from=%lld&until=%lld&format=pprof&sampleRate=%u "
		     "HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: extrospect\r\n"
		     "Content-Type: application/octet-stream\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n",
		     p->path, name, (long long)it->from, (long long)it->until, p->rate, p->host,
		     p->port, it->len);
	if (n < 0 || (size_t)n >= sizeof(head))
		return -ENAMETOOLONG;
	if ((rc = connect_to(p, &fd))) {
		snprintf(err, errlen, "connecting to %s:%s: %s", p->host, p->port, strerror(-rc));
		return rc;
	}
	rc = send_all(fd, head, (size_t)n);
	if (!rc)
		rc = send_all(fd, it->buf, it->len);
	if (!rc) {
		r = recv(fd, resp, sizeof(resp) - 1, 0);
		rc = r > 0 ? 0 : r < 0 ? -errno : -ECONNRESET;
		if (r > 0)
			resp[r] = '\0';
		resp[strcspn(resp, "\r\n")] = '\0'; /* the status line */
	}
	close(fd);
	if (rc) {
		snprintf(err, errlen, "%s:%s: %s", p->host, p->port, strerror(-rc));
		return rc;
	}
	if (sscanf(resp, "HTTP/1.%*d %d", &status) != 1 || status < 200 || status > 299) {
		snprintf(err, errlen, "%s:%s answered %.40s", p->host, p->port, resp);
		return status > 0 ? status : -EPROTO;
	}
	return 0;
}

/* Wait seconds before the next attempt (the lock held, released while waiting): true to try
 * again. A stop cuts the wait short for one last attempt, when its deadline allows. */
static bool backoff(struct pusher *p, double seconds)
{
	double until = mono_s() + seconds;
	struct timespec ts;

	while (!p->stopping) {
		double left = until - mono_s();

		if (left <= 0)
			return true;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)left;
		ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&p->cv, &p->mu, &ts);
	}
	return mono_s() < p->deadline;
}

static void *push_thread(void *arg)
{
	struct pusher *p = arg;
	double delay = PUSH_BACKOFF_MIN_S;
	char why[256];

	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct push_item it;
		int rc;

		while (!p->n && !p->stopping)
			pthread_cond_wait(&p->cv, &p->mu);
		if (!p->n || (p->stopping && mono_s() >= p->deadline))
			break;
		/* In flight it is the thread's: a full queue never drops it under the send. */
		it = p->q[p->head];
		p->head = (p->head + 1) % PUSH_QUEUE;
		p->n--;
		pthread_mutex_unlock(&p->mu);
		rc = post(p, &it, why, sizeof(why));
		pthread_mutex_lock(&p->mu);
		if (!rc) {
			free(it.buf);
			p->st.pushed++;
			delay = PUSH_BACKOFF_MIN_S;
			continue;
		}
		if (p->n < PUSH_QUEUE) { /* back at the head, to be tried first */
			p->head = (p->head + PUSH_QUEUE - 1) % PUSH_QUEUE;
			p->q[p->head] = it;
			p->n++;
		} else {
			free(it.buf);
			p->st.dropped++;
		}
		p->st.attempts++;
		snprintf(p->st.last_error, sizeof(p->st.last_error), "%s", why);
		/* Stopping: what failed now is not retried, the rest is dropped (counted). */
		if (p->stopping || !backoff(p, delay))
			break;
		delay = delay * 2 > PUSH_BACKOFF_MAX_S ? PUSH_BACKOFF_MAX_S : delay * 2;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int pusher__new(const char *url, const char *name, unsigned sample_rate, struct pusher **out,
		char *err, size_t errlen)
{
	struct pusher *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	if ((rc = parse_url(p, url, err, errlen))) {
		free(p);
		return rc;
	}
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->rate = sample_rate;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if ((rc = pthread_create(&p->thread, NULL, push_thread, p))) {
		snprintf(err, errlen, "cannot start the push thread: %s", strerror(rc));
		pusher__free(p);
		return -rc;
	}
	p->started = true;
	*out = p;
	return 0;
}

void pusher__push(struct pusher *p, uint8_t *buf, size_t len, int64_t from, int64_t until)
{
	pthread_mutex_lock(&p->mu);
	if (p->n == PUSH_QUEUE) {
		/* Full: the oldest waiting goes (not one being sent: the thread holds that). */
		free(p->q[p->head].buf);
		p->head = (p->head + 1) % PUSH_QUEUE;
		p->n--;
		p->st.dropped++;
	}
	p->q[(p->head + p->n) % PUSH_QUEUE] = (struct push_item){buf, len, from, until};
	p->n++;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void pusher__finish(struct pusher *p, double wait_s, struct push_stats *st)
{
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	p->deadline = mono_s() + wait_s;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->started)
		pthread_join(p->thread, NULL);
	p->started = false;
	while (p->n) {
		free(p->q[p->head].buf);
		p->head = (p->head + 1) % PUSH_QUEUE;
		p->n--;
		p->st.dropped++;
	}
	*st = p->st;
}

void pusher__free(struct pusher *p)
{
	struct push_stats st;

	if (!p)
		return;
	if (p->started)
		pusher__finish(p, 0, &st);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}
