/* Fields that only a parked process shows, read from the agent's long-lived probe process while
 * it waits in receive: i (its resume address, inside the probe function's JIT range), u.initial,
 * reg (through its RegProc), the message-queue length (changed between snapshots by sending it
 * messages it does not match) and state. P's struct is only ever read through mem__self_read
 * (vm/mem.h). Does not own: finding the JIT range (calib_scan.c) or driving the stages
 * (extrospect_agent). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "agent.h"
#include "calib_self.h"
#include "mem.h"

#define REGPROC_SCAN_WORDS 8

int calib__probe(struct agent *a, uint64_t proc, uint64_t pid, unsigned stage, int64_t expect,
		 int64_t reds)
{
	struct probe_snap *s;
	int32_t id_off;
	int err = 0;

	if (stage >= PROBE_STAGES)
		return -EINVAL;
	s = enif_alloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	s->nwords = mem__self_read_prefix(proc, s->w, calib__scan_bytes(a->row), 256) / 8;
	s->expect_len = expect;
	s->expect_reds = reds;
	s->valid = s->nwords > 0;
	enif_mutex_lock(a->lock);
	id_off = calib__off(&a->calib, a->row, XP_OFF_P_ID);
	if (!s->valid)
		err = -EFAULT;
	else if (id_off < 0 || (size_t)id_off / 8 >= s->nwords || s->w[id_off / 8] != pid)
		err = -ESRCH; /* not the probe's struct (stale address?) */
	if (!err) {
		a->calib.snap[stage] = *s;
		a->calib.probe_proc = proc;
		a->calib.probe_pid = pid;
	}
	enif_mutex_unlock(a->lock);
	enif_free(s);
	return err;
}

static size_t common_words(const struct calib *c, unsigned *nvalid)
{
	size_t n = PROC_SCAN_WORDS;
	unsigned i;

	*nvalid = 0;
	for (i = 0; i < PROBE_STAGES; i++) {
		if (!c->snap[i].valid)
			continue;
		(*nvalid)++;
		if (c->snap[i].nwords < n)
			n = c->snap[i].nwords;
	}
	return *nvalid ? n : 0;
}

/* i: the same word in every snapshot, inside the probe function's code. */
static void find_i(struct calib *c, size_t nw, uint64_t lo, uint64_t hi)
{
	const struct probe_snap *s0 = NULL;
	int k_hit = CALIB_NOT_FOUND;
	unsigned i;
	size_t k;

	for (i = 0; i < PROBE_STAGES && !s0; i++)
		if (c->snap[i].valid)
			s0 = &c->snap[i];
	for (k = 0; s0 && lo && k < nw; k++) {
		int all = s0->w[k] >= lo && s0->w[k] < hi;

		for (i = 0; i < PROBE_STAGES && all; i++)
			all = !c->snap[i].valid || c->snap[i].w[k] == s0->w[k];
		if (all)
			calib__hit(&k_hit, (int)k);
	}
	calib__record(c, XP_OFF_P_I, k_hit, k_hit * 8,
		      lo ? "the word inside the parked probe's receive function (GDB JIT map range)"
			 : "the probe function's range is not in the GDB JIT map");
}

static void find_initial_reg(struct calib *c, const struct probe_snap *s, uint64_t mod,
			     uint64_t fun, uint64_t name)
{
	uint64_t t[REGPROC_SCAN_WORDS];
	int k_init = CALIB_NOT_FOUND, k_reg = CALIB_NOT_FOUND, j_name = 0;
	size_t k, j, m, n;

	for (k = 0; k + 2 < s->nwords; k++)
		if (s->w[k] == mod && s->w[k + 1] == fun && s->w[k + 2] == 0)
			calib__hit(&k_init, (int)k);
	for (k = 0; k < s->nwords; k++) {
		uint64_t p = s->w[k];

		if ((p & 7) || !mem__plausible(p) || p == c->probe_proc)
			continue;
		n = mem__self_read_prefix(p, t, sizeof(t), sizeof(t)) / 8;
		for (j = 0; j < n && t[j] != name; j++)
			;
		for (m = 0; m < n && t[m] != c->probe_proc; m++)
			;
		if (j < n && m < n) {
			calib__hit(&k_reg, (int)k);
			j_name = (int)j;
		}
	}
	calib__record(c, XP_OFF_P_INITIAL, k_init, k_init * 8,
		      "the {module, function, 0} triple of the probe's spawn call");
	calib__record(c, XP_OFF_P_REG, k_reg, k_reg * 8,
		      "the pointer to a RegProc holding the probe's name and Process*");
	calib__record(c, XP_OFF_REGPROC_NAME, k_reg, j_name * 8,
		      "the name atom inside the RegProc");
}

static void find_msg_len(struct calib *c, const struct xp_layout *row, size_t nw)
{
	int k_hit = CALIB_NOT_FOUND;
	unsigned i, nstages = 0;
	size_t k;

	for (k = 0; k < nw; k++) {
		int all = 1;

		for (i = 0; i < PROBE_STAGES && all; i++)
			all =
			    !c->snap[i].valid || c->snap[i].w[k] == (uint64_t)c->snap[i].expect_len;
		if (all)
			calib__hit(&k_hit, (int)k);
	}
	for (i = 0; i < PROBE_STAGES; i++)
		nstages += c->snap[i].valid;
	if (nstages < 3)
		k_hit = CALIB_NOT_FOUND;
	c->msg_len_candidate = k_hit >= 0 ? k_hit * 8 : k_hit;
	if (row && row->off[XP_OFF_P_MSG_LEN] == XP_ABSENT) {
		calib__fail(c, XP_OFF_P_MSG_LEN, XP_WHY_UNSUPPORTED,
			    k_hit >= 0
				? "absent in the table for this release, though a word tracked "
				  "the queue length in the probe"
				: "absent in the table for this release");
		return;
	}
	calib__record(c, XP_OFF_P_MSG_LEN, k_hit, k_hit * 8,
		      "the word tracking the probe's queue length over 3+ snapshots");
}

/* reds: the word equal to the reductions Erlang read around each snapshot, in at least two
 * snapshots with different counts (the probe runs between stages), so a constant cannot match. */
static void find_reds(struct calib *c, size_t nw)
{
	int k_hit = CALIB_NOT_FOUND;
	int64_t lo = INT64_MAX, hi = -1;
	unsigned i, known = 0;
	size_t k;

	for (i = 0; i < PROBE_STAGES; i++) {
		int64_t r = c->snap[i].expect_reds;

		if (!c->snap[i].valid || r < 0)
			continue;
		known++;
		lo = r < lo ? r : lo;
		hi = r > hi ? r : hi;
	}
	for (k = 0; known >= 2 && lo < hi && k < nw; k++) {
		int all = 1;

		for (i = 0; i < PROBE_STAGES && all; i++)
			all = !c->snap[i].valid || c->snap[i].expect_reds < 0 ||
			      c->snap[i].w[k] == (uint64_t)c->snap[i].expect_reds;
		if (all)
			calib__hit(&k_hit, (int)k);
	}
	calib__record(c, XP_OFF_P_REDS, k_hit, k_hit * 8,
		      known >= 2 && lo < hi
			  ? "the word equal to the probe's reductions in every snapshot"
			  : "fewer than two snapshots with known, different reductions");
}

#define PDICT_PROBE_SLOTS 64 /* the probe's dictionary holds one entry: a small table */

/* Is p the probe's dictionary: a ProcDict (B/erl_process_dict.h 25-29) of one element whose
 * only used slot is the tuple {Name, Name} the probe put there (probe_loop/0)? */
static bool probe_dictionary(uint64_t p, uint64_t name)
{
	uint64_t slots[PDICT_PROBE_SLOTS], t[3];
	uint32_t sizes[4];
	uint64_t nelems, tuple = 0;
	unsigned i, used = 0;

	if ((p & 7) || !mem__plausible(p) || mem__self_read(p, sizes, sizeof(sizes)) ||
	    mem__self_read_u64(p + XP_PDICT_NUM_ELEMENTS, &nelems) || nelems != 1 || !sizes[2] ||
	    sizes[2] > PDICT_PROBE_SLOTS ||
	    mem__self_read(p + XP_PDICT_DATA, slots, sizes[2] * sizeof(slots[0])))
		return false;
	for (i = 0; i < sizes[2]; i++) {
		if (slots[i] == XP_TERM_NIL)
			continue;
		used++;
		tuple = slots[i];
	}
	return used == 1 && (tuple & XP_TAG_PRIMARY_MASK) == XP_TAG_BOXED &&
	       mem__self_read(tuple & ~(uint64_t)XP_TAG_PRIMARY_MASK, t, sizeof(t)) == 0 &&
	       t[0] == XP_TUPLE_HDR(2) && t[1] == name && t[2] == name;
}

/* dictionary: the word holding the same pointer in every snapshot, to the probe's dictionary. */
static void find_dictionary(struct calib *c, size_t nw, uint64_t name)
{
	int k_hit = CALIB_NOT_FOUND;
	unsigned i;
	size_t k;

	for (k = 0; k < nw; k++) {
		uint64_t p = 0;
		bool same = true;

		for (i = 0; i < PROBE_STAGES && same; i++) {
			if (!c->snap[i].valid)
				continue;
			same = !p || c->snap[i].w[k] == p;
			p = c->snap[i].w[k];
		}
		if (same && p && p != c->probe_proc && probe_dictionary(p, name))
			calib__hit(&k_hit, (int)k);
	}
	calib__record(c, XP_OFF_P_DICTIONARY, k_hit, k_hit * 8,
		      "the pointer to a ProcDict holding only the probe's {Name, Name}");
}

/* state: a 32-bit slot with normal priority, RUNNING in the calling process and not RUNNING in
 * the parked probe; neither FREE nor EXITING. */
static void find_state(struct calib *c, const struct xp_layout *row, size_t nw)
{
	uint64_t bits[STATE_SLOTS / 64];
	unsigned slot, i;

	memcpy(bits, c->state_bits, sizeof(bits));
	if (!c->state_bits_init)
		memset(bits, 0, sizeof(bits));
	for (slot = 0; slot < STATE_SLOTS; slot++) {
		int ok = slot < nw * 2;

		for (i = 0; i < PROBE_STAGES && ok; i++) {
			uint32_t v;

			if (!c->snap[i].valid)
				continue;
			memcpy(&v, (const char *)c->snap[i].w + slot * 4, 4);
			ok = (v & XP_PSFLG_PRIO_MASK) == XP_PSFLG_PRIO_NORMAL &&
			     !(v & (XP_PSFLG_RUNNING | XP_PSFLG_FREE | XP_PSFLG_EXITING));
		}
		if (!ok)
			bits[slot / 64] &= ~(1ull << (slot % 64));
	}
	calib__from_bits(
	    c, row, XP_OFF_P_STATE, bits, STATE_SLOTS, 4,
	    "priority bits of a normal process, RUNNING set in ours, clear in the probe");
}

void calib__probe_analyze(const struct agent *a, struct calib *c, uint64_t i_lo, uint64_t i_hi,
			  uint64_t mod, uint64_t fun, uint64_t reg_name)
{
	unsigned nvalid, i;
	size_t nw = common_words(c, &nvalid);

	if (nvalid < 2) {
		calib__fail(c, XP_OFF_P_I, XP_WHY_NOT_FOUND, "fewer than two probe snapshots");
		return;
	}
	find_i(c, nw, i_lo, i_hi);
	for (i = 0; i < PROBE_STAGES; i++) {
		if (c->snap[i].valid) {
			find_initial_reg(c, &c->snap[i], mod, fun, reg_name);
			break;
		}
	}
	find_msg_len(c, a->row, nw);
	find_reds(c, nw);
	find_state(c, a->row, nw);
	find_dictionary(c, nw, reg_name);
}
