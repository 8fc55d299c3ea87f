/* Unit tests for ELF lookups (elfsym.c) on a small shared object built with the tests: symbols by
 * name and by address, sections, build-id, and the load bias once the object is mapped. */
#include <dlfcn.h>
#include <errno.h>
#include <elf.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "elf_fixture.h"
#include "elfsym.h"

static void test_symbols(struct elf_image *img)
{
	struct elf_sym s, f;
	const struct elf_sym *at;

	CHECK_INT("data symbol found", 0, elf_image__symbol(img, "xp_fixture_data", &s));
	CHECK_INT("data symbol size", sizeof(struct xp_fixture), s.size);
	CHECK_INT("data symbol type", STT_OBJECT, s.type);
	CHECK_INT("func symbol found", 0, elf_image__symbol(img, "xp_fixture_func", &f));
	CHECK_INT("func symbol type", STT_FUNC, f.type);
	CHECK("func symbol has a size", f.size > 0);
	CHECK_INT("missing symbol", -ENOENT, elf_image__symbol(img, "xp_no_such_symbol", &s));
	at = elf_image__symbol_at(img, f.value + f.size / 2);
	CHECK_STR("symbol at mid-function", "xp_fixture_func", at ? at->name : NULL);
	at = elf_image__symbol_at(img, f.value + f.size);
	CHECK("symbol just past the function is not it",
	      !at || strcmp(at->name, "xp_fixture_func") != 0);
	CHECK("dynsym counted", elf_image__dynsym_count(img) >= 3);
	CHECK("unstripped fixture has .symtab", elf_image__has_symtab(img));
	/* Hidden symbols live only in .symtab: found because .symtab is read when present. */
	CHECK_INT("hidden symbol from .symtab", 0, elf_image__symbol(img, "xp_fixture_hidden", &s));
}

static void test_sections(struct elf_image *img)
{
	uint64_t vaddr = 0, size = 0;

	CHECK_INT(".text found", 0, elf_image__section(img, ".text", &vaddr, &size));
	CHECK(".text non-empty", size > 0);
	CHECK_INT(".bss found", 0, elf_image__section(img, ".bss", &vaddr, &size));
	CHECK(".bss holds the 4 KiB array", size >= 4096);
	CHECK_INT("missing section", -ENOENT, elf_image__section(img, ".nope", &vaddr, &size));
	CHECK_INT("build-id is 40 hex digits", 40, strlen(elf_image__build_id(img)));
}

static void test_bias(struct elf_image *img)
{
	struct proc_maps *maps = NULL;
	struct elf_sym s;
	uint64_t bias = 0;
	void *h, *real;

	h = dlopen(XP_ELF_FIXTURE, RTLD_NOW | RTLD_LOCAL);
	CHECK("fixture loads", h != NULL);
	if (!h)
		return;
	real = dlsym(h, "xp_fixture_data");
	CHECK_INT("own maps", 0, proc_maps__load(getpid(), &maps));
	CHECK_INT("bias found", 0, maps ? elf_image__bias(img, maps, XP_ELF_FIXTURE, &bias) : -1);
	elf_image__symbol(img, "xp_fixture_data", &s);
	CHECK_U64("bias + value == dlsym", (uint64_t)(uintptr_t)real, bias + s.value);
	CHECK_U64("magic read through the bias", XP_FIXTURE_MAGIC,
		  ((const struct xp_fixture *)(uintptr_t)(bias + s.value))->magic);
	CHECK_INT("unmapped path has no bias", -ENOENT,
		  maps ? elf_image__bias(img, maps, "/no/such.so", &bias) : -1);
	proc_maps__free(maps);
	dlclose(h);
}

int main(void)
{
	struct elf_image *img = NULL;
	int err;

	err = elf_image__open(XP_ELF_FIXTURE, &img);
	CHECK_INT("open fixture", 0, err);
	if (err)
		return check_done();
	test_symbols(img);
	test_sections(img);
	test_bias(img);
	elf_image__free(img);
	elf_image__free(NULL);
	CHECK_INT("open missing file", -ENOENT, elf_image__open("/no/such/file", &img));
	CHECK_INT("open non-ELF", -ENOEXEC, elf_image__open("/etc/hostname", &img));
	return check_done();
}
