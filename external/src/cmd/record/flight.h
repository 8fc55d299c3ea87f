/* record --ring: the flight recorder. Samples as record does, holds the last --ring of them
 * (ring.c), and on a trigger (triggers.c, SIGUSR2) goes on for --after, then writes one dump
 * into DIR: the timeline (DIR/STAMP-TRIGGER.trace.json), the window's collapsed stacks (.folded)
 * and a one-screen summary (.txt), each complete or not at all. Also record --format trace's
 * input. Does not own: the sampling loop (run.c), the formats (report/). */
#ifndef XP_FLIGHT_H
#define XP_FLIGHT_H

#include <signal.h>
#include <stddef.h>

#include "cli.h"
#include "record/ring.h"
#include "report/trace.h"
#include "target.h"

/* Bytes a held sample costs (ring.h), for --help and the summary. */
#define FLIGHT_SAMPLE_BYTES 16

int cmd__record_ring(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop,
		     char *err, size_t errlen);
/* Every sample the ring holds as a trace's input (record --format trace). */
int flight__trace_all(struct ring *r, const struct cli_opts *o, struct trace_input *in);
/* The dump's one-screen summary (flight_summary.c). */
struct trig_event;
struct runq_watch;
/* rq: the run queues' readings, or NULL (the runs then say nothing of them). */
int flight__summary(struct trace_input *in, const struct trig_event *ev, int64_t offset_ns,
		    const char *partial, const struct runq_watch *rq, FILE *f);
/* "20261128T121500.123Z" for a wall-clock time in ns. */
void flight__stamp(int64_t wall_ns, char *buf, size_t len, bool compact);

#endif /* XP_FLIGHT_H */
