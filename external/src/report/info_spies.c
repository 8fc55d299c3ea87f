/* `info`'s view of the agent's spy threads: the region and each slot, text and JSON ("spies" key).
 * Does not own: reading and validating them (attach/spies.c). */
#include <inttypes.h>
#include <stdlib.h>

#include "info.h"
#include "json.h"
#include "spies.h"

static const char *policy_name(uint32_t p)
{
	return p == 0 ? "SCHED_IDLE" : p == 1 ? "SCHED_OTHER nice 19" : "SCHED_OTHER as the VM";
}

void spies__print_text(const struct target *t, FILE *f)
{
	struct spies_view *v = malloc(sizeof(*v));
	enum spies_status st;
	unsigned i;

	if (!v)
		return;
	st = spies__read(t, v);
	fprintf(f, "\nSpies\n");
	if (st != SPIES_OK) {
		fprintf(f, "  none: %s\n", spies__status_str(st));
		free(v);
		return;
	}
	fprintf(f, "  %u spies (region v%u, %s, slots at 0x%" PRIx64 ", lease %" PRIu64 " ms)\n",
		v->region.nslots, v->region.version, policy_name(v->region.policy),
		v->region.slots_addr, v->region.lease_ns / 1000000);
	for (i = 0; i < v->region.nslots; i++) {
		const struct xp_spy_slot *s = &v->slot[i];

		fprintf(f, "  xp_spy_%-3u tid %-7d %-10s loops %" PRIu64, i + 1, s->tid,
			spies__state_name(s->state), s->loops);
		if (s->target)
			fprintf(f, " at 0x%" PRIx64 " every %" PRIu64 " us, owner %" PRIu64,
				s->target, s->interval_ns / 1000, s->owner);
		fputc('\n', f);
	}
	free(v);
}

void spies__print_json(const struct target *t, struct json *j)
{
	struct spies_view *v = malloc(sizeof(*v));
	enum spies_status st = v ? spies__read(t, v) : SPIES_BLOCK_GONE;
	unsigned i;

	json__key(j, "spies");
	json__object(j);
	json__kv_string(j, "status", st == SPIES_OK ? "ok" : spies__status_str(st));
	if (st == SPIES_OK) {
		json__kv_int(j, "version", v->region.version);
		json__kv_string(j, "policy",
				v->region.policy == 0	? "idle"
				: v->region.policy == 1 ? "other"
							: "normal");
		json__kv_addr(j, "slots", v->region.slots_addr);
		json__kv_int(j, "lease_ms", (int64_t)(v->region.lease_ns / 1000000));
		json__key(j, "threads");
		json__array(j);
		for (i = 0; i < v->region.nslots; i++) {
			json__object(j);
			json__kv_int(j, "tid", v->slot[i].tid);
			json__kv_string(j, "state", spies__state_name(v->slot[i].state));
			json__kv_addr(j, "target", v->slot[i].target);
			json__kv_int(j, "interval_ns", (int64_t)v->slot[i].interval_ns);
			json__kv_int(j, "owner", (int64_t)v->slot[i].owner);
			json__kv_int(j, "generation", (int64_t)v->slot[i].generation);
			json__kv_int(j, "loops", (int64_t)v->slot[i].loops);
			json__end_object(j);
		}
		json__end_array(j);
	}
	json__end_object(j);
	free(v);
}
