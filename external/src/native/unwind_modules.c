/* The unwinder's modules (see unwind.h): what is reported to libdwfl from the target's maps
 * (every executable file mapping and the vDSO, with their load bias), each module's function
 * starts from .eh_frame_hdr, and the names of native code. Does not own: walking stacks and the
 * FDE cache (unwind.c). */
#include "symindex.h"
#include "unwind.h"
#include "unwind_int.h"
#include "path.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- function starts ---- */

/* Function starts of a module: .eh_frame_hdr's search table, sorted by initial location. Built
 * when reported; libdw 0.188 gives no FDE start (dwarf_frame_info's range came back 0..0). */
struct mod_starts {
	const uint8_t *tab; /* n pairs of int32 (initial location, FDE), relative to hdr_vaddr */
	size_t n;
	uint64_t hdr_vaddr, bias;
	struct symindex *syms; /* built on the first name asked of this module */
	bool syms_tried;
};

static int32_t rd_s32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Only the layout Linux linkers write: a 4-byte eh_frame_ptr, fde_count udata4, then entries
 * datarel sdata4. */
static void unwinder__index_starts(Dwfl_Module *mod)
{
	struct mod_starts *ms;
	const uint8_t *raw, *h;
	Dwarf_Addr bias;
	size_t rawlen, n, i, off;
	GElf_Phdr ph;
	void **ud = NULL;
	Elf *elf = dwfl_module_getelf(mod, &bias);

	/* Always present: it also carries the module's symbol index. */
	if (!(ms = calloc(1, sizeof(*ms))))
		return;
	dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	*ud = ms;
	if (!elf || elf_getphdrnum(elf, &n) || !(raw = (const uint8_t *)elf_rawfile(elf, &rawlen)))
		return;
	for (i = 0; i < n; i++) {
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			break;
	}
	if (i == n || ph.p_offset > rawlen || ph.p_filesz > rawlen - ph.p_offset)
		return;
	h = raw + ph.p_offset;
	off = 8; /* version, 3 encodings, eh_frame_ptr */
	if (ph.p_filesz < off + 4 || h[0] != 1 ||
	    ((h[1] & 0x0f) != 0x03 && (h[1] & 0x0f) != 0x0b) || h[2] != 0x03 || h[3] != 0x3b)
		return;
	n = (uint32_t)rd_s32(h + off);
	if (n > (ph.p_filesz - off - 4) / 8)
		return;
	*ms =
	    (struct mod_starts){.tab = h + off + 4, .n = n, .hdr_vaddr = ph.p_vaddr, .bias = bias};
}

/* Runtime start of the function whose FDE covers pc, or 0 when unknown. */
uint64_t unwinder__func_start(Dwfl_Module *mod, uint64_t pc)
{
	void **ud = NULL;
	const struct mod_starts *ms;
	size_t lo = 0, hi, mid;
	uint64_t vaddr;

	dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	if (!ud || !(ms = *ud) || !ms->n)
		return 0;
	vaddr = pc - ms->bias;
	for (hi = ms->n; lo < hi;) {
		mid = lo + (hi - lo) / 2;
		if (ms->hdr_vaddr + (uint64_t)(int64_t)rd_s32(ms->tab + mid * 8) <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? ms->hdr_vaddr + (uint64_t)(int64_t)rd_s32(ms->tab + (lo - 1) * 8) + ms->bias
		  : 0;
}

int unwinder__free_starts(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr start,
			  void *arg)
{
	struct mod_starts *ms = *ud;

	if (ms)
		symindex__free(ms->syms);
	free(*ud);
	*ud = NULL;
	return DWARF_CB_OK;
}

/* ---- modules ---- */

/* Every module is reported with its file already open (resolved through proc__resolve_path in
 * unwinder__new), so libdwfl never has to look for one. */
int unwinder__find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		       char **file_name, Elf **elfp)
{
	*elfp = NULL;
	return -1;
}

/* Installed debug files are found by build-id (then .gnu_debuglink) under /usr/lib/debug, the
 * host's and the target root's. Never debuginfod: a profiler must not go to the network because
 * DEBUGINFOD_URLS happens to be set, and with it set only the build-id search is safe. */
int unwinder__find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			     Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			     GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	if (urls && *urls)
		return dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name,
						    debuglink_file, debuglink_crc,
						    debuginfo_file_name);
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
					    debuglink_crc, debuginfo_file_name);
}

/* libdwfl's dwfl_standard_find_debuginfo ends, for a module with a build-id and no debug file
 * installed (most of them), by asking the debuginfod client: the first time, libdw dlopens
 * libdebuginfod, and with it libcurl, GnuTLS, Kerberos and LDAP (35 libraries here, 6 ms of
 * every attach, issue 27), although with DEBUGINFOD_URLS unset the client then does nothing. A
 * profiler that runs as root never goes to the network (unwinder__find_debuginfo), so it never
 * loads the client: this program's dlopen, which libdw's call reaches before libc's, refuses
 * that library and only that one, and libdwfl takes the refusal as "no debuginfod". Every other
 * name goes to the next dlopen (libc's, or a sanitizer's). */
void *dlopen(const char *file, int mode)
{
	static void *(*next)(const char *, int);

	if (file && !strncmp(file, "libdebuginfod", 13))
		return NULL;
	if (!next)
		next = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	return next ? next(file, mode) : NULL;
}

/* Load bias of the ELF open on fd as mapped by the executable mappings with m's path and inode:
 * a mapping's file offset names the PF_X segment it maps (as elf_image__bias does). */
static int unwinder__bias(int fd, const struct proc_maps *maps, const struct proc_map *m,
			  uint64_t *bias)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t i, j, n;
	int err = -ENOEXEC;

	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 || elf_getphdrnum(elf, &n))
		goto cleanup;
	for (i = 0; i < maps->n && err; i++) {
		const struct proc_map *o = &maps->v[i];

		if (!(o->perms & PROC_PERM_X) || o->inode != m->inode || strcmp(o->path, m->path))
			continue;
		for (j = 0; j < n && err; j++) {
			if (!gelf_getphdr(elf, (int)j, &ph) || ph.p_type != PT_LOAD ||
			    !(ph.p_flags & PF_X) || (ph.p_offset & PAGE_MASK_4K) != o->offset)
				continue;
			*bias = o->start - (ph.p_vaddr & PAGE_MASK_4K);
			err = 0;
		}
	}
cleanup:
	elf_end(elf);
	return err;
}

static int unwinder__report_file(struct unwinder *u, const struct proc_maps *maps,
				 const struct proc_map *m)
{
	char path[PATH_MAX];
	Dwfl_Module *mod;
	uint64_t bias = 0;
	struct stat st;
	int fd, err;

	if ((err = proc__resolve_path(u->pid, m->path, m->inode, path, sizeof(path))))
		return err;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	/* The file mapped, checked once it is open, is what libdwfl reads (it takes fd): a path
	 * swapped since (a container's link to a FIFO or a host file) is never read. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_ino != m->inode)
		err = -ENOENT;
	else
		err = unwinder__bias(fd, maps, m, &bias);
	if (err) {
		close(fd);
		return err;
	}
	/* add_p_vaddr: base is the bias (libdwfl ignores it for ET_EXEC, whose bias is 0). */
	mod = dwfl_report_elf(u->dwfl, path__base(m->path), path, fd, bias, true);
	if (!mod) {
		close(fd);
		return -ENOEXEC;
	}
	unwinder__index_starts(mod);
	return 0;
}

/* The vDSO has no file: copy its image out of the target into a memfd the module then owns. */
static int unwinder__report_vdso(struct unwinder *u, const struct proc_maps *maps,
				 const struct proc_map *m)
{
	size_t len = m->end - m->start;
	Dwfl_Module *mod;
	uint64_t bias = 0;
	void *buf = NULL;
	int fd = -1, err;

	if (!u->mem || m->end <= m->start || len > VDSO_MAX)
		return -EINVAL;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	if ((err = mem__read(u->mem, m->start, buf, len)))
		goto cleanup;
	fd = memfd_create("xp-vdso", MFD_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (write(fd, buf, len) != (ssize_t)len) {
		err = -EIO;
		goto cleanup;
	}
	if ((err = unwinder__bias(fd, maps, m, &bias)))
		goto cleanup;
	mod = dwfl_report_elf(u->dwfl, "[vdso]", "[vdso]", fd, bias, true);
	if (mod) {
		fd = -1; /* closed with the module */
		unwinder__index_starts(mod);
	} else {
		err = -ENOEXEC;
	}
cleanup:
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}

/* Was the file of mapping i already seen in an earlier executable mapping? */
static bool unwinder__seen(const struct proc_maps *maps, size_t i)
{
	for (size_t j = 0; j < i; j++) {
		const struct proc_map *a = &maps->v[j], *b = &maps->v[i];

		if ((a->perms & PROC_PERM_X) && a->inode == b->inode && !strcmp(a->path, b->path))
			return true;
	}
	return false;
}

/* Report the executable mappings of maps, but those whose known[i] is set. */
void unwinder__report_maps(struct unwinder *u, const struct proc_maps *maps, const bool *known)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		int err;

		if (!(m->perms & PROC_PERM_X) || (known && known[i]) || unwinder__seen(maps, i))
			continue;
		if (!strcmp(m->path, "[vdso]"))
			err = unwinder__report_vdso(u, maps, m);
		else if (m->path[0] != '/' || m->deleted || !strncmp(m->path, "/memfd:", 7))
			continue; /* anonymous, [vsyscall], JIT code (memfd:vmem), replaced */
		else
			err = unwinder__report_file(u, maps, m);
		if (err)
			u->stats.modules_failed++;
		else
			u->stats.modules++;
	}
}

/* ---- names ---- */

/* A symbol names look when it covers it; a sizeless one (an assembly label) only when no
 * function known from CFI starts between it and look. */
static bool unwinder__sym_covers(const GElf_Sym *sym, GElf_Off off, const struct fde_slot *f,
				 uint64_t look)
{
	if (sym->st_size)
		return off < sym->st_size;
	return !f->start || f->start <= look - off;
}

/* The symbol at or below look, through the module's index (built once); libdw's own lookup
 * when the module has none. */
static const char *unwinder__symbol(Dwfl_Module *mod, uint64_t look, GElf_Off *off, GElf_Sym *sym)
{
	struct mod_starts *ms = NULL;
	struct symindex_hit hit;
	void **ud = NULL;

	dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	if (ud)
		ms = *ud;
	if (!ms)
		return dwfl_module_addrinfo(mod, look, off, sym, NULL, NULL, NULL);
	if (!ms->syms_tried) {
		ms->syms_tried = true;
		symindex__build(mod, &ms->syms);
	}
	memset(sym, 0, sizeof(*sym));
	if (symindex__lookup(ms->syms, look, &hit))
		return NULL;
	*off = look - hit.start;
	sym->st_size = hit.size;
	sym->st_value = hit.start;
	return hit.name;
}

/* What names look: its module, and the symbol covering it (sym NULL when none does) or, failing
 * that, its function's start from CFI (fde.start, 0 when unknown). false: in no module. */
struct name_site {
	Dwfl_Module *mod;
	const char *sym;
	uint64_t sym_start, sym_size;
	struct fde_slot fde;
};

static bool unwinder__name_site(struct unwinder *u, uint64_t look, struct name_site *n)
{
	GElf_Off off = 0;
	GElf_Sym sym = {0};

	n->mod = dwfl_addrmodule(u->dwfl, look);
	if (!n->mod)
		return false;
	n->sym = unwinder__symbol(n->mod, look, &off, &sym);
	n->fde = unwinder__fde(u, look);
	if (!n->sym || !*n->sym || !unwinder__sym_covers(&sym, off, &n->fde, look))
		n->sym = NULL;
	n->sym_start = look - off;
	n->sym_size = sym.st_size;
	return true;
}

static int unwinder__name_at(struct unwinder *u, uint64_t look, uint64_t pc, bool with_offset,
			     char *buf, size_t len)
{
	struct name_site n;
	const char *mname;
	Dwarf_Addr bias = 0;

	if (!unwinder__name_site(u, look, &n)) {
		snprintf(buf, len, "0x%" PRIx64, pc);
		return -ENOENT;
	}
	if (n.sym) {
		/* .dynsym names come versioned ("__libc_start_main@@GLIBC_2.34"): drop it. */
		int k = (int)strcspn(n.sym, "@");

		if (with_offset)
			snprintf(buf, len, "%.*s+0x%" PRIx64, k, n.sym, pc - n.sym_start);
		else
			snprintf(buf, len, "%.*s", k, n.sym);
		return 0;
	}
	mname = dwfl_module_info(n.mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	dwfl_module_getelf(n.mod, &bias);
	if (!n.fde.start)
		snprintf(buf, len, "%s+0x%" PRIx64, mname, pc - bias);
	else if (with_offset)
		snprintf(buf, len, "%s!0x%" PRIx64 "+0x%" PRIx64, mname, n.fde.start - bias,
			 pc - n.fde.start);
	else
		snprintf(buf, len, "%s!0x%" PRIx64, mname, n.fde.start - bias);
	return 0;
}

/* A return address is looked up at pc - 1 (the call). */
static uint64_t unwinder__frame_look(const struct unwind_frame *f)
{
	return f->activation ? f->pc : f->pc - 1;
}

/* As unwinder__name_at decides which name look gets, without making it. */
uint64_t unwinder__name_key(struct unwinder *u, const struct unwind_frame *f, uint64_t *size)
{
	struct name_site n;

	*size = 0;
	if (!unwinder__name_site(u, unwinder__frame_look(f), &n))
		return 0;
	if (n.sym) {
		*size = n.sym_size;		    /* two symbols may start at one address */
		return n.sym_start & ~(1ull << 63); /* user space: the top bit is free */
	}
	return n.fde.start ? n.fde.start | (1ull << 63) : 0;
}

int unwinder__name(struct unwinder *u, uint64_t pc, bool with_offset, char *buf, size_t len)
{
	return unwinder__name_at(u, pc, pc, with_offset, buf, len);
}

int unwinder__name_frame(struct unwinder *u, const struct unwind_frame *f, bool with_offset,
			 char *buf, size_t len)
{
	return unwinder__name_at(u, unwinder__frame_look(f), f->pc, with_offset, buf, len);
}

const char *unwinder__module(struct unwinder *u, uint64_t pc)
{
	Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, pc);

	return mod ? dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL) : NULL;
}

const struct unwind_stats *unwinder__stats(const struct unwinder *u)
{
	return &u->stats;
}
