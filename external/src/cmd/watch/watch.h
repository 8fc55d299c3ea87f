/* `extrospect watch`: one Erlang process's wall time by state and function, from spy snapshots
 * (watch.c), and its report (watch_report.c). Does not own: the spies (spies.c). */
#ifndef XP_WATCH_H
#define XP_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* process_info(P, status) terms, with garbage_collecting shortened. */
enum watch_state {
	WS_RUNNING = 0,
	WS_RUNNABLE,
	WS_WAITING,
	WS_GC,
	WS_SUSPENDED,
	WS_EXITING,
	WS_COUNT
};

enum watch_end {
	WATCH_END_DURATION = 0,
	WATCH_END_INTERRUPTED,
	WATCH_END_PROCESS_EXITED,
	WATCH_END_VM_EXITED,
	WATCH_END_LEASE_LOST,
};

struct watch_counts {
	uint64_t taken;	       /* snapshots of P used */
	uint64_t off_target;   /* the spy switched out away from P's struct (preempted, parked) */
	uint64_t unreadable;   /* the copy was too short to hold P's pid and state */
	uint64_t heap_in_flux; /* P's, but its heap fields inconsistent (GC, exit): state only */
	uint64_t not_process;  /* the struct no longer held P's pid */
	uint64_t other;	       /* samples of another thread (none expected) */
	uint64_t lost;	       /* perf records the kernel dropped */
};

#define WATCH_HIST_BUCKETS 24 /* runnable episodes: [0, 2) us, [2, 4) us, ... */
/* The same, 16 buckets per power of two (exact below 16 us); the last also holds any longer. */
#define WATCH_FINE_BUCKETS (16 + (WATCH_HIST_BUCKETS - 4) * 16)

/* Runnable episodes (watch_hist.c): add one of us microseconds to fine[WATCH_FINE_BUCKETS]; the
 * counts per power of two; the q quantile (0 < q <= 1) in us, interpolated in its bucket (0
 * when empty). */
void watch_hist__add(uint64_t *fine, uint64_t us);
void watch_hist__log2(const uint64_t *fine, uint64_t out[WATCH_HIST_BUCKETS]);
double watch_hist__quantile(const uint64_t *fine, double q);

/* Process.state -> state; -ESRCH when the struct is being freed (P is gone). */
int watch__classify(uint32_t state, enum watch_state *out);
const char *watch__state_name(enum watch_state s);

/* The stack under a resume point (watch_stack.c). */
struct watch_stacks;
struct target;
struct process_reader;
int watch_stack__new(struct watch_stacks **out, struct target *t, const struct process_reader *pr);
/* P's callers, innermost first, "a/1 <- b/2", when P is still parked at resume address i and
 * did not move while its stack was read: 0, -EAGAIN (moved, running, elsewhere), -ENOMEM. */
int watch_stack__read(struct watch_stacks *s, uint64_t proc, uint64_t i, char *buf, size_t len);
void watch_stack__free(struct watch_stacks *s);

/* P's on-CPU functions from scheduler samples (watch_cpu.c). */
struct watch_cpu;
struct watch_cpu_fn {
	const char *name; /* innermost Erlang function */
	uint64_t samples;
};
/* hz: scheduler samples a second (0: 997, record's default). */
int watch_cpu__new(struct watch_cpu **out, struct target *t, const char *pid_text, unsigned hz,
		   char *err, size_t errlen);
/* Poll the sampler (up to timeout_ms). NULL is a no-op. */
int watch_cpu__poll(struct watch_cpu *c, int timeout_ms);
/* The JIT map, which the sampler shares, brought up to date (sampler__refresh_code). */
void watch_cpu__refresh_code(struct watch_cpu *c);
/* Each of P's samples also as a line "c TIME_NS FUNCTION" in f (NULL: none; not closed here). */
void watch_cpu__set_timeline(struct watch_cpu *c, FILE *f);
/* The max functions with the most samples, most first; *total counts all of P's samples. */
size_t watch_cpu__functions(const struct watch_cpu *c, struct watch_cpu_fn *out, size_t max,
			    uint64_t *total);
void watch_cpu__free(struct watch_cpu *c);

/* What the report prints. rows are (state, function) pairs with their time. */
struct watch_report_row {
	enum watch_state state;
	const char *fn;
	const char *stack; /* callers, "" when not read */
	uint64_t ns, n;
};

struct watch_report {
	const char *pid_text, *name, *end, *method;
	int spy_tid;
	unsigned spy_index;
	uint64_t interval_ns, wall_ns;
	struct watch_counts c;
	const struct watch_report_row *rows;
	size_t nrows;
	uint64_t runq_hist[WATCH_HIST_BUCKETS]; /* runnable episodes by duration, log2 us */
	double runq_median_us, runq_p90_us;	/* from the fine histogram; 0 without episodes */
};

void watch__print_text(const struct watch_report *r, FILE *f);
/* The same time as a flame graph whose roots are the states: "<pid> name" -> state -> function,
 * weighted in microseconds. format: enum cli_format. 0 or -errno. */
int watch__write_graph(const struct watch_report *r, const char *path, int format);
void watch__print_json(const struct watch_report *r, FILE *f);

#endif /* XP_WATCH_H */
