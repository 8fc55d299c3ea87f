/* The memory reader: a live backend over process_vm_readv, a snapshot backend over captured
 * regions and a function backend (replay), behind one mem__read, with an optional tap. Every
 * failure is classified and counted here, at the source. Does not own: what to read or what the
 * bytes mean; it never uses ptrace or /proc/PID/mem, so reading never stops or perturbs the target.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "mem.h"

enum mem_kind { MEM_LIVE, MEM_SNAPSHOT, MEM_FN };

struct mem {
	enum mem_kind kind;
	pid_t pid;
	struct mem_region *regions; /* snapshot: sorted by addr, non-overlapping, own copies */
	size_t nregions;
	uint64_t fail[MEM_FAIL_COUNT];
	mem_read_fn fn;
	void *fn_ctx;
	mem_tap_fn tap;
	void *tap_ctx;
	struct mem_many *many; /* live: mem__read_many's iovecs and bounce buffer */
};

static int mem__fail(struct mem *m, enum mem_fail why, int err)
{
	m->fail[why]++;
	return err;
}

int mem__open_live(struct mem **out, pid_t pid)
{
	struct mem *m;

	if (!out || pid <= 0)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->kind = MEM_LIVE;
	m->pid = pid;
	*out = m;
	return 0;
}

int mem__open_fn(struct mem **out, mem_read_fn fn, void *ctx)
{
	struct mem *m;

	if (!out || !fn)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->kind = MEM_FN;
	m->fn = fn;
	m->fn_ctx = ctx;
	*out = m;
	return 0;
}

int mem__open_twin(struct mem **out, const struct mem *m)
{
	if (!m || m->kind != MEM_LIVE || m->tap)
		return -ENOTSUP;
	return mem__open_live(out, m->pid);
}

void mem__add_failures(struct mem *to, const struct mem *from)
{
	if (!to || !from)
		return;
	for (int i = 0; i < MEM_FAIL_COUNT; i++)
		to->fail[i] += from->fail[i];
}

void mem__set_tap(struct mem *m, mem_tap_fn fn, void *ctx)
{
	if (!m)
		return;
	m->tap = fn;
	m->tap_ctx = ctx;
}

static int region_cmp(const void *a, const void *b)
{
	const struct mem_region *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Zero-length, wrapping or overlapping regions would make "inside one region" ambiguous. */
static int regions_check(const struct mem_region *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!r[i].len || !r[i].data || r[i].len - 1 > UINT64_MAX - r[i].addr)
			return -EINVAL;
		if (i && r[i - 1].addr + r[i - 1].len > r[i].addr)
			return -EINVAL;
	}
	return 0;
}

int mem__open_snapshot(struct mem **out, const struct mem_region *regions, size_t n)
{
	struct mem *m;
	int err = -ENOMEM;

	if (!out || (n && !regions))
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->kind = MEM_SNAPSHOT;
	m->regions = calloc(n ? n : 1, sizeof(*m->regions));
	if (!m->regions)
		goto cleanup;
	if (n) {
		memcpy(m->regions, regions, n * sizeof(*regions));
		qsort(m->regions, n, sizeof(*m->regions), region_cmp);
	}
	err = regions_check(m->regions, n);
	if (err)
		goto cleanup; /* nregions is still 0: the caller's data is not freed */
	for (m->nregions = 0; m->nregions < n; m->nregions++) {
		struct mem_region *r = &m->regions[m->nregions];
		void *copy = malloc(r->len);

		if (!copy) {
			err = -ENOMEM;
			goto cleanup;
		}
		memcpy(copy, r->data, r->len);
		r->data = copy;
	}
	*out = m;
	return 0;
cleanup:
	mem__free(m);
	return err;
}

/* One process_vm_readv: the bytes copied (the kernel stops at the first unmapped page), or -1
 * with errno. */
static ssize_t readv_at(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};

	return process_vm_readv(pid, &local, 1, &remote, 1, 0);
}

static int mem__read_live(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = readv_at(m->pid, addr, buf, len);

	if (n == (ssize_t)len)
		return 0;
	if (n >= 0) /* partial: the range runs into an unmapped page */
		return mem__fail(m, MEM_FAIL_FAULT, -EFAULT);
	switch (errno) {
	case EFAULT:
		return mem__fail(m, MEM_FAIL_FAULT, -EFAULT);
	case ESRCH:
		return mem__fail(m, MEM_FAIL_GONE, -ESRCH);
	case EPERM:
	case EACCES:
		return mem__fail(m, MEM_FAIL_PERM, -EPERM);
	default:
		return mem__fail(m, MEM_FAIL_OTHER, errno ? -errno : -EIO);
	}
}

static int mem__read_snapshot(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	size_t lo = 0, hi = m->nregions;

	/* The last region starting at or below addr is the only one that can hold the read. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->regions[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo) {
		const struct mem_region *r = &m->regions[lo - 1];
		uint64_t off = addr - r->addr;

		if (off < r->len && len <= r->len - off) {
			memcpy(buf, (const uint8_t *)r->data + off, len);
			return 0;
		}
	}
	return mem__fail(m, MEM_FAIL_FAULT, -EFAULT);
}

static int mem__read_fn(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	int rc = m->fn(m->fn_ctx, addr, buf, len);

	if (rc == -ESRCH)
		return mem__fail(m, MEM_FAIL_GONE, rc);
	return rc ? mem__fail(m, MEM_FAIL_FAULT, rc < 0 ? rc : -EFAULT) : 0;
}

int mem__read(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	int rc;

	if (!m)
		return -EINVAL;
	if (!buf || !len || len > MEM_MAX_READ || len - 1 > UINT64_MAX - addr)
		return mem__fail(m, MEM_FAIL_BOUNDS, -EINVAL);
	if (m->kind == MEM_LIVE)
		rc = mem__read_live(m, addr, buf, len);
	else if (m->kind == MEM_FN)
		rc = mem__read_fn(m, addr, buf, len);
	else
		rc = mem__read_snapshot(m, addr, buf, len);
	if (m->tap)
		m->tap(m->tap_ctx, addr, buf, len, rc);
	return rc;
}

/* A remote iovec costs the kernel a page-table walk and a pin of its own, about what copying a
 * KB or two costs: requests this close share one, and so do requests farther apart that end in
 * the page the range ends in (pinned for it anyway). pstack --all's million small stacks, 1.9
 * KB apart at the ends of their heaps, are then about half a million ranges, not a million
 * iovecs nor 1.9 GB copied. */
#define MEM_COALESCE_GAP 1024
#define MEM_PAGE	 4096
#define MEM_DIRECT	 SIZE_MAX /* a request read straight into its buffer */
/* The kernel copies each page with rep movsb, which on the AMD EPYC machines here is 2.5-3.5
 * times slower when the destination's offset in a cache line differs from the source's by 8
 * bytes (700-776 MB: 0.27-0.31 s against 0.075-0.13 s), up to 1.8 times by 16: a merged range
 * is placed in the bounce buffer at its source's offset modulo this, at the cost of up to 63
 * bytes of the buffer (docs/accuracy-and-cost.md, "Twelfth pass"). */
#define MEM_COPY_ALIGN 64

/* The live reader's scratch for mem__read_many, allocated on its first use. */
struct mem_many {
	struct iovec local[MEM_MANY_BATCH], remote[MEM_MANY_BATCH];
	size_t ends[MEM_MANY_BATCH]; /* where each request's bytes end in the copied stream */
	size_t boff[MEM_MANY_BATCH]; /* where they are in bounce, or MEM_DIRECT */
	uint8_t bounce[MEM_BOUNCE_BYTES];
};

/* reqs[i..g): the requests from i that follow one another in memory, each within
 * MEM_COALESCE_GAP bytes of the one before or ending in the page it ends in, and all within
 * MEM_BOUNCE_BYTES of the first. */
static size_t group_end(const struct mem_req *reqs, size_t i, size_t n)
{
	uint64_t start = reqs[i].addr, end = start + reqs[i].len;
	size_t g;

	for (g = i + 1; g < n && g - i < MEM_MANY_BATCH; g++) {
		if (reqs[g].addr < end || reqs[g].addr - start > MEM_BOUNCE_BYTES - reqs[g].len)
			break;
		if (reqs[g].addr - end > MEM_COALESCE_GAP &&
		    (reqs[g].addr + reqs[g].len - 1) / MEM_PAGE != (end - 1) / MEM_PAGE)
			break;
		end = reqs[g].addr + reqs[g].len;
	}
	return g;
}

/* Local iovec for len bytes at p: the last one grows when p follows it (bounce ranges). */
static void local_add(struct mem_many *s, size_t *nl, void *p, size_t len)
{
	struct iovec *last = *nl ? &s->local[*nl - 1] : NULL;

	if (last && (uint8_t *)last->iov_base + last->iov_len == (uint8_t *)p)
		last->iov_len += len;
	else
		s->local[(*nl)++] = (struct iovec){.iov_base = p, .iov_len = len};
}

/* reqs[0..n) in one process_vm_readv: how many completed (all bytes read), in order. Requests
 * that follow one another in memory within MEM_COALESCE_GAP bytes share one remote range, read
 * into a bounce buffer and copied out (or lent there: reqs[i].lend): the kernel pins and copies
 * per range and per local iovec, and a million Processes allocated side by side then cost a few
 * thousand large copies, not a million small ones. A request alone is read straight into its
 * buffer. */
static size_t readv_many(struct mem *m, struct mem_req *reqs, size_t n, uint8_t *bounce,
			 size_t *tried)
{
	struct mem_many *s = m->many;
	size_t i = 0, g, k, nl = 0, nr = 0, total = 0, used = 0, done = 0, pad;
	ssize_t got;

	while (i < n && nl < MEM_MANY_BATCH && nr < MEM_MANY_BATCH) {
		uint64_t start = reqs[i].addr, span;

		g = group_end(reqs, i, n);
		span = reqs[g - 1].addr + reqs[g - 1].len - start;
		if (g - i == 1) {
			s->remote[nr++] = (struct iovec){.iov_base = (void *)(uintptr_t)start,
							 .iov_len = reqs[i].len};
			local_add(s, &nl, reqs[i].buf, reqs[i].len);
			total += reqs[i].len;
			s->ends[i] = total;
			s->boff[i++] = MEM_DIRECT;
			continue;
		}
		if (span > MEM_BOUNCE_BYTES - used)
			break;
		pad = (start - (uintptr_t)(bounce + used)) & (MEM_COPY_ALIGN - 1);
		if (pad <= MEM_BOUNCE_BYTES - used - span) /* else where it fits, unaligned */
			used += pad;
		s->remote[nr++] =
		    (struct iovec){.iov_base = (void *)(uintptr_t)start, .iov_len = span};
		local_add(s, &nl, bounce + used, span);
		for (k = i; k < g; k++) {
			s->boff[k] = used + (reqs[k].addr - start);
			s->ends[k] = total + (reqs[k].addr - start) + reqs[k].len;
		}
		total += span;
		used += span;
		i = g;
	}
	*tried = n = i;
	if (n == 0)
		return 0;
	got = process_vm_readv(m->pid, s->local, nl, s->remote, nr, 0);
	/* The kernel copies the remote iovecs in order and stops at the first it cannot (in a
	 * merged range, maybe in a gap: the request there is then read alone by the caller). */
	for (i = 0; got > 0 && i < n && (size_t)got >= s->ends[i]; i++) {
		if (s->boff[i] == MEM_DIRECT) {
			reqs[i].data = reqs[i].buf;
		} else if (reqs[i].lend) {
			reqs[i].data = bounce + s->boff[i]; /* lent: no copy */
		} else {
			memcpy(reqs[i].buf, bounce + s->boff[i], reqs[i].len);
			reqs[i].data = reqs[i].buf;
		}
		done++;
	}
	return done;
}

/* Before the scratch is reused: the bytes lent from it, reqs[0..n), copied to their buffers. */
static void unlend(struct mem_req *reqs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (reqs[i].rc == 0 && reqs[i].data && reqs[i].data != reqs[i].buf) {
			memcpy(reqs[i].buf, reqs[i].data, reqs[i].len);
			reqs[i].data = reqs[i].buf;
		}
	}
}

/* One request read by itself (mem__read): its rc, and data its buffer when read. */
static void read_alone(struct mem *m, struct mem_req *q)
{
	q->rc = mem__read(m, q->addr, q->buf, q->len);
	q->data = q->rc ? NULL : q->buf;
}

static bool req_ok(const struct mem_req *q)
{
	return q->buf && q->len && q->len <= MEM_MAX_READ && q->len - 1 <= UINT64_MAX - q->addr;
}

int mem__read_many(struct mem *m, struct mem_req *reqs, size_t n)
{
	return mem__read_many_at(m, reqs, n, NULL);
}

int mem__read_many_at(struct mem *m, struct mem_req *reqs, size_t n, uint8_t *scratch)
{
	size_t i = 0, k, batch, done, lent = 0;

	if (!m || (n && !reqs))
		return -EINVAL;
	if (m->kind == MEM_LIVE && !m->many)
		m->many = malloc(sizeof(*m->many)); /* NULL: each request is read alone */
	for (k = 0; k < n; k++)
		reqs[k].data = NULL;
	while (i < n && !(i && reqs[i - 1].rc == -ESRCH)) {
		if (m->kind != MEM_LIVE || m->tap || !m->many || !req_ok(&reqs[i])) {
			read_alone(m, &reqs[i++]);
			continue;
		}
		for (k = i; k < n && k - i < MEM_MANY_BATCH && req_ok(&reqs[k]); k++)
			;
		unlend(reqs + lent, i - lent); /* the scratch is about to be reused */
		lent = i;
		done = readv_many(m, reqs + i, k - i, scratch ? scratch : m->many->bounce, &batch);
		for (k = i; k < i + done; k++)
			reqs[k].rc = 0;
		i += done;
		if (done <
		    batch) { /* the one that stopped the batch, alone: its error classified */
			read_alone(m, &reqs[i++]);
		}
	}
	for (; i < n; i++) /* the VM exited: a million requests are not tried one by one */
		reqs[i].rc = -ESRCH;
	return 0;
}

int mem__read_u64(struct mem *m, uint64_t addr, uint64_t *out)
{
	return mem__read(m, addr, out, sizeof(*out));
}

int mem__read_u32(struct mem *m, uint64_t addr, uint32_t *out)
{
	return mem__read(m, addr, out, sizeof(*out));
}

uint64_t mem__failures(const struct mem *m, enum mem_fail why)
{
	if (!m || (unsigned)why >= MEM_FAIL_COUNT)
		return 0;
	return m->fail[why];
}

const char *mem__fail_name(enum mem_fail why)
{
	/* In enum mem_fail order. */
	static const char *const names[] = {"fault", "gone", "permission", "bounds", "other"};
	_Static_assert(sizeof(names) / sizeof(names[0]) == MEM_FAIL_COUNT, "one name per reason");

	if ((unsigned)why >= MEM_FAIL_COUNT)
		return "unknown";
	return names[why];
}

void mem__free(struct mem *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nregions; i++)
		free((void *)m->regions[i].data);
	free(m->regions);
	free(m->many);
	free(m);
}

int mem__open_self(struct mem **out)
{
	return mem__open_live(out, getpid());
}

static int self_bounds_ok(uint64_t addr, size_t len)
{
	return len && len <= MEM_SELF_MAX && addr + len >= addr && mem__plausible(addr);
}

int mem__self_read(uint64_t addr, void *buf, size_t len)
{
	ssize_t n;

	if (!self_bounds_ok(addr, len))
		return -EINVAL;
	n = readv_at(getpid(), addr, buf, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int mem__self_read_u64(uint64_t addr, uint64_t *out)
{
	return mem__self_read(addr, out, sizeof(*out));
}

int mem__self_read_u32(uint64_t addr, uint32_t *out)
{
	return mem__self_read(addr, out, sizeof(*out));
}

size_t mem__self_read_prefix(uint64_t addr, void *buf, size_t len, size_t min)
{
	ssize_t n;

	if (!self_bounds_ok(addr, len))
		return 0;
	n = readv_at(getpid(), addr, buf, len);
	return n > 0 && (size_t)n >= min ? (size_t)n : 0;
}
