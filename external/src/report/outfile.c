/* An output file that is either written whole or not at all: a regular file (or a new path) is
 * written to a temporary file in the same directory (exclusive creation, mode 0644 minus the
 * umask), flushed, fsync'd and renamed over the path only once complete; on any error the
 * temporary file is removed and the old file, if any, is left as it was. A disk that fills up
 * mid-write therefore never leaves a silently truncated report. Anything else (a symbolic link
 * such as /dev/stdout, a FIFO, a terminal) is written in place, a link only when trusted. Does not
 * own: what is written (report/).
 *
 * The temporary file is written around the page cache (O_DIRECT) while the writes are whole
 * aligned blocks, as stdio's full buffer is: a report of a hundred MB and more, copied into the
 * page cache and written back by the fsync, cost the kernel 0.1-2 ms a MB, the most when the
 * cache's pages are memory a virtual machine's host had taken back; written from the buffer
 * itself, about 0.01 ms (docs/accuracy-and-cost.md). What is not aligned (the last part, a
 * writer's large write that bypasses the buffer), or refused direct, is written as before. A
 * writer with an aligned buffer of its own (pstack's JSON, json__buffer_to) hands its whole pages
 * over (outfile__write), not copied into stdio's buffer first: 495 MB for a million processes.
 * With outfile__write_behind (and outfile__stream_behind for the stream's own buffers, copied) a
 * thread of the file's own makes the writes, in order, while the writer goes on: the disk's time
 * is not the writer's. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "outfile.h"
#include "report/report.h"

#define OUTFILE_BUFFER (1u << 20)
#define OUTFILE_ALIGN  4096u /* a direct write's address, length and offset */

/* The temporary file under the stdio stream (fopencookie): where its writes end, and whether
 * they go around the page cache. */
struct outfile_fd {
	struct outfile *of; /* whose stream this is (its writes behind: outfile__stream_behind) */
	int fd;
	uint64_t end, direct_bytes;
	bool direct;	/* O_DIRECT is set on fd */
	bool no_direct; /* the file system refused it: written through the cache from here */
	int err;	/* outfile__write's first error (errno), which stdio does not see */
};

static void set_direct(struct outfile_fd *o, bool on)
{
	int fl = fcntl(o->fd, F_GETFL);

	if (fl < 0 || fcntl(o->fd, F_SETFL, on ? fl | O_DIRECT : fl & ~O_DIRECT) != 0) {
		o->no_direct = true;
		return;
	}
	o->direct = on;
}

static ssize_t outfile_fd_write(void *cookie, const char *buf, size_t n)
{
	struct outfile_fd *o = cookie;
	size_t done = 0;
	ssize_t w;

	while (done < n) {
		bool direct = !o->no_direct && (uintptr_t)(buf + done) % OUTFILE_ALIGN == 0 &&
			      (n - done) % OUTFILE_ALIGN == 0 && o->end % OUTFILE_ALIGN == 0;

		if (direct != o->direct)
			set_direct(o, direct);
		w = write(o->fd, buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EINVAL && o->direct && !o->no_direct) {
			o->no_direct = true; /* refused direct: through the cache from here */
			continue;
		}
		if (w <= 0)
			break;
		done += (size_t)w;
		o->end += (uint64_t)w;
		o->direct_bytes += o->direct ? (uint64_t)w : 0;
	}
	return (ssize_t)done; /* short: stdio marks the stream in error, errno says why */
}

static void settle_all(struct outfile *of);

int outfile__write(struct outfile *of, const void *buf, size_t n)
{
	ssize_t w;

	if (!of->fd) /* written in place: a stream of its own */
		return fwrite(buf, 1, n, of->f) == n ? 0 : -EIO;
	settle_all(of);
	if (of->fd->err)
		return -of->fd->err;
	if (fflush(of->f) != 0)
		return -EIO;
	errno = 0;
	if ((w = outfile_fd_write(of->fd, (const char *)buf, n)) < 0 || (size_t)w != n)
		of->fd->err = errno ? errno : EIO;
	return -of->fd->err;
}

/* The writes handed over by outfile__write_behind, written in turn by a thread of their own. The
 * caller's buffers stay theirs: outfile__settle says when one is written. */
#define BEHIND_QUEUE 8

struct outfile_behind {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct {
		const char *buf;
		size_t n;
	} q[BEHIND_QUEUE];
	uint64_t queued, written; /* tickets: the last queued, the last written */
	uint64_t bytes;		  /* written by the thread */
	bool quit;
	/* outfile__stream_behind: the stream's full buffers are copied into these and queued */
	struct outfile_spares spares;
};

static void *behind_thread(void *arg)
{
	struct outfile *of = arg;
	struct outfile_behind *b = of->behind;
	const char *buf;
	size_t n;
	ssize_t w;
	bool failed;
	int err;

	pthread_mutex_lock(&b->mu);
	for (;;) {
		if (b->written == b->queued) {
			if (b->quit)
				break;
			pthread_cond_wait(&b->cv, &b->mu);
			continue;
		}
		buf = b->q[b->written % BEHIND_QUEUE].buf;
		n = b->q[b->written % BEHIND_QUEUE].n;
		failed = of->fd->err != 0; /* after an error nothing more is written */
		pthread_mutex_unlock(&b->mu);
		/* The only writer of fd while writes are queued (outfile__write_behind). */
		errno = 0;
		w = failed ? (ssize_t)n : outfile_fd_write(of->fd, buf, n);
		err = errno ? errno : EIO;
		pthread_mutex_lock(&b->mu);
		if ((w < 0 || (size_t)w != n) && !of->fd->err)
			of->fd->err = err;
		b->bytes += failed || w < 0 ? 0 : (uint64_t)w;
		b->written++;
		pthread_cond_broadcast(&b->cv);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

int outfile__spares_new(struct outfile_spares *s, size_t cap)
{
	while (s->n < OUTFILE_SPARES &&
	       posix_memalign((void **)&s->buf[s->n], OUTFILE_ALIGN, cap) == 0)
		s->ticket[s->n++] = 0;
	return s->n ? 0 : -ENOMEM;
}

char *outfile__spare_take(struct outfile *of, struct outfile_spares *s)
{
	char *oldest = s->buf[0];

	outfile__settle(of, s->ticket[0]);
	s->n--;
	memmove(s->buf, s->buf + 1, (size_t)s->n * sizeof(*s->buf));
	memmove(s->ticket, s->ticket + 1, (size_t)s->n * sizeof(*s->ticket));
	return oldest;
}

void outfile__spare_put(struct outfile_spares *s, char *buf, uint64_t ticket)
{
	s->buf[s->n] = buf;
	s->ticket[s->n++] = ticket;
}

void outfile__spares_free(struct outfile *of, struct outfile_spares *s)
{
	while (s->n)
		free(outfile__spare_take(of, s));
}

void outfile__settle(struct outfile *of, uint64_t ticket)
{
	struct outfile_behind *b = of->behind;

	if (!b)
		return;
	pthread_mutex_lock(&b->mu);
	while (b->written < ticket && b->written < b->queued)
		pthread_cond_wait(&b->cv, &b->mu);
	pthread_mutex_unlock(&b->mu);
}

/* Every queued write done: fd is this thread's again. */
static void settle_all(struct outfile *of)
{
	if (of->behind)
		outfile__settle(of, UINT64_MAX);
}

static void behind_stop(struct outfile *of)
{
	struct outfile_behind *b = of->behind;

	if (!b)
		return;
	pthread_mutex_lock(&b->mu);
	b->quit = true;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	pthread_join(b->th, NULL);
	of->behind_bytes = b->bytes;
	outfile__spares_free(of, &b->spares); /* written: the thread is done */
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	free(b);
	of->behind = NULL;
}

static bool behind_start(struct outfile *of)
{
	struct outfile_behind *b = calloc(1, sizeof(*b));

	if (!b)
		return false;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	of->behind = b;
	if (pthread_create(&b->th, NULL, behind_thread, of) == 0)
		return true;
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	free(b);
	of->behind = NULL;
	of->no_behind = true;
	return false;
}

/* Queue n bytes at buf for the thread, after what is queued (waiting for room): its ticket, or 0
 * when nothing more is written (an error already). */
static uint64_t behind_queue(struct outfile_behind *b, struct outfile_fd *o, const void *buf,
			     size_t n)
{
	uint64_t ticket;

	pthread_mutex_lock(&b->mu);
	while (b->queued - b->written >= BEHIND_QUEUE)
		pthread_cond_wait(&b->cv, &b->mu);
	if (o->err) { /* set by the thread, read under its lock: nothing more is written */
		pthread_mutex_unlock(&b->mu);
		return 0;
	}
	b->q[b->queued % BEHIND_QUEUE].buf = buf;
	b->q[b->queued % BEHIND_QUEUE].n = n;
	ticket = ++b->queued;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	return ticket;
}

uint64_t outfile__write_behind(struct outfile *of, const void *buf, size_t n)
{
	struct outfile_behind *b;

	if (!of->fd || of->no_behind || (!of->behind && !behind_start(of))) {
		outfile__write(of, buf, n);
		return 0;
	}
	b = of->behind;
	if (__fpending(of->f)) /* what f holds goes first (its write keeps its own error) */
		fflush(of->f);
	return behind_queue(b, of->fd, buf, n);
}

int outfile__stream_behind(struct outfile *of)
{
	struct outfile_behind *b;

	if (!of->fd || !of->buf || of->no_behind || (!of->behind && !behind_start(of)))
		return -ENOTSUP; /* not a file of ours, or no stdio buffer of ours, or no thread */
	b = of->behind;
	return b->spares.n ? 0 : outfile__spares_new(&b->spares, OUTFILE_BUFFER);
}

/* The stream's write of n bytes at buf (stdio's buffer, reused once this returns): with spares
 * (outfile__stream_behind), whole pages are copied into the oldest spare and queued; anything
 * else is written here once every queued write is done. */
static ssize_t stream_write(void *cookie, const char *buf, size_t n)
{
	struct outfile_fd *o = cookie;
	struct outfile_behind *b = o->of->behind;
	char *next;
	ssize_t w;

	if (b && b->spares.n && n && n <= OUTFILE_BUFFER && n % OUTFILE_ALIGN == 0) {
		next = outfile__spare_take(o->of, &b->spares);
		memcpy(next, buf, n);
		outfile__spare_put(&b->spares, next, behind_queue(b, o, next, n));
		return (ssize_t)n; /* an error is outfile__close's to say */
	}
	settle_all(o->of); /* the thread idle: o->err is this thread's */
	errno = 0;
	w = outfile_fd_write(o, buf, n);
	if ((w < 0 || (size_t)w != n) && !o->err)
		o->err = errno ? errno : EIO; /* stdio keeps only a flag: close says this */
	return w;
}

static int outfile_fd_close(void *cookie)
{
	struct outfile_fd *o = cookie;
	int rc = close(o->fd);

	free(o);
	return rc;
}

/* A stream writing fd through an outfile_fd; NULL (errno set) when it cannot be had. */
static FILE *outfile_fd_open(struct outfile *of, int fd)
{
	static const cookie_io_functions_t io = {.write = stream_write, .close = outfile_fd_close};
	struct outfile_fd *o = calloc(1, sizeof(*o));
	FILE *f;

	if (!o)
		return NULL;
	o->fd = fd;
	o->of = of;
	if (!(f = fopencookie(o, "w", io))) {
		free(o);
		return NULL;
	}
	of->fd = o;
	return f;
}

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
	of->f = outfile_fd_open(of, fd);
	if (!of->f) {
		int rc = -errno;

		close(fd);
		unlink(of->tmp);
		return rc;
	}
	/* Reports run to tens of MB in lines longer than stdio's 4 KiB buffer, each of which would
	 * be a write(2) of its own. glibc ignores the size of a buffer it is to allocate itself. */
	if (posix_memalign((void **)&of->buf, OUTFILE_ALIGN, OUTFILE_BUFFER) == 0)
		setvbuf(of->f, of->buf, _IOFBF, OUTFILE_BUFFER);
	else
		of->buf = NULL;
	return 0;
}

int outfile__close(struct outfile *of, int rc)
{
	bool tmp = of->tmp[0] != '\0';
	struct statvfs vfs;

	if (!of->f)
		return rc ? rc : -EBADF;
	behind_stop(of); /* every queued write done */
	if (fflush(of->f) != 0 && !rc)
		rc = of->fd && of->fd->err ? -of->fd->err : -errno;
	if (ferror(of->f) && !rc)
		rc = of->fd && of->fd->err ? -of->fd->err : -EIO;
	if (of->fd && of->fd->err && !rc)
		rc = -of->fd->err;
	/* stdio keeps only an error flag (the writers say EIO): a full file system is said so. */
	if (rc == -EIO && fstatvfs(of->fd ? of->fd->fd : fileno(of->f), &vfs) == 0 &&
	    vfs.f_bavail == 0)
		rc = -ENOSPC;
	if (tmp && !rc && fsync(of->fd->fd) != 0)
		rc = -errno;
	of->direct_bytes = of->fd ? of->fd->direct_bytes : 0;
	if (fclose(of->f) != 0 && !rc)
		rc = -errno;
	of->f = NULL;
	of->fd = NULL; /* freed by fclose */
	free(of->buf);
	of->buf = NULL;
	if (tmp && !rc && rename(of->tmp, of->path) != 0)
		rc = -errno;
	if (tmp && rc)
		unlink(of->tmp);
	return rc;
}
