/* ELF images of the target's files (beam.smp, the agent NIF, libraries), read with libelf:
 * symbols (.symtab when present, else .dynsym), section ranges, build-id, and the load bias of a
 * mapped image. Does not own: finding which file to open (target.c), reading target memory (mem.h).
 */
#ifndef XP_ELFSYM_H
#define XP_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc.h"

struct elf_image;

struct elf_sym {
	uint64_t value; /* link-time virtual address; first: the sort's key (radix.h) */
	uint64_t size;
	const char *name;
	uint8_t type; /* STT_* */
	bool dynamic; /* from .dynsym */
};

/* 0, -ENOENT, -EACCES, -ENOEXEC (not a 64-bit x86-64 ELF), -ENOMEM. */
int elf_image__open(const char *path, struct elf_image **out);

/* Defined symbol by exact name: 0 or -ENOENT. */
int elf_image__symbol(const struct elf_image *img, const char *name, struct elf_sym *out);
/* The function or object symbol containing vaddr: NULL when none. */
const struct elf_sym *elf_image__symbol_at(const struct elf_image *img, uint64_t vaddr);
size_t elf_image__dynsym_count(const struct elf_image *img);
bool elf_image__has_symtab(const struct elf_image *img);

/* Section address range by name (".data", ".bss"): 0 or -ENOENT. */
int elf_image__section(const struct elf_image *img, const char *name, uint64_t *vaddr,
		       uint64_t *size);
/* Hex build-id, "" when absent. */
const char *elf_image__build_id(const struct elf_image *img);

/* Load bias of the image as mapped in maps under map_path (the path as the target sees it):
 * runtime address = bias + link-time address. 0 or -ENOENT when not mapped. */
int elf_image__bias(const struct elf_image *img, const struct proc_maps *maps, const char *map_path,
		    uint64_t *bias);

void elf_image__free(struct elf_image *img);

#endif /* XP_ELFSYM_H */
