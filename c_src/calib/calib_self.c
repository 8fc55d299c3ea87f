/* Calibration from the calling process's own Process struct, in a NIF on a normal scheduler:
 * Process* is env->proc; the struct is discovered word by word (pid, htop/stop, the heap
 * quadruple, scheduler_data and its back pointer, current, fcalls, frame_pointer) instead of
 * trusting the table. Pointers found on the way are read through mem__self_read (vm/mem.h).
 * Reference §4, §5. Does not own: the parked-probe fields (calib_probe.c) or address scans
 * (calib_scan.c). */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "calib_self.h"
#include "mem.h"

#define STACK_NEAR   (64u << 10) /* esdp->registers lies this close above a NIF's own frame */
#define FP_CHAIN_MAX 100000u
#define X_REG_MAX    1024 /* offsetof(ErtsSchedulerRegisters, x_reg_array) is 64 or 128 */
#define NOT_FOUND    (-1)
#define AMBIGUOUS    (-2)

struct self_scan {
	uint64_t proc, hp, hp_end, pid, sp, argv, mfa[3];
	uint32_t sched_no;
	size_t nw;
	uint64_t w[PROC_SCAN_WORDS];
	uint64_t after[PROC_SCAN_WORDS];
	int id, htop, quad, sd, esd_cp, esd_reg, cur, fcalls, fp;
	uint32_t layout;
	uint64_t stop, heap, hend, esdp, hend_w[2], ra[2];
	uint64_t esd[ESD_SCAN_WORDS];
	uint64_t state_bits[STATE_SLOTS / 64];
};

static void note_hit(int *slot, int k)
{
	*slot = *slot == NOT_FOUND ? k : AMBIGUOUS;
}

static void find_id_htop(struct self_scan *s)
{
	size_t k;

	for (k = 0; k < s->nw; k++) {
		uint64_t stop, gap;

		if (s->w[k] == s->pid)
			note_hit(&s->id, (int)k);
		if (s->w[k] != s->hp || k + 1 >= s->nw)
			continue;
		stop = s->w[k + 1];
		gap = stop >= s->hp_end ? (stop - s->hp_end) / 8 : 0;
		if (stop < s->hp_end || (stop - s->hp_end) % 8 ||
		    (gap != REDZONE_RA && gap != REDZONE_FP))
			continue;
		note_hit(&s->htop, (int)k);
		s->stop = stop;
		s->layout = gap == REDZONE_RA ? XP_LAYOUT_RA : XP_LAYOUT_FP;
	}
}

/* heap <= htop <= stop < hend and hend - heap == heap_sz * 8 (abandoned_heap in between). */
static void find_quad(struct self_scan *s)
{
	size_t k;

	if (s->htop < 0)
		return;
	for (k = 0; k + 3 < s->nw; k++) {
		uint64_t h = s->w[k], he = s->w[k + 1], ah = s->w[k + 2], sz = s->w[k + 3];

		if (!mem__plausible(h) || (h & 7) || h > s->hp || s->hp > s->stop ||
		    s->stop >= he || he - h != sz * 8 || (ah && !mem__plausible(ah)))
			continue;
		note_hit(&s->quad, (int)k);
		s->heap = h;
		s->hend = he;
	}
}

static int is_mfa(const uint64_t *t, const uint64_t *mfa)
{
	return t[0] == mfa[0] && t[1] == mfa[1] && t[2] == mfa[2];
}

/* Words that point at an ErtsSchedulerData whose current_process is us, or at our MFA. */
static void find_pointers(struct self_scan *s)
{
	uint64_t t[ESD_SCAN_WORDS];
	size_t k, n, j, r;

	for (k = 0; k < s->nw; k++) {
		uint64_t p = s->w[k];

		/* Not the struct itself, our heap, or our C stack (stale frames hold copies of
		 * proc). */
		if ((p & 7) || !mem__plausible(p) || p == s->proc ||
		    (p >= s->heap && p < s->hend) ||
		    (p + STACK_NEAR > s->sp && p < s->sp + STACK_NEAR))
			continue;
		n = mem__self_read_prefix(p, t, sizeof(t), 24) / 8;
		if (n == 0)
			continue;
		if (is_mfa(t, s->mfa))
			note_hit(&s->cur, (int)k);
		for (j = 0; j < n && t[j] != s->proc; j++)
			;
		/* registers: the runtime stack top just above our frames, and the start of the
		 * ErtsSchedulerRegisters holding the x registers our argv points into
		 * (esdp->current_nif = &env is near the stack too, but below argv). */
		for (r = 0; r < n; r++)
			if (t[r] > s->sp && t[r] - s->sp <= STACK_NEAR && t[r] < s->argv &&
			    s->argv - t[r] <= X_REG_MAX)
				break;
		if (j == n || r == n)
			continue;
		note_hit(&s->sd, (int)k);
		s->esd_cp = (int)j;
		s->esd_reg = (int)r;
		s->esdp = p;
		memset(s->esd, 0, sizeof(s->esd));
		memcpy(s->esd, t, n * 8);
	}
}

/* enif_consume_timeslice(env, 1) takes exactly (4000 + 99) / 100 = 40 reductions from fcalls
 * (BUMP_REDS, B/bif.h); the 32-bit slot that dropped by 40 is fcalls (its low half on 25). */
static void find_fcalls(struct self_scan *s, ErlNifEnv *env)
{
	size_t n, k;

	enif_consume_timeslice(env, 1);
	n = mem__self_read_prefix(s->proc, s->after, s->nw * 8, s->nw * 8) / 8;
	if (n != s->nw)
		return;
	for (k = 0; k < s->nw * 2; k++) {
		int32_t before, after;

		memcpy(&before, (const char *)s->w + k * 4, 4);
		memcpy(&after, (const char *)s->after + k * 4, 4);
		if (before >= 40 && before - after == 40)
			note_hit(&s->fcalls, (int)k);
	}
}

/* FP layout: a word in [stop, hend) that starts a frame chain ending in the NULL frame at
 * hend - 2 words (B/erl_process.c: a new process gets stop[0] = 0, stop[1] = normal_exit). */
static int fp_chain_ok(const struct self_scan *s, uint64_t fp)
{
	uint64_t next;
	unsigned n;

	for (n = 0; n < FP_CHAIN_MAX; n++) {
		if ((fp & 7) || fp < s->stop || fp >= s->hend || mem__self_read_u64(fp, &next))
			return 0;
		if (next == 0)
			return fp == s->hend - 16;
		if (next <= fp)
			return 0;
		fp = next;
	}
	return 0;
}

static void find_fp(struct self_scan *s)
{
	size_t k;

	if (s->layout != XP_LAYOUT_FP || !s->hend)
		return;
	for (k = 0; k < s->nw; k++)
		if ((int)k != s->htop + 1 && fp_chain_ok(s, s->w[k]))
			note_hit(&s->fp, (int)k);
}

static void find_state_bits(struct self_scan *s)
{
	unsigned i;

	for (i = 0; i < s->nw * 2 && i < STATE_SLOTS; i++) {
		uint32_t v;

		memcpy(&v, (const char *)s->w + i * 4, 4);
		if ((v & XP_PSFLG_PRIO_MASK) == XP_PSFLG_PRIO_NORMAL && (v & XP_PSFLG_RUNNING) &&
		    (v & XP_PSFLG_ACTIVE) && !(v & (XP_PSFLG_FREE | XP_PSFLG_EXITING)))
			s->state_bits[i / 64] |= 1ull << (i % 64);
	}
}

static int scan(struct self_scan *s, ErlNifEnv *env, size_t bytes)
{
	s->id = s->htop = s->quad = s->sd = s->cur = s->fcalls = s->fp = NOT_FOUND;
	s->layout = XP_LAYOUT_UNKNOWN;
	s->nw = mem__self_read_prefix(s->proc, s->w, bytes, 256) / 8;
	if (s->nw == 0)
		return -EFAULT;
	find_id_htop(s);
	find_quad(s);
	if (s->quad >= 0) {
		mem__self_read(s->hend - 16, s->hend_w, 16);
		find_fp(s);
	}
	if (s->htop >= 0)
		mem__self_read(s->stop, s->ra, 16);
	find_pointers(s);
	find_state_bits(s);
	find_fcalls(s, env);
	return 0;
}

static void record(struct calib *c, enum xp_off_id id, int k, int64_t value, const char *note)
{
	if (k >= 0)
		calib__found(c, id, value, note);
	else
		calib__fail(c, id, k == AMBIGUOUS ? XP_WHY_AMBIGUOUS : XP_WHY_NOT_FOUND, note);
}

static void merge_proc(struct calib *c, const struct agent *a, const struct self_scan *s)
{
	int32_t off;
	int layout_ok;

	record(c, XP_OFF_P_ID, s->id, s->id * 8, "the word equal to enif_self()'s pid");
	off = calib__off(c, a->row, XP_OFF_P_ID);
	calib__check(c, XP_CHECK_PID_WORD,
		     off >= 0 && (size_t)off / 8 < s->nw && s->w[off / 8] == s->pid);
	record(c, XP_OFF_P_HTOP, s->htop, s->htop * 8, "the word equal to env->hp");
	record(c, XP_OFF_P_STOP, s->htop, s->htop * 8 + 8,
	       "the word after htop, with stop - env->hp_end = 3 or 6 words");
	if (s->htop >= 0)
		c->layout_obs = c->layout_obs == XP_LAYOUT_UNKNOWN || c->layout_obs == s->layout
				    ? s->layout
				    : XP_LAYOUT_UNKNOWN;
	layout_ok = s->htop >= 0 && s->layout == a->facts.layout_from_version;
	calib__check(c, XP_CHECK_HTOP_STOP, layout_ok);
	record(c, XP_OFF_P_HEAP, s->quad, s->quad * 8, "heap <= htop <= stop < hend quadruple");
	record(c, XP_OFF_P_HEND, s->quad, s->quad * 8 + 8, "heap <= htop <= stop < hend quadruple");
	record(c, XP_OFF_P_HEAP_SZ, s->quad, s->quad * 8 + 24, "hend - heap == heap_sz * 8");
	record(c, XP_OFF_P_ABANDONED_HEAP, s->quad, s->quad * 8 + 16,
	       "the word between hend and heap_sz, NULL or a heap");
	calib__check(c, XP_CHECK_HEAP_QUAD, s->quad >= 0);
	record(c, XP_OFF_P_CURRENT, s->cur, s->cur * 8, "the word pointing at this NIF's MFA");
	record(c, XP_OFF_P_FCALLS, s->fcalls, s->fcalls * 4,
	       "the slot enif_consume_timeslice(1) lowered by 40");
	if (s->layout == XP_LAYOUT_FP)
		record(c, XP_OFF_P_FRAME_POINTER, s->fp, s->fp * 8,
		       "the word starting a frame chain that ends at hend - 2 words");
	else
		calib__fail(c, XP_OFF_P_FRAME_POINTER, XP_WHY_UNCHECKABLE,
			    "only the FP frame layout keeps a frame chain to check it against");
	if (s->quad >= 0) {
		c->self_proc = s->proc;
		c->self_hend_1 = s->hend_w[1];
		c->self_hend_2 = s->hend_w[0];
	}
	if (s->htop >= 0 && s->sched_no == 1) {
		c->ra[0] = s->ra[0];
		c->ra[1] = s->ra[1];
	}
}

void calib__narrow_esd(struct calib *c, const uint64_t *esd, uint32_t type, uint64_t no,
		       uint64_t dirty_no)
{
	uint64_t t = 0, n = 0, d = 0;
	unsigned j;

	for (j = 0; j < ESD_SCAN_WORDS; j++) {
		t |= (uint64_t)((uint32_t)esd[j] == type) << j;
		n |= (uint64_t)(esd[j] == no) << j;
		d |= (uint64_t)(esd[j] == dirty_no) << j;
	}
	if (!c->esd_bits_init) {
		c->esd_type_bits = c->esd_no_bits = c->esd_dirty_no_bits = ~0ull;
		c->esd_bits_init = 1;
	}
	c->esd_type_bits &= t;
	c->esd_no_bits &= n;
	c->esd_dirty_no_bits &= d;
}

static void merge_esd(struct calib *c, const struct agent *a, const struct self_scan *s)
{
	uint64_t x_reg = 0;
	int32_t cp, no;
	struct xp_sched *e;

	record(c, XP_OFF_P_SCHEDULER_DATA, s->sd, s->sd * 8,
	       "the word whose target's current_process points back at us");
	record(c, XP_OFF_ESD_CURRENT_PROCESS, s->sd, s->esd_cp * 8,
	       "the back pointer to the calling process");
	record(c, XP_OFF_ESD_REGISTERS, s->sd, s->esd_reg * 8,
	       "the pointer just above the NIF's own C stack frame");
	if (s->sd >= 0)
		x_reg = s->argv - s->esd[s->esd_reg];
	record(c, XP_OFF_REGS_X_REG_ARRAY,
	       s->sd >= 0 && x_reg > 0 && x_reg <= X_REG_MAX && !(x_reg & 7) ? 0 : NOT_FOUND,
	       (int64_t)x_reg, "NIF argv (the x registers) minus esdp->registers");
	cp = calib__off(c, a->row, XP_OFF_ESD_CURRENT_PROCESS);
	no = calib__off(c, a->row, XP_OFF_ESD_NO);
	calib__check(c, XP_CHECK_ESD_BACKPTR,
		     s->sd >= 0 && cp >= 0 && cp < ESD_SCAN_BYTES && s->esd[cp / 8] == s->proc &&
			 no >= 0 && no < ESD_SCAN_BYTES && s->esd[no / 8] == s->sched_no &&
			 s->sched_no >= 1 && s->sched_no <= a->facts.n_normal);
	if (s->sd < 0)
		return;
	calib__narrow_esd(c, s->esd, XP_SCHED_NORMAL, s->sched_no, 0);
	if (s->sched_no >= 1 && s->sched_no <= a->facts.n_normal && s->sched_no <= XP_MAX_SCHED) {
		e = &c->sched[s->sched_no - 1];
		e->type = XP_SCHED_NORMAL;
		e->number = s->sched_no;
		e->tid = (int32_t)syscall(SYS_gettid);
		e->flags = XP_VAL_PRESENT | XP_VAL_VERIFIED;
		e->esdp = s->esdp;
	}
}

static void merge_state(struct calib *c, const struct self_scan *s)
{
	unsigned i;

	if (!c->state_bits_init) {
		memcpy(c->state_bits, s->state_bits, sizeof(c->state_bits));
		c->state_bits_init = 1;
		return;
	}
	for (i = 0; i < STATE_SLOTS / 64; i++)
		c->state_bits[i] &= s->state_bits[i];
}

/* The scheduler number the caller claims must be the one esdp->no names (the {scheduler, N}
 * spawn option may be ignored). Only checked when the ESD_NO offset is known. */
static int on_claimed_scheduler(const struct agent *a, const struct self_scan *s)
{
	int32_t no = calib__off(&a->calib, a->row, XP_OFF_ESD_NO);

	return s->sd < 0 || no < 0 || no >= ESD_SCAN_BYTES || s->esd[no / 8] == s->sched_no;
}

int calib__self(struct agent *a, ErlNifEnv *env, const ERL_NIF_TERM argv[], uint32_t sched_no,
		ERL_NIF_TERM fun, unsigned arity)
{
	struct self_scan *s;
	ErlNifPid self;
	int err;

	s = enif_alloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	enif_self(env, &self);
	memcpy(&s->proc, (const char *)env + ENV_OFF_PROC, 8);
	memcpy(&s->hp, (const char *)env + ENV_OFF_HP, 8);
	memcpy(&s->hp_end, (const char *)env + ENV_OFF_HP_END, 8);
	s->pid = (uint64_t)self.pid;
	s->sp = (uint64_t)(uintptr_t)&s;
	s->argv = (uint64_t)(uintptr_t)argv;
	s->sched_no = sched_no;
	s->mfa[0] = (uint64_t)enif_make_atom(env, "extrospect_nif");
	s->mfa[1] = (uint64_t)fun;
	s->mfa[2] = arity;
	err = scan(s, env, calib__scan_bytes(a->row));
	if (!err && s->htop < 0)
		err = -EAGAIN; /* heap nearly full: hp_end == htop hides the red zone; retry */
	if (!err && !on_claimed_scheduler(a, s))
		err = -ESRCH;
	if (!err) {
		enif_mutex_lock(a->lock);
		merge_proc(&a->calib, a, s);
		merge_esd(&a->calib, a, s);
		merge_state(&a->calib, s);
		enif_mutex_unlock(a->lock);
	}
	enif_free(s);
	return err;
}
