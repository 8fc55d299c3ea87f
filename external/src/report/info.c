/* Rendering of `extrospect info`. See info.h. The JSON keys are a documented interface
 * (docs/guide.md): add keys, never rename them. */
#include <inttypes.h>
#include <string.h>

#include "info.h"
#include "spies.h"
#include "json.h"

static const char *const sched_type_names[] = {"normal", "dirty_cpu", "dirty_io"};
static const char *const check_names[] = {"pass", "fail", "skip"};

static const char *flavor_name(uint32_t f)
{
	return f == XP_FLAVOR_JIT ? "jit" : f == XP_FLAVOR_EMU ? "emu" : "unknown";
}

static const char *layout_name(uint32_t l)
{
	return l == XP_LAYOUT_RA ? "ra" : l == XP_LAYOUT_FP ? "fp" : "unknown";
}

/* The addresses reported under "sources" (and in the text table). */
static const enum xp_addr_id key_addrs[] = {
    XP_ADDR_JIT_DESCRIPTOR,	  XP_ADDR_ATOM_TABLE,	       XP_ADDR_SCHED_DATA,
    XP_ADDR_DIRTY_CPU_SCHED_DATA, XP_ADDR_DIRTY_IO_SCHED_DATA, XP_ADDR_NORMAL_EXIT,
    XP_ADDR_PROCESS_TABLE,	  XP_ADDR_PROBE_PROCESS,       XP_ADDR_ALLCTRS_INFO,
    XP_ADDR_ACTIVE_CODE_IX,	  XP_ADDR_CODE_RANGES,
};
#define NKEY_ADDRS (sizeof(key_addrs) / sizeof(key_addrs[0]))

static void json_agent(const struct target *t, struct json *j)
{
	const struct xp_agent_block *b = &t->agent->block;
	uint32_t i;

	json__key(j, "agent");
	if (!target__has_agent(t)) {
		json__null(j);
		return;
	}
	json__object(j);
	json__kv_int(j, "abi_version", b->abi_version);
	json__kv_string(j, "path", t->agent->path);
	json__kv_addr(j, "address", t->agent->addr);
	json__kv_int(j, "generation", (int64_t)b->generation);
	json__kv_string(j, "otp_release", b->otp_release);
	json__kv_string(j, "system_version", b->system_version);
	json__key(j, "offsets");
	json__object(j);
	for (i = 0; i < b->n_offsets && i < XP_OFF_COUNT; i++) {
		const struct xp_value *v = &b->offsets[i];

		if (!(v->flags & XP_VAL_PRESENT))
			continue;
		json__key(j, layout__off_name((enum xp_off_id)i));
		json__object(j);
		json__kv_int(j, "value", v->value);
		json__kv_bool(j, "verified", v->flags & XP_VAL_VERIFIED);
		json__kv_bool(j, "from_table", v->flags & XP_VAL_FROM_TABLE);
		json__kv_bool(j, "table_mismatch", v->flags & XP_VAL_MISMATCH);
		json__end_object(j);
	}
	json__end_object(j);
	json__key(j, "checks_passed");
	json__array(j);
	for (i = 0; i < 32; i++) {
		static const char *const bits[] = {"pid_word",	  "htop_stop",	 "heap_quad",
						   "normal_exit", "esd_backptr", "atom_roundtrip",
						   "jit_caller",  "dynsym_agree"};

		if (i < sizeof(bits) / sizeof(bits[0]) && (b->checks_passed & (1u << i)))
			json__string(j, bits[i]);
	}
	json__end_array(j);
	json__end_object(j);
}

static void json_schedulers(const struct target *t, struct json *j)
{
	size_t i;

	json__key(j, "schedulers");
	json__array(j);
	for (i = 0; i < t->nsched; i++) {
		const struct target_sched *s = &t->sched[i];

		json__object(j);
		json__kv_string(j, "type", sched_type_names[s->type]);
		json__kv_int(j, "number", s->number);
		json__kv_int(j, "tid", s->tid);
		json__kv_string(j, "name", s->comm);
		json__kv_addr(j, "esdp", s->esdp);
		json__kv_bool(j, "esdp_checked", s->esdp_checked);
		json__end_object(j);
	}
	json__end_array(j);
}

static void json_layout(const struct target *t, struct json *j)
{
	size_t i;

	json__key(j, "layout");
	if (t->layout) {
		json__object(j);
		json__kv_string(j, "erts_series", t->layout->erts_series);
		json__kv_string(j, "checked_on", t->layout->checked_on);
		json__end_object(j);
	} else {
		json__null(j);
	}
	json__key(j, "offsets");
	json__object(j);
	for (i = 0; i < XP_OFF_COUNT; i++) {
		const struct target_value *v = &t->off[i];

		if (!v->present)
			continue;
		json__key(j, layout__off_name((enum xp_off_id)i));
		json__object(j);
		json__kv_int(j, "value", v->value);
		json__kv_string(j, "source", target__src_name(v->source));
		json__kv_bool(j, "verified", v->verified);
		json__end_object(j);
	}
	json__end_object(j);
	json__key(j, "addresses");
	json__object(j);
	for (i = 0; i < NKEY_ADDRS; i++)
		json__kv_addr(j, layout__addr_name(key_addrs[i]),
			      (uint64_t)t->addr[key_addrs[i]].value);
	json__end_object(j);
	json__key(j, "sources");
	json__object(j);
	for (i = 0; i < NKEY_ADDRS; i++)
		json__kv_string(j, layout__addr_name(key_addrs[i]),
				target__src_name(t->addr[key_addrs[i]].source));
	json__end_object(j);
}

static void json_checks(const struct target *t, struct json *j)
{
	size_t i;

	json__key(j, "checks");
	json__array(j);
	for (i = 0; i < t->nchecks; i++) {
		json__object(j);
		json__kv_string(j, "name", t->checks[i].name);
		json__kv_string(j, "result", check_names[t->checks[i].result]);
		json__kv_string(j, "detail", t->checks[i].detail);
		json__end_object(j);
	}
	json__end_array(j);
}

void info__json_mem_failures(const struct target *t, struct json *j)
{
	json__key(j, "memory_read_failures");
	json__object(j);
	for (int i = 0; i < MEM_FAIL_COUNT; i++)
		json__kv_int(j, mem__fail_name(i), (int64_t)mem__failures(t->mem, i));
	json__end_object(j);
}

void info__print_mem_failures(const struct target *t, FILE *f)
{
	uint64_t n = 0;

	for (int i = 0; i < MEM_FAIL_COUNT; i++)
		n += mem__failures(t->mem, i);
	if (!n)
		return;
	fprintf(f, "  memory reads failed since attach: %" PRIu64 " (", n);
	for (int i = 0, first = 1; i < MEM_FAIL_COUNT; i++) {
		if (!mem__failures(t->mem, i))
			continue;
		fprintf(f, "%s%s %" PRIu64, first ? "" : ", ", mem__fail_name(i),
			mem__failures(t->mem, i));
		first = 0;
	}
	fputs("): racing changes, garbage values and attach-time probes; never fatal\n", f);
}

void info__print_json(const struct target *t, FILE *f)
{
	const struct jitmap_stats *js = t->jit ? jitmap__stats(t->jit) : NULL;
	struct json j;

	json__init(&j, f);
	json__object(&j);
	json__kv_int(&j, "pid", t->pid);
	json__kv_string(&j, "exe", t->exe);
	json__kv_string(&j, "build_id", elf_image__build_id(t->beam));
	json__kv_int(&j, "dynsym_count", (int64_t)elf_image__dynsym_count(t->beam));
	json__kv_string(&j, "otp_release", t->otp_release[0] ? t->otp_release : NULL);
	json__kv_string(&j, "otp_version", t->otp_version[0] ? t->otp_version : NULL);
	json__kv_string(&j, "erts_version", t->erts_version[0] ? t->erts_version : NULL);
	json__kv_string(&j, "version_source", target__src_name(t->version_source));
	json__kv_string(&j, "flavor", flavor_name(t->flavor));
	json__kv_string(&j, "frame_layout", layout_name(t->frame_layout));
	json__kv_int(&j, "word_size", 8);
	json__key(&j, "jit_modules");
	js ? json__uint(&j, js->modules) : json__null(&j);
	json__key(&j, "jit_functions");
	js ? json__uint(&j, js->functions) : json__null(&j);
	json__key(&j, "scheduler_counts");
	json__object(&j);
	json__kv_int(&j, "normal", t->nsched_by_type[XP_SCHED_NORMAL]);
	json__kv_int(&j, "dirty_cpu", t->nsched_by_type[XP_SCHED_DIRTY_CPU]);
	json__kv_int(&j, "dirty_io", t->nsched_by_type[XP_SCHED_DIRTY_IO]);
	json__end_object(&j);
	json_schedulers(t, &j);
	json_agent(t, &j);
	json_layout(t, &j);
	json_checks(t, &j);
	spies__print_json(t, &j);
	codeix__print_json(t, &j);
	info__json_mem_failures(t, &j);
	json__end_object(&j);
}

static void text_header(const struct target *t, FILE *f)
{
	const struct jitmap_stats *js = t->jit ? jitmap__stats(t->jit) : NULL;
	const char *bid = elf_image__build_id(t->beam);

	fprintf(f, "pid %d: Erlang/OTP %s (%s), erts %s  [from %s]\n", (int)t->pid,
		t->otp_release[0] ? t->otp_release : "?", t->otp_version[0] ? t->otp_version : "?",
		t->erts_version[0] ? t->erts_version : "?", target__src_name(t->version_source));
	fprintf(f, "  executable    %s\n", t->exe);
	fprintf(f, "                build-id %s, %zu exported symbols%s\n", bid[0] ? bid : "none",
		elf_image__dynsym_count(t->beam),
		elf_image__has_symtab(t->beam) ? ", .symtab" : ", no .symtab");
	fprintf(f, "  flavour       %s  [from %s]\n", flavor_name(t->flavor),
		target__src_name(t->flavor_source));
	fprintf(f, "  frame layout  %s  [from %s]%s\n", layout_name(t->frame_layout),
		target__src_name(t->frame_layout_source),
		t->frame_layout == XP_LAYOUT_RA ? "  (return addresses; +JPperf map/fp gives fp)"
						: "");
	if (js)
		fprintf(f, "  JIT map       %" PRIu64 " modules, %" PRIu64 " functions\n",
			js->modules, js->functions);
	else
		fprintf(f, "  JIT map       unavailable: %s\n", strerror(-t->jit_err));
	if (t->layout)
		fprintf(f, "  layout row    erts %s.x (%s)\n", t->layout->erts_series,
			t->layout->checked_on);
	else
		fprintf(
		    f, "  layout row    none for this version: offsets come from the agent only\n");
	if (target__has_agent(t))
		fprintf(f, "  agent         present: ABI %u, generation %" PRIu64 ", %s\n",
			t->agent->block.abi_version, t->agent->block.generation, t->agent->path);
	else
		fprintf(f, "  agent         %s\n", agent__status_str(t->agent->status));
}

static void text_schedulers(const struct target *t, FILE *f)
{
	size_t i;

	fprintf(f, "\nSchedulers: %u normal, %u dirty cpu, %u dirty io\n", t->nsched_by_type[0],
		t->nsched_by_type[1], t->nsched_by_type[2]);
	fprintf(f, "  %-10s %4s %8s  %-16s %s\n", "TYPE", "NO", "TID", "THREAD", "SCHEDULER DATA");
	for (i = 0; i < t->nsched; i++) {
		const struct target_sched *s = &t->sched[i];

		fprintf(f, "  %-10s %4u %8d  %-16s ", sched_type_names[s->type], s->number,
			(int)s->tid, s->comm);
		if (s->esdp)
			fprintf(f, "0x%" PRIx64 "%s\n", s->esdp,
				s->esdp_checked ? "" : " (unverified)");
		else
			fprintf(f, "unknown\n");
	}
}

static void text_tables(const struct target *t, FILE *f)
{
	size_t i;

	fprintf(f, "\nKey addresses\n  %-26s %-18s %s\n", "NAME", "ADDRESS", "SOURCE");
	for (i = 0; i < NKEY_ADDRS; i++) {
		const struct target_value *v = &t->addr[key_addrs[i]];

		fprintf(f, "  %-26s ", layout__addr_name(key_addrs[i]));
		if (v->present)
			fprintf(f, "0x%-16" PRIx64 " %s\n", (uint64_t)v->value,
				target__src_name(v->source));
		else
			fprintf(f, "%-18s none\n", "unknown");
	}
	fprintf(f, "\nOffsets\n  %-22s %7s  %-7s %s\n", "NAME", "VALUE", "SOURCE", "VERIFIED");
	for (i = 0; i < XP_OFF_COUNT; i++) {
		const struct target_value *v = &t->off[i];

		if (v->present)
			fprintf(f, "  %-22s %7" PRId64 "  %-7s %s\n",
				layout__off_name((enum xp_off_id)i), v->value,
				target__src_name(v->source), v->verified ? "yes" : "no");
	}
	fprintf(f, "\nChecks\n");
	for (i = 0; i < t->nchecks; i++)
		fprintf(f, "  %-5s %-16s %s\n", check_names[t->checks[i].result], t->checks[i].name,
			t->checks[i].detail);
}

void info__print_text(const struct target *t, FILE *f)
{
	text_header(t, f);
	text_schedulers(t, f);
	text_tables(t, f);
	codeix__print_text(t, f);
	if (target__has_agent(t))
		spies__print_text(t, f);
}
