/* The output formats of `extrospect record`: each writes one aggregate to an open stream and
 * returns 0 or -errno (-EIO when the stream reports a write error), plus the text helpers they
 * share (report.c). Does not own: aggregation (aggregate.c), opening or closing the stream. */
#ifndef XP_REPORT_H
#define XP_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "aggregate.h"

/* Folded stacks for flamegraph.pl / speedscope: "group;frame;frame count", see collapsed.c for the
 * escaping of ';'. */
int report__collapsed(const struct agg *a, FILE *f);
/* speedscope's JSON file format: one sampled profile for all processes, then one per group. */
int report__speedscope(const struct agg *a, FILE *f, const char *title);
/* A self-contained interactive flame graph (no external resources). */
int report__svg(const struct agg *a, FILE *f, const char *title);

/* pprof (profile.proto, gzipped): what the aggregate cannot say. */
struct pprof_meta {
	uint64_t period_ns;  /* nanoseconds of CPU per sample; 0: not time (--event cycles) */
	int64_t time_ns;     /* when the profile began, ns since the Unix epoch */
	int64_t duration_ns; /* how long it covers */
	bool lines;	     /* Erlang frames carry " (file:line)" (--lines): split into both */
	int pid;	     /* the target: its maps and files give mappings and build-ids */
	const char *comment; /* one line of text, may be NULL */
	/* More comments, one a line ('\n'), may be NULL: records perf lost, by scheduler and time
	 * window (perf_loss__text), so that a profile with a gap says where it is. */
	const char *notes;
};
#define PPROF_MAX_COMMENTS 40
/* The gzipped profile into a malloc'd buffer (pushes), or written to f. */
int report__pprof_encode(const struct agg *a, const struct pprof_meta *m, uint8_t **out,
			 size_t *outlen);
int report__pprof(const struct agg *a, const struct pprof_meta *m, FILE *f);

/* top's tables: Erlang functions by self and total share, and processes by share; at most limit
 * rows each. */
int report__top_functions(const struct agg *a, FILE *f, unsigned limit);
int report__top_processes(const struct agg *a, FILE *f, unsigned limit);

/* Length (1..4) of the well-formed UTF-8 sequence at p (RFC 3629: no overlongs, surrogates or
 * code points above U+10FFFF), 0 when *p starts none. An ASCII byte, NUL included, gives 1. */
size_t report__utf8_len(const char *p);
/* Code point of a sequence report__utf8_len accepted with length n. */
unsigned report__utf8_cp(const char *p, size_t n);
/* One line saying how many processes' '$initial_call' could not be read, by reason
 * (counts[PDICT_RESULT_COUNT], procdict.h); nothing when none failed. */
void report__pdict_summary(const uint64_t *counts, FILE *f);
/* Flushes f: 0, or -EIO when any write failed. */
int report__finish(FILE *f);
/* Opens the output file path for writing (created 0644 less the umask, or truncated). A symbolic
 * link at its last component is followed only when no other user could have planted it: not in
 * a sticky world-writable directory (/tmp), or owned by us or by that directory's owner, the
 * rule of fs.protected_symlinks, kept even where that sysctl is off (SECURITY.md: a profiler
 * often runs as root). /dev/stdout works. 0 with *out set, or a negative errno, -ELOOP for a
 * link refused. */
int report__open_output(const char *path, FILE **out);
/* What a negative errno from opening or writing an output file means, for "cannot write PATH:
 * ...": a refused link says so, anything else is strerror's. */
const char *report__output_error(int rc);
/* stdout fully buffered in 1 MiB blocks, for outputs of hundreds of MB (glibc ignores the size
 * setvbuf asks for when it allocates the buffer itself: 4 KiB blocks). Call before anything is
 * written to stdout. */
void report__buffer_stdout(void);

#endif /* XP_REPORT_H */
