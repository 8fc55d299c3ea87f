/* The vm library's readers set up from an attached target: atoms, processes (the offsets and atom
 * reader it found, the pid encoding of its process table) and locating that table (by the agent,
 * a symbol, or a scan of beam.smp's data). The lowest file of attach/: the attach sequence
 * (target.c), discovery (discover.c) and the checks (checks.c) call it, it calls none of them.
 * Does not own: reading atoms, Processes or slots (vm/atom.c, vm/process.c, vm/ptab.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "readers.h"
#include "target.h"

#define PTAB_SCAN_CHUNK	 8192u /* slots read to check a candidate */
#define PTAB_SCAN_PROBES 8u    /* live slots whose pid must point back at their slot */

bool target__has_agent(const struct target *t)
{
	return t->agent && t->agent->status == AGENT_OK;
}

int target__atom_reader(const struct target *t, struct atom_reader *r)
{
	static const enum xp_off_id ids[] = {XP_OFF_ITAB_ENTRIES, XP_OFF_ITAB_SEG_TABLE,
					     XP_OFF_ATOM_LEN, XP_OFF_ATOM_NAME};
	size_t i;

	memset(r, 0, sizeof(*r));
	if (!t->layout)
		return -ENOENT;
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		if (!t->off[ids[i]].present)
			return -ENOENT;
	}
	*r = (struct atom_reader){.mem = t->mem,
				  .table = (uint64_t)t->addr[XP_ADDR_ATOM_TABLE].value,
				  .off_entries = (int32_t)t->off[XP_OFF_ITAB_ENTRIES].value,
				  .off_seg_table = (int32_t)t->off[XP_OFF_ITAB_SEG_TABLE].value,
				  .off_len = (int32_t)t->off[XP_OFF_ATOM_LEN].value,
				  .off_name = (int32_t)t->off[XP_OFF_ATOM_NAME].value,
				  .mode = t->layout->atom_name_mode};
	return 0;
}

void process__pid_format(struct pid_format *f, const struct target *t)
{
	const struct target_value *a = &t->addr[XP_ADDR_PROCESS_TABLE];

	process__pid_format_read(f, t->layout, t->mem, a->present ? (uint64_t)a->value : 0);
}

int process__reader(struct process_reader *r, const struct target *t)
{
	struct pid_format pids;
	struct atom_reader atoms;
	bool have_atoms;

	process__pid_format(&pids, t);
	have_atoms = t->addr[XP_ADDR_ATOM_TABLE].present && target__atom_reader(t, &atoms) == 0;
	return process__reader_init(r, t->mem, t->off, &pids, have_atoms ? &atoms : NULL);
}

static int read_geometry(struct target *t, uint64_t addr, struct ptab *out)
{
	const struct xp_layout *row = t->layout;
	uint8_t b[512];
	size_t n = (size_t)row->ptab_element_size + 8;

	if (n > sizeof(b) || mem__read(t->mem, addr, b, n))
		return -EFAULT;
	out->addr = addr;
	return ptab__geometry(
		   row, t->off[XP_OFF_P_SIZEOF].present ? t->off[XP_OFF_P_SIZEOF].value : 0, b, out)
		   ? 0
		   : -EINVAL;
}

/* Does the pid's data map back to the pid's own pixdata through f's masks and shifts
 * (erts_ptab_data2pixdata, B/erl_ptab.h 27:306, which asserts this of every pid)? */
static bool pid_round_trips(const struct pid_format *f, uint64_t pid)
{
	uint64_t pixdata = pid >> XP_PID_DATA_SHIFT, data = process__pid_data(f, pid), pix;

	pix = ((data & f->cl_mask) << f->cl_shift) + ((data >> f->cli_shift) & f->cli_mask);
	return ((data & ~f->pix_mask) | pix) == pixdata;
}

/* Do the first live slots hold processes whose pid maps back to the slot, and (27+) whose number
 * maps back to the pid through the candidate's own masks and shifts? Then the candidate's pid
 * encoding is verified, not only its slot mask; 25 keeps the slot in the pid's high half. */
static bool slots_point_back(struct target *t, const struct ptab *c, const struct pid_format *f)
{
	uint64_t *w = malloc(PTAB_SCAN_CHUNK * 8), pid;
	uint32_t n = c->max < PTAB_SCAN_CHUNK ? c->max : PTAB_SCAN_CHUNK, i, good = 0, bad = 0;

	if (!w || mem__read(t->mem, c->tab, w, (size_t)n * 8)) {
		free(w);
		return false;
	}
	for (i = 0; i < n && good + bad < PTAB_SCAN_PROBES; i++) {
		if (!w[i] || w[i] == c->invalid || (w[i] & 7))
			continue;
		if (mem__read_u64(t->mem, w[i] + (uint64_t)t->off[XP_OFF_P_ID].value, &pid) == 0 &&
		    ptab__pid_in_slot(f, pid, i) &&
		    (f->format != XP_PID_PIXDATA || pid_round_trips(f, pid)))
			good++;
		else
			bad++;
	}
	free(w);
	return good > 0 && bad == 0;
}

static bool candidate_ok(struct target *t, uint64_t addr, const uint8_t *b)
{
	const struct xp_layout *row = t->layout;
	struct ptab c = {.addr = addr};
	struct pid_format f = {
	    .format = row->pid_format, .known = true, .num_bits = row->pid_num_bits};

	if (!ptab__geometry(row, t->off[XP_OFF_P_SIZEOF].value, b, &c))
		return false;
	if (row->pid_format == XP_PID_PIXDATA) {
		memcpy(&f.pix_mask, b + row->ptab_pix_mask, 8);
		memcpy(&f.cl_mask, b + row->ptab_pix_cl_mask, 8);
		memcpy(&f.cli_mask, b + row->ptab_pix_cli_mask, 8);
		memcpy(&f.cl_shift, b + row->ptab_pix_cl_shift, 4);
		memcpy(&f.cli_shift, b + row->ptab_pix_cli_shift, 4);
		if (f.pix_mask != c.max - 1 || f.cl_shift >= 64 || f.cli_shift >= 64 || !f.num_bits)
			return false;
	}
	return slots_point_back(t, &c, &f);
}

int target__scan_data(struct target *t, const char *const *sections, size_t nsections, size_t need,
		      target_scan_fn ok, void *ctx, uint64_t *found)
{
	size_t s, hits = 0;

	for (s = 0; s < nsections; s++) {
		uint64_t vaddr, size, off;
		uint8_t *buf;

		if (elf_image__section(t->beam, sections[s], &vaddr, &size) || size < need ||
		    size > TARGET_SCAN_MAX)
			continue;
		buf = malloc(size);
		if (!buf)
			return -ENOMEM;
		if (mem__read(t->mem, t->bias + vaddr, buf, size) == 0) {
			for (off = 0; off + need <= size && hits < TARGET_SCAN_MAX_HITS; off += 8) {
				if (ok(t, t->bias + vaddr + off, buf + off, ctx)) {
					*found = t->bias + vaddr + off;
					hits++;
				}
			}
		}
		free(buf);
	}
	return hits == 1 ? 0 : hits ? -EEXIST : -ENOENT;
}

static bool ptab_candidate(struct target *t, uint64_t addr, const uint8_t *b, void *ctx)
{
	(void)ctx;
	return candidate_ok(t, addr, b);
}

/* OTP 28+ without the agent: the unique ErtsPTab in .data/.bss whose element size is
 * sizeof(Process) (erts_port's is sizeof(Port)) and whose live slots point back at themselves
 * through its own pid encoding: what lets pids print as <0.N.S> (process__pid_format). */
static int scan(struct target *t, uint64_t *found)
{
	static const char *const sections[] = {".data", ".bss"};

	return target__scan_data(t, sections, 2, (size_t)t->layout->ptab_element_size + 8,
				 ptab_candidate, NULL, found);
}

int ptab__locate(struct target *t, struct ptab *out, char *why, size_t whylen)
{
	struct target_value *a = &t->addr[XP_ADDR_PROCESS_TABLE];
	uint64_t found;
	int err;

	memset(out, 0, sizeof(*out));
	if (!t->layout || !t->off[XP_OFF_P_ID].present) {
		snprintf(why, whylen,
			 "no layout row for this VM: the process table cannot be read");
		return -ENOTSUP;
	}
	if (!a->present && t->off[XP_OFF_P_SIZEOF].present) {
		err = scan(t, &found);
		if (err == -ENOMEM)
			return err;
		if (err == 0) {
			*a = (struct target_value){
			    .value = (int64_t)found, .source = TSRC_SCAN, .present = true};
		}
	}
	if (!a->present) {
		snprintf(why, whylen,
			 "the process table was not found (no agent, no erts_proc symbol, and no "
			 "unique match in beam.smp's data): load the extrospect application");
		return -ENOENT;
	}
	if (read_geometry(t, (uint64_t)a->value, out)) {
		snprintf(why, whylen,
			 "the process table at 0x%llx (from %s) does not look like one: "
			 "tab, max or element size out of range",
			 (unsigned long long)a->value, target__src_name(a->source));
		return -ENOENT;
	}
	out->source = a->source;
	return 0;
}
