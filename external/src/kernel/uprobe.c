/* uprobe.h: the uprobe PMU's events (type from sysfs, the retprobe bit config:0), a ring per CPU
 * that the CPU's other events write into (PERF_EVENT_IOC_SET_OUTPUT), each sample led by its
 * event's id (PERF_SAMPLE_IDENTIFIER) to tell the probes apart. Every record from a ring is
 * untrusted: sizes bounded, a wrapped record copied out whole first. */
#include <asm/perf_regs.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "uprobe.h"

#define REGS_MASK                                                                                  \
	((1ull << PERF_REG_X86_AX) | (1ull << PERF_REG_X86_SI) | (1ull << PERF_REG_X86_DI))
#define REC_MAX 256 /* a sample is 8 * (1 + 1 + 1 + 1 + 3) + 8 bytes */

struct uprobe_ring {
	int fd; /* the first event on this CPU, whose ring the others write into */
	void *map;
	size_t map_len, data_len;
	/* Where a drain is: from tail to the head it read when it began, and the next hit there,
	 * parsed (have). */
	uint64_t head, tail;
	bool have;
	struct uprobe_hit next;
};

struct uprobe_set {
	unsigned n, ncpus;
	int *fds;      /* n * ncpus */
	uint64_t *ids; /* the kernel's id of each fd */
	struct uprobe_ring *rings;
	uint64_t lost, bad;
};

static int pmu_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	int t = -1;

	if (!f)
		return -ENOENT;
	if (fscanf(f, "%d", &t) != 1)
		t = -1;
	fclose(f);
	return t < 0 ? -ENOENT : t;
}

static int probe_open(int type, const char *path, const struct uprobe_spec *sp, int cpu)
{
	struct perf_event_attr a;
	long fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = (uint32_t)type;
	a.config = sp->ret ? 1 : 0; /* format/retprobe: config:0 */
	a.config1 = (uint64_t)(uintptr_t)path;
	a.config2 = sp->offset;
	a.sample_period = 1;
	a.sample_type =
	    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER;
	a.sample_regs_user = REGS_MASK;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.disabled = 1;
	a.watermark = 1;
	a.wakeup_watermark = 4096;
	fd = syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

static int ring_map(struct uprobe_ring *r, int fd, unsigned pages)
{
	long page = sysconf(_SC_PAGESIZE);

	r->fd = fd;
	r->data_len = (size_t)pages * (size_t)page;
	r->map_len = r->data_len + (size_t)page;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -errno;
	}
	return 0;
}

static int open_cpu(struct uprobe_set *u, int type, const char *path,
		    const struct uprobe_spec *specs, unsigned cpu, unsigned pages)
{
	for (unsigned i = 0; i < u->n; i++) {
		int fd = probe_open(type, path, &specs[i], (int)cpu), err;

		if (fd < 0)
			return fd;
		u->fds[cpu * u->n + i] = fd;
		if (ioctl(fd, PERF_EVENT_IOC_ID, &u->ids[cpu * u->n + i]))
			return -errno;
		err = i == 0
			  ? ring_map(&u->rings[cpu], fd, pages)
			  : (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, u->rings[cpu].fd) ? -errno : 0);
		if (err)
			return err;
	}
	return 0;
}

int uprobe_set__open(struct uprobe_set **out, const char *path, const struct uprobe_spec *specs,
		     unsigned n, unsigned ring_pages)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	struct uprobe_set *u;
	int type = pmu_type(), err = 0;

	*out = NULL;
	if (type < 0)
		return type;
	if (!n || n > UPROBE_MAX || cpus <= 0 || !ring_pages || (ring_pages & (ring_pages - 1)))
		return -EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->n = n;
	u->ncpus = (unsigned)cpus;
	u->fds = malloc(sizeof(*u->fds) * n * u->ncpus);
	u->ids = calloc(n * u->ncpus, sizeof(*u->ids));
	u->rings = calloc(u->ncpus, sizeof(*u->rings));
	if (!u->fds || !u->ids || !u->rings) {
		uprobe_set__free(u);
		return -ENOMEM;
	}
	for (size_t i = 0; i < (size_t)n * u->ncpus; i++)
		u->fds[i] = -1;
	for (unsigned c = 0; c < u->ncpus && !err; c++) {
		err = open_cpu(u, type, path, specs, c, ring_pages);
		/* An offline CPU (possible, not online): none of its events. */
		if (err == -ENODEV || (err == -EINVAL && c > 0))
			err = 0;
	}
	if (err) {
		uprobe_set__free(u);
		return err;
	}
	*out = u;
	return 0;
}

int uprobe_set__enable(struct uprobe_set *u)
{
	for (size_t i = 0; i < (size_t)u->n * u->ncpus; i++) {
		if (u->fds[i] >= 0 && ioctl(u->fds[i], PERF_EVENT_IOC_ENABLE, 0))
			return -errno;
	}
	return 0;
}

static int probe_of(const struct uprobe_set *u, unsigned cpu, uint64_t id)
{
	for (unsigned i = 0; i < u->n; i++) {
		if (u->ids[cpu * u->n + i] == id)
			return (int)i;
	}
	return -1;
}

/* One PERF_RECORD_SAMPLE: id, pid/tid, time, abi, ax, si, di (ascending register bits). */
static bool parse(struct uprobe_set *u, unsigned cpu, const uint8_t *b, size_t len,
		  struct uprobe_hit *h)
{
	uint64_t v[7]; /* id, pid|tid, time, abi, ax, si, di */
	int probe;

	if (len < sizeof(v)) {
		u->bad++;
		return false;
	}
	memcpy(v, b, sizeof(v));
	probe = probe_of(u, cpu, v[0]);
	if (probe < 0 || v[3] == PERF_SAMPLE_REGS_ABI_NONE) {
		u->bad++;
		return false;
	}
	*h = (struct uprobe_hit){.probe = (unsigned)probe,
				 .pid = (pid_t)(uint32_t)v[1],
				 .tid = (pid_t)(uint32_t)(v[1] >> 32),
				 .time_ns = v[2],
				 .ax = v[4],
				 .si = v[5],
				 .di = v[6],
				 .cpu = cpu};
	return true;
}

static void cursor_start(struct uprobe_ring *r)
{
	struct perf_event_mmap_page *m = r->map;

	r->head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
	r->tail = m->data_tail;
	if (r->head - r->tail > r->data_len) /* the kernel says more than the ring holds: resync */
		r->tail = r->head - r->data_len;
}

/* To the ring's next hit (r->have) or its head, counting lost and bad records on the way. */
static void cursor_next(struct uprobe_set *u, unsigned cpu)
{
	struct uprobe_ring *r = &u->rings[cpu];
	const struct perf_event_mmap_page *m = r->map;
	const uint8_t *data = (const uint8_t *)r->map + m->data_offset;
	uint8_t rec[REC_MAX];

	r->have = false;
	while (!r->have && r->tail + sizeof(struct perf_event_header) <= r->head) {
		struct perf_event_header hd;
		size_t off = r->tail % r->data_len, first;

		first = r->data_len - off < sizeof(hd) ? r->data_len - off : sizeof(hd);
		memcpy(&hd, data + off, first);
		memcpy((uint8_t *)&hd + first, data, sizeof(hd) - first);
		if (hd.size < sizeof(hd) || r->tail + hd.size > r->head) {
			u->bad++;
			r->tail = r->head;
			break;
		}
		if (hd.size <= REC_MAX) {
			first = r->data_len - off < hd.size ? r->data_len - off : hd.size;
			memcpy(rec, data + off, first);
			memcpy(rec + first, data, hd.size - first);
			if (hd.type == PERF_RECORD_SAMPLE)
				r->have =
				    parse(u, cpu, rec + sizeof(hd), hd.size - sizeof(hd), &r->next);
			else if (hd.type == PERF_RECORD_LOST && hd.size >= sizeof(hd) + 16)
				u->lost += *(const uint64_t *)(rec + sizeof(hd) + 8);
		} else {
			u->bad++;
		}
		r->tail += hd.size;
	}
}

/* The CPUs' rings merged by time: each ring is in time order, but a thread the OS moves to another
 * CPU between a call's entry and its return leaves them in two rings, and a reader pairing them
 * must see the entry first. */
void uprobe_set__drain(struct uprobe_set *u, uprobe_fn fn, void *ctx)
{
	for (unsigned c = 0; c < u->ncpus; c++) {
		u->rings[c].have = false;
		if (u->rings[c].map) {
			cursor_start(&u->rings[c]);
			cursor_next(u, c);
		}
	}
	for (;;) {
		unsigned first = u->ncpus;

		for (unsigned c = 0; c < u->ncpus; c++) {
			if (u->rings[c].have &&
			    (first == u->ncpus ||
			     u->rings[c].next.time_ns < u->rings[first].next.time_ns))
				first = c;
		}
		if (first == u->ncpus)
			break;
		fn(&u->rings[first].next, ctx);
		cursor_next(u, first);
	}
	for (unsigned c = 0; c < u->ncpus; c++) {
		struct perf_event_mmap_page *m = u->rings[c].map;

		if (m) /* the records read go back to the kernel */
			__atomic_store_n(&m->data_tail, u->rings[c].tail, __ATOMIC_RELEASE);
	}
}

uint64_t uprobe_set__lost(const struct uprobe_set *u)
{
	return u->lost;
}

uint64_t uprobe_set__bad(const struct uprobe_set *u)
{
	return u->bad;
}

void uprobe_set__free(struct uprobe_set *u)
{
	if (!u)
		return;
	for (unsigned c = 0; u->rings && c < u->ncpus; c++) {
		if (u->rings[c].map)
			munmap(u->rings[c].map, u->rings[c].map_len);
	}
	for (size_t i = 0; u->fds && i < (size_t)u->n * u->ncpus; i++) {
		if (u->fds[i] >= 0)
			close(u->fds[i]);
	}
	free(u->fds);
	free(u->ids);
	free(u->rings);
	free(u);
}
