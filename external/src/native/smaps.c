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
static int header(const char *line, bool *want, uint64_t *len)
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
	*len = end - start;
	return 0;
}

int smaps__anon_rw(pid_t pid, struct smaps_anon *out)
{
	char path[64], line[512];
	bool want = false;
	uint64_t len, kb;
	FILE *f;
	int err = 0;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == EACCES || errno == EPERM ? -EACCES : -ENOENT;
	while (!err && fgets(line, sizeof(line), f)) {
		/* Field lines start with a capital letter ("Rss:"), mapping lines with hex. */
		if (line[0] >= 'A' && line[0] <= 'Z' && strchr(line, ':')) {
			if (want && sscanf(line, "Rss: %" SCNu64, &kb) == 1)
				out->rss += kb * 1024;
			else if (want && sscanf(line, "Anonymous: %" SCNu64, &kb) == 1)
				out->anon += kb * 1024;
			continue;
		}
		err = header(line, &want, &len);
		if (!err && want) {
			out->size += len;
			out->mappings++;
		}
	}
	fclose(f);
	return err;
}
