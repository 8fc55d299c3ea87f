/* An output file that is either written whole or not at all: a regular file (or a new path) is
 * written to a temporary file in the same directory (exclusive creation, mode 0644 minus the
 * umask), flushed, fsync'd and renamed over the path only once complete; on any error the
 * temporary file is removed and the old file, if any, is left as it was. A disk that fills up
 * mid-write therefore never leaves a silently truncated report. Anything else (a symbolic link
 * such as /dev/stdout, a FIFO, a terminal) is written in place, a link only when trusted. Does not
 * own: what is written (report/). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "outfile.h"
#include "report/report.h"

#define OUTFILE_BUFFER (1u << 20)

static mode_t current_umask(void)
{
	mode_t m = umask(0);

	umask(m);
	return m;
}

int outfile__open(struct outfile *of, const char *path)
{
	struct stat st;
	int fd;

	*of = (struct outfile){.path = path};
	/* A symbolic link (/dev/stdout, or one another user planted in /tmp) or anything not a
	 * regular file (a FIFO, a terminal) is written in place, through the link only when no
	 * other user could have put it there (report__open_output, SECURITY.md). */
	if (lstat(path, &st) == 0 && (S_ISLNK(st.st_mode) || !S_ISREG(st.st_mode)))
		return report__open_output(path, &of->f);
	if (snprintf(of->tmp, sizeof(of->tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(of->tmp))
		return -ENAMETOOLONG;
	fd = mkstemp(of->tmp);
	if (fd < 0)
		return -errno;
	fchmod(fd, 0644 & ~current_umask());
	of->f = fdopen(fd, "w");
	if (!of->f) {
		int rc = -errno;

		close(fd);
		unlink(of->tmp);
		return rc;
	}
	/* Reports run to tens of MB in lines longer than stdio's 4 KiB buffer, each of which would
	 * be a write(2) of its own. glibc ignores the size of a buffer it is to allocate itself. */
	if ((of->buf = malloc(OUTFILE_BUFFER)))
		setvbuf(of->f, of->buf, _IOFBF, OUTFILE_BUFFER);
	return 0;
}

int outfile__close(struct outfile *of, int rc)
{
	bool tmp = of->tmp[0] != '\0';
	struct statvfs vfs;

	if (!of->f)
		return rc ? rc : -EBADF;
	if (fflush(of->f) != 0 && !rc)
		rc = -errno;
	if (ferror(of->f) && !rc)
		rc = -EIO;
	/* stdio keeps only an error flag (the writers say EIO): a full file system is said so. */
	if (rc == -EIO && fstatvfs(fileno(of->f), &vfs) == 0 && vfs.f_bavail == 0)
		rc = -ENOSPC;
	if (tmp && !rc && fsync(fileno(of->f)) != 0)
		rc = -errno;
	if (fclose(of->f) != 0 && !rc)
		rc = -errno;
	of->f = NULL;
	free(of->buf);
	of->buf = NULL;
	if (tmp && !rc && rename(of->tmp, of->path) != 0)
		rc = -errno;
	if (tmp && rc)
		unlink(of->tmp);
	return rc;
}
