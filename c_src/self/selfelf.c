/* beam.smp's writable data, from the program headers the dynamic loader already holds
 * (dl_iterate_phdr): the writable PT_LOAD segment less its PT_GNU_RELRO head, i.e. .got.plt,
 * .data and .bss. No ELF file is read: the NIF has no ELF reader (libelf cannot be linked into
 * it: Debian's libelf.a is not PIC, and the VMs' hosts need not have libelf.so.1), and needs
 * none, since the loader has mapped and described the executable. See selfelf.h. */
#include <errno.h>
#include <link.h>
#include <string.h>

#include "selfelf.h"

struct main_prog {
	int found;
	struct selfelf *out;
};

/* Writable PT_LOAD segments, each less the RELRO range at its start (read-only after
 * relocation: const tables, which no scan looks for). */
static void add_writable(struct selfelf *out, const struct dl_phdr_info *info)
{
	uint64_t relro_lo = 0, relro_hi = 0, lo, hi;
	unsigned i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_GNU_RELRO) {
			relro_lo = ph->p_vaddr;
			relro_hi = ph->p_vaddr + ph->p_memsz;
		}
	}
	for (i = 0; i < info->dlpi_phnum && out->n < SELFELF_MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || ph->p_memsz == 0)
			continue;
		lo = ph->p_vaddr;
		hi = ph->p_vaddr + ph->p_memsz;
		if (relro_hi > lo && relro_lo <= lo)
			lo = relro_hi < hi ? relro_hi : hi;
		if (lo >= hi)
			continue;
		out->r[out->n].start = out->bias + lo;
		out->r[out->n].end = out->bias + hi;
		strncpy(out->r[out->n].name, "rw", sizeof(out->r[out->n].name) - 1);
		out->n++;
	}
}

/* The first object dl_iterate_phdr reports is the main program. */
static int main_prog_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct main_prog *mp = arg;

	(void)size;
	if (mp->found)
		return 1;
	mp->found = 1;
	mp->out->bias = info->dlpi_addr;
	add_writable(mp->out, info);
	return 1;
}

int selfelf__load(struct selfelf *out)
{
	struct main_prog mp = {.out = out};

	memset(out, 0, sizeof(*out));
	dl_iterate_phdr(main_prog_cb, &mp);
	return mp.found && out->n ? 0 : -ENOENT;
}

int selfelf__scan_unique(const struct selfelf *se, uint64_t span,
			 int (*prefilter)(uint64_t a, void *ctx),
			 int (*confirm)(uint64_t a, void *ctx), void *ctx, uint64_t *addr,
			 unsigned *candidates)
{
	uint64_t a, found = 0;
	unsigned i, nfound = 0;

	*candidates = 0;
	for (i = 0; i < se->n; i++) {
		for (a = (se->r[i].start + 7) & ~7ull; a + span <= se->r[i].end; a += 8) {
			if (!prefilter(a, ctx))
				continue;
			(*candidates)++;
			if (!confirm(a, ctx))
				continue;
			if (nfound++ == 0)
				found = a;
		}
	}
	if (nfound == 0)
		return -ENOENT;
	if (nfound > 1)
		return -EEXIST;
	*addr = found;
	return 0;
}
