/* xp_bare_sampler PID HZ SECONDS: the least any perf_event sampler makes a VM pay. It samples every
 * thread of PID on the cpu-clock at HZ, as `extrospect record` does, but asks for the IP alone
 * (no registers, no stack, no capture program) and throws the samples away. bench/run times the VM
 * beside it, so that the report can tell the cost of the sampling interrupt itself from the cost of
 * what a sampler records. Stops on SIGTERM or after SECONDS; prints the samples seen on stderr. */
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BARE_MAX_THREADS 1024
#define BARE_RING_PAGES	 8 /* 32 KiB of 24-byte records: 0.1 s at 10 kHz per thread */
#define BARE_POLL_MS	 50

struct bare {
	struct pollfd fds[BARE_MAX_THREADS];
	struct perf_event_mmap_page *rings[BARE_MAX_THREADS];
	int n;
	size_t map_bytes;
	uint64_t samples;
};

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
	stop_flag = 1;
}

static int bare__open_thread(struct bare *b, int tid, int hz)
{
	struct perf_event_attr a = {
	    .size = sizeof(a),
	    .type = PERF_TYPE_SOFTWARE,
	    .config = PERF_COUNT_SW_CPU_CLOCK,
	    .freq = 1,
	    .sample_freq = (uint64_t)hz,
	    .sample_type = PERF_SAMPLE_IP,
	    .exclude_kernel = 1,
	    .watermark = 1,
	    .wakeup_watermark = (uint32_t)(b->map_bytes - (size_t)sysconf(_SC_PAGESIZE)) / 2,
	};
	int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	void *ring;

	if (fd < 0)
		return -errno;
	ring = mmap(NULL, b->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED) {
		close(fd);
		return -errno;
	}
	b->fds[b->n] = (struct pollfd){.fd = fd, .events = POLLIN};
	b->rings[b->n++] = ring;
	return 0;
}

/* Opens every thread of pid; threads that exit meanwhile are skipped. */
static int bare__open(struct bare *b, int pid, int hz)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int err = 0;

	b->map_bytes = (size_t)(BARE_RING_PAGES + 1) * (size_t)sysconf(_SC_PAGESIZE);
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d)) && b->n < BARE_MAX_THREADS) {
		int tid = atoi(e->d_name);

		if (tid <= 0)
			continue;
		err = bare__open_thread(b, tid, hz);
		if (err == -ESRCH)
			err = 0;
		if (err)
			break;
	}
	closedir(d);
	return err ? err : (b->n ? 0 : -ESRCH);
}

/* Counts the samples in every ring and frees the space. Headers are 8-byte aligned and the data
 * area is a power of two, so a header never wraps. */
static void bare__drain(struct bare *b)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), size = b->map_bytes - page;

	for (int i = 0; i < b->n; i++) {
		struct perf_event_mmap_page *m = b->rings[i];
		const uint8_t *data = (const uint8_t *)m + page;
		uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE),
			 pos = m->data_tail;

		while (pos < head) {
			const struct perf_event_header *h =
			    (const void *)(data + (pos & (size - 1)));

			if (h->size < sizeof(*h))
				break; /* cannot happen; do not spin on it */
			b->samples += h->type == PERF_RECORD_SAMPLE;
			pos += h->size;
		}
		__atomic_store_n(&m->data_tail, head, __ATOMIC_RELEASE);
	}
}

static double mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct bare b = {0};
	double until;
	int pid, hz, err;

	if (argc != 4 || (pid = atoi(argv[1])) <= 0 || (hz = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: xp_bare_sampler PID HZ SECONDS\n");
		return 2;
	}
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	err = bare__open(&b, pid, hz);
	if (err) {
		fprintf(stderr, "xp_bare_sampler: cannot sample pid %d: %s\n", pid, strerror(-err));
		return 1;
	}
	until = mono_s() + atof(argv[3]);
	while (!stop_flag && mono_s() < until) {
		poll(b.fds, (nfds_t)b.n, BARE_POLL_MS);
		bare__drain(&b);
	}
	bare__drain(&b);
	fprintf(stderr, "xp_bare_sampler: %llu samples on %d threads\n",
		(unsigned long long)b.samples, b.n);
	return 0;
}
