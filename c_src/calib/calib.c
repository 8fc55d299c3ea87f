/* Recording calibration evidence: how a discovery, a passed table check or a failure changes
 * what is known about one offset. The rules are in one place so every scan applies them alike.
 * Callers hold agent->lock. Does not own: the scans themselves (calib_*.c). */
#include <string.h>

#include "agent.h"

void calib__reset(struct calib *c)
{
	unsigned i;

	memset(c, 0, sizeof(*c));
	c->layout_obs = XP_LAYOUT_UNKNOWN;
	c->jit_layout = -1;
	c->dynsym_layout = -1;
	c->jit_caller_slot = -1;
	c->msg_len_candidate = -1;
	for (i = 0; i < XP_ADDR_COUNT; i++)
		c->addr[i].reason = XP_WHY_NOT_FOUND;
}

/* A second scan that finds another value makes the offset ambiguous for good. */
void calib__found(struct calib *c, enum xp_off_id id, int64_t value, const char *note)
{
	struct disc *d = &c->off[id];

	if (d->state == DISC_FOUND && d->value != value) {
		d->state = DISC_FAILED;
		d->reason = XP_WHY_AMBIGUOUS;
		d->note = "two scans found different values";
		return;
	}
	if (d->state == DISC_FAILED &&
	    (d->reason == XP_WHY_AMBIGUOUS || d->reason == XP_WHY_CHECK_FAILED))
		return;
	d->state = DISC_FOUND;
	d->value = value;
	d->reason = XP_WHY_NONE;
	d->note = note;
}

void calib__table_ok(struct calib *c, const struct xp_layout *row, enum xp_off_id id,
		     const char *note)
{
	struct disc *d = &c->off[id];

	if (!row || row->off[id] == XP_ABSENT)
		return;
	if (d->state == DISC_NONE || (d->state == DISC_FAILED && d->reason == XP_WHY_NOT_FOUND)) {
		d->state = DISC_TABLE_OK;
		d->value = row->off[id];
		d->reason = XP_WHY_NONE;
		d->note = note;
	}
}

/* A contradiction (check failed, ambiguous) always wins; "not found" only fills a blank. */
void calib__fail(struct calib *c, enum xp_off_id id, enum xp_reason why, const char *note)
{
	struct disc *d = &c->off[id];
	int contradiction = why == XP_WHY_CHECK_FAILED || why == XP_WHY_AMBIGUOUS;

	if (d->state == DISC_NONE || (contradiction && d->state != DISC_FAILED)) {
		d->state = DISC_FAILED;
		d->reason = (uint8_t)why;
		d->note = note;
	}
}

void calib__check(struct calib *c, uint32_t bit, int ok)
{
	c->checks_run |= bit;
	if (!ok)
		c->checks_failed |= bit;
	if (ok && !(c->checks_failed & bit))
		c->checks_passed |= bit;
	c->checks_passed &= ~c->checks_failed;
}

int32_t calib__off(const struct calib *c, const struct xp_layout *row, enum xp_off_id id)
{
	const struct disc *d = &c->off[id];

	if (d->state == DISC_FOUND || d->state == DISC_TABLE_OK)
		return (int32_t)d->value;
	if (row && row->off[id] != XP_ABSENT)
		return row->off[id];
	return -1;
}

void calib__from_bits(struct calib *c, const struct xp_layout *row, enum xp_off_id id,
		      const uint64_t *bits, unsigned nbits, unsigned unit, const char *note)
{
	unsigned i, n = 0, first = 0;
	int32_t t = row ? row->off[id] : XP_ABSENT;

	for (i = 0; i < nbits; i++) {
		if (!(bits[i / 64] & (1ull << (i % 64))))
			continue;
		if (n++ == 0)
			first = i;
	}
	if (n == 1) {
		calib__found(c, id, (int64_t)first * unit, note);
	} else if (n > 1 && t >= 0 && t % (int32_t)unit == 0 && (unsigned)t / unit < nbits &&
		   (bits[(unsigned)t / unit / 64] & (1ull << ((unsigned)t / unit % 64)))) {
		calib__table_ok(c, row, id, note);
	} else if (n > 1) {
		calib__fail(c, id, XP_WHY_AMBIGUOUS,
			    "several candidates, the table's value is not one of them");
	} else {
		/* Nothing fits every observation, so neither does the table's value. */
		calib__fail(c, id, t >= 0 ? XP_WHY_CHECK_FAILED : XP_WHY_NOT_FOUND,
			    "no candidate satisfied every observation");
	}
}

/* sizeof(Process): the 'proc' fix-alloc type (erlang:system_info({allocator, fix_alloc})) holds
 * a whole number of Process structs, so its byte count is a multiple of the size. Accepted only
 * when no other multiple of 8 within 64 bytes of the table's value divides it as well. */
void calib__sizeof(struct calib *c, const struct xp_layout *row, const uint64_t *used, unsigned n)
{
	int32_t t = row ? row->off[XP_OFF_P_SIZEOF] : XP_ABSENT;
	unsigned i, nz = 0;
	int32_t s;

	for (i = 0; i < n; i++)
		nz += used[i] != 0;
	if (t <= 0 || nz == 0) {
		calib__fail(c, XP_OFF_P_SIZEOF, XP_WHY_UNCHECKABLE,
			    "no allocator statistics (or no table value) to check it against");
		return;
	}
	for (s = t - 64; s <= t + 64; s += 8) {
		int all = s > 0;

		for (i = 0; i < n && all; i++)
			all = used[i] == 0 || used[i] % (uint64_t)s == 0;
		if (s == t && !all) {
			calib__fail(c, XP_OFF_P_SIZEOF, XP_WHY_CHECK_FAILED,
				    "the proc fix-alloc byte count is not a multiple of it");
			return;
		}
		if (s != t && all) {
			calib__fail(c, XP_OFF_P_SIZEOF, XP_WHY_UNCHECKABLE,
				    "the proc fix-alloc byte count does not single it out");
			return;
		}
	}
	calib__table_ok(c, row, XP_OFF_P_SIZEOF,
			"the only multiple of 8 near it dividing the proc fix-alloc byte count");
}

/* Words past the end of a Process struct belong to a neighbouring allocation, often a freed
 * Process whose stale fields (same heap address, same pid pattern) would make every scan
 * ambiguous. Scan only sizeof(Process) when the table knows it (it is itself checked later
 * against the allocator), the whole window otherwise. */
size_t calib__scan_bytes(const struct xp_layout *row)
{
	int32_t n = row ? row->off[XP_OFF_P_SIZEOF] : XP_ABSENT;

	return n >= 256 && n <= PROC_SCAN_BYTES ? (size_t)n & ~(size_t)7 : PROC_SCAN_BYTES;
}

void calib__hit(int *slot, int k)
{
	*slot = *slot == CALIB_NOT_FOUND ? k : CALIB_AMBIGUOUS;
}

void calib__record(struct calib *c, enum xp_off_id id, int k, int64_t value, const char *note)
{
	if (k >= 0)
		calib__found(c, id, value, note);
	else
		calib__fail(c, id, k == CALIB_AMBIGUOUS ? XP_WHY_AMBIGUOUS : XP_WHY_NOT_FOUND,
			    note);
}
