/* Aggregated stacks: interned frame names, and stack -> count per group (an Erlang process, or a
 * label such as "scheduler idle"). The reports (external/src/report/) read it; the sampler
 * fills it.
 * Does not own: producing frames (unwinding) or formatting. */
#ifndef XP_AGGREGATE_H
#define XP_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum frame_kind { FRAME_ERLANG = 0, FRAME_NATIVE, FRAME_JIT_GLOBAL, FRAME_LABEL };
/* Between the "key=value" labels of a label set (agg__labelset). */
#define AGG_LABEL_SEP '\x1f'

struct agg;

struct agg_stack {
	const uint32_t *frames; /* frame ids, root first */
	uint32_t nframes;
	uint32_t group; /* group id */
	uint32_t tag;	/* agg__add_tagged's tag, 0 by agg__add */
	uint64_t count;
};

int agg__new(struct agg **out);
/* Intern a frame name with its kind: the same (name, kind) always gives the same id. */
int agg__frame(struct agg *a, const char *name, enum frame_kind kind, uint32_t *id);
/* Intern a group name ("<0.123.0> rabbit_channel"). */
int agg__group(struct agg *a, const char *name, uint32_t *id);
/* Intern a label set, "key=value" pairs joined by AGG_LABEL_SEP: the same text always gives
 * the same id. agg__add_tagged's tag is such an id + 1 (0: no labels). */
int agg__labelset(struct agg *a, const char *text, uint32_t *id);
const char *agg__labelset_text(const struct agg *a, uint32_t id);
/* Add count samples of this stack (root first) in this group. -E2BIG for a stack of more than
 * 2^24 frames. */
int agg__add(struct agg *a, uint32_t group, const uint32_t *frames, uint32_t nframes,
	     uint64_t count);
/* The same with a tag the stack is kept apart by (pprof: its label set + 1); the formats that
 * show no tag merge stacks that differ only by it. */
int agg__add_tagged(struct agg *a, uint32_t group, uint32_t tag, const uint32_t *frames,
		    uint32_t nframes, uint64_t count);

const char *agg__frame_name(const struct agg *a, uint32_t id);
enum frame_kind agg__frame_kind(const struct agg *a, uint32_t id);
/* The file a native frame's code is in ("beam.smp", "libc.so.6", "xp_nif.so"), as the sampler
 * found it when it named the frame: the first one set is kept. NULL when not set. */
int agg__frame_set_module(struct agg *a, uint32_t id, const char *module);
const char *agg__frame_module(const struct agg *a, uint32_t id);
const char *agg__group_name(const struct agg *a, uint32_t id);
size_t agg__nframes(const struct agg *a);
size_t agg__ngroups(const struct agg *a);
uint64_t agg__total(const struct agg *a);
/* A frame's place in the order of distinct frame names (equal names, whatever their kinds, have
 * equal ranks), and a group's in the order of group names: integers that compare as the names
 * do. UINT32_MAX for an id not interned. Ranks change when names are added. */
uint32_t agg__frame_name_rank(const struct agg *a, uint32_t id);
uint32_t agg__group_rank(const struct agg *a, uint32_t id);
/* Is the iteration order also the order by names alone, as when no name was interned with two
 * kinds? (Then stacks that differ only by a frame's kind cannot interleave with others.) */
bool agg__order_by_names(const struct agg *a);
/* How many frames from the root stack i (in iteration order) has with the same ids as stack
 * i - 1, found by the sort: -1 when they are in other groups (or i is 0). */
long agg__same_as_last(const struct agg *a, size_t i);
/* Of the first n frame ids of p and q, how many from the first are the same: the index of the
 * first that differ, or n. Four ids a compare (the sort's and the reports' stack compares). */
uint32_t agg__ids_shared(const uint32_t *p, const uint32_t *q, uint32_t n);
/* Iterate distinct (group, stack) pairs in a stable order (group, then stack). */
size_t agg__nstacks(const struct agg *a);
void agg__stack(const struct agg *a, size_t i, struct agg_stack *out);
/* The id of the stack the last agg__add/agg__add_tagged counted (ids are dense, in insertion
 * order, stable for the aggregate's life), and that stack by its id. */
uint32_t agg__last_stack(const struct agg *a);
void agg__stack_by_id(const struct agg *a, uint32_t id, struct agg_stack *out);
/* About how many bytes the aggregate holds (its tables and names; malloc's overhead aside). */
size_t agg__bytes(const struct agg *a);
void agg__free(struct agg *a);

#endif /* XP_AGGREGATE_H */
