/* Recording a live run for offline replay (`extrospect capture`): every memory read the sampler
 * makes, the native unwind, the in-kernel capture record, native names and modules, and the
 * stack each sample resolved to, kept for at most max samples that produced a stack; reads of
 * the samples left out serve the rest (caches warmed by them). Owns the recording; the file
 * format is capfile.h's. Does not own: sampling (run.c, sampler.c). */
#ifndef XP_CAPTURE_H
#define XP_CAPTURE_H

#include <stddef.h>

#include "aggregate.h"
#include "sampler.h"
#include "target.h"

struct capture;

/* Start recording t's memory reads (a tap on t->mem) and re-read its JIT map through it, so
 * that the map replayed is the one sampled with. 0 or -errno. */
int capture__new(struct target *t, const struct sampler_opts *o, struct agg *agg, size_t max,
		 struct capture **out);
/* The hooks to give the sampler, and the on_record callback (with its ctx) for opts. */
void capture__hooks(struct capture *c, struct sampler_hooks *h);
void capture__on_record(const struct sample_record *r, void *ctx);
size_t capture__nsamples(const struct capture *c);
int capture__write(struct capture *c, const char *path);
/* Stops the tap. */
void capture__free(struct capture *c);

#endif /* XP_CAPTURE_H */
