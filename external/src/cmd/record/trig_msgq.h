/* The msgq trigger (record --ring --trigger msgq=NAME:N): the message queue of the process
 * registered as NAME reached N, read from outside. The process is found once in the process
 * table (every registered process's name read; again at most once a second while it is not
 * found, or after it exited), then its Process is read every TRIG_MSGQ_EVERY_MS: one
 * process_vm_readv of a few hundred bytes. OTP 27+ (OTP 25 keeps no queue length). Fires once
 * per crossing: again only after the queue fell under N / 2. Does not own: the other triggers
 * (triggers.c). */
#ifndef XP_TRIG_MSGQ_H
#define XP_TRIG_MSGQ_H

#include <stdbool.h>
#include <stdint.h>

#include "process.h"
#include "ptab.h"
#include "target.h"
#include "triggers.h"

#define TRIG_MSGQ_EVERY_MS 100

struct msgq_watch {
	struct target *t;
	struct process_reader pr;
	struct ptab ptab;
	const char *name;
	int64_t limit;
	uint64_t addr, pid; /* the process while found, else 0 */
	uint64_t next_read_ns, next_find_ns;
	bool armed;
	uint64_t reads, scans;
};

/* 0, or a negative errno with err saying why (no queue length on this OTP, no process table). */
int msgq__init(struct msgq_watch *w, struct target *t, const char *name, int64_t limit, char *err,
	       size_t errlen);
/* Called often (each turn of the sampling loop): reads when due; true when it fired (*ev). */
bool msgq__check(struct msgq_watch *w, uint64_t now_ns, struct trig_event *ev);

#endif /* XP_TRIG_MSGQ_H */
