/* `extrospect alloc`'s reading (alloc_cmd.c, which owns the command): the allocators summed per
 * type into an alloc_ctx (alloc_view.h). Does not own: the Allctr_t reader (vm/alloc.c), finding
 * it (attach/alloc_locate.c), printing (alloc_print.h). */
#ifndef XP_ALLOC_CMD_H
#define XP_ALLOC_CMD_H

#include "alloc_view.h"

int alloc__read_all(struct alloc_ctx *c);
void alloc__ctx_free(struct alloc_ctx *c);

#endif /* XP_ALLOC_CMD_H */
