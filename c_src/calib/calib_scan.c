/* The scans that must run on a dirty scheduler: beam.smp's .data/.bss for erts_atom_table, the
 * GDB JIT descriptor and (without .dynsym, 28+) erts_proc; then what they make checkable:
 * normal_exit against the JIT emulator entry, the calib_self caller's return address and the
 * probe's i against the JIT map, the atom round trip, and every address against .dynsym where
 * 25/27 export it. Does not own: the scans' parsers (atomtab.c, jitself.c, selfelf.c, the vm
 * library). */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atom.h"
#include "atomtab.h"
#include "calib_scan.h"
#include "calib_sched.h"
#include "calib_self.h"
#include "jitself.h"
#include "mem.h"
#include "selfelf.h"

#define PTAB_CHUNK	 8192u
#define PTAB_MAX_ENTRIES (1u << 27)
#define PTAB_MAX_TRIES	 16

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t dynsym_addr(const char *name)
{
	return (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, name);
}

static void set_addr(struct addr_obs *o, uint64_t value, uint32_t source, int verified,
		     uint32_t reason, const char *note)
{
	o->value = value;
	o->source = source;
	o->flags = value ? XP_VAL_PRESENT | (verified ? XP_VAL_VERIFIED : 0) : 0;
	o->reason = verified ? XP_WHY_NONE : reason;
	o->note = note;
}

/* Atoms: a unique IndexTable that decodes three atoms we made, one of them non-ASCII (so the
 * UTF-8 length differs from the character count and atom_len cannot be confused with
 * latin1_chars). Unknown release: each known row's atom layout is tried in turn. */
static void scan_atoms(const struct agent *a, struct calib *c, const struct selfelf *se,
		       const struct scan_args *g)
{
	const struct atomtab_want want[] = {{g->nif_atom, "extrospect_nif"},
					    {g->reg_name, g->reg_text},
					    {g->uni_atom, "xp_\xc3\xbc"}};
	const struct xp_layout *rows, *used = NULL;
	struct atom_reader probe;
	unsigned nrows = 1, i, cand = 0;
	uint64_t found = 0;
	int err = -ENOENT;

	rows = a->row ? a->row : layout__rows(&nrows);
	for (i = 0; i < nrows && err; i++) {
		if (atom__reader_from_row(&probe, NULL, &rows[i]))
			continue; /* the row has no atom layout */
		err = atomtab__scan(se, &rows[i], want, 3, &found, &cand);
		used = &rows[i];
	}
	c->atom_candidates = cand;
	c->addr[XP_ADDR_ATOM_TABLE].dynsym = dynsym_addr("erts_atom_table");
	set_addr(&c->addr[XP_ADDR_ATOM_TABLE], err ? 0 : found, XP_SRC_SCAN, !err,
		 err == -EEXIST ? XP_WHY_AMBIGUOUS : XP_WHY_NOT_FOUND,
		 err ? "no unique IndexTable decodes the known atoms"
		     : "the unique IndexTable in .data/.bss that decodes three known atoms");
	calib__check(c, XP_CHECK_ATOM_ROUNDTRIP, !err);
	for (i = XP_OFF_ATOM_LEN; !err && used && i <= XP_OFF_ITAB_SEG_TABLE; i++) {
		if (a->row)
			calib__table_ok(c, a->row, i, "the atom round trip used it");
		else
			calib__found(c, i, used->off[i], "the atom round trip used it");
	}
	for (i = XP_OFF_ATOM_LEN; err && i <= XP_OFF_ITAB_SEG_TABLE; i++)
		calib__fail(c, i, XP_WHY_CHECK_FAILED, "the atom round trip failed");
}

static void scan_jit(struct calib *c, const struct selfelf *se, struct jitself_want *want,
		     struct jitself_result *res)
{
	uint64_t desc = 0;
	unsigned cand = 0;
	int err;

	err = jitself__scan(se, "extrospect_nif", &desc, &cand);
	if (!err)
		err = jitself__walk(desc, "extrospect_nif", want, 2, res);
	c->jit_candidates = cand;
	c->jit_entries = err ? 0 : res->entries;
	c->jit_layout = err ? -1 : res->frame_layout;
	c->addr[XP_ADDR_JIT_DESCRIPTOR].dynsym = dynsym_addr("__jit_debug_descriptor");
	set_addr(
	    &c->addr[XP_ADDR_JIT_DESCRIPTOR], err ? 0 : desc, XP_SRC_SCAN, !err,
	    err == -EEXIST ? XP_WHY_AMBIGUOUS : XP_WHY_NOT_FOUND,
	    err ? "no unique descriptor whose list holds the emulator entry and this NIF's module"
		: "the unique descriptor whose list holds the emulator entry and extrospect_nif");
	if (err)
		memset(res, 0, sizeof(*res));
}

/* The last word below a process's hend is normal_exit (B/erl_process.c 25:12341); the JIT
 * emulator entry and, on 25/27, *beam_normal_exit say the same. FP layout: the word before is 0. */
static void check_normal_exit(struct calib *c, const struct jitself_result *jit)
{
	struct addr_obs *o = &c->addr[XP_ADDR_NORMAL_EXIT];
	void *sym = dlsym(RTLD_DEFAULT, "beam_normal_exit");
	uint64_t v = c->self_hend_1, via_sym = 0;
	int ok;

	if (sym)
		mem__self_read_u64((uint64_t)(uintptr_t)sym, &via_sym);
	o->dynsym = via_sym;
	ok = v && (jit->emulator_found || via_sym) &&
	     (!jit->emulator_found || jit->normal_exit == v) && (!via_sym || via_sym == v) &&
	     (c->layout_obs != XP_LAYOUT_FP || c->self_hend_2 == 0);
	set_addr(o, v, XP_SRC_RUNTIME, ok, v ? XP_WHY_CHECK_FAILED : XP_WHY_NOT_FOUND,
		 ok ? "the last word below hend, equal to the JIT emulator entry's normal_exit"
		    : "the stack bottom disagrees with the JIT emulator entry or is missing");
	if (v)
		calib__check(c, XP_CHECK_NORMAL_EXIT, ok);
}

/* The calib_self NIF call is eStack: c_p->stop[0] (RA layout) or stop[1] (FP layout, after the
 * saved frame pointer) is the return address into its Erlang caller. */
static void check_jit_caller(struct calib *c, const struct jitself_want *caller)
{
	int slot = c->layout_obs == XP_LAYOUT_FP ? 1 : 0;

	if (c->layout_obs == XP_LAYOUT_UNKNOWN || !c->ra[slot])
		return;
	c->jit_caller_slot =
	    caller->start && c->ra[slot] >= caller->start && c->ra[slot] < caller->end ? slot : -1;
	calib__check(c, XP_CHECK_JIT_CALLER, c->jit_caller_slot == slot);
}

static int ptab_holds(uint64_t tab, uint32_t max, uint64_t needle)
{
	uint64_t *buf = malloc(PTAB_CHUNK * 8);
	uint32_t i, j, n;
	int found = 0;

	if (!buf || max > PTAB_MAX_ENTRIES)
		goto cleanup;
	for (i = 0; i < max && !found; i += n) {
		n = max - i < PTAB_CHUNK ? max - i : PTAB_CHUNK;
		if (mem__self_read(tab + (uint64_t)i * 8, buf, (size_t)n * 8))
			break;
		for (j = 0; j < n && !found; j++)
			found = buf[j] == needle;
	}
cleanup:
	free(buf);
	return found;
}

/* ErtsPTab erts_proc: r.o.max == process_limit and r.o.tab holds the probe's Process*. */
static int ptab_ok(const struct xp_layout *row, uint64_t ptab, const struct scan_args *g)
{
	uint64_t tab;
	uint32_t max;

	if (!row || mem__self_read_u64(ptab + (uint64_t)row->ptab_tab, &tab) ||
	    mem__self_read_u32(ptab + (uint64_t)row->ptab_max, &max))
		return 0;
	return max == g->process_limit && (tab & 7) == 0 && mem__plausible(tab) &&
	       ptab_holds(tab, max, g->probe_proc);
}

static uint64_t ptab_scan(const struct xp_layout *row, const struct selfelf *se,
			  const struct scan_args *g, unsigned *nfound)
{
	uint64_t a, found = 0;
	unsigned i, tried = 0;

	*nfound = 0;
	for (i = 0; row && i < se->n; i++) {
		for (a = (se->r[i].start + 7) & ~7ull;
		     a + (uint64_t)row->ptab_max + 4 <= se->r[i].end; a += 8) {
			uint32_t max;

			memcpy(&max, (const void *)(uintptr_t)(a + (uint64_t)row->ptab_max), 4);
			/* Each full check may read process_limit words: try a few candidates only.
			 */
			if (max != g->process_limit || tried++ >= PTAB_MAX_TRIES ||
			    !ptab_ok(row, a, g))
				continue;
			if ((*nfound)++ == 0)
				found = a;
		}
	}
	return found;
}

/* 25/27 export erts_proc; 28+ need the scan (which reads up to process_limit words). */
static void find_ptab(const struct agent *a, struct calib *c, const struct selfelf *se,
		      const struct scan_args *g)
{
	uint64_t sym = dynsym_addr("erts_proc"), found = 0;
	unsigned n = 0;
	int ok = 0;

	if (sym)
		ok = ptab_ok(a->row, sym, g);
	else
		found = ptab_scan(a->row, se, g, &n);
	c->addr[XP_ADDR_PROCESS_TABLE].dynsym = sym;
	if (sym)
		set_addr(&c->addr[XP_ADDR_PROCESS_TABLE], sym, XP_SRC_DYNSYM, ok,
			 XP_WHY_CHECK_FAILED,
			 "dlsym(erts_proc); r.o.max == process_limit and r.o.tab holds the probe");
	else
		set_addr(&c->addr[XP_ADDR_PROCESS_TABLE], n == 1 ? found : 0, XP_SRC_SCAN, n == 1,
			 n > 1 ? XP_WHY_AMBIGUOUS : XP_WHY_NOT_FOUND,
			 n == 1 ? "the unique ErtsPTab in .data/.bss whose table holds the probe"
				: "no unique ErtsPTab holding the probe (or no table row)");
}

static void check_dynsym_agree(struct calib *c)
{
	static const enum xp_addr_id ids[] = {
	    XP_ADDR_SCHED_DATA, XP_ADDR_DIRTY_CPU_SCHED_DATA, XP_ADDR_DIRTY_IO_SCHED_DATA,
	    XP_ADDR_ATOM_TABLE, XP_ADDR_JIT_DESCRIPTOR,	      XP_ADDR_NORMAL_EXIT};
	unsigned i, any = 0, agree = 1;
	void *layout = dlsym(RTLD_DEFAULT, "erts_frame_layout");

	if (layout)
		mem__self_read((uint64_t)(uintptr_t)layout, &c->dynsym_layout, 4);
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		const struct addr_obs *o = &c->addr[ids[i]];

		/* Only where both exist: a value the scan could not find is reported on its own. */
		if (!o->dynsym || !o->value)
			continue;
		any = 1;
		agree &= o->value == o->dynsym;
	}
	if (any)
		calib__check(c, XP_CHECK_DYNSYM_AGREE,
			     agree && (!layout || (uint32_t)c->dynsym_layout == c->layout_obs));
}

/* Works on a copy of the calibration record so that no lock is held while scanning (a normal
 * scheduler calling info/0 must never wait for it); the copy is kept unless a new calibration
 * began meanwhile. */
int calib__scan(struct agent *a, const struct scan_args *g)
{
	struct jitself_want want[2] = {{g->probe_module, g->probe_range, 0, 0, 0, 0},
				       {g->caller_module, g->caller_range, 0, 0, 0, 0}};
	struct jitself_result jit = {0};
	struct selfelf se;
	struct calib *c;
	uint64_t t0 = now_ns();
	int err;

	c = enif_alloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	enif_mutex_lock(a->lock);
	*c = a->calib;
	enif_mutex_unlock(a->lock);
	c->probe_atom = g->reg_name;
	memcpy(c->probe_atom_text, g->reg_text, sizeof(c->probe_atom_text));
	err = selfelf__load(&se);
	if (!err) {
		scan_atoms(a, c, &se, g);
		scan_jit(c, &se, want, &jit);
		find_ptab(a, c, &se, g);
		calib__find_allctrs(a, c, &se);
	}
	check_normal_exit(c, &jit);
	check_jit_caller(c, &want[1]);
	calib__probe_analyze(a, c, want[0].start, want[0].end, g->probe_mod, g->probe_fun,
			     g->reg_name);
	calib__sched_resolve(a, c);
	check_dynsym_agree(c);
	c->scan_ns = now_ns() - t0;
	enif_mutex_lock(a->lock);
	if (a->calib.epoch == c->epoch)
		a->calib = *c;
	else
		err = -EAGAIN;
	enif_mutex_unlock(a->lock);
	enif_free(c);
	return err;
}
