/* The sampler's own cross-checks of what attach found: read a known process's pid word and heap
 * bounds, its stack bottom, an atom's text, each scheduler's data, and compare every source that
 * claims the same value. A value that passes is marked verified. See target.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "atom.h"
#include "process.h"
#include "target.h"

#define RACY_TRIES 3 /* a running process's fields can be read torn: retry before failing */

void target__add_check(struct target *t, const char *name, enum check_result r, const char *fmt,
		       ...)
{
	struct target_check *c;
	va_list ap;

	if (t->nchecks >= TARGET_MAX_CHECKS)
		return;
	c = &t->checks[t->nchecks++];
	c->name = name;
	c->result = r;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
}

static bool offs_present(const struct target *t, const enum xp_off_id *ids, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!t->off[ids[i]].present)
			return false;
	}
	return true;
}

static void mark_verified(struct target *t, const enum xp_off_id *ids, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		t->off[ids[i]].verified = true;
}

static int read_off(struct target *t, uint64_t base, enum xp_off_id id, uint64_t *out)
{
	return mem__read_u64(t->mem, base + (uint64_t)t->off[id].value, out);
}

/* The process the checks read: the agent's parked probe, else init (<0.0.0>, process table slot 0).
 */
static int known_process(struct target *t, uint64_t *proc, uint64_t *pid, const char **who)
{
	const struct target_value *ptab = &t->addr[XP_ADDR_PROCESS_TABLE];
	uint64_t tab;

	if (t->addr[XP_ADDR_PROBE_PROCESS].present) {
		*proc = (uint64_t)t->addr[XP_ADDR_PROBE_PROCESS].value;
		*pid = t->agent->block.probe_pid;
		*who = "the agent's probe process";
		return 0;
	}
	if (!ptab->present || !t->layout)
		return -ENOENT;
	if (mem__read_u64(t->mem, (uint64_t)ptab->value + (uint64_t)t->layout->ptab_tab, &tab) ||
	    mem__read_u64(t->mem, tab, proc))
		return -EFAULT;
	*pid = XP_TAG_PID; /* <0.0.0>: pid data 0 */
	*who = "init <0.0.0>";
	return 0;
}

/* The fields `heap` reads, on the process check_process just verified (heap, hend): an old
 * generation that is absent (all NULL) or ordered and apart from the young heap, fragments no
 * larger than any heap, a binary GC limit set (min_bin_vheap_size at least, B/erl_gc.c), and a
 * reduction count that is positive and no pointer (the process has run). */
static const enum xp_off_id mem_ids[] = {
    XP_OFF_P_OLD_HEAP,		XP_OFF_P_OLD_HTOP,	XP_OFF_P_OLD_HEND,     XP_OFF_P_MBUF_SZ,
    XP_OFF_P_OFF_HEAP_OVERHEAD, XP_OFF_P_BIN_OLD_VHEAP, XP_OFF_P_BIN_VHEAP_SZ, XP_OFF_P_REDS};
#define MEM_IDS (sizeof(mem_ids) / sizeof(mem_ids[0]))

static bool memory_plausible(const uint64_t *v, uint64_t heap, uint64_t hend)
{
	uint64_t oh = v[0], ot = v[1], oe = v[2];
	bool no_old = !oh && !ot && !oe;
	bool old_ok = no_old || (oh && oh <= ot && ot <= oe && !((oh | ot | oe) & 7) &&
				 oe - oh <= PROCESS_MAX_HEAP && (oe <= heap || oh >= hend));

	return old_ok && v[3] * 8 <= PROCESS_MAX_HEAP && v[4] < (1ULL << 41) &&
	       v[5] < (1ULL << 41) && v[6] > 0 && v[6] < (1ULL << 41) && v[7] > 0 &&
	       v[7] < (1ULL << 48);
}

static void check_memory_fields(struct target *t, uint64_t proc, const char *who, uint64_t heap,
				uint64_t hend)
{
	uint64_t v[MEM_IDS];
	size_t k;
	int i;

	if (!offs_present(t, mem_ids, MEM_IDS)) {
		target__add_check(t, "memory_fields", CHECK_SKIP, "offsets unknown for this VM");
		return;
	}
	for (i = 0; i < RACY_TRIES; i++) {
		for (k = 0; k < MEM_IDS && read_off(t, proc, mem_ids[k], &v[k]) == 0; k++)
			;
		if (k == MEM_IDS && memory_plausible(v, heap, hend))
			break;
	}
	if (i == RACY_TRIES) {
		target__add_check(t, "memory_fields", CHECK_FAIL,
				  "%s: old heap, fragments, vheap or reductions implausible", who);
		return;
	}
	mark_verified(t, mem_ids, MEM_IDS);
	target__add_check(t, "memory_fields", CHECK_PASS,
			  "%s: old heap %" PRIu64 " words, fragments %" PRIu64 ", binaries %" PRIu64
			  " words, %" PRIu64 " reductions",
			  who, (v[2] - v[0]) / 8, v[3], v[4] + v[5], v[7]);
}

static void check_process(struct target *t)
{
	static const enum xp_off_id pid_ids[] = {XP_OFF_P_ID};
	static const enum xp_off_id heap_ids[] = {XP_OFF_P_HTOP, XP_OFF_P_STOP, XP_OFF_P_HEAP,
						  XP_OFF_P_HEND, XP_OFF_P_HEAP_SZ};
	uint64_t proc, want, id, htop, stop, heap, hend, sz, bottom[2];
	const char *who;
	int i;

	if (!offs_present(t, pid_ids, 1) || !offs_present(t, heap_ids, 5) ||
	    known_process(t, &proc, &want, &who)) {
		target__add_check(t, "pid_word", CHECK_SKIP, "no known process to read");
		return;
	}
	if (read_off(t, proc, XP_OFF_P_ID, &id) || id != want) {
		target__add_check(t, "pid_word", CHECK_FAIL,
				  "%s at 0x%" PRIx64 ": pid word 0x%" PRIx64
				  ", expected 0x%" PRIx64,
				  who, proc, id, want);
		return;
	}
	mark_verified(t, pid_ids, 1);
	target__add_check(t, "pid_word", CHECK_PASS, "%s at 0x%" PRIx64 " has pid word 0x%" PRIx64,
			  who, proc, id);
	for (i = 0; i < RACY_TRIES; i++) {
		if (read_off(t, proc, XP_OFF_P_HTOP, &htop) ||
		    read_off(t, proc, XP_OFF_P_STOP, &stop) ||
		    read_off(t, proc, XP_OFF_P_HEAP, &heap) ||
		    read_off(t, proc, XP_OFF_P_HEND, &hend) ||
		    read_off(t, proc, XP_OFF_P_HEAP_SZ, &sz))
			continue;
		if (heap <= htop && htop <= stop && stop < hend && hend - heap == sz * 8)
			break;
	}
	if (i == RACY_TRIES) {
		target__add_check(
		    t, "heap_bounds", CHECK_FAIL,
		    "heap <= htop <= stop < hend, hend - heap == heap_sz * 8 did not hold");
		return;
	}
	mark_verified(t, heap_ids, 5);
	target__add_check(t, "heap_bounds", CHECK_PASS,
			  "heap %" PRIu64 " words, stack %" PRIu64 " words", sz, (hend - stop) / 8);
	check_memory_fields(t, proc, who, heap, hend);
	if (!t->addr[XP_ADDR_NORMAL_EXIT].present ||
	    mem__read(t->mem, hend - 16, bottom, sizeof(bottom))) {
		target__add_check(t, "stack_bottom", CHECK_SKIP, "normal_exit unknown");
		return;
	}
	if (bottom[1] == (uint64_t)t->addr[XP_ADDR_NORMAL_EXIT].value &&
	    (t->frame_layout != XP_LAYOUT_FP || bottom[0] == 0))
		target__add_check(t, "stack_bottom", CHECK_PASS,
				  "last word below hend is normal_exit");
	else
		target__add_check(
		    t, "stack_bottom", CHECK_FAIL,
		    "last words below hend 0x%" PRIx64 " 0x%" PRIx64 ", normal_exit 0x%" PRIx64,
		    bottom[0], bottom[1], (uint64_t)t->addr[XP_ADDR_NORMAL_EXIT].value);
}

static void check_atoms(struct target *t)
{
	static const enum xp_off_id ids[] = {XP_OFF_ITAB_ENTRIES, XP_OFF_ITAB_SEG_TABLE,
					     XP_OFF_ATOM_LEN, XP_OFF_ATOM_NAME};
	struct atom_reader r;
	uint64_t term = XP_TAG_ATOM; /* index 0 is 'false' in every release */
	const char *want = "false";
	char text[XP_ATOM_MAX_BYTES + 1];
	int err;

	if (!t->addr[XP_ADDR_ATOM_TABLE].present || target__atom_reader(t, &r)) {
		target__add_check(t, "atom_roundtrip", CHECK_SKIP, "atom table or layout unknown");
		return;
	}
	if (target__has_agent(t) && t->agent->block.probe_atom) {
		term = t->agent->block.probe_atom;
		want = t->agent->block.probe_atom_text;
	}
	err = atom__text(&r, term, text, sizeof(text));
	if (err || strcmp(text, want) != 0) {
		target__add_check(t, "atom_roundtrip", CHECK_FAIL,
				  "atom 0x%" PRIx64 " read as '%s' (%s), expected '%s'", term, text,
				  err ? strerror(-err) : "ok", want);
		return;
	}
	mark_verified(t, ids, 4);
	t->addr[XP_ADDR_ATOM_TABLE].verified = true;
	target__add_check(t, "atom_roundtrip", CHECK_PASS, "atom 0x%" PRIx64 " reads '%s'", term,
			  text);
}

static void check_schedulers(struct target *t)
{
	size_t i, placed = 0, ok = 0, strided = 0, dirty = 0;

	for (i = 0; i < t->nsched; i++) {
		const struct target_sched *s = &t->sched[i];

		placed += s->esdp != 0;
		ok += s->esdp_checked;
		strided += s->esdp_checked && s->from_stride;
		dirty += s->esdp_checked && s->type != XP_SCHED_NORMAL;
	}
	if (placed == 0)
		target__add_check(t, "scheduler_data", CHECK_SKIP,
				  "scheduler data addresses unknown");
	else if (ok == placed)
		target__add_check(t, "scheduler_data", CHECK_PASS,
				  "%zu of %zu schedulers: type and number read back", ok,
				  t->nsched);
	else
		target__add_check(t, "scheduler_data", CHECK_FAIL,
				  "%zu of %zu scheduler data blocks have the wrong type or number",
				  placed - ok, placed);
	if (ok == placed && placed > 0) {
		static const enum xp_off_id ids[] = {XP_OFF_ESD_TYPE, XP_OFF_ESD_NO};

		mark_verified(t, ids, 2);
		if (strided)
			t->off[XP_OFF_ESD_STRIDE].verified = true;
		if (dirty)
			t->off[XP_OFF_ESD_DIRTY_NO].verified = true;
	}
}

static void check_jit(struct target *t)
{
	const struct jitmap_stats *js;

	if (!t->jit) {
		target__add_check(t, "jit_map",
				  t->flavor == XP_FLAVOR_EMU ? CHECK_SKIP : CHECK_FAIL,
				  "no GDB JIT descriptor: %s", strerror(-t->jit_err));
		return;
	}
	js = jitmap__stats(t->jit);
	target__add_check(
	    t, "jit_map", js->modules > 0 && js->emulator > 0 ? CHECK_PASS : CHECK_FAIL,
	    "%" PRIu64 " modules, %" PRIu64 " functions, %" PRIu64 " unreadable entries",
	    js->modules, js->functions, js->bad_entries);
	if (js->frame_layout >= 0 && t->frame_layout != XP_LAYOUT_UNKNOWN &&
	    (uint32_t)js->frame_layout != t->frame_layout)
		target__add_check(t, "frame_layout", CHECK_FAIL,
				  "JIT emulator entry says %d, %s says %u", js->frame_layout,
				  target__src_name(t->frame_layout_source), t->frame_layout);
	if (js->normal_exit && t->addr[XP_ADDR_NORMAL_EXIT].present &&
	    js->normal_exit != (uint64_t)t->addr[XP_ADDR_NORMAL_EXIT].value)
		target__add_check(
		    t, "normal_exit", CHECK_FAIL, "JIT emulator entry 0x%" PRIx64 ", %s 0x%" PRIx64,
		    js->normal_exit, target__src_name(t->addr[XP_ADDR_NORMAL_EXIT].source),
		    (uint64_t)t->addr[XP_ADDR_NORMAL_EXIT].value);
}

/* Where the agent discovered an offset itself, it must agree with the table row. */
static void check_agent_vs_table(struct target *t)
{
	const struct xp_agent_block *b = &t->agent->block;
	char bad[160] = "";
	size_t used = 0;
	int i, compared = 0, mismatched = 0;

	if (!target__has_agent(t) || !t->layout)
		return;
	for (i = 0; i < XP_OFF_COUNT && (uint32_t)i < b->n_offsets; i++) {
		const struct xp_value *v = &b->offsets[i];

		if (!(v->flags & XP_VAL_PRESENT) || (v->flags & XP_VAL_FROM_TABLE) ||
		    t->layout->off[i] == XP_ABSENT)
			continue;
		compared++;
		if (v->value == t->layout->off[i])
			continue;
		mismatched++;
		if (used < sizeof(bad))
			used += (size_t)snprintf(
			    bad + used, sizeof(bad) - used, " %s=%" PRId64 "(table %d)",
			    layout__off_name((enum xp_off_id)i), v->value, t->layout->off[i]);
	}
	target__add_check(t, "agent_vs_table", mismatched ? CHECK_FAIL : CHECK_PASS,
			  "%d of %d calibrated offsets agree%s", compared - mismatched, compared,
			  bad);
}

/* On OTP <= 27 the agent's addresses can be compared with .dynsym. */
static void check_agent_vs_dynsym(struct target *t)
{
	static const struct {
		enum xp_addr_id id;
		const char *sym;
	} direct[] = {{XP_ADDR_ATOM_TABLE, "erts_atom_table"},
		      {XP_ADDR_JIT_DESCRIPTOR, "__jit_debug_descriptor"}};
	int compared = 0, bad = 0;
	size_t i;

	if (!target__has_agent(t))
		return;
	for (i = 0; i < sizeof(direct) / sizeof(direct[0]); i++) {
		struct elf_sym s;

		if (!t->addr[direct[i].id].present || elf_image__symbol(t->beam, direct[i].sym, &s))
			continue;
		compared++;
		bad += t->bias + s.value != (uint64_t)t->addr[direct[i].id].value;
	}
	if (compared)
		target__add_check(t, "agent_vs_dynsym", bad ? CHECK_FAIL : CHECK_PASS,
				  "%d of %d agent addresses equal the exported symbols",
				  compared - bad, compared);
}

void target__run_checks(struct target *t)
{
	check_jit(t);
	check_process(t);
	check_atoms(t);
	check_schedulers(t);
	check_agent_vs_table(t);
	check_agent_vs_dynsym(t);
}
