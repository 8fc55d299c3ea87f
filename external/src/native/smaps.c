/* /proc/PID/smaps summed over private rw mappings without a file. See smaps.h. Reading smaps
 * makes the kernel walk the target's page tables (under its mmap lock, for reading): no signal
 * and no stop, but not free on a large VM (bench/README.md gives the cost). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "smaps.h"

/* "start-end perms offset dev inode [path]": is it a private rw mapping with no file? */
static int header(const char *line, bool *want, uint64_t *start_out, uint64_t *end_out)
{
	uint64_t start, end, off, inode;
	char perms[8], dev[16];
	int n = 0;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %15s %" SCNu64 " %n", &start,
		   &end, perms, &off, dev, &inode, &n) < 6 ||
	    end < start)
		return -EPROTO;
	line += n;
	*want = strcmp(perms, "rw-p") == 0 && inode == 0 &&
		(*line == '\0' || *line == '\n' || strncmp(line, "[heap]", 6) == 0);
	*start_out = start;
	*end_out = end;
	return 0;
}

/* One pass over f: -EPROTO for a line it cannot parse, -EAGAIN for a listing out of address
 * order. The kernel lists a page of text per read(), and smaps' text is long (a score of lines
 * a mapping): a mapping that grows or merges between two reads of a live process is listed
 * again, overlapping the one before (torn), and summed as it came it would count twice.
 * smaps__anon_rw reads a torn listing again (SMAPS_TRIES), as proc.c's MAPS_TRIES does maps. */
static int sum_once(FILE *f, struct smaps_anon *out)
{
	char line[512];
	bool want = false;
	uint64_t start, end, prev_end = 0, kb;
	int err = 0;

	memset(out, 0, sizeof(*out));
	while (!err && fgets(line, sizeof(line), f)) {
		/* Field lines start with a capital letter ("Rss:"), mapping lines with hex. */
		if (line[0] >= 'A' && line[0] <= 'Z' && strchr(line, ':')) {
			if (want && sscanf(line, "Rss: %" SCNu64, &kb) == 1)
				out->rss += kb * 1024;
			else if (want && sscanf(line, "Anonymous: %" SCNu64, &kb) == 1)
				out->anon += kb * 1024;
			continue;
		}
		err = header(line, &want, &start, &end);
		if (!err && start < prev_end)
			err = -EAGAIN; /* torn: listed again after it moved */
		prev_end = end;
		if (!err && want) {
			out->size += end - start;
			out->mappings++;
		}
	}
	return err;
}

int smaps__anon_rw(pid_t pid, struct smaps_anon *out)
{
	char path[64];
	FILE *f;
	int err = -EAGAIN;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	for (int t = 0; t < SMAPS_TRIES && err == -EAGAIN; t++) {
		f = fopen(path, "re");
		if (!f)
			return errno == EACCES || errno == EPERM ? -EACCES : -ENOENT;
		err = sum_once(f, out);
		fclose(f);
	}
	if (err)
		memset(out, 0, sizeof(*out));
	return err;
}
