/* `extrospect perf-map PID`: write /tmp/perf-PID.map from the VM's GDB JIT map so perf names
 * Erlang code without a restart, once or (--follow) again whenever the JIT list changes.
 * Owns: the command, its help, refusing when the VM writes its own map, the follow loop.
 * Does not own: the map's entries, format and safe writing (perfmap.c), the JIT walk (jitmap.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "exitcode.h"
#include "perfmap.h"
#include "target.h"

#define PERFMAP_DIR    "/tmp"	  /* where perf looks, for the host pid (also for chroots) */
#define FOLLOW_POLL_NS 100000000L /* 100 ms between two reads of the descriptor */
#define JIT_WALK_TRIES 3	  /* 27+ frees entries: a walk racing a purge is redone */

const char perfmap__usage[] =
    "Usage: extrospect perf-map [--follow [-d SECS]] [--no-agent] PID\n"
    "       extrospect perf-map --perf-data FILE PID\n"
    "\n"
    "Write /tmp/perf-PID.map, the symbol map perf reads for JIT code (\"START SIZE name\",\n"
    "hex), from the VM's GDB JIT map: every Erlang function and the JIT's shared fragments,\n"
    "named as OTP's own +JPperf map names them ($module:function/arity, $global::name).\n"
    "The VM needs no restart and is never stopped: its memory is read with process_vm_readv.\n"
    "\n"
    "Options:\n"
    "  --follow          keep the map current as modules load, until Ctrl-C (or -d): the JIT\n"
    "                    list is polled every 100 ms and the map rewritten when it changed;\n"
    "                    code unloaded meanwhile keeps its name unless new code reuses it\n"
    "  -d, --duration SECS  with --follow: stop after SECS seconds (or 30s, 5m, 1h)\n"
    "  --no-agent        ignore the extrospect agent even when the VM has it loaded\n"
    "  --perf-data FILE  after perf record: make FILE's dual-mapped JIT code of PID read\n"
    "                    through the map (see below); FILE is rewritten in place\n"
    "\n"
    "Safety: the map is written to a new file (O_EXCL|O_NOFOLLOW, mode 0644, owned by you)\n"
    "and renamed over the old one, so perf never reads half a map. extrospect refuses, with\n"
    "exit code 10 and the reason, when /tmp/perf-PID.map is a symbolic link, belongs to\n"
    "another user, or was not written by extrospect; and when the VM writes its own map\n"
    "(started with +JPperf map or +JPperf true). Its first line, \"" PERFMAP_MARKER "\",\n"
    "marks the file as extrospect's (perf reads it as a symbol at address 0, never hit).\n"
    "perf uses a map only if it belongs to the user running perf or to root.\n"
    "\n"
    "perf uses the map for code in anonymous memory. By default the JIT maps its code twice\n"
    "from a memfd (\"/memfd:vmem (deleted)\" in /proc/PID/maps), which perf looks up as a\n"
    "file instead (perf 6.1 does; extrospect says so when it writes the map). Then run\n"
    "`extrospect perf-map --perf-data perf.data PID` between perf record and perf report:\n"
    "it renames those mappings to \"//anon\" in perf.data (not piped, not recorded with -z).\n"
    "A VM started with +JMsingle true (OTP 26+) is single-mapped and needs no such step.\n"
    "\n"
    "Examples:\n"
    "  extrospect perf-map 4242\n"
    "  perf record -F 999 -p 4242 -o perf.data -- sleep 10\n"
    "  extrospect perf-map --perf-data perf.data 4242   # dual-mapped JIT (the default)\n"
    "  perf report -i perf.data\n"
    "  extrospect perf-map --follow 4242 &      # keep it current while perf records\n"
    "  extrospect perf-map --follow -d 60 4242\n"
    "From inside the VM, with the agent loaded: extrospect:write_perf_map().\n";

struct follow {
	struct jit_descriptor desc; /* as read before the last walk */
	struct perfmap *pm;	    /* what the file holds */
	unsigned updates;
};

/* A fresh JIT map: the descriptor first, so a change during the walk shows at the next poll. */
static int load_jit(struct target *t, uint64_t desc_addr, struct jit_descriptor *d,
		    struct jitmap **out)
{
	int err = -EAGAIN;

	for (int i = 0; i < JIT_WALK_TRIES; i++) {
		err = jitmap__read_descriptor(t->mem, desc_addr, d);
		if (!err)
			err = jitmap__load(t->mem, desc_addr, out);
		if (err || !jitmap__stats(*out)->chain_broken)
			break;
		jitmap__free(*out);
		*out = NULL;
		err = -EAGAIN;
	}
	return err;
}

/* Build the map from the VM now and write it, carrying names from f->pm. */
static int update(struct target *t, uint64_t desc_addr, struct follow *f, char *err, size_t errlen)
{
	struct jitmap *jit = NULL;
	struct perfmap *pm = NULL;
	char path[64];
	int rc;

	rc = load_jit(t, desc_addr, &f->desc, &jit);
	if (rc) {
		snprintf(err, errlen, "cannot read the VM's JIT map: %s",
			 rc == -EAGAIN
			     ? "every walk of the list stopped early (it kept changing, "
			       "or it is corrupt: a bad link, a cycle, over the size limits)"
			     : strerror(-rc));
		return rc == -ESRCH ? TARGET_EGONE : rc;
	}
	rc = perfmap__from_jit(jit, &pm);
	if (!rc)
		rc = perfmap__carry(pm, f->pm);
	if (!rc)
		rc = perfmap__install(PERFMAP_DIR, t->pid, pm, err, errlen);
	else
		snprintf(err, errlen, "out of memory building the map");
	perfmap__path(path, sizeof(path), PERFMAP_DIR, t->pid);
	if (!rc)
		printf("%s %s: %zu symbols (%zu new), %zu JIT modules\n",
		       f->updates ? "updated" : "wrote", path, perfmap__count(pm),
		       perfmap__new_since(pm, f->pm), (size_t)jitmap__stats(jit)->modules);
	fflush(stdout);
	if (!rc) {
		perfmap__free(f->pm);
		f->pm = pm;
		f->updates++;
		pm = NULL;
	}
	perfmap__free(pm);
	jitmap__free(jit);
	return rc;
}

/* perf only uses a map for anonymous executable memory; say when the JIT's is not. */
static void note_dual_mapping(const struct target *t)
{
	const struct jit_module_info *mi = NULL;
	const struct proc_map *m;

	for (uint32_t i = 0; !mi && i < jitmap__module_count(t->jit); i++)
		if (jitmap__module(t->jit, i)->base)
			mi = jitmap__module(t->jit, i);
	m = mi && t->maps ? proc_maps__find(t->maps, mi->base) : NULL;
	if (!m || !m->path[0])
		return;
	fprintf(stderr,
		"extrospect: note: this VM's JIT code is mapped from \"%s\" (dual-mapped, the "
		"default), which perf looks up as a file, not through the map: after perf record, "
		"run `extrospect perf-map --perf-data perf.data %d` before perf report\n",
		m->path, (int)t->pid);
}

static bool deadline_passed(const struct timespec *start, double duration_s)
{
	struct timespec now;

	if (duration_s <= 0)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9 >=
	       duration_s;
}

/* Re-walk and rewrite whenever the descriptor's fields change (each register / unregister
 * rewrites first_entry, relevant_entry or action). */
static int follow_loop(struct target *t, uint64_t desc_addr, struct follow *f, double duration_s,
		       volatile sig_atomic_t *stop, char *err, size_t errlen)
{
	const struct timespec poll = {0, FOLLOW_POLL_NS};
	struct timespec start;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!*stop && !deadline_passed(&start, duration_s)) {
		struct jit_descriptor d;

		nanosleep(&poll, NULL);
		rc = jitmap__read_descriptor(t->mem, desc_addr, &d);
		if (rc == -ESRCH || (rc && proc__exists(t->pid) == -ENOENT)) {
			fprintf(stderr,
				"extrospect: the VM exited; the map stays for perf report\n");
			return TARGET_EGONE;
		}
		if (rc || !memcmp(&d, &f->desc, sizeof(d)))
			continue; /* unchanged, or a transient failure: poll again */
		rc = update(t, desc_addr, f, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

static int fix_data(const char *path, pid_t pid, char *err, size_t errlen)
{
	char map[64];
	pid_t ns_pid;
	unsigned n = 0;
	int rc;

	rc = perfmap__fix_perf_data(path, pid, &n, err, errlen);
	if (rc)
		return rc;
	perfmap__path(map, sizeof(map), PERFMAP_DIR, pid);
	printf("%s: %u JIT mapping%s of pid %d now read through %s", path, n, n == 1 ? "" : "s",
	       (int)pid, map);
	/* perf looks in the VM's own mount namespace first (tools/perf/util/symbol.c,
	 * dso__find_perf_map), under the pid the VM has there. */
	if (!proc__ns_pid(pid, &ns_pid) && ns_pid != pid)
		printf(", or /tmp/perf-%d.map in the VM's mount namespace when it has one "
		       "(perf looks there first)",
		       (int)ns_pid);
	printf("\n");
	if (!n)
		fprintf(stderr,
			"extrospect: note: %s holds no dual-mapped JIT code of pid %d (not "
			"recorded with -p %d, or the VM runs single-mapped)\n",
			path, (int)pid, (int)pid);
	return 0;
}

int cmd__perfmap_fix_data(const char *path, pid_t pid)
{
	char err[512] = "";

	if (!fix_data(path, pid, err, sizeof(err)))
		return EXIT_OK;
	fprintf(stderr, "extrospect: %s\n", err);
	return EXIT_INTERNAL;
}

int cmd__perfmap(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
		 size_t errlen)
{
	const struct target_value *d = &t->addr[XP_ADDR_JIT_DESCRIPTOR];
	struct follow f = {0};
	char own[4096];
	int rc;

	if (o->duration_s > 0 && !o->follow) {
		snprintf(err, errlen, "perf-map: -d/--duration only applies with --follow");
		return -EINVAL;
	}
	if (t->flavor != XP_FLAVOR_JIT) {
		snprintf(err, errlen,
			 "VM %d runs the interpreter (no JIT): perf names its C "
			 "functions without a map",
			 (int)t->pid);
		return -ENOTSUP;
	}
	if (!d->present || !t->jit) {
		snprintf(err, errlen, "VM %d: no GDB JIT map to write from: %s", (int)t->pid,
			 strerror(t->jit_err < 0 ? -t->jit_err : ENOENT));
		return -ENOENT;
	}
	if (perfmap__vm_writes_own(t->pid, own, sizeof(own)) == 1) {
		snprintf(err, errlen,
			 "VM %d writes its own perf map (started with +JPperf): %s; "
			 "not writing another",
			 (int)t->pid, own);
		return PERFMAP_EREFUSED;
	}
	note_dual_mapping(t);
	rc = update(t, (uint64_t)d->value, &f, err, errlen);
	if (rc == -ELOOP || rc == -EPERM || rc == -EEXIST || rc == -EINVAL)
		rc = PERFMAP_EREFUSED;
	if (!rc && o->follow)
		rc = follow_loop(t, (uint64_t)d->value, &f, o->duration_s, stop, err, errlen);
	if (rc == -ELOOP || rc == -EPERM || rc == -EEXIST)
		rc = PERFMAP_EREFUSED;
	perfmap__free(f.pm);
	return rc;
}
