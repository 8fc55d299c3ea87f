/* perf's symbol map for JIT code, /tmp/perf-PID.map ("START SIZE name", hex, one line per
 * symbol; linux tools/perf/Documentation/jit-interface.txt), built from the GDB JIT map and
 * written safely into a shared sticky /tmp. Owns: the entries (newest JIT range wins), the file
 * format and our marker, refusing to clobber a map someone else wrote, the atomic replace.
 * Does not own: reading the JIT map (jitmap.c), attaching (target.c), the follow loop. */
#ifndef XP_PERFMAP_H
#define XP_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "jitmap.h"

/* The first line of every map extrospect writes. perf reads it as a one-byte symbol at address 0,
 * which no sample can hit (a '#' comment line would become a symbol at 0 covering whatever its
 * parser makes of the text); we read it to know a file is ours and may be replaced. */
#define PERFMAP_MARKER	 "0 1 [extrospect-perf-map]"
#define PERFMAP_MAX_NAME 512 /* longer names from the VM are cut */

/* What cmd__perfmap returns when it will not replace a map (a link, another user's file, a map
 * extrospect did not write, a VM writing its own): main.c maps it to an exit code. */
#define PERFMAP_EREFUSED (-1101)

struct perfmap_entry {
	uint64_t start, size;
	const char *name; /* "$mod:fun/2", "$global::fragment": OTP's own +JPperf spelling */
};

struct perfmap;

/* The JIT map as disjoint symbols: where ranges overlap (OTP 25 keeps purged entries and reuses
 * their addresses) the newest wins; empty ranges are left out. */
int perfmap__from_jit(const struct jitmap *jit, struct perfmap **out);
/* Keep every entry of prev that no entry of pm overlaps: code unloaded since prev was built
 * (27+ frees purged entries) keeps its name for samples recorded before the purge. */
int perfmap__carry(struct perfmap *pm, const struct perfmap *prev);
size_t perfmap__count(const struct perfmap *pm);
const struct perfmap_entry *perfmap__entry(const struct perfmap *pm, size_t i);
/* Entries of pm whose start is not the start of an entry of prev (all when prev is NULL). */
size_t perfmap__new_since(const struct perfmap *pm, const struct perfmap *prev);
/* The marker line, then one line per entry. 0 or -EIO. */
int perfmap__format(const struct perfmap *pm, FILE *f);
void perfmap__free(struct perfmap *pm);

/* "DIR/perf-PID.map". 0 or -ENAMETOOLONG. */
int perfmap__path(char *buf, size_t len, const char *dir, pid_t pid);

/* May we write DIR/perf-PID.map? 0 when it is absent or a regular file of ours (our euid, our
 * marker); else, with why set: -ELOOP a symbolic link, -EPERM owned by another user, -EINVAL not
 * a regular file, -EEXIST a map extrospect did not write (the VM's own +JPperf map). */
int perfmap__check(const char *dir, pid_t pid, char *why, size_t whylen);

/* Write pm to DIR/perf-PID.map: a new temporary file in DIR (O_CREAT|O_EXCL|O_NOFOLLOW, mode
 * 0644, owned by the caller), then rename() over the old one, so perf never reads half a map.
 * Refuses as perfmap__check does. 0, or a negative errno with err set. */
int perfmap__install(const char *dir, pid_t pid, const struct perfmap *pm, char *err,
		     size_t errlen);

/* Does the VM write its own map (+JPperf map)? It keeps its perf-N.map open for appending:
 * 1 with *path set to what /proc/PID/fd shows, 0 when no descriptor names one, or -errno when
 * /proc/PID/fd cannot be listed. */
int perfmap__vm_writes_own(pid_t pid, char *path, size_t pathlen);

/* perf uses the map only for anonymous memory, but the JIT maps its code from a memfd by default
 * (asmjit's "/memfd:vmem"), which perf looks up as a file. Rewrite, in place in a perf.data
 * written by `perf record` (not piped, not -z), the file name of pid's executable
 * "/memfd:vmem..." PERF_RECORD_MMAP2 records to "//anon" (NUL-padded: sizes do not change), so
 * perf report uses /tmp/perf-PID.map for them. 0 with *patched set, or a negative errno with
 * err set (-EPROTO: not a perf.data we can patch). */
int perfmap__fix_perf_data(const char *path, pid_t pid, unsigned *patched, char *err,
			   size_t errlen);

#endif /* XP_PERFMAP_H */
