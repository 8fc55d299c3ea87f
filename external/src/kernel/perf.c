/* perf_event_open sampling of chosen threads of another process, opened here: one event per
 * thread with a ring of its own, or (shared rings) one event per thread and CPU, each CPU's
 * events writing into one ring owned by a dummy event of the sampler's own on that CPU. Owns the
 * fds, the mappings and the counters; draining the rings is perf_ring.c, the record parser
 * perf_record.c. Does not own: choosing the threads (proc.c) or what a sample means (unwinding,
 * Erlang stacks). Never ptraces, signals or writes the target: the kernel does all the reading. */
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

uint32_t perf__ring_pages(uint32_t freq_hz, uint32_t stack_bytes, double seconds, size_t page_size)
{
	double bytes = (double)freq_hz * (stack_bytes + PERF_SAMPLE_FIXED) * seconds;
	uint32_t pages = PERF_RING_MIN_PAGES;

	if (!page_size)
		return pages;
	while ((double)pages * (double)page_size < bytes &&
	       (uint64_t)pages * 2 * page_size <= PERF_RING_MAX_BYTES)
		pages *= 2;
	return pages;
}

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

/* What every event of the session has: the ring's records must all be laid out alike. */
static void perf__attr_common(const struct perf_session *s, struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->sample_type = PERF_SAMPLE_LAYOUT;
	a->sample_regs_user = s->regs_mask;
	a->sample_stack_user = s->opts.stack_bytes;
	a->sample_id_all = 1; /* a LOST record says when (PERF_SAMPLE_ID_BYTES) */
	a->exclude_hv = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC; /* comparable with the target's own clock_gettime */
}

/* The owner of a ring read in batches (wakeup_events 0) wakes a waiting poll when 1/PERF_WAKE_PART
 * of it is full, so that a sampler woken late still finds room: the ring's other half,
 * PERF_RING_SECONDS_BATCHED / 2 at the rate it was sized for. */
static void perf__attr_watermark(const struct perf_session *s, struct perf_event_attr *a)
{
	a->watermark = 1;
	a->wakeup_watermark =
	    (uint32_t)((uint64_t)s->opts.mmap_pages * s->page_size / PERF_WAKE_PART);
}

static int perf__event_open(const struct perf_session *s, pid_t tid, int cpu)
{
	struct perf_event_attr a;
	long fd;

	perf__attr_common(s, &a);
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
	a.wakeup_events = s->opts.wakeup_events;
	if (!s->opts.wakeup_events && !s->opts.shared_rings) /* it owns its ring */
		perf__attr_watermark(s, &a);
	a.disabled = 1; /* enabled once its ring buffer exists */
	/* Time in the kernel on a thread's behalf (page faults of a growing heap, syscalls) is
	 * that thread's: sampled unless asked not to or not permitted (perf_event_paranoid >= 2
	 * without CAP_PERFMON), then each sample still carries the user-mode registers. A context
	 * switch (a spy's snapshot) happens in the kernel. */
	a.exclude_kernel =
	    s->opts.event != PERF_EV_CTX_SWITCH && (s->opts.user_only || s->stats.kernel_excluded);
	/* A switch record's body is the sample_id trailer (sample_id_all, set for every event:
	 * pid, tid, time, cpu for PERF_SAMPLE_LAYOUT). */
	a.context_switch = s->opts.switches;
	fd = syscall(SYS_perf_event_open, &a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0)
		return (int)fd;
	/* No PMU for the generic hardware event (typical in VMs): say so in one way. */
	if (s->opts.event == PERF_EV_CYCLES &&
	    (errno == ENOENT || errno == EOPNOTSUPP || errno == ENODEV))
		return -ENOENT;
	return -errno;
}

/* A shared ring's owner: a dummy event of this thread's on that CPU, which samples nothing (a
 * thread's own events may be anyone's output, and this one never exits before the session). */
static int perf__owner_open(const struct perf_session *s, int cpu)
{
	struct perf_event_attr a;
	long fd;

	perf__attr_common(s, &a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	perf__attr_watermark(s, &a);
	a.exclude_kernel = 1;
	fd = syscall(SYS_perf_event_open, &a, 0, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	return fd >= 0 ? (int)fd : -errno;
}

/* One fd per thread (and CPU): thousands can pass the soft limit; raise it to the hard one. */
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

/* The event for tid (on cpu, or any), retried without the kernel's samples when they are not
 * permitted, and past the soft fd limit. */
static int perf__thread_open(struct perf_session *s, pid_t tid, int cpu)
{
	int fd = perf__event_open(s, tid, cpu);

	if ((fd == -EACCES || fd == -EPERM) && !s->stats.kernel_excluded) {
		s->stats.kernel_excluded = true;
		fd = perf__event_open(s, tid, cpu);
	}
	if (fd == -EMFILE && perf__raise_nofile() == 0)
		fd = perf__event_open(s, tid, cpu);
	return fd;
}

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
	void *q;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? 2 * *cap : 16;
	q = realloc(*p, c * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* Map fd's ring and watch it (epoll data: tag). 0 or -errno; fd stays the caller's on error. */
static int session__map_ring(struct perf_session *s, int fd, int cpu, pid_t tid, uint64_t tag)
{
	struct perf_ring r = {.fd = fd, .cpu = cpu, .tid = tid};
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};
	int err;

	if ((err = grow((void **)&s->rings, &s->rings_cap, s->nrings, sizeof(r))))
		return err;
	r.map_len = (1 + (size_t)s->opts.mmap_pages) * s->page_size;
	r.map = mmap(NULL, r.map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r.map == MAP_FAILED)
		return -errno;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		err = -errno;
		munmap(r.map, r.map_len);
		return err;
	}
	s->rings[s->nrings++] = r;
	return 0;
}

int perf_session__wake_on(struct perf_session *s, int fd)
{
	/* Tagged as a ring, so that no hang-up of it is taken for a thread's. */
	struct epoll_event ev = {.events = EPOLLIN | EPOLLET,
				 .data.u64 = PERF_RING_TAG | UINT32_MAX};

	if (!s || fd < 0)
		return -EINVAL;
	return epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* Start one of a thread's events: output to its CPU's ring (shared), the program, enable. */
static int session__start_event(struct perf_session *s, int fd, size_t ring)
{
	if (ring < s->nrings && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s->rings[ring].fd))
		return -errno;
	/* Without the program the thread is still sampled: its samples have no capture. */
	if (s->opts.bpf_prog_fd > 0 && ioctl(fd, PERF_EVENT_IOC_SET_BPF, s->opts.bpf_prog_fd))
		s->stats.bpf_unattached++;
	return ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) ? -errno : 0;
}

static void perf_thread__close(struct perf_thread *t)
{
	for (size_t i = 0; i < t->nfds; i++) {
		if (t->fds[i] >= 0)
			close(t->fds[i]);
	}
	free(t->fds);
	t->fds = NULL;
	t->nfds = 0;
}

/* tid's events, one per CPU into that CPU's ring (shared), or one with a ring of its own. On
 * error the fds opened are in t->fds (perf_thread__close), a ring of its own in s->rings. */
static int session__open_thread(struct perf_session *s, struct perf_thread *t)
{
	bool shared = s->opts.shared_rings;
	size_t want = shared ? s->ncpus : 1;
	int err, fd;

	t->fds = calloc(want, sizeof(*t->fds));
	if (!t->fds)
		return -ENOMEM;
	while (t->nfds < want) {
		fd = perf__thread_open(s, t->tid, shared ? s->cpus[t->nfds] : -1);
		if (fd < 0)
			return fd;
		t->fds[t->nfds++] = fd;
		if (!shared && (err = session__map_ring(s, fd, -1, t->tid, (uint64_t)t->tid)))
			return err;
		if ((err = session__start_event(s, fd, shared ? t->nfds - 1 : SIZE_MAX)))
			return err;
	}
	return 0;
}

/* Ring i goes: unmapped (its fd is closed by its owner), the last ring takes its place. */
static void session__drop_ring(struct perf_session *s, size_t i)
{
	munmap(s->rings[i].map, s->rings[i].map_len);
	s->rings[i] = s->rings[--s->nrings];
}

/* 0, -ESRCH (the thread is gone), -EEXIST, or the error of the open/mmap/enable. */
static int session__attach(struct perf_session *s, pid_t tid)
{
	struct perf_thread t = {.tid = tid};
	int err;

	for (size_t i = 0; i < s->n; i++) {
		if (s->threads[i].tid == tid)
			return -EEXIST;
	}
	if ((err = grow((void **)&s->threads, &s->cap, s->n, sizeof(t))))
		return err;
	err = session__open_thread(s, &t);
	if (err) {
		if (!s->opts.shared_rings && s->nrings && s->rings[s->nrings - 1].tid == tid)
			session__drop_ring(s, s->nrings - 1);
		perf_thread__close(&t);
		return err;
	}
	s->threads[s->n++] = t;
	return 0;
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

/* Drop the threads whose events hung up (they exited), once their rings are drained. */
void perf__drop_hung_up(struct perf_session *s)
{
	for (size_t i = 0; i < s->n;) {
		struct perf_thread *t = &s->threads[i];

		if (!t->hung_up) {
			i++;
			continue;
		}
		for (size_t r = 0; !s->opts.shared_rings && r < s->nrings; r++) {
			if (s->rings[r].tid == t->tid) {
				session__drop_ring(s, r);
				break;
			}
		}
		perf_thread__close(t); /* closing an fd takes it out of the epoll set */
		s->threads[i] = s->threads[--s->n];
		s->stats.threads_gone++;
	}
}

/* Shared mode: one ring per online CPU, owned by a dummy event. Any error: the caller goes
 * back to a ring per thread. */
static int session__open_cpu_rings(struct perf_session *s)
{
	int err, fd;

	if ((err = perf__online_cpus(&s->cpus, &s->ncpus)))
		return err;
	for (size_t i = 0; i < s->ncpus; i++) {
		fd = perf__owner_open(s, s->cpus[i]);
		if (fd < 0)
			return fd;
		if ((err = session__map_ring(s, fd, s->cpus[i], 0, PERF_RING_TAG | i))) {
			close(fd);
			return err;
		}
	}
	return 0;
}

static void session__close_all(struct perf_session *s)
{
	for (size_t i = 0; i < s->n; i++)
		perf_thread__close(&s->threads[i]);
	s->n = 0;
	while (s->nrings) {
		if (s->opts.shared_rings)
			close(s->rings[s->nrings - 1].fd);
		session__drop_ring(s, s->nrings - 1);
	}
	free(s->cpus);
	s->cpus = NULL;
	s->ncpus = 0;
}

/* A ring per thread: at most PERF_THREAD_RINGS_MAX_BYTES for them all, each no smaller than the
 * smallest ring the opts allow (perf__check_opts). */
static void session__budget_thread_rings(struct perf_session *s, size_t ntids)
{
	uint64_t min_bytes = 2ull * (s->opts.stack_bytes + PERF_SAMPLE_FIXED);

	while (s->opts.mmap_pages > PERF_RING_MIN_PAGES &&
	       (uint64_t)ntids * s->opts.mmap_pages * s->page_size > PERF_THREAD_RINGS_MAX_BYTES &&
	       (uint64_t)s->opts.mmap_pages / 2 * s->page_size >= min_bytes)
		s->opts.mmap_pages /= 2;
}

static int session__open_all(struct perf_session *s, const pid_t *tids, size_t ntids)
{
	int err;

	if (s->opts.shared_rings && (err = session__open_cpu_rings(s)))
		return err;
	if (!s->opts.shared_rings)
		session__budget_thread_rings(s, ntids);
	for (size_t i = 0; i < ntids; i++) {
		err = perf_session__add_thread(s, tids[i]);
		if (err && err != -ESRCH && err != -EEXIST)
			return err;
	}
	return s->n ? 0 : -ESRCH;
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
	err = session__open_all(s, tids, ntids);
	/* Shared rings refused (or an fd each per CPU is too many): a ring per thread. Not when
	 * the refusal is the privilege's or the locked memory's, which a ring per thread needs as
	 * much. */
	if (err && err != -ESRCH && err != -EPERM && err != -EACCES && s->opts.shared_rings) {
		session__close_all(s);
		memset(&s->stats, 0, sizeof(s->stats));
		s->stats.kernel_excluded = s->opts.user_only;
		s->opts.shared_rings = false;
		err = session__open_all(s, tids, ntids);
	}
	if (err)
		goto cleanup;
	s->stats.rings = (uint32_t)s->nrings;
	s->stats.ring_bytes = (uint64_t)s->opts.mmap_pages * s->page_size;
	s->stats.shared_rings = s->opts.shared_rings;
	s->last_hup_check = s->last_drain_end = s->stats.opened_ns = perf__now_ns();
	*out = s;
	return 0;
cleanup:
	perf_session__free(s);
	return err;
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
	session__close_all(s);
	if (s->epfd >= 0)
		close(s->epfd);
	free(s->threads);
	free(s->rings);
	free(s);
}
