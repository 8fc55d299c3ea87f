/* An output file written whole or not at all (outfile.c): a temporary file in the same
 * directory, fsync'd and renamed over the path when complete, removed on any error. */
#ifndef XP_OUTFILE_H
#define XP_OUTFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define OUTFILE_SPARES 3 /* buffers being written by the file's thread while another fills */

/* Buffers handed in turn to the output file's thread (outfile__write_behind), each with the
 * ticket of its write: the oldest is taken back once that write is done. */
struct outfile_spares {
	char *buf[OUTFILE_SPARES];
	uint64_t ticket[OUTFILE_SPARES];
	int n;
};

struct outfile {
	FILE *f; /* write here */
	const char *path;
	char tmp[PATH_MAX];    /* "" when writing in place (not a regular file) */
	char *buf;	       /* f's buffer, when it has one of ours */
	struct outfile_fd *fd; /* the temporary file under f (outfile.c) */
	uint64_t direct_bytes; /* once closed: the bytes written around the page cache */
	uint64_t behind_bytes; /* once closed: the bytes outfile__write_behind's thread wrote */
	struct outfile_behind *behind; /* outfile__write_behind's thread, once started */
	bool no_behind;		       /* it could not start: written at once */
};

/* 0, or a negative errno (the directory is not writable, the path too long). of stays where it
 * is until outfile__close: its stream points back to it. */
int outfile__open(struct outfile *of, const char *path);
/* n bytes at buf, after what f holds (it is flushed first), for a writer with a buffer of its
 * own: from a buffer aligned to 4096 bytes, in whole multiples of them, the bytes go to the file
 * around the page cache without a copy into f's. 0 or a negative errno, which outfile__close
 * returns too. */
int outfile__write(struct outfile *of, const void *buf, size_t n);
/* The same, written by a thread of the output file's own after the writes queued before, while
 * the caller goes on: buf must stay as it is until outfile__settle(of, ticket) returns, ticket
 * being what this returns; 0 when it was written at once (no file of ours, or no thread) or is
 * not written at all (an earlier write failed). Errors are outfile__close's to return. */
uint64_t outfile__write_behind(struct outfile *of, const void *buf, size_t n);
/* What the stream of (of->f) writes in whole buffers from here on is written by the same thread:
 * each is copied into one of three spare buffers (3 MiB), queued, and the stream goes on. 0, or
 * -ENOTSUP (not a file of ours, no thread) or -ENOMEM: then written at once, as before. */
int outfile__stream_behind(struct outfile *of);
/* Waits until the write of ticket (outfile__write_behind) is done; at once for 0. */
void outfile__settle(struct outfile *of, uint64_t ticket);
/* OUTFILE_SPARES buffers of cap bytes, aligned for writes around the page cache: 0, or -ENOMEM
 * when none could be had (then s->n is 0; fewer is as good). */
int outfile__spares_new(struct outfile_spares *s, size_t cap);
/* The oldest spare, taken out of s once its write is done (s->n > 0). */
char *outfile__spare_take(struct outfile *of, struct outfile_spares *s);
/* buf back into s (after outfile__spare_take), being written as ticket. */
void outfile__spare_put(struct outfile_spares *s, char *buf, uint64_t ticket);
/* Every spare's write done, and the spares freed. */
void outfile__spares_free(struct outfile *of, struct outfile_spares *s);
/* Finish: rc is the writer's result; on 0 the file is flushed, synced and renamed into place.
 * On any error (rc, or one here: ENOSPC, EIO) the temporary file is removed. Returns the
 * first error, or 0. */
int outfile__close(struct outfile *of, int rc);

#endif /* XP_OUTFILE_H */
