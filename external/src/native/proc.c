/* /proc readers: maps parsing, thread listing, root-relative paths. See proc.h.
 * Everything here reads files the kernel generates about the target; nothing touches the target. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc.h"

#define MAPS_MAX_BYTES (256u << 20)

static int parse_hex(const char **p, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!isxdigit((unsigned char)**p))
		return -EPROTO;
	errno = 0;
	v = strtoull(*p, &end, 16);
	if (errno)
		return -EPROTO;
	*p = end;
	*out = v;
	return 0;
}

static int parse_perms(const char **p, uint32_t *perms)
{
	const char *s = *p;

	if (strlen(s) < 4 || (s[0] != 'r' && s[0] != '-') || (s[1] != 'w' && s[1] != '-') ||
	    (s[2] != 'x' && s[2] != '-') || (s[3] != 's' && s[3] != 'p'))
		return -EPROTO;
	*perms = (s[0] == 'r' ? PROC_PERM_R : 0) | (s[1] == 'w' ? PROC_PERM_W : 0) |
		 (s[2] == 'x' ? PROC_PERM_X : 0) | (s[3] == 's' ? PROC_PERM_SHARED : 0);
	*p = s + 4;
	return 0;
}

static const char *skip_spaces(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* One line: "start-end perms offset dev inode [path]". line is NUL-terminated, no newline.
 * The path is returned as a pointer into line (its tail), with " (deleted)" cut off. */
static int parse_line(char *line, struct proc_map *m, char **path)
{
	const char *p = line;
	uint64_t dev_major, dev_minor;
	size_t plen;
	char *pathp;

	if (parse_hex(&p, &m->start) || *p++ != '-' || parse_hex(&p, &m->end) || *p++ != ' ' ||
	    parse_perms(&p, &m->perms) || *p++ != ' ' || parse_hex(&p, &m->offset) || *p++ != ' ' ||
	    parse_hex(&p, &dev_major) || *p++ != ':' || parse_hex(&p, &dev_minor) || *p++ != ' ')
		return -EPROTO;
	if (!isdigit((unsigned char)*p))
		return -EPROTO;
	m->inode = strtoull(p, (char **)&p, 10);
	if (*p && *p != ' ')
		return -EPROTO;
	if (m->end < m->start)
		return -EPROTO;
	pathp = (char *)skip_spaces(p);
	plen = strlen(pathp);
	m->deleted = plen > 10 && strcmp(pathp + plen - 10, " (deleted)") == 0;
	if (m->deleted)
		pathp[plen - 10] = '\0';
	*path = pathp;
	return 0;
}

static int maps_grow(struct proc_maps *maps, size_t *cap)
{
	struct proc_map *v;
	size_t ncap = *cap ? *cap * 2 : 256;

	v = realloc(maps->v, ncap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	maps->v = v;
	*cap = ncap;
	return 0;
}

int proc_maps__parse(const char *text, size_t len, struct proc_maps **out)
{
	struct proc_maps *maps;
	size_t cap = 0, i;
	char *s, *line, *next;
	int err = 0;

	*out = NULL;
	maps = calloc(1, sizeof(*maps));
	if (!maps)
		return -ENOMEM;
	maps->strings = malloc(len + 1);
	if (!maps->strings) {
		err = -ENOMEM;
		goto cleanup;
	}
	memcpy(maps->strings, text, len);
	maps->strings[len] = '\0';
	if (strlen(maps->strings) != len) {
		err = -EPROTO; /* embedded NUL */
		goto cleanup;
	}
	for (s = maps->strings; *s; s = next) {
		char *path;

		line = s;
		next = strchr(s, '\n');
		if (next)
			*next++ = '\0';
		else
			next = s + strlen(s);
		if (!*line)
			continue;
		if (maps->n == cap && (err = maps_grow(maps, &cap)))
			goto cleanup;
		err = parse_line(line, &maps->v[maps->n], &path);
		if (err)
			goto cleanup;
		maps->v[maps->n].path = path;
		maps->n++;
	}
	for (i = 1; i < maps->n; i++) {
		if (maps->v[i].start < maps->v[i - 1].end) {
			err = -EPROTO; /* the kernel lists maps sorted and disjoint */
			goto cleanup;
		}
	}
	*out = maps;
	return 0;
cleanup:
	proc_maps__free(maps);
	return err;
}

/* Read a whole /proc file (size unknown in advance). */
static int slurp(const char *path, char **buf, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *b = NULL, *nb;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r;

		if (!b || n == cap) {
			if (b)
				cap *= 2;
			if (cap > MAPS_MAX_BYTES) {
				err = -EFBIG;
				break;
			}
			nb = realloc(b, cap);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (err) {
		free(b);
		return err;
	}
	*buf = b;
	*len = n;
	return 0;
}

/* The kernel lists a process's maps a page of text per read(): a mapping that grows, merges or
 * moves between two reads of a live process is listed twice, overlapping (a VM mapping memory as
 * it starts: CI saw "Protocol error"). Such a torn listing is read again, up to this often. */
#define MAPS_TRIES 16

int proc_maps__load(pid_t pid, struct proc_maps **out)
{
	char path[64], *text = NULL;
	size_t len = 0;
	int err = -EPROTO;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	for (int t = 0; t < MAPS_TRIES && err == -EPROTO; t++) {
		err = slurp(path, &text, &len);
		if (err)
			return err == -ESRCH ? -ENOENT : err;
		/* Readable but empty: a kernel thread or a zombie (no memory at all), or not ours
		 * to see. */
		if (len == 0) {
			char exe[64], link[16];

			free(text);
			snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
			if (readlink(exe, link, sizeof(link)) < 0 && errno == EACCES)
				return -EACCES;
			return -ENODATA;
		}
		err = proc_maps__parse(text, len, out);
		free(text);
		text = NULL;
	}
	return err;
}

const struct proc_map *proc_maps__find(const struct proc_maps *maps, uint64_t addr)
{
	size_t lo = 0, hi = maps ? maps->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct proc_map *m = &maps->v[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

void proc_maps__free(struct proc_maps *maps)
{
	if (!maps)
		return;
	free(maps->v);
	free(maps->strings);
	free(maps);
}

int proc__read_file(const char *path, char *buf, size_t len)
{
	struct stat st;
	ssize_t r;
	int fd;

	if (len == 0)
		return -EINVAL;
	/* Also files of a VM's install, through /proc/PID/root: never a FIFO or a device. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	r = read(fd, buf, len - 1);
	if (r < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	buf[r] = '\0';
	while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == '\r'))
		buf[--r] = '\0';
	return 0;
}

static int cmp_task(const void *a, const void *b)
{
	const struct proc_task *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

int proc__tasks(pid_t pid, struct proc_task **out, size_t *n)
{
	struct proc_task *v = NULL, *nv;
	size_t cap = 0, cnt = 0;
	char path[64];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? -ENOENT : -errno;
	while ((de = readdir(dir))) {
		char cpath[96];
		long tid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		tid = strtol(de->d_name, NULL, 10);
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(dir);
				return -ENOMEM;
			}
			v = nv;
		}
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%ld/comm", (int)pid, tid);
		if (proc__read_file(cpath, v[cnt].comm, sizeof(v[cnt].comm)))
			continue; /* the thread exited meanwhile */
		v[cnt].tid = (pid_t)tid;
		cnt++;
	}
	closedir(dir);
	qsort(v, cnt, sizeof(*v), cmp_task);
	*out = v;
	*n = cnt;
	return 0;
}

int proc__root_path(pid_t pid, const char *path, char *out, size_t len)
{
	int n;

	if (!path || path[0] != '/')
		return -EINVAL;
	n = snprintf(out, len, "/proc/%d/root%s", (int)pid, path);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int proc__resolve_path(pid_t pid, const char *path, uint64_t inode, char *out, size_t len)
{
	char rooted[PATH_MAX + 32];
	const char *cand[2];
	struct stat st;
	int i, err;

	if ((err = proc__root_path(pid, path, rooted, sizeof(rooted))))
		return err;
	cand[0] = path;
	cand[1] = rooted;
	/* Only the mapped file itself: a file of another name, kind or inode (replaced on disk, or
	 * a link a container planted, which /proc/PID/root would resolve against our own root) is
	 * never opened in its place (SECURITY.md). */
	for (i = 0; i < 2; i++) {
		if (stat(cand[i], &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_ino == inode)
			goto found;
	}
	return -ENOENT;
found:
	if (strlen(cand[i]) >= len)
		return -ENAMETOOLONG;
	strcpy(out, cand[i]);
	return 0;
}

int proc__exists(pid_t pid)
{
	char path[64];

	if (pid <= 0)
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (access(path, F_OK) == 0)
		return 0;
	return errno == ENOENT ? -ENOENT : -errno;
}

/* The last number of the NSpid: line of a /proc status file (the innermost namespace's id), and
 * how many it has (1: the same pid namespace as ours). */
static int nspid_last(const char *path, long *last, int *count)
{
	char buf[2048], *p;

	if (proc__read_file(path, buf, sizeof(buf)) || !(p = strstr(buf, "\nNSpid:")))
		return -ENOENT;
	p += 7;
	*count = 0;
	for (;;) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		*last = v;
		(*count)++;
		p = end;
	}
	return *count ? 0 : -ENOENT;
}

int proc__host_tid(pid_t pid, int32_t vm_tid, pid_t *host)
{
	char path[96];
	struct dirent *de;
	long last;
	int count, err = -ENOENT;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (vm_tid <= 0 || nspid_last(path, &last, &count))
		return -ENOENT;
	if (count == 1) {
		*host = vm_tid;
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while (err && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/status", (int)pid, de->d_name);
		if (!nspid_last(path, &last, &count) && last == vm_tid) {
			*host = (pid_t)atoi(de->d_name);
			err = 0;
		}
	}
	closedir(d);
	return err;
}

int proc__ns_pid(pid_t pid, pid_t *ns_pid)
{
	char path[64];
	long last;
	int count;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (nspid_last(path, &last, &count))
		return -ENOENT;
	*ns_pid = (pid_t)last;
	return 0;
}

int proc__exe_id(pid_t pid, uint64_t *id)
{
	char path[64];
	struct stat st;

	if (pid <= 0)
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st) != 0)
		return -errno;
	*id = (uint64_t)st.st_dev << 40 ^ (uint64_t)st.st_ino;
	return 0;
}
