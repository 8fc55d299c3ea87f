/* P's on-CPU functions from scheduler samples (watch_cpu.c). */
#ifndef XP_WATCH_CPU_H
#define XP_WATCH_CPU_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "watch_view.h"

struct target;
struct watch_cpu;
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

#endif /* XP_WATCH_CPU_H */
