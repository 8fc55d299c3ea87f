/* Text helpers shared by the report formats: strict UTF-8 validation (names come from the VM and
 * are untrusted bytes), opening the output file, the final flush / error check and the
 * '$initial_call' read summary. Does not own: any format. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procdict.h"
#include "report.h"

/* Allowed range of the second byte after each lead byte (RFC 3629, section 4). */
static int second_ok(unsigned char c0, unsigned char c1)
{
	if (c0 == 0xe0)
		return c1 >= 0xa0 && c1 <= 0xbf;
	if (c0 == 0xed)
		return c1 >= 0x80 && c1 <= 0x9f;
	if (c0 == 0xf0)
		return c1 >= 0x90 && c1 <= 0xbf;
	if (c0 == 0xf4)
		return c1 >= 0x80 && c1 <= 0x8f;
	return c1 >= 0x80 && c1 <= 0xbf;
}

size_t report__utf8_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n, i;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (!second_ok(p[0], p[1]))
		return 0;
	for (i = 2; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	}
	return n;
}

unsigned report__utf8_cp(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	static const unsigned char lead_mask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
	unsigned cp;
	size_t i;

	if (n < 1 || n > 4)
		return 0xfffd;
	cp = p[0] & lead_mask[n];
	for (i = 1; i < n; i++)
		cp = (cp << 6) | (p[i] & 0x3f);
	return cp;
}

int report__finish(FILE *f)
{
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}

void report__pdict_summary(const uint64_t *counts, FILE *f)
{
	uint64_t faults = 0;
	int i;

	for (i = PDICT_NO_OFFSET; i < PDICT_RESULT_COUNT; i++)
		faults += counts[i];
	if (!faults)
		return;
	fprintf(f,
		"  proc_lib's '$initial_call' not read for %" PRIu64 " processes (named by their "
		"initial call instead):",
		faults);
	for (i = PDICT_NO_OFFSET; i < PDICT_RESULT_COUNT; i++) {
		if (counts[i])
			fprintf(f, " %s %" PRIu64, procdict__result_name(i), counts[i]);
	}
	fputc('\n', f);
}

/* May we follow the symbolic link at path (see report__open_output)? */
static bool link_trusted(const char *path, const struct stat *link)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	struct stat d;

	if (link->st_uid == geteuid())
		return true;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (stat(dir, &d))
		return false;
	return !((d.st_mode & S_ISVTX) && (d.st_mode & S_IWOTH)) || link->st_uid == d.st_uid;
}

const char *report__output_error(int rc)
{
	return rc == -ELOOP ? "it is a symbolic link (not followed: SECURITY.md)" : strerror(-rc);
}

int report__open_output(const char *path, FILE **out)
{
	int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, fd;
	struct stat st;

	/* Not a link now: never one between this check and the open. A trusted link cannot be
	 * swapped by another user (the sticky bit, or a directory they cannot write). */
	if (lstat(path, &st) || !S_ISLNK(st.st_mode))
		flags |= O_NOFOLLOW;
	else if (!link_trusted(path, &st))
		return -ELOOP;
	fd = open(path, flags, 0644);
	if (fd < 0)
		return -errno;
	*out = fdopen(fd, "w");
	if (!*out) {
		int err = -errno;

		close(fd);
		return err;
	}
	return 0;
}

void report__buffer_stdout(void)
{
	static char buf[1 << 20];

	setvbuf(stdout, buf, _IOFBF, sizeof(buf));
}
