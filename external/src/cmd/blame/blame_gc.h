/* `blame --gc`'s table: garbage collection per process (blame_gc.c). */
#ifndef XP_BLAME_GC_H
#define XP_BLAME_GC_H

#include <stdbool.h>
#include <stdio.h>

#include "aggregate.h"
#include "sampler.h"
#include "target.h"

struct blame_gc;

int blame_gc__new(const struct agg *a, const struct target *t, uint32_t freq_hz,
		  struct blame_gc **out);
void blame_gc__free(struct blame_gc *g);
/* Every kept sample, in order; gc: it ran in a GC frame. 0 or -ENOMEM. */
int blame_gc__add(struct blame_gc *g, const struct sample_record *r, bool gc);
void blame_gc__print(const struct blame_gc *g, unsigned limit, FILE *f);

#endif /* XP_BLAME_GC_H */
