/* The vm library's process and process-table readers, set up from an attached target. Does not
 * own: the readers themselves (vm/process.h, vm/ptab.h). */
#ifndef XP_READERS_H
#define XP_READERS_H

#include <stddef.h>

#include "process.h"
#include "ptab.h"

struct target;

/* Prepare a reader from an attached target. -ENOTSUP when the Process offsets it needs are not
 * known (no layout row and no agent). */
int process__reader(struct process_reader *r, const struct target *t);
/* Read the pid encoding of a target (layout row + process table). */
void process__pid_format(struct pid_format *f, const struct target *t);
/* Find and check the table. When it was found by a scan, t->addr[XP_ADDR_PROCESS_TABLE] is set
 * (source "scan") so pid text can be decoded. 0, or -ENOENT / -ENOTSUP with why explaining. */
int ptab__locate(struct target *t, struct ptab *out, char *why, size_t whylen);

#endif /* XP_READERS_H */
