/* beam.smp's .data/.bss ranges, from our own executable's section headers. See selfelf.h.
 * Why by hand and not through libelf as the sampler does (native/elfsym.c): the NIF is loaded
 * into beam.smp, which does not link libelf, and neither do the VMs' hosts need it (the OTP 27
 * and 29 roots of the e2e tests have no libelf.so.1); Debian's libelf.a cannot go into a shared
 * object (not PIC: R_X86_64_TPOFF32 against its thread-local error state). So the NIF reads
 * only the section header table, bounded, and nothing else of ELF. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "selfelf.h"

#define MAX_SHNUM    512
#define MAX_SHSTRTAB (256u << 10)
#define MAX_LOADS    16

struct main_prog {
	int found;
	uint64_t bias;
	unsigned nload;
	uint64_t load_lo[MAX_LOADS], load_hi[MAX_LOADS]; /* link-time vaddr ranges of PT_LOAD */
};

/* The first object dl_iterate_phdr reports is the main program. */
static int main_prog_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct main_prog *mp = arg;
	unsigned i;

	if (mp->found)
		return 1;
	mp->found = 1;
	mp->bias = info->dlpi_addr;
	for (i = 0; i < info->dlpi_phnum && mp->nload < MAX_LOADS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		mp->load_lo[mp->nload] = ph->p_vaddr;
		mp->load_hi[mp->nload] = ph->p_vaddr + ph->p_memsz;
		mp->nload++;
	}
	return 1;
}

static int inside_load(const struct main_prog *mp, uint64_t lo, uint64_t hi)
{
	unsigned i;

	for (i = 0; i < mp->nload; i++)
		if (lo >= mp->load_lo[i] && hi <= mp->load_hi[i])
			return 1;
	return 0;
}

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EPROTO;
}

static int read_headers(int fd, Elf64_Ehdr *eh, Elf64_Shdr **shdrs, char **strtab, size_t *strsz)
{
	const Elf64_Shdr *ss;
	int err;

	err = read_at(fd, eh, sizeof(*eh), 0);
	if (err)
		return err;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum == 0 || eh->e_shnum > MAX_SHNUM ||
	    eh->e_shstrndx >= eh->e_shnum)
		return -EPROTO;
	*shdrs = calloc(eh->e_shnum, sizeof(Elf64_Shdr));
	if (!*shdrs)
		return -ENOMEM;
	err = read_at(fd, *shdrs, eh->e_shnum * sizeof(Elf64_Shdr), eh->e_shoff);
	if (err)
		return err;
	ss = &(*shdrs)[eh->e_shstrndx];
	if (ss->sh_size == 0 || ss->sh_size > MAX_SHSTRTAB)
		return -EPROTO;
	*strtab = calloc(1, ss->sh_size + 1);
	if (!*strtab)
		return -ENOMEM;
	*strsz = ss->sh_size;
	return read_at(fd, *strtab, ss->sh_size, ss->sh_offset);
}

static void add_sections(struct selfelf *out, const struct main_prog *mp, const Elf64_Ehdr *eh,
			 const Elf64_Shdr *sh, const char *strtab, size_t strsz)
{
	static const char *const wanted[] = {".data", ".bss"};
	unsigned i, w;

	for (i = 0; i < eh->e_shnum && out->n < SELFELF_MAX_RANGES; i++) {
		const char *name;

		if (sh[i].sh_name >= strsz || !(sh[i].sh_flags & SHF_ALLOC) || sh[i].sh_size == 0)
			continue;
		name = strtab + sh[i].sh_name;
		for (w = 0; w < sizeof(wanted) / sizeof(wanted[0]); w++) {
			if (strcmp(name, wanted[w]) != 0 ||
			    !inside_load(mp, sh[i].sh_addr, sh[i].sh_addr + sh[i].sh_size))
				continue;
			out->r[out->n].start = mp->bias + sh[i].sh_addr;
			out->r[out->n].end = mp->bias + sh[i].sh_addr + sh[i].sh_size;
			strncpy(out->r[out->n].name, name, sizeof(out->r[out->n].name) - 1);
			out->n++;
		}
	}
}

int selfelf__load(struct selfelf *out)
{
	struct main_prog mp = {0};
	Elf64_Shdr *shdrs = NULL;
	char *strtab = NULL;
	size_t strsz = 0;
	Elf64_Ehdr eh;
	int fd, err;

	memset(out, 0, sizeof(*out));
	dl_iterate_phdr(main_prog_cb, &mp);
	if (!mp.found || mp.nload == 0)
		return -ENOENT;
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = read_headers(fd, &eh, &shdrs, &strtab, &strsz);
	if (err)
		goto cleanup;
	out->bias = mp.bias;
	add_sections(out, &mp, &eh, shdrs, strtab, strsz);
	err = out->n ? 0 : -ENOENT;
cleanup:
	free(strtab);
	free(shdrs);
	close(fd);
	return err;
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
