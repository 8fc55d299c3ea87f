/* ELF symbol tables, sections, build-id and load bias through libelf. See elfsym.h.
 * Symbols are kept sorted by address for lookups by code address; lookups by name scan linearly,
 * which is fine for the handful of names asked at attach time. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsym.h"
#include "radix.h"

#define PAGE_MASK_4K (~(uint64_t)4095)

struct elf_image {
	int fd;
	Elf *elf;
	struct elf_sym *syms; /* sorted by value */
	size_t nsyms, ndynsym;
	bool has_symtab;
	char build_id[2 * 64 + 1];
	GElf_Phdr *phdrs;
	size_t nphdrs;
};

static int cmp_sym(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	return (x->value > y->value) - (x->value < y->value);
}

static int load_symtab(struct elf_image *img, Elf_Scn *scn, GElf_Shdr *sh, bool dynamic)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n, base;
	struct elf_sym *v;

	if (!data || sh->sh_entsize == 0)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	v = realloc(img->syms, (img->nsyms + n) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	img->syms = v;
	base = img->nsyms;
	for (i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_name)
			continue;
		name = elf_strptr(img->elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		v[base] = (struct elf_sym){.name = name,
					   .value = sym.st_value,
					   .size = sym.st_size,
					   .type = (uint8_t)GELF_ST_TYPE(sym.st_info),
					   .dynamic = dynamic};
		base++;
		if (dynamic)
			img->ndynsym++;
	}
	img->nsyms = base;
	return 0;
}

static void load_build_id(struct elf_image *img, Elf_Scn *scn)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		size_t i;

		if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
		    memcmp((char *)data->d_buf + name_off, "GNU", 4) != 0 || nh.n_descsz > 64)
			continue;
		for (i = 0; i < nh.n_descsz; i++) {
			static const char hex[] = "0123456789abcdef";
			unsigned char c = ((unsigned char *)data->d_buf)[desc_off + i];

			img->build_id[2 * i] = hex[c >> 4];
			img->build_id[2 * i + 1] = hex[c & 15];
		}
		img->build_id[2 * nh.n_descsz] = '\0';
		return;
	}
}

static int load_sections(struct elf_image *img)
{
	Elf_Scn *scn = NULL, *dynsym = NULL;
	GElf_Shdr sh, dynsh;
	int err;

	while ((scn = elf_nextscn(img->elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			img->has_symtab = true;
			if ((err = load_symtab(img, scn, &sh, false)))
				return err;
		} else if (sh.sh_type == SHT_DYNSYM) {
			dynsym = scn;
			dynsh = sh;
		} else if (sh.sh_type == SHT_NOTE) {
			load_build_id(img, scn);
		}
	}
	/* .dynsym always: it counts exported names, and duplicates of .symtab are harmless. */
	if (dynsym && (err = load_symtab(img, dynsym, &dynsh, true)))
		return err;
	radix__sort_cmp(img->syms, img->nsyms, sizeof(*img->syms), cmp_sym);
	return 0;
}

static int load_phdrs(struct elf_image *img)
{
	size_t i, n;

	if (elf_getphdrnum(img->elf, &n) != 0)
		return -ENOEXEC;
	img->phdrs = calloc(n ? n : 1, sizeof(*img->phdrs));
	if (!img->phdrs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(img->elf, (int)i, &img->phdrs[img->nphdrs]))
			continue;
		img->nphdrs++;
	}
	return 0;
}

int elf_image__open(const char *path, struct elf_image **out)
{
	struct elf_image *img;
	GElf_Ehdr eh;
	struct stat st;
	int err;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	img = calloc(1, sizeof(*img));
	if (!img)
		return -ENOMEM;
	/* O_NONBLOCK and S_ISREG: a FIFO or a device planted at a VM's path never blocks or
	 * feeds us (SECURITY.md). */
	img->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (img->fd < 0) {
		err = -errno;
		free(img);
		return err;
	}
	if (fstat(img->fd, &st) || !S_ISREG(st.st_mode)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	img->elf = elf_begin(img->fd, ELF_C_READ_MMAP, NULL);
	if (!img->elf || elf_kind(img->elf) != ELF_K_ELF || !gelf_getehdr(img->elf, &eh) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		err = -ENOEXEC;
		goto cleanup;
	}
	if ((err = load_phdrs(img)) || (err = load_sections(img)))
		goto cleanup;
	*out = img;
	return 0;
cleanup:
	elf_image__free(img);
	return err;
}

int elf_image__symbol(const struct elf_image *img, const char *name, struct elf_sym *out)
{
	size_t i;

	for (i = 0; i < img->nsyms; i++) {
		if (strcmp(img->syms[i].name, name) == 0) {
			*out = img->syms[i];
			return 0;
		}
	}
	return -ENOENT;
}

const struct elf_sym *elf_image__symbol_at(const struct elf_image *img, uint64_t vaddr)
{
	size_t lo = 0, hi = img->nsyms;
	const struct elf_sym *best = NULL;

	/* Last symbol with value <= vaddr, then walk back over zero-sized or non-covering ones. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (img->syms[mid].value <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo > 0) {
		const struct elf_sym *s = &img->syms[--lo];

		if ((s->type == STT_FUNC || s->type == STT_OBJECT) && vaddr < s->value + s->size) {
			best = s;
			break;
		}
		if (s->value + 65536 < vaddr)
			break; /* no function is that large here; stop the walk back */
	}
	return best;
}

size_t elf_image__dynsym_count(const struct elf_image *img)
{
	return img->ndynsym;
}

bool elf_image__has_symtab(const struct elf_image *img)
{
	return img->has_symtab;
}

int elf_image__section(const struct elf_image *img, const char *name, uint64_t *vaddr,
		       uint64_t *size)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(img->elf, &shstrndx) != 0)
		return -ENOENT;
	while ((scn = elf_nextscn(img->elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		n = elf_strptr(img->elf, shstrndx, sh.sh_name);
		if (n && strcmp(n, name) == 0) {
			*vaddr = sh.sh_addr;
			*size = sh.sh_size;
			return 0;
		}
	}
	return -ENOENT;
}

const char *elf_image__build_id(const struct elf_image *img)
{
	return img->build_id;
}

int elf_image__bias(const struct elf_image *img, const struct proc_maps *maps, const char *map_path,
		    uint64_t *bias)
{
	size_t i, j;

	for (i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];

		if (strcmp(m->path, map_path) != 0)
			continue;
		for (j = 0; j < img->nphdrs; j++) {
			const GElf_Phdr *ph = &img->phdrs[j];

			if (ph->p_type == PT_LOAD && (ph->p_offset & PAGE_MASK_4K) == m->offset) {
				*bias = m->start - (ph->p_vaddr & PAGE_MASK_4K);
				return 0;
			}
		}
	}
	return -ENOENT;
}

void elf_image__free(struct elf_image *img)
{
	if (!img)
		return;
	free(img->syms);
	free(img->phdrs);
	if (img->elf)
		elf_end(img->elf);
	if (img->fd >= 0)
		close(img->fd);
	free(img);
}
