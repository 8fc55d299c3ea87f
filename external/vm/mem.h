/* Reading a process's memory: one interface, several backends. The live backend uses
 * process_vm_readv (never ptrace, never /proc/PID/mem), on another process or (the agent NIF) on
 * ourselves; the snapshot backend serves captured regions, so walkers and parsers are tested
 * offline on the same code path.
 * Does not own: deciding what to read, or classifying what the bytes mean. */
#ifndef XP_MEM_H
#define XP_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mem;

struct mem_region {
	uint64_t addr;
	size_t len;
	const void *data; /* the snapshot keeps its own copy */
};

/* Why a read failed; counted per reader so reports can say why samples were dropped. */
enum mem_fail {
	MEM_FAIL_FAULT = 0, /* EFAULT / partial read: unmapped or racing free */
	MEM_FAIL_GONE,	    /* ESRCH: the process exited */
	MEM_FAIL_PERM,	    /* EPERM / EACCES */
	MEM_FAIL_BOUNDS,    /* request refused: zero, huge, or wrapping */
	MEM_FAIL_OTHER,
	MEM_FAIL_COUNT
};

#define MEM_MAX_READ (64u << 20) /* no single read is larger than this */

int mem__open_live(struct mem **out, pid_t pid);
int mem__open_snapshot(struct mem **out, const struct mem_region *regions, size_t n);

/* A backend served by a function (replay.c: recorded reads, sample by sample): fill buf with
 * exactly len bytes at addr, or return a negative errno. */
typedef int (*mem_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);
int mem__open_fn(struct mem **out, mem_read_fn fn, void *ctx);

/* Told of every read after it was made (capture.c records them): rc is what mem__read returns,
 * buf holds the bytes when rc is 0. NULL removes the tap. */
typedef void (*mem_tap_fn)(void *ctx, uint64_t addr, const void *buf, size_t len, int rc);
void mem__set_tap(struct mem *m, mem_tap_fn fn, void *ctx);

/* Read exactly len bytes at addr. 0, or -EFAULT, -ESRCH, -EPERM, -EINVAL (bounds). */
int mem__read(struct mem *m, uint64_t addr, void *buf, size_t len);
int mem__read_u64(struct mem *m, uint64_t addr, uint64_t *out);
int mem__read_u32(struct mem *m, uint64_t addr, uint32_t *out);

/* Many reads at once: each request's rc is what mem__read would return for it. A live reader
 * makes one process_vm_readv of up to MEM_MANY_BATCH requests (a request that faults is read
 * again alone, to classify it, and the batch goes on after it); requests in increasing address
 * order up to 1 KiB apart, or in one page, are copied as one range through a 2 MiB buffer the
 * reader keeps (pstack --all, heap: a million Processes side by side). Other readers, and a tapped
 * one, read each in turn. Once a read finds the process gone (-ESRCH), every request left gets
 * -ESRCH unread. Returns 0, or -EINVAL for a bad request array. */
#define MEM_MANY_BATCH 1024 /* IOV_MAX: the most iovecs one process_vm_readv takes */
struct mem_req {
	uint64_t addr;
	void *buf;
	size_t len;
	int rc;
	/* lend: the bytes may be left where the reader copied them (a merged range's, in its
	 * scratch) instead of copied to buf; data says where they are when rc is 0 (buf, or the
	 * scratch, valid until the next mem__read_many on this reader). */
	bool lend;
	const void *data;
};
int mem__read_many(struct mem *m, struct mem_req *reqs, size_t n);
/* The same, the merged ranges copied into scratch (MEM_BOUNCE_BYTES, the caller's) instead of
 * the reader's own buffer: what is lent there stays valid while the caller keeps scratch, across
 * later reads (pstack --all parses a batch's Processes where they were copied, a while later). */
#define MEM_BOUNCE_BYTES (2u << 20) /* the merged ranges of one process_vm_readv */
int mem__read_many_at(struct mem *m, struct mem_req *reqs, size_t n, uint8_t *scratch);

/* A second live reader of the same process, for another thread: its own scratch and counters
 * (fold them back with mem__add_failures). -ENOTSUP for a reader that is not live, or tapped
 * (its tap must see every read). */
int mem__open_twin(struct mem **out, const struct mem *m);
void mem__add_failures(struct mem *to, const struct mem *from);

/* Failure counters since open, indexed by enum mem_fail. */
uint64_t mem__failures(const struct mem *m, enum mem_fail why);
const char *mem__fail_name(enum mem_fail why);

void mem__free(struct mem *m);

/* Guarded reads of our own memory, for the agent NIF inside the VM reading what it has not
 * validated yet: process_vm_readv on getpid() returns EFAULT for an unmapped address instead of
 * crashing the VM. Context-free and counter-free, so any thread may call them. mem__open_self is
 * the same as a struct mem, for the readers here that take one. */
#define MEM_SELF_MAX (8u << 20) /* no single self-read is larger than this */

/* A user-space x86-64 address that could be a data pointer (canonical, not in the first 64 KiB). */
static inline int mem__plausible(uint64_t p)
{
	return p >= 0x10000 && p < 0x800000000000ull;
}

int mem__open_self(struct mem **out);
/* Read exactly len bytes at addr. 0, or -EFAULT (unmapped, partial), -EINVAL (bounds, an
 * implausible address), or the negative errno of the syscall (-EPERM, -ENOSYS when filtered). */
int mem__self_read(uint64_t addr, void *buf, size_t len);
int mem__self_read_u64(uint64_t addr, uint64_t *out);
int mem__self_read_u32(uint64_t addr, uint32_t *out);
/* Reads the mapped leading part of [addr, addr + len) in one call. Returns the number of bytes
 * read, or 0 when fewer than min bytes are readable. */
size_t mem__self_read_prefix(uint64_t addr, void *buf, size_t len, size_t min);

#endif /* XP_MEM_H */
