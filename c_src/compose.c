/* Turning the facts, the calibration record and the table row into the block the sampler reads:
 * per value, discovered beats table, a table value is VERIFIED only when a run-time check passed,
 * and a value without evidence is published FROM_TABLE with the reason (fail closed). Without a
 * table row only discovered values are published. Does not own: the publication protocol. */
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "compose.h"
#include "spy.h"

static void compose_offset(const struct agent *a, enum xp_off_id id, struct xp_value *v)
{
	const struct disc *d = &a->calib.off[id];
	int32_t t = a->row ? a->row->off[id] : XP_ABSENT;

	memset(v, 0, sizeof(*v));
	switch (d->state) {
	case DISC_FOUND:
		v->value = d->value;
		v->flags = XP_VAL_PRESENT | XP_VAL_VERIFIED;
		if (a->row && t != d->value)
			v->flags |= XP_VAL_MISMATCH;
		return;
	case DISC_TABLE_OK:
		v->value = t;
		v->flags = XP_VAL_PRESENT | XP_VAL_VERIFIED | XP_VAL_FROM_TABLE;
		return;
	default:
		break;
	}
	v->reason = d->state == DISC_FAILED ? d->reason : XP_WHY_NOT_FOUND;
	if (t == XP_ABSENT) {
		v->reason = a->row ? XP_WHY_UNSUPPORTED : v->reason;
		return;
	}
	v->value = t;
	v->flags = XP_VAL_PRESENT | XP_VAL_FROM_TABLE;
	/* The run-time evidence contradicts the table: say so. */
	if (d->state == DISC_FAILED && d->reason == XP_WHY_CHECK_FAILED)
		v->flags |= XP_VAL_MISMATCH;
}

/* The layout named by system_version must agree with every other witness that ran. */
static uint32_t frame_layout(const struct agent *a, int calibrated)
{
	const struct calib *c = &a->calib;
	uint32_t l = a->facts.layout_from_version;

	if (a->facts.flavor != XP_FLAVOR_JIT)
		return XP_LAYOUT_UNKNOWN;
	if (!calibrated)
		return l;
	if (c->layout_obs != l || (c->jit_layout >= 0 && (uint32_t)c->jit_layout != l) ||
	    (c->dynsym_layout >= 0 && (uint32_t)c->dynsym_layout != l))
		return XP_LAYOUT_UNKNOWN;
	return l;
}

static void compose_sched(const struct agent *a, struct xp_agent_block *b)
{
	const struct facts *f = &a->facts;
	uint32_t i, n = f->n_normal + f->n_dirty_cpu + f->n_dirty_io;

	b->n_normal = f->n_normal;
	b->n_dirty_cpu = f->n_dirty_cpu;
	b->n_dirty_io = f->n_dirty_io;
	b->n_sched = n < XP_MAX_SCHED ? n : XP_MAX_SCHED;
	for (i = 0; i < b->n_sched; i++) {
		struct xp_sched *s = &b->sched[i];

		*s = a->calib.sched[i];
		if (i < f->n_normal) {
			s->type = XP_SCHED_NORMAL;
			s->number = i + 1;
		} else if (i < f->n_normal + f->n_dirty_cpu) {
			s->type = XP_SCHED_DIRTY_CPU;
			s->number = i - f->n_normal + 1;
		} else {
			s->type = XP_SCHED_DIRTY_IO;
			s->number = i - f->n_normal - f->n_dirty_cpu + 1;
		}
	}
}

static void compose_addrs(const struct agent *a, struct xp_agent_block *b)
{
	const struct calib *c = &a->calib;
	unsigned i;

	b->n_addrs = XP_ADDR_COUNT;
	for (i = 0; i < XP_ADDR_COUNT; i++) {
		b->addrs[i].value = c->addr[i].value;
		b->addrs[i].source = c->addr[i].value ? c->addr[i].source : XP_SRC_NONE;
		b->addrs[i].flags = c->addr[i].value
					? c->addr[i].flags
					: (c->addr[i].reason & 0xffu) << XP_VAL_REASON_SHIFT;
	}
	if (c->probe_proc) {
		b->addrs[XP_ADDR_PROBE_PROCESS].value = c->probe_proc;
		b->addrs[XP_ADDR_PROBE_PROCESS].source = XP_SRC_RUNTIME;
		/* calib__probe accepted a snapshot only if its pid word named the probe. */
		b->addrs[XP_ADDR_PROBE_PROCESS].flags = XP_VAL_PRESENT | XP_VAL_VERIFIED;
		b->probe_pid = c->probe_pid;
		b->probe_atom = c->probe_atom;
		memcpy(b->probe_atom_text, c->probe_atom_text, sizeof(b->probe_atom_text));
	}
}

void compose__block(const struct agent *a, struct xp_agent_block *b, uint64_t generation,
		    int calibrated)
{
	const struct facts *f = &a->facts;
	unsigned i;

	memset(b, 0, sizeof(*b));
	b->abi_version = XP_ABI_VERSION;
	b->size = sizeof(*b);
	b->generation = generation;
	b->os_pid = (int32_t)getpid();
	b->word_size = sizeof(void *);
	memcpy(b->otp_release, f->otp_release, sizeof(b->otp_release));
	memcpy(b->erts_version, f->erts_version, sizeof(b->erts_version));
	memcpy(b->system_version, f->system_version, sizeof(b->system_version));
	b->flavor = f->flavor;
	b->frame_layout = frame_layout(a, calibrated);
	b->checks_run = a->calib.checks_run;
	b->checks_passed = a->calib.checks_passed;
	b->n_offsets = XP_OFF_COUNT;
	for (i = 0; i < XP_OFF_COUNT; i++)
		compose_offset(a, (enum xp_off_id)i, &b->offsets[i]);
	compose_addrs(a, b);
	compose_sched(a, b);
	spies__region(a->spies, &b->spy);
	events__region(a->events, &b->tracer);
}
