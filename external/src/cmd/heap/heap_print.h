/* `extrospect heap`'s output (heap_print.c): a finished reading (heap.h) as a table or JSON. */
#ifndef XP_HEAP_PRINT_H
#define XP_HEAP_PRINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "heap.h"
#include "json.h"

/* Bytes as 1023B, 9.5K, 12K, 4.0M, 1.2G: one decimal below 10 by the value as printed (10,210
 * bytes is "10K", not "10.0K" beside another row's "10K"). */
void heap__human(uint64_t b, char *buf, size_t len);

/* The top o->limit rows and the totals. */
void heap__print_text(const struct heap_ctx *c, FILE *f);
void heap__print_json(const struct heap_ctx *c, struct json *j);

#endif /* XP_HEAP_PRINT_H */
