/* `extrospect info`: what the sampler knows about an attached VM, as text or one JSON object.
 * Does not own: attaching or checking (target.c, checks.c). */
#ifndef XP_INFO_H
#define XP_INFO_H

#include <stdio.h>

#include "json.h"
#include "target.h"

void info__print_text(const struct target *t, FILE *f);
void info__print_json(const struct target *t, FILE *f);
/* The reads of the VM's memory that failed since attach, by reason: "memory_read_failures":
 * {"fault": N, ...} in a JSON object being written, or one text line (nothing when none). */
void info__json_mem_failures(const struct target *t, struct json *j);
void info__print_mem_failures(const struct target *t, FILE *f);

/* info_spies.c: the agent's spy threads, text and JSON ("spies" key). */
void spies__print_text(const struct target *t, FILE *f);
void spies__print_json(const struct target *t, struct json *j);

/* info_codeix.c: the active code index and the ranges table against the JIT map (t->codeix,
 * from target__check_codeix), text and JSON ("code_ranges" key). */
void codeix__print_text(const struct target *t, FILE *f);
void codeix__print_json(const struct target *t, struct json *j);

#endif /* XP_INFO_H */
