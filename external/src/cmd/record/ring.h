/* The flight recorder's memory (record --ring, and record --format trace): every kept sample's
 * time, scheduler and stack, the stack interned in the sampler's aggregate so that a sample costs
 * 16 bytes whatever its depth. Aggregates are generations: the sampler is given a fresh one every
 * window, and a generation is freed once no held sample is in it, so memory is bounded by about
 * two windows of samples and their distinct stacks. Also what a window turns into: the trace's
 * input, collapsed stacks. Does not own: sampling (run.c), triggers (triggers.c), writing files. */
#ifndef XP_RING_H
#define XP_RING_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "aggregate.h"
#include "report/trace.h"
#include "sampler.h"
#include "target.h"

#define RING_GENS 8

struct ring_sample {
	uint64_t time_ns; /* perf's clock: CLOCK_MONOTONIC */
	uint32_t stack;	  /* in its generation's aggregate */
	uint16_t sched;	  /* index into the target's schedulers */
	uint8_t gen;	  /* generation slot */
	uint8_t flags;	  /* RING_F_* */
};
#define RING_F_PROCESS 1u
#define RING_F_GC      2u

/* A scheduler thread went off its CPU (preempted or blocked) or back on (perf's switch records). */
struct ring_switch {
	uint64_t time_ns;
	uint16_t sched;
	uint8_t kind; /* enum trace_switch_kind */
};

struct ring_gen {
	struct agg *agg;
	uint8_t *gc; /* per frame id: 0 not looked at, 1 not a GC frame, 2 a GC frame */
	size_t ngc;
	uint64_t held; /* samples held in it */
	bool used;
};

struct ring {
	struct ring_sample *s; /* s[head..n) held, oldest first */
	size_t head, n, cap;
	struct ring_switch *sw; /* sw[swhead..nsw) held, oldest first */
	size_t swhead, nsw, capsw;
	struct ring_gen gen[RING_GENS];
	unsigned cur;
	uint64_t window_ns;    /* 0: hold every sample */
	uint64_t keep_from_ns; /* a pending dump's start: nothing newer is evicted */
	uint64_t gen_start_ns; /* when the current generation began (CLOCK_MONOTONIC) */
	const struct target *t;
	uint64_t added, evicted;
	bool have_switches;   /* a switch record was seen */
	bool records_lost;    /* the kernel dropped records (ring__turn reads it) */
	char clock_note[200]; /* the last ring__input's clock mapping, in words */
};

/* The ring takes agg (the sampler's, until the first rotation) as its first generation. */
int ring__init(struct ring *r, const struct target *t, struct agg *agg, uint64_t window_ns);
void ring__free(struct ring *r);
/* A sample_record_fn: ctx is the ring. Samples of threads that are not schedulers are skipped. */
void ring__on_record(const struct sample_record *rec, void *ctx);
/* A perf_switch_fn: ctx is the ring. */
void ring__on_switch(uint32_t tid, uint64_t time, bool out, bool preempt, void *ctx);
/* The same, returning the scheduler's index, or -1 when it is not held. */
int ring__switch(struct ring *r, uint32_t tid, uint64_t time, bool out, bool preempt);
/* The same: true when it is held (a scheduler's, and memory for it), as r->s[r->n - 1]. */
bool ring__hold(struct ring *r, const struct sample_record *rec);
/* Evict what is older than now - window (keep_from_ns aside); once a window has passed, give the
 * sampler a new generation. 0 or -ENOMEM. */
int ring__turn(struct ring *r, struct sampler *s, uint64_t now_ns);
/* Bytes held: the samples' array and every generation's aggregate. */
size_t ring__bytes(const struct ring *r);
size_t ring__held(const struct ring *r);
/* The oldest and newest held sample's time (0, 0 when none). */
void ring__span(const struct ring *r, uint64_t *oldest, uint64_t *newest);

/* CLOCK_REALTIME - CLOCK_MONOTONIC, read now as the tightest of a few brackets; *err_ns is that
 * bracket's half width. Steps of the wall clock after the reading are not followed. */
int64_t ring__clock_offset(int64_t *err_ns);
uint64_t ring__now_ns(void);

/* "scheduler 3", "dirty cpu scheduler 1" */
void ring__thread_name(const struct target_sched *sch, char *buf, size_t len);

/* The samples in [from_ns, to_ns] (CLOCK_MONOTONIC) as a trace's input, times moved to the wall
 * clock by offset_ns. Threads and samples are allocated: ring__input_free. */
int ring__input(struct ring *r, uint64_t from_ns, uint64_t to_ns, int64_t offset_ns,
		uint32_t freq_hz, struct trace_input *in);
void ring__input_free(struct trace_input *in);
/* The Erlang processes' samples of the input as a fresh aggregate, with --group pid roots. */
int ring__input_agg(const struct trace_input *in, struct agg **out);

#endif /* XP_RING_H */
