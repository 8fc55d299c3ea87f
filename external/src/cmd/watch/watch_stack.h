/* The stack under a resume point (watch_stack.c). */
#ifndef XP_WATCH_STACK_H
#define XP_WATCH_STACK_H

#include <stddef.h>
#include <stdint.h>

struct watch_stacks;
struct target;
struct process_reader;
int watch_stack__new(struct watch_stacks **out, struct target *t, const struct process_reader *pr);
/* P's callers, innermost first, "a/1 <- b/2", when P is still parked at resume address i and
 * did not move while its stack was read: 0, -EAGAIN (moved, running, elsewhere), -ENOMEM. */
int watch_stack__read(struct watch_stacks *s, uint64_t proc, uint64_t i, char *buf, size_t len);
void watch_stack__free(struct watch_stacks *s);

#endif /* XP_WATCH_STACK_H */
