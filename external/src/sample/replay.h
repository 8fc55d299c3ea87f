/* Replaying a capture (capture.h, capfile.h) offline: a target and a sampler rebuilt from the
 * file, memory served from the recorded reads, the unwind, in-kernel capture and native names
 * from the recorded results, and each sample resolved by the sampler's own resolve(). No VM, no
 * root, no ELF files. Does not own: the per-sample algorithm (sampler.c). */
#ifndef XP_REPLAY_H
#define XP_REPLAY_H

#include <stddef.h>

#include "capfile.h"

struct replay;

/* 0, or -errno / -EPROTO (a malformed file) with err saying why. */
int replay__open(const char *path, struct replay **out, char *err, size_t errlen);
const struct capfile *replay__file(const struct replay *r);
/* Resolve the next sample (in file order: the sampler's caches depend on it). *got is its
 * stack as live would print it ("" when it kept none), *expected the one recorded live.
 * Valid until the next call. -ENOENT after the last. */
int replay__next(struct replay *r, const char **got, const char **expected);
void replay__free(struct replay *r);

#endif /* XP_REPLAY_H */
