/* Reading memory of our own VM that we have not validated yet: process_vm_readv on getpid()
 * returns EFAULT for an unmapped address instead of crashing the VM. Every pointer the agent
 * discovers by scanning is read through here. Does not own: deciding what a pointer means. */
#ifndef XP_SAFEREAD_H
#define XP_SAFEREAD_H

#include <stddef.h>
#include <stdint.h>

#define SAFEREAD_MAX (8u << 20) /* no single read is larger than this */

/* Read exactly len bytes at addr. 0, or -EFAULT (unmapped, partial), -EINVAL (bounds), or the
 * negative errno of the syscall (-EPERM, -ENOSYS when process_vm_readv is filtered). */
int saferead__bytes(uint64_t addr, void *buf, size_t len);
int saferead__u64(uint64_t addr, uint64_t *out);
int saferead__u32(uint64_t addr, uint32_t *out);

/* Reads the mapped leading part of [addr, addr + len) in one call. Returns the number of bytes
 * read, or 0 when fewer than min bytes are readable. */
size_t saferead__prefix(uint64_t addr, void *buf, size_t len, size_t min);

/* A user-space x86-64 address that could be a data pointer (canonical, not in the first 64 KiB). */
static inline int saferead__plausible(uint64_t p)
{
	return p >= 0x10000 && p < 0x800000000000ull;
}

#endif /* XP_SAFEREAD_H */
