/* record --push: each interval's pprof profile POSTed to a Pyroscope-compatible ingest endpoint
 * (POST URL/ingest?name=APP{labels}&from=&until=&format=pprof&sampleRate=HZ) by a thread of its
 * own, so that a slow or absent server never delays sampling. Profiles wait in a bounded queue
 * (the oldest is dropped, and counted, when it is full); a failed push is retried with
 * exponential backoff. Plain HTTP/1.1 over a socket: HTTPS needs a local agent or proxy.
 * Does not own: encoding the profile (report/pprof.c), when intervals end (continuous.c). */
#ifndef XP_PUSH_H
#define XP_PUSH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PUSH_QUEUE 16 /* profiles waiting at most */

struct pusher;

struct push_stats {
	uint64_t pushed;   /* profiles the server accepted (2xx) */
	uint64_t attempts; /* failed attempts (connection, timeout, non-2xx) */
	uint64_t dropped;  /* profiles dropped: queue full, or still unsent at the end */
	char last_error[256];
};

/* url: "http://host[:port][/path]"; the endpoint is path + "/ingest" unless path already ends
 * with it. name: the application name with its labels, "app{k=v,...}" (not encoded). 0 or
 * -EINVAL with err set, -ENOMEM, or the thread's error. */
int pusher__new(const char *url, const char *name, unsigned sample_rate, struct pusher **out,
		char *err, size_t errlen);
/* Queue one gzipped profile covering [from, until) (Unix seconds); takes buf (malloc'd). Never
 * blocks on the network. */
void pusher__push(struct pusher *p, uint8_t *buf, size_t len, int64_t from, int64_t until);
/* Send what is queued, for at most wait_s seconds and until an attempt fails (no more backoff),
 * then stop the thread; the rest is dropped and counted. */
void pusher__finish(struct pusher *p, double wait_s, struct push_stats *st);
void pusher__free(struct pusher *p);

#endif /* XP_PUSH_H */
