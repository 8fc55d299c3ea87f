/* /tmp/perf-PID.map on disk, written without clobbering anyone's file (see perfmap.h): its path,
 * the check that a map there is ours, the atomic install, whether the VM writes its own
 * (+JPperf), and marking the JIT mapping anonymous in a perf.data. Also linked into the agent
 * NIF. Does not own: the entries (perfmap.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "perfmap.h"
#include "path.h"

int perfmap__path(char *buf, size_t len, const char *dir, pid_t pid)
{
	int n = snprintf(buf, len, "%s/perf-%d.map", dir, (int)pid);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Does the open file start with our marker line? */
static bool pm_is_ours(int fd)
{
	static const char marker[] = PERFMAP_MARKER "\n";
	char buf[sizeof(marker)];
	ssize_t n = pread(fd, buf, sizeof(marker) - 1, 0);

	return n == (ssize_t)sizeof(marker) - 1 && !memcmp(buf, marker, sizeof(marker) - 1);
}

/* The check of perfmap__check against an open directory. */
static int pm_check_at(int dirfd, const char *name, const char *shown, char *why, size_t whylen)
{
	struct stat st, st2;
	bool ours;
	int fd;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -errno;
	if (S_ISLNK(st.st_mode)) {
		snprintf(why, whylen, "%s is a symbolic link: not following it", shown);
		return -ELOOP;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "%s exists and is not a regular file", shown);
		return -EINVAL;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, whylen, "%s belongs to uid %u, not to us (uid %u): not replacing it",
			 shown, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ours = !fstat(fd, &st2) && st2.st_ino == st.st_ino && st2.st_dev == st.st_dev &&
	       pm_is_ours(fd);
	close(fd);
	if (!ours) {
		snprintf(why, whylen,
			 "%s exists and was not written by extrospect (a VM started with +JPperf "
			 "writes its own map there): not replacing it",
			 shown);
		return -EEXIST;
	}
	return 0;
}

int perfmap__check(const char *dir, pid_t pid, char *why, size_t whylen)
{
	char name[32], shown[4096];
	int dirfd, err;

	snprintf(name, sizeof(name), "perf-%d.map", (int)pid);
	if (perfmap__path(shown, sizeof(shown), dir, pid))
		return -ENAMETOOLONG;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		err = -errno;
		snprintf(why, whylen, "cannot open %s: %s", dir, strerror(-err));
		return err;
	}
	err = pm_check_at(dirfd, name, shown, why, whylen);
	close(dirfd);
	return err;
}

/* A fresh file in dirfd that no one else had: O_EXCL never opens an existing file or link. */
static int pm_create_temp(int dirfd, pid_t pid, char *tmp, size_t len)
{
	struct timespec ts;

	for (unsigned attempt = 0; attempt < 16; attempt++) {
		int fd;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(tmp, len, ".perf-%d.map.extrospect-%d-%lx%u", (int)pid, (int)getpid(),
			 (unsigned long)ts.tv_nsec, attempt);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Fill the temporary file; mode 0644 whatever the umask (perf wants no group/world write). */
static int pm_fill(int fd, const struct perfmap *pm)
{
	FILE *f;
	int err;

	if (fchmod(fd, 0644))
		return -errno;
	f = fdopen(fd, "w");
	if (!f)
		return -errno;
	err = perfmap__format(pm, f);
	if (fclose(f) && !err)
		err = -EIO;
	return err;
}

static int pm_install_at(int dirfd, const char *dir, pid_t pid, const struct perfmap *pm, char *err,
			 size_t errlen)
{
	char name[32], tmp[96], shown[4096];
	int fd, rc;

	snprintf(name, sizeof(name), "perf-%d.map", (int)pid);
	if (perfmap__path(shown, sizeof(shown), dir, pid))
		return -ENAMETOOLONG;
	rc = pm_check_at(dirfd, name, shown, err, errlen);
	if (rc)
		return rc;
	fd = pm_create_temp(dirfd, pid, tmp, sizeof(tmp));
	if (fd < 0) {
		snprintf(err, errlen, "cannot create a temporary file in %s: %s", dir,
			 strerror(-fd));
		return fd;
	}
	rc = pm_fill(fd, pm); /* closes fd */
	if (!rc)
		rc = pm_check_at(dirfd, name, shown, err, errlen); /* again, just before */
	else
		snprintf(err, errlen, "cannot write %s/%s: %s", dir, tmp, strerror(-rc));
	if (!rc && renameat(dirfd, tmp, dirfd, name)) {
		rc = -errno;
		snprintf(err, errlen, "cannot rename %s/%s to %s: %s", dir, tmp, shown,
			 strerror(-rc));
	}
	if (rc)
		unlinkat(dirfd, tmp, 0);
	return rc;
}

int perfmap__install(const char *dir, pid_t pid, const struct perfmap *pm, char *err, size_t errlen)
{
	int dirfd, rc;

	if (!dir || !pm || pid <= 0)
		return -EINVAL;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open %s: %s", dir, strerror(-rc));
		return rc;
	}
	rc = pm_install_at(dirfd, dir, pid, pm, err, errlen);
	close(dirfd);
	return rc;
}

/* "perf-<digits>.map" as the last path component. */
static bool pm_is_perf_map_path(const char *p)
{
	const char *base = path__base(p);
	size_t n;

	if (strncmp(base, "perf-", 5))
		return false;
	n = strspn(base + 5, "0123456789");
	return n > 0 && !strcmp(base + 5 + n, ".map");
}

int perfmap__vm_writes_own(pid_t pid, char *path, size_t pathlen)
{
	char dir[64], link[352], target[4096];
	struct dirent *d;
	int found = 0;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	dp = opendir(dir);
	if (!dp)
		return -errno;
	while (!found && (d = readdir(dp))) {
		ssize_t n;

		if (d->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, d->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (pm_is_perf_map_path(target)) {
			snprintf(path, pathlen, "%s", target);
			found = 1;
		}
	}
	closedir(dp);
	return found;
}

/* perf.data (tools/perf/util/header.h, perf_event.h): a header with the data section's offset and
 * size at 40 and 48, then records {u32 type; u16 misc; u16 size; ...}. In PERF_RECORD_MMAP2
 * (type 10) pid is at 8, prot at 64 and the file name at 72, the same whether bytes 40..63 hold
 * maj/min/ino or a build id. */
#define PD_MAGIC	     "PERFILE2"
#define PD_DATA_OFF	     40
#define PD_RECORD_MMAP2	     10
#define PD_RECORD_COMPRESSED 81
#define PD_MMAP2_PID	     8
#define PD_MMAP2_PROT	     64
#define PD_MMAP2_NAME	     72
#define PD_PROT_EXEC	     4
#define PD_JIT_MEMFD	     "/memfd:vmem" /* asmjit's VirtMem (erts/emulator/asmjit/core/virtmem.cpp) */

/* Patch one MMAP2 record in rec (size bytes, read from offset at) when it is pid's JIT memfd. */
static int pm_patch_mmap2(int fd, uint8_t *rec, size_t size, off_t at, pid_t pid, unsigned *n)
{
	static const char anon[] = "//anon";
	uint32_t rpid, prot;
	size_t name_len;
	char *name;

	if (size <= PD_MMAP2_NAME)
		return 0;
	memcpy(&rpid, rec + PD_MMAP2_PID, 4);
	memcpy(&prot, rec + PD_MMAP2_PROT, 4);
	name = (char *)rec + PD_MMAP2_NAME;
	name_len = strnlen(name, size - PD_MMAP2_NAME);
	if ((pid_t)rpid != pid || !(prot & PD_PROT_EXEC) || name_len == size - PD_MMAP2_NAME ||
	    strncmp(name, PD_JIT_MEMFD, sizeof(PD_JIT_MEMFD) - 1))
		return 0;
	memset(name, 0, name_len);
	memcpy(name, anon, sizeof(anon) - 1);
	if (pwrite(fd, name, name_len, at + PD_MMAP2_NAME) != (ssize_t)name_len)
		return -EIO;
	(*n)++;
	return 0;
}

static int pm_walk_records(FILE *f, int fd, uint64_t off, uint64_t end, pid_t pid, unsigned *n,
			   char *err, size_t errlen)
{
	uint8_t rec[65536];

	if (fseeko(f, (off_t)off, SEEK_SET))
		return -errno;
	while (off + 8 <= end) {
		uint32_t type;
		uint16_t size;
		int rc;

		if (fread(rec, 1, 8, f) != 8)
			break;
		memcpy(&type, rec, 4);
		memcpy(&size, rec + 6, 2);
		if (size < 8 || off + size > end || fread(rec + 8, 1, size - 8u, f) != size - 8u) {
			snprintf(err, errlen, "a record at offset %" PRIu64 " is cut or malformed",
				 off);
			return -EPROTO;
		}
		if (type == PD_RECORD_COMPRESSED) {
			snprintf(err, errlen,
				 "the data is compressed (perf record -z): record "
				 "without -z");
			return -EPROTO;
		}
		if (type == PD_RECORD_MMAP2 &&
		    (rc = pm_patch_mmap2(fd, rec, size, (off_t)off, pid, n)))
			return rc;
		off += size;
	}
	return 0;
}

int perfmap__fix_perf_data(const char *path, pid_t pid, unsigned *patched, char *err, size_t errlen)
{
	uint8_t hdr[PD_DATA_OFF + 16];
	uint64_t off, size;
	FILE *f = NULL;
	int fd, rc;

	*patched = 0;
	err[0] = '\0';
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(-rc));
		return rc;
	}
	f = fdopen(dup(fd), "r");
	rc = f ? 0 : -errno;
	if (!rc && (fread(hdr, 1, sizeof(hdr), f) != sizeof(hdr) || memcmp(hdr, PD_MAGIC, 8))) {
		snprintf(err, errlen, "%s is not a perf.data file written by perf record", path);
		rc = -EPROTO;
	}
	if (!rc) {
		memcpy(&off, hdr + PD_DATA_OFF, 8);
		memcpy(&size, hdr + PD_DATA_OFF + 8, 8);
		if (!size || off > UINT64_MAX - size) {
			snprintf(err, errlen,
				 "%s has no data section (piped, or perf did not finish)", path);
			rc = -EPROTO;
		}
	}
	if (!rc)
		rc = pm_walk_records(f, fd, off, off + size, pid, patched, err, errlen);
	if (rc && !err[0])
		snprintf(err, errlen, "cannot rewrite %s: %s", path, strerror(-rc));
	if (f)
		fclose(f);
	close(fd);
	return rc;
}
