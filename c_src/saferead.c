/* process_vm_readv on ourselves: a fault-tolerant memcpy. See saferead.h. */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "saferead.h"

int saferead__bytes(uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n;

	if (len == 0 || len > SAFEREAD_MAX || addr + len < addr || !saferead__plausible(addr))
		return -EINVAL;
	n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int saferead__u64(uint64_t addr, uint64_t *out)
{
	return saferead__bytes(addr, out, sizeof(*out));
}

int saferead__u32(uint64_t addr, uint32_t *out)
{
	return saferead__bytes(addr, out, sizeof(*out));
}

size_t saferead__prefix(uint64_t addr, void *buf, size_t len, size_t min)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n;

	if (len == 0 || len > SAFEREAD_MAX || addr + len < addr || !saferead__plausible(addr))
		return 0;
	/* The kernel stops at the first unmapped page and reports the bytes copied so far. */
	n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	return n > 0 && (size_t)n >= min ? (size_t)n : 0;
}
