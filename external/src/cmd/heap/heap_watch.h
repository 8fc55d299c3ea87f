/* `extrospect heap --watch SECONDS` (heap_watch.c). */
#ifndef XP_HEAP_WATCH_H
#define XP_HEAP_WATCH_H

#include "heap.h"

/* Readings every o->watch_s seconds until *stop or o->duration_s. */
int heap__watch(struct heap_ctx *c);

#endif /* XP_HEAP_WATCH_H */
