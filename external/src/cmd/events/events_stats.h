/* events: the records of the agent's event tracer turned into counts, rates and latency
 * distributions per kind, VM-wide and per process: the distributions, the per-process state
 * machine (events_stats.c). Does not own: the rings (attach/evring.c), names (events_names.c),
 * printing (events_print.c). */
#ifndef XP_EVENTS_STATS_H
#define XP_EVENTS_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "extrospect_abi.h"

/* A distribution of durations in ns: a log-linear histogram, 2^sub_bits buckets per power of
 * two, a quantile being its bucket's middle: VM-wide sub_bits 6 (within 0.8 %), per process 4
 * (within 3 %, 2.4 KiB). Values up to 2^40 ns; the maximum is exact. */
#define DIST_VM_BITS   6
#define DIST_PROC_BITS 4
struct dist {
	uint64_t n, max_ns, sum_ns;
	uint32_t sub_bits; /* 0: not yet set (DIST_PROC_BITS) */
	uint32_t *b;	   /* allocated at the first value */
};
void dist__add(struct dist *d, uint64_t ns);
/* The value at quantile q (0..1) in ns (the bucket's upper edge); 0 when empty. */
uint64_t dist__quantile(const struct dist *d, double q);
void dist__free(struct dist *d);

enum ev_dist { ED_SEND = 0, ED_GC, ED_GC_MINOR, ED_GC_MAJOR, ED_SCHED, ED_COUNT };

/* One process as the events show it. */
struct evproc {
	uint64_t pid;
	uint64_t spawns, exits, sends, sends_to_running, migrations;
	uint64_t child_exits; /* exits of processes it spawned (in the window) */
	uint32_t parent;      /* index + 1 of the process that spawned it, 0 unknown */
	uint16_t exit_class;
	struct dist d[ED_COUNT];
	/* state while reading */
	uint8_t known;	 /* 0 until an in or out was seen */
	uint8_t running; /* between in and out */
	uint8_t out_how; /* enum xp_out_how */
	uint8_t gc_major;
	int16_t ring; /* of the last in, -1 */
	uint64_t out_ts, wake_ts, gc_ts;
	uint32_t npend; /* messages waiting for this process to run */
	uint64_t pend_ts[16];
	uint32_t pend_from[16]; /* the sender's index */
	char label[96];		/* name as shown, "" unknown */
	char pid_text[32];
};

/* xp_ev.arg of a collection's start and end when minor or major is not told (the uprobes
 * source): counted in the pauses, in neither kind's. */
#define EV_GC_KIND_UNKNOWN 0xffffu

/* One of the slowest events of a kind (--slowest). */
enum slow_kind { SLOW_GC = 0, SLOW_SCHED, SLOW_SEND, SLOW_KINDS };
struct slow_ev {
	uint64_t ns;	/* its duration */
	uint64_t ts;	/* when it ended, CLOCK_MONOTONIC */
	uint64_t pid;	/* the process that paused or waited (send: the receiver) */
	uint64_t other; /* send: the sender */
	uint8_t major;	/* gc: a major collection */
};

struct evstats {
	struct evproc *p; /* by index */
	size_t n, cap;
	uint32_t *slot; /* open addressing: index + 1, 0 empty */
	size_t nslots;
	uint64_t kinds[XP_EV_KIND_COUNT];
	uint64_t exit_class[XP_EXIT_CLASS_COUNT];
	uint64_t migrations, sends_to_running, untimed_sends, gc_unpaired;
	struct dist d[ED_COUNT];
	uint64_t t0, t1; /* the window, CLOCK_MONOTONIC ns */
	uint64_t sample_n;
	bool runq;	  /* schedule-outs say runnable or waiting (XP_TRACER_CAP_RUNQ) */
	unsigned slowest; /* how many of each kind to keep (0: none) */
	struct slow_ev *slow[SLOW_KINDS]; /* each sorted, longest first */
	unsigned nslow[SLOW_KINDS];
	/* held back until the watermark passes (cross-ring order) */
	struct xp_ev *held; /* seq holds the ring */
	size_t nheld, capheld;
	uint64_t out_of_window;
	bool oom;
};

/* slowest: how many of the longest collections, run-queue waits and message waits to keep. */
int evstats__init(struct evstats *s, unsigned slowest);
void evstats__free(struct evstats *s);
/* Keep one record (from a drain) until evstats__process passes its time. */
void evstats__hold(struct evstats *s, const struct xp_ev *ev, unsigned ring);
/* Process, in time order, every held record older than watermark. */
void evstats__process(struct evstats *s, uint64_t watermark);
struct evproc *evstats__find(struct evstats *s, uint64_t pid);
/* Records processed in the window, every kind. */
uint64_t evstats__records(const struct evstats *s);

#endif /* XP_EVENTS_STATS_H */
