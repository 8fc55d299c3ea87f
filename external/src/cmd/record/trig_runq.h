/* The runq trigger (record --ring --trigger runq=N) and the run-queue lengths a dump's summary
 * gives: how many processes wait in each normal scheduler's run queue, read from outside. Each
 * queue (ErtsRunQueue, through its scheduler's ErtsSchedulerData.run_queue) is read every
 * TRIG_RUNQ_EVERY_MS at most (at turns of the sampling loop, 20 to 100 ms apart): one
 * process_vm_readv of a few hundred bytes per scheduler. Every read is
 * checked before it is believed: the queue's ix is its scheduler's number - 1, its scheduler
 * field points back at that scheduler's data, and the lengths lie in [0, 2^27]. A queue whose
 * first read fails the check refuses the trigger (fail closed). Fires once per crossing: again
 * only after every queue fell under N / 2. Does not own: the other triggers (triggers.c). */
#ifndef XP_TRIG_RUNQ_H
#define XP_TRIG_RUNQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"
#include "target.h"
#include "triggers.h"

#define TRIG_RUNQ_EVERY_MS 20	/* at most: reads come at turns of the sampling loop (<= 50 ms) */
#define RUNQ_HISTORY	   4096 /* readings kept for the summary: 82 s at 20 ms */
#define RUNQ_PRIO_LEVELS   4	/* ERTS_NO_PROC_PRIO_LEVELS: max, high, normal, low */

struct runq_q {
	size_t sched;	   /* index in t->sched */
	uint64_t esdp, rq; /* rq 0 until read from esdp */
	bool verified;
};

struct runq_watch {
	struct target *t;
	struct runq_q *q;
	size_t nq, span; /* span: bytes read of each queue */
	uint8_t *buf;
	struct mem_req *reqs;
	int64_t limit; /* 0: only kept for the summary */
	bool armed, refused;
	char why[200]; /* when refused */
	uint64_t next_read_ns;
	uint64_t *h_time; /* RUNQ_HISTORY readings: time, then nq lengths each */
	uint32_t *h_len;
	size_t h_next, h_count;
	uint64_t reads, bad;
};

/* 0, or -ENOTSUP / -ENOMEM with err saying why (no offsets for the run queues on this VM, a
 * first read that fails its checks). limit 0: read for the summary only. */
int runq__init(struct runq_watch *w, struct target *t, int64_t limit, char *err, size_t errlen);
void runq__free(struct runq_watch *w);
/* Called each turn of the sampling loop: reads when due. 1 when the trigger fired (*ev), 0,
 * or -ENOTSUP when a queue's first read failed its checks (w->why says why). */
int runq__check(struct runq_watch *w, uint64_t now_ns, struct trig_event *ev);
/* The most processes seen waiting in scheduler thread SCHED's (index in t->sched) run queue
 * between from_ns and to_ns (CLOCK_MONOTONIC), or -1 when no reading covers it. */
int64_t runq__max_in(const struct runq_watch *w, size_t sched, uint64_t from_ns, uint64_t to_ns);

#endif /* XP_TRIG_RUNQ_H */
