/* What the sampler learns about a VM's key addresses, from the best source available: the agent
 * block, else beam.smp's .dynsym (OTP <= 27), else a structural scan (OTP 28+ hides every name);
 * then the scheduler threads by name and their ErtsSchedulerData. See target.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atom.h"
#include "target.h"

#define JIT_LOAD_TRIES 3

/* The exported names for each key address; *_PTR ones are variables holding the address. */
static const struct {
	enum xp_addr_id id;
	const char *symbol;
	bool indirect;
} addr_syms[] = {
    {XP_ADDR_SCHED_DATA, "erts_aligned_scheduler_data", true},
    {XP_ADDR_DIRTY_CPU_SCHED_DATA, "erts_aligned_dirty_cpu_scheduler_data", true},
    {XP_ADDR_DIRTY_IO_SCHED_DATA, "erts_aligned_dirty_io_scheduler_data", true},
    {XP_ADDR_ATOM_TABLE, "erts_atom_table", false},
    {XP_ADDR_JIT_DESCRIPTOR, "__jit_debug_descriptor", false},
    {XP_ADDR_NORMAL_EXIT, "beam_normal_exit", true},
    {XP_ADDR_PROCESS_TABLE, "erts_proc", false},
    {XP_ADDR_ALLCTRS_INFO, "erts_allctrs_info", false},
    {XP_ADDR_ACTIVE_CODE_IX, "the_active_code_index", false},
    {XP_ADDR_CODE_RANGES, NULL, false}, /* static r[] in beam_ranges.c: the agent only */
};

static void set_addr(struct target *t, enum xp_addr_id id, uint64_t v, enum target_src src)
{
	t->addr[id] = (struct target_value){
	    .value = (int64_t)v, .source = src, .present = v != 0, .verified = false};
}

/* The value of an exported symbol in the target: its address, or the word stored there. */
static int dynsym_value(struct target *t, const char *name, bool indirect, uint64_t *out)
{
	struct elf_sym s;

	if (elf_image__symbol(t->beam, name, &s))
		return -ENOENT;
	if (!indirect) {
		*out = t->bias + s.value;
		return 0;
	}
	return mem__read_u64(t->mem, t->bias + s.value, out);
}

static void addrs_from_agent_or_dynsym(struct target *t)
{
	const struct xp_agent_block *b = target__has_agent(t) ? &t->agent->block : NULL;
	size_t i;

	for (i = 0; i < sizeof(addr_syms) / sizeof(addr_syms[0]); i++) {
		enum xp_addr_id id = addr_syms[i].id;
		uint64_t v;

		if (b && (uint32_t)id < b->n_addrs && b->addrs[id].value)
			set_addr(t, id, b->addrs[id].value, TSRC_AGENT);
		else if (addr_syms[i].symbol &&
			 dynsym_value(t, addr_syms[i].symbol, addr_syms[i].indirect, &v) == 0 && v)
			set_addr(t, id, v, TSRC_DYNSYM);
	}
	if (b && b->n_addrs > XP_ADDR_PROBE_PROCESS && b->addrs[XP_ADDR_PROBE_PROCESS].value)
		set_addr(t, XP_ADDR_PROBE_PROCESS, b->addrs[XP_ADDR_PROBE_PROCESS].value,
			 TSRC_AGENT);
}

/* Scan beam.smp's writable data for the GDB JIT descriptor (otp-internals.md §0, §3.2); *map: the
 * map the scan's check loaded from it (NULL on failure). */
static int scan_jit_descriptor(struct target *t, uint64_t *out, struct jitmap **map)
{
	static const char *const sections[] = {".data", ".bss"};
	uint64_t found = 0;
	size_t i;

	*map = NULL;
	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		struct jitmap *m = NULL;
		uint64_t vaddr, size, a;
		int err;

		if (elf_image__section(t->beam, sections[i], &vaddr, &size))
			continue;
		err = jitmap__scan(t->mem, t->bias + vaddr, size, 3, &a, &m);
		if (err == -EEXIST || (err == 0 && found && found != a)) {
			jitmap__free(m);
			jitmap__free(*map);
			*map = NULL;
			return -EEXIST;
		}
		if (err == 0) {
			found = a;
			jitmap__free(*map);
			*map = m;
		}
	}
	if (!found)
		return -ENOENT;
	*out = found;
	return 0;
}

static void load_jit(struct target *t)
{
	struct target_value *d = &t->addr[XP_ADDR_JIT_DESCRIPTOR];
	struct jitmap *scanned = NULL;
	uint64_t a;
	int tries;

	if (!d->present) {
		/* The scan checks a candidate by walking its first entries, which a purge racing
		 * it can unlink (OTP 27+): a VM loading and purging modules in a loop failed it
		 * under strace. Scan again. */
		for (tries = 0; tries < JIT_LOAD_TRIES; tries++) {
			t->jit_err = scan_jit_descriptor(t, &a, &scanned);
			if (t->jit_err != -ENOENT)
				break;
		}
		if (t->jit_err)
			return;
		set_addr(t, XP_ADDR_JIT_DESCRIPTOR, a, TSRC_SCAN);
		/* The scan's check loaded the whole map from it: kept, unless its walk broke. */
		if (scanned && !jitmap__stats(scanned)->chain_broken) {
			jitmap__free(t->jit);
			t->jit = scanned;
			t->jit_err = 0;
			return;
		}
		jitmap__free(scanned);
	}
	/* OTP 27+ unlink and free entries on purge: a walk racing a purge can break. Walk again. */
	for (tries = 0; tries < JIT_LOAD_TRIES; tries++) {
		jitmap__free(t->jit);
		t->jit = NULL;
		t->jit_err = jitmap__load(t->mem, (uint64_t)d->value, &t->jit);
		if (t->jit_err == 0 && !jitmap__stats(t->jit)->chain_broken)
			return;
	}
}

int target__refresh_jit(struct target *t)
{
	const struct target_value *d = &t->addr[XP_ADDR_JIT_DESCRIPTOR];

	if (!d->present)
		return -ENOENT;
	return jitmap__update(t->mem, (uint64_t)d->value,
			      t->layout && t->layout->jit_list_append_only, &t->jit);
}

static void discover_flavor_and_layout(struct target *t)
{
	const struct jitmap_stats *js = t->jit ? jitmap__stats(t->jit) : NULL;
	const struct xp_agent_block *b = target__has_agent(t) ? &t->agent->block : NULL;
	uint64_t v;
	struct elf_sym s;
	int32_t word;

	t->flavor = XP_FLAVOR_UNKNOWN;
	t->frame_layout = XP_LAYOUT_UNKNOWN;
	if (b && b->flavor != XP_FLAVOR_UNKNOWN) {
		t->flavor = b->flavor;
		t->flavor_source = TSRC_AGENT;
	} else if (elf_image__symbol(t->beam, "etp_beamasm", &s) == 0 &&
		   mem__read(t->mem, t->bias + s.value, &word, sizeof(word)) == 0) {
		t->flavor = word ? XP_FLAVOR_JIT : XP_FLAVOR_EMU;
		t->flavor_source = TSRC_DYNSYM;
	} else if (js && js->emulator > 0) {
		t->flavor = XP_FLAVOR_JIT; /* only the JIT registers GDB JIT entries */
		t->flavor_source = TSRC_SCAN;
	} else if (strstr(t->exe, "/beam.emu.")) {
		t->flavor = XP_FLAVOR_EMU;
		t->flavor_source = TSRC_INSTALL;
	}
	if (b && b->frame_layout != XP_LAYOUT_UNKNOWN) {
		t->frame_layout = b->frame_layout;
		t->frame_layout_source = TSRC_AGENT;
	} else if (dynsym_value(t, "erts_frame_layout", false, &v) == 0 &&
		   mem__read(t->mem, v, &word, sizeof(word)) == 0 && (word == 0 || word == 1)) {
		t->frame_layout = (uint32_t)word;
		t->frame_layout_source = TSRC_DYNSYM;
	} else if (js && (js->frame_layout == 0 || js->frame_layout == 1)) {
		t->frame_layout = (uint32_t)js->frame_layout;
		t->frame_layout_source = t->addr[XP_ADDR_JIT_DESCRIPTOR].source;
	}
}

int target__discover(struct target *t)
{
	const struct jitmap_stats *js;

	addrs_from_agent_or_dynsym(t);
	load_jit(t);
	js = t->jit ? jitmap__stats(t->jit) : NULL;
	if (!t->addr[XP_ADDR_NORMAL_EXIT].present && js && js->normal_exit)
		set_addr(t, XP_ADDR_NORMAL_EXIT, js->normal_exit,
			 t->addr[XP_ADDR_JIT_DESCRIPTOR].source);
	discover_flavor_and_layout(t);
	return 0;
}

static enum xp_addr_id base_for_type(uint32_t type)
{
	return type == XP_SCHED_NORMAL	    ? XP_ADDR_SCHED_DATA
	       : type == XP_SCHED_DIRTY_CPU ? XP_ADDR_DIRTY_CPU_SCHED_DATA
					    : XP_ADDR_DIRTY_IO_SCHED_DATA;
}

static uint64_t agent_esdp(const struct target *t, uint32_t type, uint32_t number)
{
	const struct xp_agent_block *b = &t->agent->block;
	uint32_t i;

	for (i = 0; target__has_agent(t) && i < b->n_sched; i++) {
		if (b->sched[i].type == type && b->sched[i].number == number)
			return b->sched[i].esdp;
	}
	return 0;
}

/* Read back the type and number fields of a candidate ErtsSchedulerData. */
static bool esdp_matches(struct target *t, uint64_t esdp, uint32_t type, uint32_t number)
{
	const struct target_value *o_type = &t->off[XP_OFF_ESD_TYPE];
	const struct target_value *o_no =
	    &t->off[type == XP_SCHED_NORMAL ? XP_OFF_ESD_NO : XP_OFF_ESD_DIRTY_NO];
	uint32_t ty;
	uint64_t no;

	if (!o_type->present || !o_no->present)
		return false;
	if (mem__read_u32(t->mem, esdp + (uint64_t)o_type->value, &ty) ||
	    mem__read_u64(t->mem, esdp + (uint64_t)o_no->value, &no))
		return false;
	return ty == type && no == number;
}

/* Each of n candidates: does esdp[i] (0: unknown, not read) read back type[i] (or one_type when
 * type is NULL) and number[i] (or i + 1 when number is NULL)? In a few process_vm_readv calls
 * (mem__read_many) whatever n, not two reads a scheduler: 138 schedulers cost what 14 did. */
static int esdp_match_many(struct target *t, const uint64_t *esdp, const uint32_t *type,
			   uint32_t one_type, const uint32_t *number, size_t n, bool *ok)
{
	const struct target_value *o_type = &t->off[XP_OFF_ESD_TYPE];
	struct mem_req *q = calloc(2 * (n ? n : 1), sizeof(*q));
	uint32_t *ty = calloc(n ? n : 1, sizeof(*ty));
	uint64_t *no = calloc(n ? n : 1, sizeof(*no));
	size_t m = 0;
	int err = q && ty && no ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < n; i++) {
		uint32_t tp = type ? type[i] : one_type;
		const struct target_value *o_no =
		    &t->off[tp == XP_SCHED_NORMAL ? XP_OFF_ESD_NO : XP_OFF_ESD_DIRTY_NO];

		if (!esdp[i])
			continue;
		if (!o_type->present || !o_no->present) {
			err = -ENOENT;
			break;
		}
		q[m++] = (struct mem_req){
		    .addr = esdp[i] + (uint64_t)o_type->value, .buf = &ty[i], .len = sizeof(*ty)};
		q[m++] = (struct mem_req){
		    .addr = esdp[i] + (uint64_t)o_no->value, .buf = &no[i], .len = sizeof(*no)};
	}
	if (!err)
		err = mem__read_many(t->mem, q, m);
	for (size_t i = 0, k = 0; i < n; i++) {
		ok[i] = false;
		if (err || !esdp[i])
			continue;
		ok[i] = !q[k].rc && !q[k + 1].rc && ty[i] == (type ? type[i] : one_type) &&
			no[i] == (number ? number[i] : (uint64_t)i + 1);
		k += 2;
	}
	free(q);
	free(ty);
	free(no);
	return err;
}

/* Where s's ErtsSchedulerData should be: the agent's word, else its array's base + stride. */
static void place_esdp(struct target *t, struct target_sched *s)
{
	const struct target_value *base = &t->addr[base_for_type(s->type)];
	const struct target_value *stride = &t->off[XP_OFF_ESD_STRIDE];

	s->esdp = agent_esdp(t, s->type, s->number);
	if (!s->esdp && base->present && stride->present) {
		s->esdp =
		    (uint64_t)base->value + (uint64_t)(s->number - 1) * (uint64_t)stride->value;
		s->from_stride = s->number > 1;
	}
}

/* Every scheduler's place, then all of them read back at once. */
static int check_esdps(struct target *t)
{
	uint64_t *esdp = calloc(t->nsched ? t->nsched : 1, sizeof(*esdp));
	uint32_t *type = calloc(t->nsched ? t->nsched : 1, sizeof(*type));
	uint32_t *number = calloc(t->nsched ? t->nsched : 1, sizeof(*number));
	bool *ok = calloc(t->nsched ? t->nsched : 1, sizeof(*ok));
	int err = esdp && type && number && ok ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < t->nsched; i++) {
		place_esdp(t, &t->sched[i]);
		esdp[i] = t->sched[i].esdp;
		type[i] = t->sched[i].type;
		number[i] = t->sched[i].number;
	}
	if (!err && esdp_match_many(t, esdp, type, 0, number, t->nsched, ok) == -ENOMEM)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < t->nsched; i++)
		t->sched[i].esdp_checked = ok[i];
	free(esdp);
	free(type);
	free(number);
	free(ok);
	return err;
}

bool target__learn_esdp(struct target *t, struct target_sched *s, uint64_t process)
{
	const struct target_value *o = &t->off[XP_OFF_P_SCHEDULER_DATA];
	uint64_t esdp;

	if (s->esdp_checked || s->type != XP_SCHED_NORMAL || !o->present || !process ||
	    mem__read_u64(t->mem, process + (uint64_t)o->value, &esdp) || !esdp || (esdp & 7) ||
	    !esdp_matches(t, esdp, s->type, s->number))
		return false;
	s->esdp = esdp;
	s->esdp_checked = true;
	s->from_stride = false;
	return true;
}

/* How far past the normal schedulers' array the dirty ones are looked for. On the builds seen the
 * dirty CPU schedulers' array starts 10 KiB after it (erts_init_scheduling allocates the three
 * arrays one after the other, cache-line aligned: B/erl_process.c). */
#define DIRTY_SCAN_BYTES (256u << 10)
#define DIRTY_SCAN_ALIGN 64u

/* Does the array of type's schedulers start at base: each of the n, base + (i - 1) * stride,
 * reads back its type and number? */
static bool dirty_array_at(struct target *t, uint64_t base, uint32_t type, uint32_t n,
			   uint64_t stride)
{
	uint64_t *esdp = calloc(n ? n : 1, sizeof(*esdp));
	bool *ok = calloc(n ? n : 1, sizeof(*ok));
	bool all = n > 0 && esdp && ok;

	for (uint32_t i = 0; all && i < n; i++)
		esdp[i] = base + (uint64_t)i * stride;
	if (all && esdp_match_many(t, esdp, NULL, type, NULL, n, ok))
		all = false;
	for (uint32_t i = 0; all && i < n; i++)
		all = ok[i];
	free(esdp);
	free(ok);
	return all;
}

static uint32_t count_type(const struct target *t, uint32_t type)
{
	uint32_t n = 0;

	for (size_t i = 0; i < t->nsched; i++)
		n += t->sched[i].type == type;
	return n;
}

/* The dirty CPU schedulers' array just past the normal ones' (the ERTS allocators), or 0. */
static uint64_t dirty_near(struct target *t, const struct target_sched *normal, uint32_t ncpu,
			   uint64_t st)
{
	const struct target_value *o_type = &t->off[XP_OFF_ESD_TYPE];
	uint64_t end, a, cpu = 0;
	uint8_t *buf;

	end = normal->esdp + (uint64_t)(count_type(t, XP_SCHED_NORMAL) - normal->number + 1) * st;
	end = (end + DIRTY_SCAN_ALIGN - 1) & ~(uint64_t)(DIRTY_SCAN_ALIGN - 1);
	/* One read, then a cheap filter on the type word, then the full check. */
	if (!(buf = malloc(DIRTY_SCAN_BYTES)) || mem__read(t->mem, end, buf, DIRTY_SCAN_BYTES)) {
		free(buf);
		return 0;
	}
	for (a = 0; !cpu && a + (uint64_t)o_type->value + 4 <= DIRTY_SCAN_BYTES;
	     a += DIRTY_SCAN_ALIGN) {
		uint32_t ty;

		memcpy(&ty, buf + a + (uint64_t)o_type->value, sizeof(ty));
		if (ty == XP_SCHED_DIRTY_CPU &&
		    dirty_array_at(t, end + a, XP_SCHED_DIRTY_CPU, ncpu, st))
			cpu = end + a;
	}
	free(buf);
	return cpu;
}

/* The dirty schedulers' arrays (type's, n of them) from the pointers ERTS keeps to them,
 * erts_aligned_dirty_cpu_scheduler_data and ..._io_..., in the small section where the three
 * arrays' pointers live (XP_ESD_SECTION): found there wherever the arrays were allocated (with
 * +Mea min, each by malloc, far from the normal ones and from each other). Every
 * cache-line-aligned word of the section is tried as the array; 0 when none is. */
static uint64_t dirty_from_section(struct target *t, uint32_t type, uint32_t n, uint64_t st)
{
	uint64_t vaddr, size, w[XP_ESD_SECTION_MAX / 8], found = 0;
	size_t i;

	if (!t->beam || elf_image__section(t->beam, XP_ESD_SECTION, &vaddr, &size) || !size ||
	    size > sizeof(w) || mem__read(t->mem, t->bias + vaddr, w, size))
		return 0;
	for (i = 0; !found && i < size / 8; i++) {
		if (w[i] && !(w[i] & (DIRTY_SCAN_ALIGN - 1)) &&
		    dirty_array_at(t, w[i], type, n, st))
			found = w[i];
	}
	return found;
}

bool target__learn_dirty(struct target *t, const struct target_sched *normal)
{
	const struct target_value *stride = &t->off[XP_OFF_ESD_STRIDE];
	const struct target_value *o_type = &t->off[XP_OFF_ESD_TYPE];
	uint32_t ncpu = count_type(t, XP_SCHED_DIRTY_CPU), nio = count_type(t, XP_SCHED_DIRTY_IO);
	uint64_t st, cpu, io;
	bool found = false;

	if (!normal->esdp_checked || !stride->present || !o_type->present || stride->value <= 0 ||
	    !ncpu)
		return false;
	for (size_t i = 0; i < t->nsched; i++) {
		if (t->sched[i].type != XP_SCHED_NORMAL && t->sched[i].esdp_checked)
			return false; /* known already */
	}
	st = (uint64_t)stride->value;
	cpu = dirty_near(t, normal, ncpu, st);
	io = cpu + ncpu * st;
	if (!cpu || (nio && !dirty_array_at(t, io, XP_SCHED_DIRTY_IO, nio, st))) {
		cpu = dirty_from_section(t, XP_SCHED_DIRTY_CPU, ncpu, st);
		io = nio ? dirty_from_section(t, XP_SCHED_DIRTY_IO, nio, st) : 0;
	}
	if (!cpu || (nio && !io))
		return false;
	for (size_t i = 0; i < t->nsched; i++) {
		struct target_sched *s = &t->sched[i];

		if (s->type == XP_SCHED_NORMAL)
			continue;
		s->esdp =
		    (s->type == XP_SCHED_DIRTY_CPU ? cpu : io) + (uint64_t)(s->number - 1) * st;
		s->esdp_checked = found = true;
		s->from_stride = false;
	}
	return found;
}

static int cmp_sched(const void *a, const void *b)
{
	const struct target_sched *x = a, *y = b;

	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	return (x->number > y->number) - (x->number < y->number);
}

/* OTP 28+ without the agent: find the atom table structurally in beam.smp's .bss. */
static void scan_atom_table(struct target *t)
{
	struct atom_reader r;
	uint64_t vaddr, size, a;

	if (t->addr[XP_ADDR_ATOM_TABLE].present || target__atom_reader(t, &r) ||
	    elf_image__section(t->beam, ".bss", &vaddr, &size))
		return;
	if (atom__scan_table(&r, t->bias + vaddr, size, &a) == 0)
		set_addr(t, XP_ADDR_ATOM_TABLE, a, TSRC_SCAN);
}

static int find_schedulers(struct target *t)
{
	struct proc_task *tasks = NULL;
	size_t ntasks = 0, i;
	int err;

	err = proc__tasks(t->pid, &tasks, &ntasks);
	if (err == -ENOENT) {
		snprintf(t->err, sizeof(t->err), "pid %d exited while attaching", (int)t->pid);
		return TARGET_EGONE;
	}
	if (err)
		return err;
	t->sched = calloc(ntasks ? ntasks : 1, sizeof(*t->sched));
	if (!t->sched) {
		free(tasks);
		return -ENOMEM;
	}
	for (i = 0; i < ntasks; i++) {
		struct target_sched *s = &t->sched[t->nsched];

		if (layout__parse_thread_name(t->layout, tasks[i].comm, &s->type, &s->number))
			continue;
		s->tid = tasks[i].tid;
		memcpy(s->comm, tasks[i].comm, sizeof(s->comm));
		t->nsched_by_type[s->type]++;
		t->nsched++;
	}
	free(tasks);
	qsort(t->sched, t->nsched, sizeof(*t->sched), cmp_sched);
	return check_esdps(t);
}

int target__discover_with_layout(struct target *t)
{
	scan_atom_table(t);
	return find_schedulers(t);
}
