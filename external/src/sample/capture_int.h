/* Shared by capture.c and capture_trim.c only: making a capture smaller before it is written. */
#ifndef XP_CAPTURE_INT_H
#define XP_CAPTURE_INT_H

#include "capfile.h"
#include "jitmap.h"

/* Leave out of f's pool the symfiles of JIT modules that no word of any sample points into. */
int capture__trim_jit(struct capfile *f, const struct jitmap *m);
/* Cut s's in-kernel stack copy after its first bottom word (normal_exit; in the FP layout
 * after a zero frame pointer), as the sampler reads such a copy (sampler.c stack_from_copy). */
void capture__trim_kstack(struct cap_sample *s, uint64_t normal_exit, bool fp);

/* Cut s's in-kernel stack copy below E, which the sampler never reads. */
void capture__trim_kstack_front(struct cap_sample *s, uint64_t e);

#endif /* XP_CAPTURE_INT_H */
