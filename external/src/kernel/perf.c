/* perf_event_open sampling of chosen threads of another process: one event per thread, one mmap
 * ring buffer per event, drained with the data_head/data_tail protocol into struct perf_sample.
 * The fds sit in one epoll set: with wakeup_events set, a wait returns as soon as a sample is
 * written, whatever the number of threads.
 * Owns the fds, the mappings and the counters; the record parser is perf_record.c. Does not own:
 * choosing the threads (proc.c) or what a sample means (unwinding, Erlang stacks). Never ptraces,
 * signals or writes the target: the kernel does all the reading. */
#include "perf.h"
#include "perf_int.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct perf_thread {
	pid_t tid;
	int fd;
	uint8_t *map; /* the metadata page, then 2^n data pages */
	size_t map_len;
	bool hung_up; /* the thread exited: drop it once its ring is drained */
	/* During a poll: the ring's read window, and its next sample's time when ready. */
	uint64_t head, tail, next_time;
	bool ready;
};

struct perf_session {
	struct perf_opts opts;
	struct perf_thread *threads;
	int epfd; /* every thread's fd, data.u64 = its tid */
	size_t n, cap;
	size_t page_size;
	uint64_t regs_mask;
	struct perf_stats stats;
	perf_switch_fn on_switch; /* opts.switches */
	void *switch_ctx;
	uint8_t scratch[PERF_MAX_RECORD]; /* a record that wraps the ring's end, made contiguous */
};

static int perf__check_opts(const struct perf_opts *o, size_t page_size, struct perf_opts *out)
{
	*out = *o;
	if (out->event != PERF_EV_CPU_CLOCK && out->event != PERF_EV_CYCLES &&
	    out->event != PERF_EV_CTX_SWITCH)
		return -EINVAL;
	if (out->event == PERF_EV_CTX_SWITCH)
		out->freq_hz = 1;
	if (out->freq_hz == 0 || out->freq_hz > INT_MAX)
		return -EINVAL;
	if (out->stack_bytes == 0 || out->stack_bytes > PERF_MAX_STACK || out->stack_bytes % 8)
		return -EINVAL;
	if (out->mmap_pages == 0)
		out->mmap_pages = PERF_DEFAULT_PAGES;
	if (out->mmap_pages > PERF_MAX_PAGES || (out->mmap_pages & (out->mmap_pages - 1)))
		return -EINVAL;
	/* Room for two samples, or the kernel drops nearly everything while one waits. */
	if ((uint64_t)out->mmap_pages * page_size < 2ull * (out->stack_bytes + PERF_SAMPLE_FIXED))
		return -EINVAL;
	return 0;
}

static int perf__event_open(const struct perf_session *s, pid_t tid)
{
	struct perf_event_attr a;
	long fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	if (s->opts.event == PERF_EV_CYCLES) {
		a.type = PERF_TYPE_HARDWARE;
		a.config = PERF_COUNT_HW_CPU_CYCLES;
	} else {
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_CPU_CLOCK;
	}
	a.freq = 1;
	a.sample_freq = s->opts.freq_hz;
	if (s->opts.event == PERF_EV_CTX_SWITCH) {
		a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
		a.freq = 0;
		a.sample_period = 1;
	}
	a.sample_type = PERF_SAMPLE_LAYOUT;
	a.sample_regs_user = s->regs_mask;
	a.sample_stack_user = s->opts.stack_bytes;
	a.wakeup_events = s->opts.wakeup_events;
	a.disabled = 1; /* enabled once its ring buffer exists */
	/* Time in the kernel on a thread's behalf (page faults of a growing heap, syscalls) is
	 * that thread's: sampled unless asked not to or not permitted (perf_event_paranoid >= 2
	 * without CAP_PERFMON), then each sample still carries the user-mode registers. A context
	 * switch (a spy's snapshot) happens in the kernel. */
	a.exclude_kernel =
	    s->opts.event != PERF_EV_CTX_SWITCH && (s->opts.user_only || s->stats.kernel_excluded);
	a.exclude_hv = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC; /* comparable with the target's own clock_gettime */
	/* Switch records carry tid and time only with sample_id_all (their body is that trailer:
	 * pid, tid, time, cpu for PERF_SAMPLE_LAYOUT). */
	a.context_switch = s->opts.switches;
	a.sample_id_all = s->opts.switches;
	fd = syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0)
		return (int)fd;
	/* No PMU for the generic hardware event (typical in VMs): say so in one way. */
	if (s->opts.event == PERF_EV_CYCLES &&
	    (errno == ENOENT || errno == EOPNOTSUPP || errno == ENODEV))
		return -ENOENT;
	return -errno;
}

/* One fd per thread: thousands of threads can pass the soft limit; raise it to the hard one. */
static int perf__raise_nofile(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r))
		return -errno;
	if (r.rlim_cur >= r.rlim_max)
		return -EMFILE;
	r.rlim_cur = r.rlim_max;
	return setrlimit(RLIMIT_NOFILE, &r) ? -errno : 0;
}

static int session__reserve(struct perf_session *s)
{
	struct perf_thread *t;
	size_t cap;

	if (s->n < s->cap)
		return 0;
	cap = s->cap ? 2 * s->cap : 16;
	t = realloc(s->threads, cap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	s->threads = t;
	s->cap = cap;
	return 0;
}

/* 0, -ESRCH (the thread is gone), -EEXIST, or the error of the open/mmap/enable. */
static int session__attach(struct perf_session *s, pid_t tid)
{
	struct perf_thread t = {.tid = tid, .fd = -1, .map = MAP_FAILED};
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)tid};
	int err;

	for (size_t i = 0; i < s->n; i++) {
		if (s->threads[i].tid == tid)
			return -EEXIST;
	}
	err = session__reserve(s);
	if (err)
		return err;
	t.fd = perf__event_open(s, tid);
	if ((t.fd == -EACCES || t.fd == -EPERM) && !s->stats.kernel_excluded) {
		s->stats.kernel_excluded = true;
		t.fd = perf__event_open(s, tid);
	}
	if (t.fd == -EMFILE && perf__raise_nofile() == 0)
		t.fd = perf__event_open(s, tid);
	if (t.fd < 0)
		return t.fd;
	t.map_len = (1 + (size_t)s->opts.mmap_pages) * s->page_size;
	t.map = mmap(NULL, t.map_len, PROT_READ | PROT_WRITE, MAP_SHARED, t.fd, 0);
	if (t.map == MAP_FAILED) {
		err = -errno;
		goto cleanup;
	}
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, t.fd, &ev)) {
		err = -errno;
		goto cleanup;
	}
	/* Without the program the thread is still sampled: its samples have no capture. */
	if (s->opts.bpf_prog_fd > 0 && ioctl(t.fd, PERF_EVENT_IOC_SET_BPF, s->opts.bpf_prog_fd))
		s->stats.bpf_unattached++;
	if (ioctl(t.fd, PERF_EVENT_IOC_ENABLE, 0)) {
		err = -errno;
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, t.fd, NULL);
		goto cleanup;
	}
	s->threads[s->n++] = t;
	return 0;
cleanup:
	if (t.map != MAP_FAILED)
		munmap(t.map, t.map_len);
	close(t.fd);
	return err;
}

int perf_session__add_thread(struct perf_session *s, pid_t tid)
{
	int err;

	if (!s || tid <= 0)
		return -EINVAL;
	err = session__attach(s, tid);
	if (err == -ESRCH)
		s->stats.threads_gone++;
	return err;
}

int perf_session__open(struct perf_session **out, const pid_t *tids, size_t ntids,
		       const struct perf_opts *opts)
{
	struct perf_session *s;
	long page = sysconf(_SC_PAGESIZE);
	int err;

	if (!out || !tids || !ntids || !opts || page <= 0)
		return -EINVAL;
	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->page_size = (size_t)page;
	s->regs_mask = perf__regs_mask();
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0) {
		err = -errno;
		free(s);
		return err;
	}
	err = perf__check_opts(opts, s->page_size, &s->opts);
	if (err)
		goto cleanup;
	s->stats.kernel_excluded = s->opts.user_only;
	for (size_t i = 0; i < ntids; i++) {
		err = perf_session__add_thread(s, tids[i]);
		if (err && err != -ESRCH && err != -EEXIST)
			goto cleanup;
	}
	err = s->n ? 0 : -ESRCH;
	if (err)
		goto cleanup;
	*out = s;
	return 0;
cleanup:
	perf_session__free(s);
	return err;
}

/* Copy len bytes at ring offset off (data_size is a power of two). */
static void ring__copy(const uint8_t *data, uint64_t size, uint64_t off, void *dst, size_t len)
{
	uint64_t pos = off & (size - 1);
	size_t first = len < size - pos ? len : (size_t)(size - pos);

	memcpy(dst, data + pos, first);
	memcpy((uint8_t *)dst + first, data, len - first);
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
static int session__record(struct perf_session *s, const struct perf_event_header *h,
			   const uint8_t *data, uint64_t size, uint64_t off, perf_sample_fn fn,
			   void *ctx)
{
	const uint8_t *rec, *body;
	size_t len = h->size - sizeof(*h);
	struct perf_sample smp;
	uint64_t lost[2]; /* id, lost */

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
		fn(&smp, ctx);
		return 1;
	case PERF_RECORD_LOST:
		if (len < sizeof(lost)) {
			s->stats.malformed++;
			return 0;
		}
		memcpy(lost, body, sizeof(lost));
		s->stats.lost += lost[1];
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
static const uint8_t *ring__data(const struct perf_session *s, const struct perf_thread *t,
				 uint64_t *size)
{
	const struct perf_event_mmap_page *meta = (const struct perf_event_mmap_page *)t->map;

	*size = meta->data_size ? meta->data_size : t->map_len - s->page_size;
	return t->map + (meta->data_offset ? meta->data_offset : s->page_size);
}

static void ring__release(struct perf_thread *t)
{
	struct perf_event_mmap_page *meta = (struct perf_event_mmap_page *)t->map;

	__atomic_store_n(&meta->data_tail, t->tail, __ATOMIC_RELEASE);
}

/* Step t's read position to its next sample, handling the records before it (lost, throttle,
 * malformed) on the way; t->ready says whether one is there, t->next_time is its time. */
static void ring__next_sample(struct perf_session *s, struct perf_thread *t)
{
	uint64_t size;
	const uint8_t *data = ring__data(s, t, &size);
	struct perf_event_header h;
	uint64_t time;

	t->ready = false;
	while (t->head - t->tail >= sizeof(h)) {
		ring__copy(data, size, t->tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > t->head - t->tail) {
			/* A record cannot be framed: nothing after it can be either. */
			s->stats.malformed++;
			t->tail = t->head;
			break;
		}
		if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(h) + PERF_SAMPLE_TIME_AT + 8) {
			ring__copy(data, size, t->tail + sizeof(h) + PERF_SAMPLE_TIME_AT, &time,
				   sizeof(time));
			t->next_time = time;
			t->ready = true;
			return;
		}
		session__record(s, &h, data, size, t->tail, NULL, NULL);
		t->tail += h.size;
	}
	ring__release(t);
}

/* Deliver t's next sample (ring__next_sample found it) and step to the one after. */
static int ring__deliver(struct perf_session *s, struct perf_thread *t, perf_sample_fn fn,
			 void *ctx)
{
	uint64_t size;
	const uint8_t *data = ring__data(s, t, &size);
	struct perf_event_header h;
	int delivered;

	ring__copy(data, size, t->tail, &h, sizeof(h));
	delivered = session__record(s, &h, data, size, t->tail, fn, ctx);
	t->tail += h.size;
	ring__release(t);
	ring__next_sample(s, t);
	return delivered;
}

static void perf_thread__close(struct perf_session *s, struct perf_thread *t)
{
	if (t->fd >= 0)
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, t->fd, NULL);
	if (t->map && t->map != MAP_FAILED)
		munmap(t->map, t->map_len);
	if (t->fd >= 0)
		close(t->fd);
}

/* Drop thread i (its fd reported hang-up: the thread exited). */
static void session__drop(struct perf_session *s, size_t i)
{
	perf_thread__close(s, &s->threads[i]);
	s->n--;
	s->threads[i] = s->threads[s->n];
	s->stats.threads_gone++;
}

static void session__mark_hung_up(struct perf_session *s, pid_t tid)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->threads[i].tid == tid)
			s->threads[i].hung_up = true;
	}
}

int perf_session__poll(struct perf_session *s, int timeout_ms, perf_sample_fn fn, void *ctx)
{
	struct epoll_event ev[PERF_EPOLL_BATCH];
	int rc, delivered = 0;

	if (!s || !fn)
		return -EINVAL;
	rc = epoll_wait(s->epfd, ev, PERF_EPOLL_BATCH, timeout_ms);
	if (rc < 0 && errno != EINTR)
		return -errno;
	for (int k = 0; k < rc; k++) {
		if (ev[k].events & (EPOLLHUP | EPOLLERR))
			session__mark_hung_up(s, (pid_t)ev[k].data.u64);
	}
	/* Every ring, not just the ready ones: reading a data_head costs nothing. */
	for (size_t i = 0; i < s->n; i++) {
		struct perf_thread *t = &s->threads[i];

		t->head = __atomic_load_n(&((struct perf_event_mmap_page *)t->map)->data_head,
					  __ATOMIC_ACQUIRE);
		t->tail = ((struct perf_event_mmap_page *)t->map)->data_tail; /* only we write it */
		ring__next_sample(s, t);
	}
	/* Oldest first across the rings, so that a consumer pairing samples with other
	 * time-ordered data (kcapture) sees them in the order they were taken. */
	for (;;) {
		struct perf_thread *first = NULL;

		for (size_t i = 0; i < s->n; i++) {
			if (s->threads[i].ready &&
			    (!first || s->threads[i].next_time < first->next_time))
				first = &s->threads[i];
		}
		if (!first)
			break;
		if (ring__deliver(s, first, fn, ctx) && delivered < INT_MAX)
			delivered++;
	}
	/* Drained first: an exited thread's last samples are still in its buffer. */
	for (size_t i = 0; i < s->n;) {
		if (s->threads[i].hung_up) {
			session__drop(s, i);
			continue;
		}
		i++;
	}
	return delivered;
}

void perf_session__on_switch(struct perf_session *s, perf_switch_fn fn, void *ctx)
{
	s->on_switch = fn;
	s->switch_ctx = ctx;
}

const struct perf_stats *perf_session__stats(const struct perf_session *s)
{
	return s ? &s->stats : NULL;
}

size_t perf_session__nthreads(const struct perf_session *s)
{
	return s ? s->n : 0;
}

void perf_session__free(struct perf_session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		perf_thread__close(s, &s->threads[i]);
	if (s->epfd >= 0)
		close(s->epfd);
	free(s->threads);
	free(s);
}
