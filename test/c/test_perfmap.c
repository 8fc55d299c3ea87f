/* Unit tests for perfmap.c: the entries built from a JIT map (newest wins, empty ranges out,
 * names made printable), carrying unloaded code over, the file format, the safe install in a
 * scratch directory (fresh, stale ours, planted symlink, another user's file, a foreign map,
 * not a file, any umask), spotting a VM that writes its own map, and the perf.data rewrite. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "perfmap.h"
#include "symfile.h"

/* newmod (newest) at 0x10000 over part of oldmod (purged, OTP 25 keeps it) at 0x10000-0x80. */
static struct jitmap *syn_map(bool with_old)
{
	static const struct symfile_range nr[] = {{0, 0x40, "newmod:f/0"},
						  {0x40, 0x80, "newmod:g/1"},
						  {0x80, 0x80, "newmod::codeFooter"}};
	static const struct symfile_range orr[] = {{0, 0x40, "oldmod:a/0"},
						   {0x40, 0x100, "oldmod:'b\nc'/2"}};
	static const struct symfile_range gr[] = {{0, 0x20, "global::apply_fun_shared"}};
	uint8_t b[4096];
	struct jitmap *map = NULL;
	size_t n;

	jitmap__new(&map);
	n = symfile_build(b, "newmod", 0x10000, 0x80, nr, 3);
	CHECK_INT("add newmod", 0, jitmap__add_symfile(map, b, n, 0x100, 0));
	n = symfile_build(b, "global", 0x8000, 0x20, gr, 1);
	CHECK_INT("add global", 0, jitmap__add_symfile(map, b, n, 0x200, 1));
	if (with_old) {
		n = symfile_build(b, "oldmod", 0x10000 - 0x80, 0x100, orr, 2);
		CHECK_INT("add oldmod", 0, jitmap__add_symfile(map, b, n, 0x300, 2));
	}
	jitmap__finish(map);
	return map;
}

static void expect_entry(const char *what, const struct perfmap *pm, size_t i, uint64_t start,
			 uint64_t size, const char *name)
{
	const struct perfmap_entry *e = perfmap__entry(pm, i);
	char label[128];

	snprintf(label, sizeof(label), "%s: entry %zu start", what, i);
	CHECK_U64(label, start, e ? e->start : 0);
	snprintf(label, sizeof(label), "%s: entry %zu size", what, i);
	CHECK_U64(label, size, e ? e->size : 0);
	snprintf(label, sizeof(label), "%s: entry %zu name", what, i);
	CHECK_STR(label, name, e ? e->name : NULL);
}

static void test_entries(void)
{
	struct jitmap *jit = syn_map(true);
	struct perfmap *pm = NULL;

	CHECK_INT("from_jit", 0, perfmap__from_jit(jit, &pm));
	CHECK_INT("entries: global, old a, new f, new g, old b's tail", 5, perfmap__count(pm));
	expect_entry("sorted", pm, 0, 0x8000, 0x20, "$global::apply_fun_shared");
	expect_entry("older below newest", pm, 1, 0xff80, 0x40, "$oldmod:a/0");
	/* oldmod:'b\nc'/2 covers 0xffc0-0x10080: newmod wins on 0x10000-0x10080. */
	expect_entry("older before overlap", pm, 2, 0xffc0, 0x40, "$oldmod:'b?c'/2");
	expect_entry("newest wins", pm, 3, 0x10000, 0x40, "$newmod:f/0");
	expect_entry("newest wins 2", pm, 4, 0x10040, 0x40, "$newmod:g/1");
	perfmap__free(pm);
	jitmap__free(jit);
}

static void test_carry(void)
{
	struct jitmap *with = syn_map(true), *without = syn_map(false);
	struct perfmap *prev = NULL, *cur = NULL;

	perfmap__from_jit(with, &prev);
	perfmap__from_jit(without, &cur);
	CHECK_INT("without oldmod", 3, perfmap__count(cur));
	CHECK_INT("new since prev: none", 0, perfmap__new_since(cur, prev));
	CHECK_INT("new since nothing: all", 3, perfmap__new_since(cur, NULL));
	CHECK_INT("carry", 0, perfmap__carry(cur, prev));
	/* oldmod's pieces outside newmod come back; none overlaps newmod. */
	CHECK_INT("carried count", 5, perfmap__count(cur));
	expect_entry("carried", cur, 1, 0xff80, 0x40, "$oldmod:a/0");
	expect_entry("carried 2", cur, 2, 0xffc0, 0x40, "$oldmod:'b?c'/2");
	expect_entry("kept", cur, 3, 0x10000, 0x40, "$newmod:f/0");
	perfmap__free(cur);
	perfmap__free(prev);
	jitmap__free(with);
	jitmap__free(without);
}

static char *slurp(const char *path)
{
	static char buf[8192];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static size_t dir_entries(const char *dir)
{
	char cmd[PATH_MAX + 32];
	FILE *p;
	size_t n = 0;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%zu", &n) != 1)
		n = 0;
	if (p)
		pclose(p);
	return n;
}

static void test_install(const char *dir, const struct perfmap *pm)
{
	const pid_t pid = 4242;
	char path[PATH_MAX], err[512] = "", victim[PATH_MAX];
	struct stat st, st2;

	perfmap__path(path, sizeof(path), dir, pid);
	umask(0077);
	CHECK_INT("install fresh", 0, perfmap__install(dir, pid, pm, err, sizeof(err)));
	CHECK_INT("fresh: stat", 0, lstat(path, &st));
	CHECK_INT("fresh: mode 0644 whatever the umask", 0644, st.st_mode & 07777);
	CHECK_INT("fresh: owner", geteuid(), st.st_uid);
	CHECK_STR("fresh: content",
		  PERFMAP_MARKER "\n8000 20 $global::apply_fun_shared\nff80 40 $oldmod:a/0\n"
				 "ffc0 40 $oldmod:'b?c'/2\n10000 40 $newmod:f/0\n"
				 "10040 40 $newmod:g/1\n",
		  slurp(path));
	umask(0022);
	CHECK_INT("check ours", 0, perfmap__check(dir, pid, err, sizeof(err)));
	CHECK_INT("replace stale ours", 0, perfmap__install(dir, pid, pm, err, sizeof(err)));
	CHECK_INT("replaced: stat", 0, lstat(path, &st2));
	CHECK("replaced atomically: a new inode", st.st_ino != st2.st_ino);
	CHECK_INT("no temporary file left", 1, dir_entries(dir));

	/* A symlink planted at the path: refused, its target untouched. */
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	close(open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0644));
	unlink(path);
	CHECK_INT("plant symlink", 0, symlink(victim, path));
	CHECK_INT("symlink refused", -ELOOP, perfmap__install(dir, pid, pm, err, sizeof(err)));
	CHECK("symlink message", strstr(err, "symbolic link") != NULL);
	CHECK_STR("symlink target untouched", "", slurp(victim));
	CHECK("still a symlink", !lstat(path, &st) && S_ISLNK(st.st_mode));
	CHECK_INT("symlink: no temporary file left", 2, dir_entries(dir));
	unlink(path);
	unlink(victim);

	/* A map with other content (the VM's own, +JPperf): refused, untouched. */
	FILE *f = fopen(path, "w");
	fputs("0x7f0000001000 40 $lists:reverse/2\n", f);
	fclose(f);
	CHECK_INT("foreign map refused", -EEXIST, perfmap__install(dir, pid, pm, err, sizeof(err)));
	CHECK("foreign message names +JPperf", strstr(err, "+JPperf") != NULL);
	CHECK_STR("foreign map untouched", "0x7f0000001000 40 $lists:reverse/2\n", slurp(path));

	/* Another user's file (needs root to make one): refused, untouched. */
	if (geteuid() == 0) {
		CHECK_INT("chown to nobody", 0, chown(path, 65534, 65534));
		CHECK_INT("other user's refused", -EPERM,
			  perfmap__install(dir, pid, pm, err, sizeof(err)));
		CHECK("other user message", strstr(err, "uid 65534") != NULL);
		CHECK_STR("other user's untouched", "0x7f0000001000 40 $lists:reverse/2\n",
			  slurp(path));
	} else {
		printf("SKIP another user's file: needs root to chown\n");
	}
	unlink(path);

	CHECK_INT("a directory at the path", 0, mkdir(path, 0755));
	CHECK_INT("directory refused", -EINVAL, perfmap__install(dir, pid, pm, err, sizeof(err)));
	rmdir(path);
	CHECK_INT("missing directory", -ENOENT,
		  perfmap__install("/nonexistent-xp", pid, pm, err, sizeof(err)));
	CHECK_INT("dir empty at the end", 0, dir_entries(dir));
}

static void test_vm_writes_own(const char *dir)
{
	char path[PATH_MAX], seen[PATH_MAX] = "";
	int fd;

	CHECK_INT("no perf map open", 0, perfmap__vm_writes_own(getpid(), seen, sizeof(seen)));
	snprintf(path, sizeof(path), "%s/perf-%d.map", dir, 77777);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	CHECK_INT("perf map open: seen", 1, perfmap__vm_writes_own(getpid(), seen, sizeof(seen)));
	CHECK_STR("perf map open: its path", path, seen);
	close(fd);
	unlink(path);
	CHECK_INT("no such pid", -ENOENT, perfmap__vm_writes_own(INT_MAX, seen, sizeof(seen)));
}

/* A record of perf.data: MMAP2 {header, pid, tid, addr, len, pgoff, maj, min, ino, ino_gen,
 * prot, flags, filename (8-aligned), sample id}. */
static size_t mmap2(uint8_t *p, uint32_t pid, uint32_t prot, const char *name)
{
	size_t nl = (strlen(name) + 8) & ~(size_t)7;
	uint16_t size = (uint16_t)(72 + nl + 8);

	memset(p, 0, size);
	memcpy(p, &(uint32_t){10}, 4);
	memcpy(p + 6, &size, 2);
	memcpy(p + 8, &pid, 4);
	memcpy(p + 12, &pid, 4);
	memcpy(p + 16, &(uint64_t){0x7f0000000000}, 8);
	memcpy(p + 64, &prot, 4);
	memcpy(p + 68, &(uint32_t){1}, 4); /* MAP_SHARED */
	strcpy((char *)p + 72, name);
	return size;
}

static size_t plain(uint8_t *p, uint32_t type)
{
	memset(p, 0, 16);
	memcpy(p, &type, 4);
	memcpy(p + 6, &(uint16_t){16}, 2);
	return 16;
}

static void write_data(const char *path, const uint8_t *recs, size_t n, bool good_magic)
{
	uint8_t hdr[104] = {0};
	uint64_t off = sizeof(hdr), size = n;
	FILE *f = fopen(path, "w");

	memcpy(hdr, good_magic ? "PERFILE2" : "PERFILE1", 8);
	memcpy(hdr + 40, &off, 8);
	memcpy(hdr + 48, &size, 8);
	fwrite(hdr, 1, sizeof(hdr), f);
	fwrite(recs, 1, n, f);
	fclose(f);
}

static void test_fix_perf_data(const char *dir)
{
	static uint8_t recs[4096], back[4096];
	size_t n = 0, at[5];
	char path[PATH_MAX], err[512];
	unsigned patched = 99;
	FILE *f;

	snprintf(path, sizeof(path), "%s/perf.data", dir);
	at[0] = n, n += mmap2(recs + n, 42, 5, "/memfd:vmem (deleted)");
	at[1] = n, n += plain(recs + n, 9); /* a sample */
	at[2] = n, n += mmap2(recs + n, 43, 5, "/memfd:vmem (deleted)");
	at[3] = n, n += mmap2(recs + n, 42, 3, "/memfd:vmem (deleted)"); /* rw side */
	at[4] = n, n += mmap2(recs + n, 42, 5, "/usr/lib/libc.so.6");
	write_data(path, recs, n, true);
	CHECK_INT("fix", 0, perfmap__fix_perf_data(path, 42, &patched, err, sizeof(err)));
	CHECK_INT("fix: one mapping", 1, patched);
	f = fopen(path, "r");
	CHECK("read back", f && fseek(f, 104, SEEK_SET) == 0 && fread(back, 1, n, f) == n);
	if (f)
		fclose(f);
	CHECK_STR("the JIT's executable memfd is now anonymous", "//anon",
		  (char *)back + at[0] + 72);
	CHECK("padded with NULs", !memcmp(back + at[0] + 78, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 15));
	recs[at[0] + 72] = 0; /* everything else unchanged */
	back[at[0] + 72] = 0;
	memset(recs + at[0] + 72, 0, 22);
	memset(back + at[0] + 72, 0, 22);
	CHECK("other pid, rw side, other files, samples: untouched", !memcmp(recs, back, n));
	CHECK_INT("fix again: nothing left", 0,
		  perfmap__fix_perf_data(path, 42, &patched, err, sizeof(err)));
	CHECK_INT("fix again: count", 0, patched);

	n = plain(recs, 81);
	write_data(path, recs, n, true);
	CHECK_INT("compressed refused", -EPROTO,
		  perfmap__fix_perf_data(path, 42, &patched, err, sizeof(err)));
	CHECK("compressed message", strstr(err, "-z") != NULL);
	write_data(path, recs, n, false);
	CHECK_INT("bad magic", -EPROTO,
		  perfmap__fix_perf_data(path, 42, &patched, err, sizeof(err)));
	n = mmap2(recs, 42, 5, "/memfd:vmem (deleted)");
	write_data(path, recs, n - 8, true);
	CHECK_INT("cut record", -EPROTO,
		  perfmap__fix_perf_data(path, 42, &patched, err, sizeof(err)));
	unlink(path);
	CHECK_INT("missing file", -ENOENT,
		  perfmap__fix_perf_data(path, 42, &patched, err, sizeof(err)));
}

int main(void)
{
	char dir[] = "/tmp/xp-test-perfmap-XXXXXX";
	struct jitmap *jit;
	struct perfmap *pm = NULL;

	test_entries();
	test_carry();
	if (!mkdtemp(dir)) {
		printf("SKIP: cannot make a scratch directory: %s\n", strerror(errno));
		return 77;
	}
	jit = syn_map(true);
	perfmap__from_jit(jit, &pm);
	test_install(dir, pm);
	test_vm_writes_own(dir);
	test_fix_perf_data(dir);
	perfmap__free(pm);
	jitmap__free(jit);
	rmdir(dir);
	printf("%u passed, %u failed\n", check_counts.passed, check_counts.failed);
	return check_counts.failed ? 1 : 0;
}
