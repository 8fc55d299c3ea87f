/* Draining a perf session's rings (see perf.h) with the data_head/data_tail protocol: every ring
 * is read to the head it had when the drain began, samples delivered oldest first across the
 * rings (a ring's own records are in time order). No ring can starve another: each drain reads
 * them all to that head, and how full the fullest was and how long a drain took are counted.
 * Lost records are listed by ring and window. Owns: the drain and its counters. Does not own:
 * opening the events or their rings (perf.c), parsing a sample (perf_record.c). */
#include "perf.h"
#include "perf_int.h"

#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

uint64_t perf__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "0-3,6,8-9": at most PERF_CPUS_MAX CPUs. */
#define PERF_CPUS_MAX 4096

int perf__online_cpus(int **out, size_t *n)
{
	char buf[4096], *p, *end;
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	int *cpus;
	long lo, hi;

	*out = NULL;
	*n = 0;
	if (!f)
		return -errno;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	cpus = p ? calloc(PERF_CPUS_MAX, sizeof(*cpus)) : NULL;
	if (!cpus)
		return p ? -ENOMEM : -EIO;
	while (*p && *p != '\n') {
		lo = hi = strtol(p, &end, 10);
		if (end == p || lo < 0)
			break;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		for (; lo <= hi && *n < PERF_CPUS_MAX; lo++)
			cpus[(*n)++] = (int)lo;
		p = *end == ',' ? end + 1 : end;
	}
	if (!*n) {
		free(cpus);
		return -EIO;
	}
	*out = cpus;
	return 0;
}

void perf__check_hangups(struct perf_session *s)
{
	struct pollfd *p;
	size_t total = 0, k = 0;

	for (size_t i = 0; i < s->n; i++)
		total += s->threads[i].nfds;
	p = calloc(total ? total : 1, sizeof(*p));
	if (!p)
		return; /* asked again at the next check */
	for (size_t i = 0; i < s->n; i++) {
		for (size_t j = 0; j < s->threads[i].nfds; j++)
			p[k++].fd = s->threads[i].fds[j]; /* events 0: hang-ups and errors only */
	}
	if (poll(p, (nfds_t)total, 0) > 0) {
		k = 0;
		for (size_t i = 0; i < s->n; i++) {
			for (size_t j = 0; j < s->threads[i].nfds; j++, k++) {
				if (p[k].revents & (POLLHUP | POLLERR))
					s->threads[i].hung_up = true;
			}
		}
	}
	free(p);
}

/* Copy len bytes at ring offset off (data_size is a power of two). */
static void ring__copy(const uint8_t *data, uint64_t size, uint64_t off, void *dst, size_t len)
{
	uint64_t pos = off & (size - 1);
	size_t first = len < size - pos ? len : (size_t)(size - pos);

	memcpy(dst, data + pos, first);
	memcpy((uint8_t *)dst + first, data, len - first);
}

/* n records lost from ring r, the kernel's LOST record written at time at (0: unknown) while
 * tid ran: a window of its own, or the ring's last one grown. */
static void session__note_loss(struct perf_session *s, const struct perf_ring *r, uint64_t n,
			       pid_t tid, uint64_t at)
{
	struct perf_stats *st = &s->stats;
	struct perf_loss *l;
	pid_t who = r->tid ? r->tid : tid;

	st->lost += n;
	for (uint32_t i = st->nlosses; i-- > 0;) {
		l = &st->losses[i];
		if (l->cpu != (r->tid ? -1 : r->cpu) || (r->tid && l->tid != who))
			continue;
		if (at && l->to_ns && at - l->to_ns > PERF_LOSS_JOIN_NS)
			break;
		l->lost += n;
		l->to_ns = at > l->to_ns ? at : l->to_ns;
		return;
	}
	if (st->nlosses == PERF_LOSS_MAX) {
		st->lost_unlisted += n;
		return;
	}
	l = &st->losses[st->nlosses++];
	*l = (struct perf_loss){.lost = n,
				.from_ns = r->last_time,
				.to_ns = at,
				.tid = who,
				.cpu = r->tid ? -1 : r->cpu};
}

/* A LOST record's body: id, lost, then the sample_id (pid, tid, time, cpu). */
static void session__lost(struct perf_session *s, const struct perf_ring *r, const uint8_t *body,
			  size_t len)
{
	uint64_t v[2], at = 0;
	uint32_t ids[2] = {0, 0};

	if (len < sizeof(v)) {
		s->stats.malformed++;
		return;
	}
	memcpy(v, body, sizeof(v));
	if (len >= sizeof(v) + PERF_SAMPLE_ID_BYTES) {
		memcpy(ids, body + sizeof(v), sizeof(ids));
		memcpy(&at, body + sizeof(v) + 8, sizeof(at));
	}
	session__note_loss(s, r, v[1], (pid_t)ids[1], at);
}

/* A PERF_RECORD_SWITCH: its sample_id trailer is pid, tid (u32 each), time, cpu and a reserved
 * u32 for PERF_SAMPLE_LAYOUT. Always 0 (not a sample). */
static int session__switch(struct perf_session *s, const struct perf_event_header *h,
			   const uint8_t *body, size_t len)
{
	uint32_t tid;
	uint64_t time;

	if (len < 24) {
		s->stats.malformed++;
		return 0;
	}
	memcpy(&tid, body + 4, sizeof(tid));
	memcpy(&time, body + 8, sizeof(time));
	if (s->on_switch)
		s->on_switch(tid, time, h->misc & PERF_RECORD_MISC_SWITCH_OUT,
			     h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT, s->switch_ctx);
	return 0;
}

/* The record at ring offset off (its header is h): 1 if a sample was delivered, else 0. fn is
 * NULL when only non-sample records are expected. */
static int session__record(struct perf_session *s, struct perf_ring *r,
			   const struct perf_event_header *h, const uint8_t *data, uint64_t size,
			   uint64_t off, perf_sample_fn fn, void *ctx)
{
	const uint8_t *rec, *body;
	size_t len = h->size - sizeof(*h);
	struct perf_sample smp;

	if ((off & (size - 1)) + h->size <= size) {
		rec = data + (off & (size - 1));
	} else {
		ring__copy(data, size, off, s->scratch, h->size);
		rec = s->scratch;
	}
	body = rec + sizeof(*h);
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		if (!fn || perf__parse_sample(body, len, &smp)) {
			s->stats.malformed++;
			return 0;
		}
		s->stats.samples++;
		r->last_time = smp.time;
		fn(&smp, ctx);
		return 1;
	case PERF_RECORD_LOST:
		session__lost(s, r, body, len);
		return 0;
	case PERF_RECORD_THROTTLE:
		s->stats.throttled++;
		return 0;
	case PERF_RECORD_SWITCH:
		return session__switch(s, h, body, len);
	default: /* UNTHROTTLE and anything we did not ask for */
		return 0;
	}
}

/* The ring's data area and size. */
static const uint8_t *ring__data(const struct perf_session *s, const struct perf_ring *r,
				 uint64_t *size)
{
	const struct perf_event_mmap_page *meta = (const struct perf_event_mmap_page *)r->map;

	*size = meta->data_size ? meta->data_size : r->map_len - s->page_size;
	return r->map + (meta->data_offset ? meta->data_offset : s->page_size);
}

static void ring__release(struct perf_ring *r)
{
	struct perf_event_mmap_page *meta = (struct perf_event_mmap_page *)r->map;

	__atomic_store_n(&meta->data_tail, r->tail, __ATOMIC_RELEASE);
}

/* The lines of the sample at ring offset off (len bytes) that parsing it reads besides its
 * first: the registers after the header, and the stack copy's dyn_size at its end; and the
 * stack copy's first line, the words at the stack pointer that a native unwind reads first.
 * The kernel wrote them on another CPU, so each is a cache miss (a sixth of the sampler's time
 * at 997 Hz); asked for while another ring's sample is resolved, they arrive meanwhile. */
static void ring__prefetch(const uint8_t *data, uint64_t size, uint64_t off, uint32_t len)
{
	__builtin_prefetch(data + ((off + 64) & (size - 1)));
	__builtin_prefetch(data + ((off + 128) & (size - 1)));
	__builtin_prefetch(data + ((off + 192) & (size - 1)));
	__builtin_prefetch(data + ((off + len - 8) & (size - 1)));
	/* The next record's header and registers, at the same offsets in it: samples follow one
	 * another, and it is read as soon as this one is delivered. */
	__builtin_prefetch(data + ((off + len) & (size - 1)));
	__builtin_prefetch(data + ((off + len + 64) & (size - 1)));
	__builtin_prefetch(data + ((off + len + 128) & (size - 1)));
}

/* Step r's read position to its next sample, handling the records before it (lost, throttle,
 * malformed) on the way; r->ready says whether one is there, r->next_time is its time. */
static void ring__next_sample(struct perf_session *s, struct perf_ring *r)
{
	uint64_t size;
	const uint8_t *data = ring__data(s, r, &size);
	struct perf_event_header h;
	uint64_t time;

	r->ready = false;
	while (r->head - r->tail >= sizeof(h)) {
		ring__copy(data, size, r->tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > r->head - r->tail) {
			/* A record cannot be framed: nothing after it can be either. */
			s->stats.malformed++;
			r->tail = r->head;
			break;
		}
		if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(h) + PERF_SAMPLE_TIME_AT + 8) {
			ring__copy(data, size, r->tail + sizeof(h) + PERF_SAMPLE_TIME_AT, &time,
				   sizeof(time));
			r->next_time = time;
			r->ready = true;
			ring__prefetch(data, size, r->tail, h.size);
			return;
		}
		session__record(s, r, &h, data, size, r->tail, NULL, NULL);
		r->tail += h.size;
	}
	ring__release(r);
}

/* Deliver r's next sample (ring__next_sample found it) and step to the one after. */
static int ring__deliver(struct perf_session *s, struct perf_ring *r, perf_sample_fn fn, void *ctx)
{
	uint64_t size;
	const uint8_t *data = ring__data(s, r, &size);
	struct perf_event_header h;
	int delivered;

	ring__copy(data, size, r->tail, &h, sizeof(h));
	delivered = session__record(s, r, &h, data, size, r->tail, fn, ctx);
	r->tail += h.size;
	ring__release(r);
	ring__next_sample(s, r);
	return delivered;
}

static void session__mark_hung_up(struct perf_session *s, pid_t tid)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->threads[i].tid == tid)
			s->threads[i].hung_up = true;
	}
}

/* Every ring's read window, fixed at the head it has now (not just the ready ones: reading a
 * data_head costs nothing); the fullest is counted. */
static void session__open_windows(struct perf_session *s)
{
	for (size_t i = 0; i < s->nrings; i++) {
		struct perf_ring *r = &s->rings[i];
		struct perf_event_mmap_page *meta = (struct perf_event_mmap_page *)r->map;

		r->head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
		r->tail = meta->data_tail; /* only we write it */
		if (r->head - r->tail > s->stats.peak_fill)
			s->stats.peak_fill = r->head - r->tail;
		ring__next_sample(s, r);
	}
}

/* Oldest first across the rings, so that a consumer pairing samples with other time-ordered
 * data (kcapture) sees them in the order they were taken. */
static int session__merge(struct perf_session *s, perf_sample_fn fn, void *ctx)
{
	int delivered = 0;

	for (;;) {
		struct perf_ring *first = NULL;

		for (size_t i = 0; i < s->nrings; i++) {
			if (s->rings[i].ready &&
			    (!first || s->rings[i].next_time < first->next_time))
				first = &s->rings[i];
		}
		if (!first)
			return delivered;
		if (ring__deliver(s, first, fn, ctx) && delivered < INT_MAX)
			delivered++;
	}
}

int perf_session__poll(struct perf_session *s, int timeout_ms, perf_sample_fn fn, void *ctx)
{
	struct epoll_event ev[PERF_EPOLL_BATCH];
	uint64_t start;
	int rc, delivered;

	if (!s || !fn)
		return -EINVAL;
	rc = epoll_wait(s->epfd, ev, PERF_EPOLL_BATCH, timeout_ms);
	if (rc < 0 && errno != EINTR)
		return -errno;
	for (int k = 0; k < rc; k++) {
		if ((ev[k].events & (EPOLLHUP | EPOLLERR)) && !(ev[k].data.u64 & PERF_RING_TAG))
			session__mark_hung_up(s, (pid_t)ev[k].data.u64);
	}
	start = perf__now_ns();
	if (start - s->last_drain_end > s->stats.longest_gap_ns)
		s->stats.longest_gap_ns = start - s->last_drain_end;
	/* Shared rings: the threads' own fds are not in the epoll set (each would be woken by
	 * every sample on its CPU); their hang-ups are asked for once in a while. */
	if (s->opts.shared_rings && start - s->last_hup_check >= PERF_HUP_CHECK_NS) {
		perf__check_hangups(s);
		s->last_hup_check = start;
	}
	session__open_windows(s);
	delivered = session__merge(s, fn, ctx);
	/* Drained first: an exited thread's last samples are still in its buffer. */
	perf__drop_hung_up(s);
	s->last_drain_end = perf__now_ns();
	if (s->last_drain_end - start > s->stats.longest_drain_ns)
		s->stats.longest_drain_ns = s->last_drain_end - start;
	return delivered;
}
