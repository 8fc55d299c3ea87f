/* The vm library's process and process-table readers, set up from an attached target. Does not
 * own: the readers themselves (vm/process.h, vm/ptab.h). */
#ifndef XP_READERS_H
#define XP_READERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Scan the named sections of beam.smp (each read whole, up to TARGET_SCAN_MAX bytes) for the
 * 8-byte aligned addresses whose need bytes ok accepts: 0 with the one found, -ENOENT, -EEXIST
 * (more than one; the scan stops at TARGET_SCAN_MAX_HITS), -ENOMEM. */
#define TARGET_SCAN_MAX	     (16u << 20)
#define TARGET_SCAN_MAX_HITS 4u
typedef bool (*target_scan_fn)(struct target *t, uint64_t addr, const uint8_t *b, void *ctx);
int target__scan_data(struct target *t, const char *const *sections, size_t nsections, size_t need,
		      target_scan_fn ok, void *ctx, uint64_t *found);

#endif /* XP_READERS_H */
