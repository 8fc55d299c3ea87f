/* Unit tests for mem.c: the live backend on this process and on dead / forbidden processes,
 * the snapshot backend on synthetic regions, bounds refusal and the per-reason counters. */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "mem.h"

static void test_live_self(void)
{
	static const char text[] = "extrospect reads itself";
	uint64_t word = 0x1122334455667788ull, w64 = 0;
	uint32_t w32 = 0;
	char buf[sizeof(text)] = {0};
	struct mem *m = NULL;
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *pages;

	CHECK_INT("live open", 0, mem__open_live(&m, getpid()));
	CHECK_INT("live read", 0, mem__read(m, (uintptr_t)text, buf, sizeof(buf)));
	CHECK_STR("live read bytes", text, buf);
	CHECK_INT("live read_u64", 0, mem__read_u64(m, (uintptr_t)&word, &w64));
	CHECK_U64("live read_u64 value", word, w64);
	CHECK_INT("live read_u32", 0, mem__read_u32(m, (uintptr_t)&word, &w32));
	CHECK_U64("live read_u32 value", 0x55667788u, w32);

	CHECK_INT("live unmapped", -EFAULT, mem__read(m, 16, buf, 8));
	/* A read running off the end of a mapping is partial: a failure, never half a result. */
	pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK("mmap", pages != MAP_FAILED);
	munmap(pages + page, page);
	CHECK_INT("live straddle mapped/unmapped", -EFAULT,
		  mem__read(m, (uintptr_t)pages + page - 4, buf, 8));
	CHECK_INT("live last bytes of mapping", 0,
		  mem__read(m, (uintptr_t)pages + page - 8, buf, 8));
	munmap(pages, page);
	CHECK_INT("live fault count", 2, mem__failures(m, MEM_FAIL_FAULT));

	CHECK_INT("bounds zero", -EINVAL, mem__read(m, (uintptr_t)text, buf, 0));
	CHECK_INT("bounds huge", -EINVAL, mem__read(m, (uintptr_t)text, buf, MEM_MAX_READ + 1));
	CHECK_INT("bounds wrap", -EINVAL, mem__read(m, UINT64_MAX - 3, buf, 8));
	CHECK_INT("bounds exact top", -EFAULT, mem__read(m, UINT64_MAX - 7, buf, 8));
	CHECK_INT("bounds count", 3, mem__failures(m, MEM_FAIL_BOUNDS));
	CHECK_INT("fault count after bounds", 3, mem__failures(m, MEM_FAIL_FAULT));
	CHECK_INT("live gone count zero", 0, mem__failures(m, MEM_FAIL_GONE));
	mem__free(m);
}

static void test_live_gone(void)
{
	struct mem *m = NULL;
	char buf[8];
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	CHECK("fork", pid > 0);
	waitpid(pid, NULL, 0); /* reaped: the pid no longer exists */
	CHECK_INT("gone open", 0, mem__open_live(&m, pid));
	CHECK_INT("gone read", -ESRCH, mem__read(m, 0x400000, buf, sizeof(buf)));
	CHECK_INT("gone count", 1, mem__failures(m, MEM_FAIL_GONE));
	CHECK_INT("gone not fault", 0, mem__failures(m, MEM_FAIL_FAULT));
	mem__free(m);
}

/* An unprivileged reader of another user's process gets EPERM. As root, a child drops to
 * nobody and reads its parent; otherwise read pid 1. */
static void test_live_perm(void)
{
	static const uint64_t target = 42;
	struct mem *m = NULL;
	uint64_t v;
	int status = 0, rc;
	pid_t pid;

	if (geteuid() != 0) {
		mem__open_live(&m, 1);
		CHECK_INT("perm read pid 1", -EPERM, mem__read_u64(m, 0x400000, &v));
		CHECK_INT("perm count", 1, mem__failures(m, MEM_FAIL_PERM));
		mem__free(m);
		return;
	}
	pid = fork();
	if (pid == 0) {
		pid_t parent = getppid();

		if (setgid(65534) || setuid(65534) || mem__open_live(&m, parent))
			_exit(2);
		rc = mem__read_u64(m, (uintptr_t)&target, &v);
		_exit(rc == -EPERM && mem__failures(m, MEM_FAIL_PERM) == 1 ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	CHECK_INT("perm child as nobody reads root parent", 0,
		  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void test_snapshot(void)
{
	uint8_t a[64], b[32], c[16], buf[64];
	struct mem_region r[] = {
	    {.addr = 0x2000, .len = sizeof(b), .data = b}, /* given unsorted on purpose */
	    {.addr = 0x1000, .len = sizeof(a), .data = a},
	    {.addr = 0x2020, .len = sizeof(c), .data = c}, /* adjacent to b */
	};
	struct mem_region overlap[] = {
	    {.addr = 0x1000, .len = 64, .data = a},
	    {.addr = 0x1020, .len = 32, .data = b},
	};
	struct mem *m = NULL, *bad = NULL;
	uint64_t v = 0;

	for (unsigned i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)i;
	memset(b, 0xbb, sizeof(b));
	memset(c, 0xcc, sizeof(c));
	CHECK_INT("snapshot open", 0, mem__open_snapshot(&m, r, 3));
	a[8] = 0xff; /* the snapshot holds its own copy */
	CHECK_INT("snapshot read_u64", 0, mem__read_u64(m, 0x1008, &v));
	CHECK_U64("snapshot copy", 0x0f0e0d0c0b0a0908ull, v);
	CHECK_INT("snapshot whole region", 0, mem__read(m, 0x1000, buf, 64));
	CHECK_INT("snapshot last byte", 0, mem__read(m, 0x103f, buf, 1));
	CHECK_U64("snapshot last byte value", 0x3f, buf[0]);
	CHECK_INT("snapshot past end", -EFAULT, mem__read(m, 0x1039, buf, 8));
	CHECK_INT("snapshot before first", -EFAULT, mem__read(m, 0xff8, buf, 8));
	CHECK_INT("snapshot gap", -EFAULT, mem__read(m, 0x1800, buf, 8));
	CHECK_INT("snapshot straddle adjacent", -EFAULT, mem__read(m, 0x201c, buf, 8));
	CHECK_INT("snapshot second region", 0, mem__read(m, 0x2024, buf, 8));
	CHECK_U64("snapshot second region value", 0xcc, buf[7]);
	CHECK_INT("snapshot bounds", -EINVAL, mem__read(m, 0x1000, buf, 0));
	CHECK_INT("snapshot fault count", 4, mem__failures(m, MEM_FAIL_FAULT));
	CHECK_INT("snapshot bounds count", 1, mem__failures(m, MEM_FAIL_BOUNDS));
	mem__free(m);

	CHECK_INT("snapshot overlap refused", -EINVAL, mem__open_snapshot(&bad, overlap, 2));
	CHECK_INT("snapshot empty", 0, mem__open_snapshot(&bad, NULL, 0));
	CHECK_INT("snapshot empty read", -EFAULT, mem__read(bad, 0x1000, buf, 1));
	mem__free(bad);
}

static void test_names(void)
{
	CHECK_STR("name fault", "fault", mem__fail_name(MEM_FAIL_FAULT));
	CHECK_STR("name gone", "gone", mem__fail_name(MEM_FAIL_GONE));
	CHECK_STR("name perm", "permission", mem__fail_name(MEM_FAIL_PERM));
	CHECK_STR("name bounds", "bounds", mem__fail_name(MEM_FAIL_BOUNDS));
	CHECK_STR("name other", "other", mem__fail_name(MEM_FAIL_OTHER));
	mem__free(NULL);
	CHECK_INT("open live bad pid", -EINVAL, mem__open_live(&(struct mem *){NULL}, 0));
}

/* mem__read_many: 1200 reads of our own memory in batches, one of them at an unmapped page in
 * the middle of a batch: it alone fails, classified and counted; the rest after it read. */
static void test_read_many(void)
{
	enum { N = 1200, BAD = 700 };
	static uint64_t words[N], out[N];
	struct mem_req *q = calloc(N, sizeof(*q));
	struct mem *m = NULL;
	long page = sysconf(_SC_PAGESIZE);
	void *hole = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int i, ok = 0;

	if (!q || hole == MAP_FAILED || mem__open_live(&m, getpid())) {
		CHECK("read_many setup", false);
		free(q);
		return;
	}
	for (i = 0; i < N; i++) {
		words[i] = 0x5000000000000000ull + (uint64_t)i;
		q[i] = (struct mem_req){.addr = (uintptr_t)&words[i], .buf = &out[i], .len = 8};
	}
	q[BAD].addr = (uintptr_t)hole;
	CHECK_INT("read_many returns 0", 0, mem__read_many(m, q, N));
	for (i = 0; i < N; i++)
		ok += i != BAD && q[i].rc == 0 && out[i] == words[i];
	CHECK_INT("every other read made, bytes right", N - 1, ok);
	CHECK_INT("the unmapped one faults", -EFAULT, q[BAD].rc);
	CHECK_INT("and is counted once", 1, mem__failures(m, MEM_FAIL_FAULT));
	CHECK_INT("read_many of nothing", 0, mem__read_many(m, q, 0));
	mem__free(m);
	munmap(hole, (size_t)page);
	free(q);
}

/* Requests 256 bytes apart share remote ranges (gaps read into a sink), across three pages whose
 * middle one is unmapped: the requests in the hole fault, every other one reads its bytes, and
 * the bytes of the gaps land in no request's buffer. */
static void test_read_many_gaps(void)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t n = (size_t)(3 * page / 256), i, ok = 0, faults = 0;
	uint8_t *p = mmap(NULL, (size_t)(3 * page), PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct mem_req *q = calloc(n, sizeof(*q));
	uint64_t *out = calloc(n, 16);
	struct mem *m = NULL;

	if (p == MAP_FAILED || !q || !out || mem__open_live(&m, getpid())) {
		CHECK("read_many gaps setup", false);
		free(q);
		free(out);
		return;
	}
	for (i = 0; i < (size_t)(3 * page); i++)
		p[i] = (uint8_t)(i * 7);
	munmap(p + page, (size_t)page);
	for (i = 0; i < n; i++) {
		out[2 * i + 1] = 0xeeeeeeeeeeeeeeeeull; /* a guard after each 8-byte buffer */
		q[i] = (struct mem_req){
		    .addr = (uintptr_t)(p + i * 256), .buf = &out[2 * i], .len = 8};
	}
	CHECK_INT("read_many with gaps returns 0", 0, mem__read_many(m, q, n));
	for (i = 0; i < n; i++) {
		bool hole = i * 256 >= (size_t)page && i * 256 < (size_t)(2 * page);

		faults += hole && q[i].rc == -EFAULT;
		ok += !hole && q[i].rc == 0 && memcmp(&out[2 * i], p + i * 256, 8) == 0 &&
		      out[2 * i + 1] == 0xeeeeeeeeeeeeeeeeull;
	}
	CHECK_INT("every request in the hole faults", (int)(page / 256), (int)faults);
	CHECK_INT("every other one reads its bytes, and no more", (int)(n - page / 256), (int)ok);
	mem__free(m);
	munmap(p, (size_t)page);
	munmap(p + 2 * page, (size_t)page);
	free(q);
	free(out);
}

/* 1024 requests of 4 KiB side by side: 4 MiB, more than one bounce buffer of merged ranges
 * holds, so one call takes several process_vm_readv; every byte lands in its own buffer. */
static void test_read_many_bounce(void)
{
	enum { N = 1024, LEN = 4096 };
	uint8_t *src = malloc((size_t)N * LEN), *dst = malloc((size_t)N * LEN);
	struct mem_req *q = calloc(N, sizeof(*q));
	struct mem *m = NULL;
	size_t i, ok = 0;

	if (!src || !dst || !q || mem__open_live(&m, getpid())) {
		CHECK("read_many bounce setup", false);
		goto out;
	}
	for (i = 0; i < (size_t)N * LEN; i++)
		src[i] = (uint8_t)(i * 13 + (i >> 12));
	memset(dst, 0xee, (size_t)N * LEN);
	for (i = 0; i < N; i++) /* every other buffer in reverse: no copy of the source's order */
		q[i] = (struct mem_req){.addr = (uintptr_t)(src + i * LEN),
					.buf = dst + (size_t)(N - 1 - i) * LEN,
					.len = LEN};
	CHECK_INT("read_many bounce returns 0", 0, mem__read_many(m, q, N));
	for (i = 0; i < N; i++)
		ok += q[i].rc == 0 && memcmp(dst + (N - 1 - i) * LEN, src + i * LEN, LEN) == 0;
	CHECK_INT("every request's bytes, through the bounce buffer", N, (int)ok);
out:
	mem__free(m);
	free(src);
	free(dst);
	free(q);
}

/* Lent bytes (lend): 1024 requests of 4 KiB side by side, more than one bounce buffer holds, so
 * one call makes several process_vm_readv: those left in the scratch (data not buf) must still
 * hold their bytes when the call returns (the earlier batches copied out before the scratch was
 * reused), and every data points at its request's bytes; without lend, data is buf. */
static void test_read_many_lend(void)
{
	enum { N = 1024, LEN = 4096 };
	uint8_t *src = malloc((size_t)N * LEN), *dst = malloc((size_t)N * LEN);
	struct mem_req *q = calloc(N, sizeof(*q));
	struct mem *m = NULL;
	size_t i, ok = 0, lent = 0, own = 0;

	if (!src || !dst || !q || mem__open_live(&m, getpid())) {
		CHECK("read_many lend setup", false);
		goto out;
	}
	for (i = 0; i < (size_t)N * LEN; i++)
		src[i] = (uint8_t)(i * 29 + (i >> 12));
	for (i = 0; i < N; i++)
		q[i] = (struct mem_req){.addr = (uintptr_t)(src + i * LEN),
					.buf = dst + i * LEN,
					.len = LEN,
					.lend = true};
	CHECK_INT("read_many lend returns 0", 0, mem__read_many(m, q, N));
	for (i = 0; i < N; i++) {
		ok += q[i].rc == 0 && q[i].data && memcmp(q[i].data, src + i * LEN, LEN) == 0;
		lent += q[i].data && q[i].data != q[i].buf;
	}
	CHECK_INT("every request's bytes where data says", N, (int)ok);
	CHECK("some were lent, not copied", lent > 0 && lent < N);
	for (i = 0; i < N; i++)
		q[i].lend = false;
	mem__read_many(m, q, N);
	for (i = 0; i < N; i++)
		own += q[i].rc == 0 && q[i].data == q[i].buf &&
		       memcmp(q[i].buf, src + i * LEN, LEN) == 0;
	CHECK_INT("without lend: data is buf, bytes in it", N, (int)own);
out:
	mem__free(m);
	free(src);
	free(dst);
	free(q);
}

/* Merged ranges are placed in the scratch at their source's offset in a cache line (the kernel's
 * page copy is several times slower otherwise): groups of three requests 24 bytes apart, each
 * group starting at another offset and two pages from the last, read through a scratch that is
 * itself misaligned; and a group that fills the scratch all but 10 bytes, which cannot be
 * aligned and is read where it fits. Every lent byte is checked. */
static void test_read_many_aligned(void)
{
	enum { GROUPS = 64, PER = 3, LEN = 100, STEP = 124, APART = 8192, FULL = 1023 };
	size_t srclen = (size_t)GROUPS * APART + MEM_BOUNCE_BYTES;
	uint8_t *src = malloc(srclen), *dst = malloc((size_t)GROUPS * PER * LEN);
	uint8_t *scratch = malloc(MEM_BOUNCE_BYTES + 64), *big = malloc(MEM_BOUNCE_BYTES);
	static struct mem_req q[GROUPS * PER], w[FULL];
	struct mem *m = NULL;
	size_t g, k, i, o, ok = 0, aligned = 0, lent = 0;

	if (!src || !dst || !scratch || !big || mem__open_live(&m, getpid())) {
		CHECK("read_many aligned setup", false);
		goto out;
	}
	for (i = 0; i < srclen; i++)
		src[i] = (uint8_t)(i * 7 + (i >> 9));
	for (g = 0; g < GROUPS; g++)
		for (k = 0; k < PER; k++)
			q[g * PER + k] = (struct mem_req){
			    .addr = (uintptr_t)(src + g * APART + g * 8 + k * STEP),
			    .buf = dst + (g * PER + k) * LEN,
			    .len = LEN,
			    .lend = true};
	CHECK_INT("read_many_at aligned returns 0", 0,
		  mem__read_many_at(m, q, GROUPS * PER, scratch + 3));
	for (i = 0; i < GROUPS * PER; i++) {
		const uint8_t *want = (const uint8_t *)(uintptr_t)q[i].addr;

		ok += q[i].rc == 0 && q[i].data && memcmp(q[i].data, want, LEN) == 0;
		lent += q[i].data != q[i].buf;
		aligned += ((uintptr_t)q[i].data & 63) == (q[i].addr & 63);
	}
	CHECK_INT("every merged request's bytes", GROUPS * PER, (int)ok);
	CHECK_INT("every one lent from the scratch", GROUPS * PER, (int)lent);
	CHECK_INT("every one at its source's offset in a cache line", GROUPS * PER, (int)aligned);
	/* Side by side, requests spanning all the scratch but 10 bytes, from 40 bytes past the
	 * scratch's offset in a line: aligned, they would not fit. */
	o = ((uintptr_t)scratch + 40 - (uintptr_t)src) & 63;
	for (i = 0, k = 0; i < FULL; i++) {
		size_t len = i + 1 < FULL ? 2048 : MEM_BOUNCE_BYTES - 10 - k;

		w[i] = (struct mem_req){
		    .addr = (uintptr_t)(src + o + k), .buf = big + k, .len = len, .lend = true};
		k += len;
	}
	CHECK_INT("read_many_at full returns 0", 0, mem__read_many_at(m, w, FULL, scratch));
	for (i = 0, ok = 0; i < FULL; i++)
		ok += w[i].rc == 0 && w[i].data &&
		      memcmp(w[i].data, (const void *)(uintptr_t)w[i].addr, w[i].len) == 0;
	CHECK("a range that fills the scratch is read where it fits",
	      ok == FULL && w[0].data == scratch);
out:
	mem__free(m);
	free(src);
	free(dst);
	free(scratch);
	free(big);
}

int main(void)
{
	test_live_self();
	test_read_many();
	test_read_many_gaps();
	test_read_many_bounce();
	test_read_many_lend();
	test_read_many_aligned();
	test_live_gone();
	test_live_perm();
	test_snapshot();
	test_names();
	return check_done();
}
