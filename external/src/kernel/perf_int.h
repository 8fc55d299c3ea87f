/* What perf.c (opening the events and their rings), perf_ring.c (draining the rings) and
 * perf_record.c (the record parser) share, and nothing else. */
#ifndef XP_PERF_INT_H
#define XP_PERF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "perf.h"

#define PERF_DEFAULT_PAGES  16
#define PERF_MAX_PAGES	    (1u << 16)
#define PERF_MAX_STACK	    65528u /* the kernel wants sample_stack_user < USHRT_MAX, 8-aligned */
#define PERF_MAX_RECORD	    65536u /* perf_event_header.size is a u16 */
#define PERF_SAMPLE_FIXED   512u   /* a sample without its stack copy: ids, 17 registers, sizes */
#define PERF_EPOLL_BATCH    64
#define PERF_SAMPLE_TIME_AT 16 /* in a sample body: ip, then pid and tid, then time */
/* Every record other than a sample ends with the sample_id of sample_id_all: pid and tid, time,
 * cpu and a reserved word (the TID, TIME and CPU bits of PERF_SAMPLE_LAYOUT). */
#define PERF_SAMPLE_ID_BYTES 24u
#define PERF_HUP_CHECK_NS    1000000000ull /* shared rings: how often exited threads are found */
#define PERF_RING_TAG	     (1ull << 62)  /* epoll data of a shared ring's owner: tag | cpu */

#define PERF_SAMPLE_LAYOUT                                                                         \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |                   \
	 PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)

/* One mmap ring: a thread's own (per-thread mode), or a CPU's, shared by every thread's event on
 * that CPU (shared mode, its owner an event of the sampler's own on that CPU). */
struct perf_ring {
	int fd; /* the event that owns the mapping */
	int cpu;
	pid_t tid;    /* per-thread mode: the thread; shared: 0 */
	uint8_t *map; /* the metadata page, then 2^n data pages */
	size_t map_len;
	/* During a poll: the read window, and the next sample's time when ready. */
	uint64_t head, tail, next_time;
	uint64_t last_time; /* the last sample read from it: where a loss window starts */
	bool ready;
};

struct perf_thread {
	pid_t tid;
	int *fds; /* one per CPU (shared rings), or one */
	size_t nfds;
	bool hung_up; /* the thread exited: drop it once its ring is drained */
};

struct perf_session {
	struct perf_opts opts;
	struct perf_thread *threads;
	struct perf_ring *rings;
	int *cpus; /* shared mode: the online CPUs, one ring each */
	size_t ncpus;
	int epfd; /* per-thread: every thread's fd (data.u64 = tid); shared: the rings' owners */
	size_t n, cap, nrings, rings_cap;
	size_t page_size;
	uint64_t regs_mask;
	uint64_t last_hup_check, last_drain_end;
	struct perf_stats stats;
	perf_switch_fn on_switch; /* opts.switches */
	void *switch_ctx;
	uint8_t scratch[PERF_MAX_RECORD]; /* a record that wraps the ring's end, made contiguous */
};

/* The sample_regs_user mask of the registers in enum perf_reg. */
uint64_t perf__regs_mask(void);
/* perf_ring.c: the online CPUs (/sys/devices/system/cpu/online), malloc'd. 0 or -errno. */
int perf__online_cpus(int **out, size_t *n);
/* perf_ring.c: shared mode's exited threads (their fds hung up), found without epoll. */
void perf__check_hangups(struct perf_session *s);
/* perf.c: drop the threads that hung up (their rings drained first). */
void perf__drop_hung_up(struct perf_session *s);

#endif /* XP_PERF_INT_H */
