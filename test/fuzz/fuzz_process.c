/* Fuzz target: what the sampler reads of Erlang processes (process.c), the atom table (atom.c)
 * and the process table (ptab.c), as pstack --all, heap and every stack root read them. The
 * input: one byte choosing the layout row, then the VM's memory at FUZZ_BASE: a Process at its
 * start, an IndexTable (the atom table) at +ATOMS, an ErtsPTab at +PTAB; every pointer in them may
 * point anywhere, inside the bytes given or not (a read outside fails as an unmapped one would). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atom.h"
#include "layout.h"
#include "mem.h"
#include "process.h"
#include "ptab.h"

#define FUZZ_BASE  0x7f0000000000ull
#define FUZZ_ATOMS 1024u
#define FUZZ_PTAB  2048u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_atoms(const struct atom_reader *ar, const uint8_t *data, size_t size)
{
	char buf[XP_ATOM_MAX_BYTES + 1];
	uint64_t found;
	uint32_t ix = 0;

	if (size >= 4)
		memcpy(&ix, data, 4);
	atom__text_by_index(ar, ix & 0xffff, buf, sizeof(buf));
	atom__text(ar, (uint64_t)ix << XP_ATOM_INDEX_SHIFT | XP_TAG_ATOM, buf, sizeof(buf));
	atom__scan_table(ar, FUZZ_BASE, size, &found);
}

static void fuzz_ptab(const struct xp_layout *row, struct mem *m, const uint8_t *data, size_t size)
{
	size_t need = (size_t)row->ptab_element_size + 8, n = 0;
	struct ptab_stats st;
	uint32_t *ixs = NULL;
	uint64_t *procs = NULL;
	struct ptab pt;

	if (size < FUZZ_PTAB + need ||
	    !ptab__geometry(row, row->off[XP_OFF_P_SIZEOF], data + FUZZ_PTAB, &pt))
		return;
	if (pt.max <= (1u << 16)) /* a larger table only costs time: its slots are not there */
		ptab__collect(&pt, m, &ixs, &procs, &n, &st);
	free(ixs);
	free(procs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct xp_layout *row;
	struct target_value off[XP_OFF_COUNT];
	struct process_reader r;
	struct process_snap s;
	struct process_view v;
	struct atom_reader ar;
	struct pid_format f;
	struct mem *m = NULL;
	char text[64];
	unsigned nrows;

	if (size < 2)
		return 0;
	row = &layout__rows(&nrows)[data[0] % nrows];
	data++;
	size--;
	if (mem__open_snapshot(&m, &(struct mem_region){FUZZ_BASE, size, data}, 1))
		return 0;
	for (int i = 0; i < XP_OFF_COUNT; i++)
		off[i] = (struct target_value){.value = row->off[i],
					       .present = row->off[i] != XP_ABSENT};
	process__pid_format_read(&f, row, m, FUZZ_BASE + FUZZ_PTAB);
	if (atom__reader_from_row(&ar, m, row) == 0) {
		ar.table = FUZZ_BASE + FUZZ_ATOMS;
		fuzz_atoms(&ar, data, size);
	}
	if (process__reader_init(&r, m, off, &f, &ar) == 0) {
		if (process__read_snap(&r, FUZZ_BASE, &s) == 0) {
			process__snap_memory(&s);
			process__pid_text(&f, s.v.pid, text, sizeof(text));
			process__read_identity(&r, &s.v);
		}
		if (process__read_bounds(&r, FUZZ_BASE, &v) == 0)
			process__read_identity(&r, &v);
	}
	fuzz_ptab(row, m, data, size);
	mem__free(m);
	return 0;
}
