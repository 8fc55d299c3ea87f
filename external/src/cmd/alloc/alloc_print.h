/* `extrospect alloc`'s output (alloc_print.c): a finished reading (alloc_view.h) as a table or
 * JSON, and the names of the --sort columns. */
#ifndef XP_ALLOC_PRINT_H
#define XP_ALLOC_PRINT_H

#include <stdio.h>

#include "alloc_view.h"
#include "json.h"

/* --sort's name of a column (the reverse, alloc__col_of, is in commands.h for cli.c). */
const char *alloc__col_name(enum alloc_col c);
void alloc__print_text(const struct alloc_ctx *c, FILE *f);
void alloc__print_json(const struct alloc_ctx *c, struct json *j);

#endif /* XP_ALLOC_PRINT_H */
