/* uprobes on functions of one ELF file (beam.smp), each hit a perf sample: one event per probe and
 * CPU (system-wide: the hits of every process mapping the file, which the reader filters by pid),
 * all of a CPU's events writing into that CPU's ring. A sample holds the probe, pid, tid,
 * CLOCK_MONOTONIC time and the user registers that carry a call's first two arguments (rdi,
 * rsi) and a return value (rax). Needs root or CAP_PERFMON (perf_event_paranoid <= 0 otherwise).
 * Does not own: where the functions are (the caller gives file offsets), what a hit means. */
#ifndef XP_UPROBE_H
#define XP_UPROBE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define UPROBE_MAX 16

struct uprobe_spec {
	uint64_t offset; /* in the file */
	bool ret;	 /* a uretprobe: fires when the function returns */
};

struct uprobe_hit {
	unsigned probe; /* index into the specs */
	pid_t pid, tid;
	uint64_t time_ns;
	uint64_t ax, si, di;
	unsigned cpu;
};

typedef void (*uprobe_fn)(const struct uprobe_hit *h, void *ctx);

struct uprobe_set;

/* Open n probes (n <= UPROBE_MAX) on path, one per online CPU each, rings of ring_pages pages
 * (a power of two). 0, -EACCES/-EPERM (not permitted), -ENOENT (no uprobe PMU), -errno. */
int uprobe_set__open(struct uprobe_set **out, const char *path, const struct uprobe_spec *specs,
		     unsigned n, unsigned ring_pages);
/* Enable every event (they open disabled). */
int uprobe_set__enable(struct uprobe_set *u);
/* Read every ring to the head it had when the drain began, calling fn per hit in time order across
 * the CPUs' rings (merged: a thread moved to another CPU mid-call has its entry in one ring and its
 * return in another). */
void uprobe_set__drain(struct uprobe_set *u, uprobe_fn fn, void *ctx);
/* Hits the kernel dropped (PERF_RECORD_LOST), and records not understood. */
uint64_t uprobe_set__lost(const struct uprobe_set *u);
uint64_t uprobe_set__bad(const struct uprobe_set *u);
void uprobe_set__free(struct uprobe_set *u);

#endif /* XP_UPROBE_H */
