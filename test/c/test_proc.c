/* Unit tests for the /proc/PID/maps parser and path helpers (proc.c), on fixed text and on this
 * process's own maps, and for both /proc readers (proc.c, smaps.c) on a child that remaps. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "proc.h"
#include "smaps.h"

static const char sample[] =
    "55d0c0a00000-55d0c0a4b000 r--p 00000000 fe:01 1835231                    "
    "/usr/lib/erlang/erts-13.1.5/bin/beam.smp\n"
    "55d0c0a4b000-55d0c0d4f000 r-xp 0004b000 fe:01 1835231                    "
    "/usr/lib/erlang/erts-13.1.5/bin/beam.smp\n"
    "7f2a2d800000-7f2a31800000 r-xs 00000000 00:01 5121                       "
    "/memfd:vmem (deleted)\n"
    "7f2a31800000-7f2a35800000 rw-s 00000000 00:01 5121                       "
    "/memfd:vmem (deleted)\n"
    "7f2a35800000-7f2a35900000 rw-p 00000000 00:00 0 \n"
    "7ffd1e7c0000-7ffd1e7e1000 rw-p 00000000 00:00 0                          [stack]\n"
    "7ffd1e7f0000-7ffd1e7f2000 r-xp 00000000 00:00 0                          "
    "/opt/with space/lib.so\n";

static void test_sample(void)
{
	struct proc_maps *maps = NULL;
	const struct proc_map *m;
	int err;

	err = proc_maps__parse(sample, strlen(sample), &maps);
	CHECK_INT("sample parses", 0, err);
	if (err)
		return;
	CHECK_INT("sample count", 7, maps->n);
	CHECK_U64("first start", 0x55d0c0a00000ULL, maps->v[0].start);
	CHECK_U64("first end", 0x55d0c0a4b000ULL, maps->v[0].end);
	CHECK_STR("first path", "/usr/lib/erlang/erts-13.1.5/bin/beam.smp", maps->v[0].path);
	CHECK_INT("text perms", PROC_PERM_R | PROC_PERM_X, maps->v[1].perms);
	CHECK_U64("text offset", 0x4b000, maps->v[1].offset);
	CHECK_INT("inode", 1835231, maps->v[1].inode);
	CHECK_STR("deleted path cut", "/memfd:vmem", maps->v[2].path);
	CHECK("deleted flag", maps->v[2].deleted);
	CHECK_INT("shared perms", PROC_PERM_R | PROC_PERM_X | PROC_PERM_SHARED, maps->v[2].perms);
	CHECK_STR("anonymous path", "", maps->v[4].path);
	CHECK_STR("pseudo path", "[stack]", maps->v[5].path);
	CHECK_STR("path with space", "/opt/with space/lib.so", maps->v[6].path);
	m = proc_maps__find(maps, 0x55d0c0a4b123ULL);
	CHECK("find inside", m == &maps->v[1]);
	CHECK("find at end is outside", proc_maps__find(maps, 0x55d0c0d4f000ULL) == NULL);
	CHECK("find in gap", proc_maps__find(maps, 0x7f0000000000ULL) == NULL);
	CHECK("find first byte", proc_maps__find(maps, 0x55d0c0a00000ULL) == &maps->v[0]);
	proc_maps__free(maps);
}

static void test_malformed(void)
{
	static const char *const bad[] = {
	    "zz-10 r--p 00000000 fe:01 1 /x\n",
	    "1000-2000 rwzp 00000000 fe:01 1 /x\n",
	    "1000-2000 r--p 00000000 fe:01\n",
	    "2000-1000 r--p 00000000 fe:01 1 /x\n",
	    "1000 r--p 00000000 fe:01 1 /x\n",
	    "1000-3000 r--p 0 fe:01 1 /a\n2000-4000 r--p 0 fe:01 1 /b\n", /* overlap */
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct proc_maps *maps = (struct proc_maps *)1;
		char name[64];

		snprintf(name, sizeof(name), "malformed line %zu rejected", i);
		CHECK_INT(name, -EPROTO, proc_maps__parse(bad[i], strlen(bad[i]), &maps));
		CHECK("malformed leaves no result", maps == NULL);
	}
	{
		static const char nul[] = "1000-2000 r--p 0 fe:01 1 /a\0b\n";
		struct proc_maps *maps;

		CHECK_INT("embedded NUL rejected", -EPROTO,
			  proc_maps__parse(nul, sizeof(nul) - 1, &maps));
	}
	{
		struct proc_maps *maps = NULL;

		CHECK_INT("empty text parses", 0, proc_maps__parse("", 0, &maps));
		CHECK_INT("empty text has no maps", 0, maps ? maps->n : 99);
		proc_maps__free(maps);
	}
	proc_maps__free(NULL);
}

static void test_self(void)
{
	struct proc_maps *maps = NULL;
	struct proc_task *tasks = NULL;
	const struct proc_map *m;
	size_t n = 0;
	char path[128];

	CHECK_INT("load own maps", 0, proc_maps__load(getpid(), &maps));
	m = maps ? proc_maps__find(maps, (uint64_t)(uintptr_t)&test_self) : NULL;
	CHECK("own code is mapped executable", m && (m->perms & PROC_PERM_X));
	CHECK("own code path names this test", m && strstr(m->path, "test_proc"));
	proc_maps__free(maps);
	CHECK_INT("no such pid", -ENOENT, proc_maps__load(999999999, &maps));
	CHECK_INT("exists self", 0, proc__exists(getpid()));
	CHECK_INT("exists nonsense", -ENOENT, proc__exists(999999999));
	CHECK_INT("own tasks", 0, proc__tasks(getpid(), &tasks, &n));
	CHECK_INT("one thread", 1, n);
	CHECK("thread is the process", n == 1 && tasks[0].tid == getpid());
	CHECK_STR("thread name", "test_proc", n ? tasks[0].comm : "");
	free(tasks);
	CHECK_INT("root path", 0, proc__root_path(42, "/usr/lib", path, sizeof(path)));
	CHECK_STR("root path text", "/proc/42/root/usr/lib", path);
	CHECK_INT("root path relative refused", -EINVAL,
		  proc__root_path(42, "usr", path, sizeof(path)));
	CHECK_INT("root path too long", -ENAMETOOLONG, proc__root_path(42, "/usr/lib", path, 8));
}

/* In our own pid namespace a pid and a tid are their own numbers; an unknown tid is refused. (The
 * other namespace is e2e.privilege's: watch on a VM under unshare --pid.) */
static void test_namespace_ids(void)
{
	pid_t ns = 0, host = 0;

	CHECK_INT("ns pid of ourselves", 0, proc__ns_pid(getpid(), &ns));
	CHECK_INT("ns pid is our pid", getpid(), ns);
	CHECK_INT("host tid of our main thread", 0,
		  proc__host_tid(getpid(), (int32_t)getpid(), &host));
	CHECK_INT("host tid is the same", getpid(), host);
	/* In our namespace the number is returned as is: the caller checks the thread. */
	CHECK_INT("a tid not of this process, same namespace", 0,
		  proc__host_tid(getpid(), 0x3fffffff, &host));
	CHECK_INT("returned as is", 0x3fffffff, host);
	CHECK_INT("tid 0", -ENOENT, proc__host_tid(getpid(), 0, &host));
}

/* A live process's maps change while they are read: a file of many lines takes several reads,
 * and a mapping that grows or merges between two of them is listed twice, overlapping (seen in
 * CI at a VM's start: "cannot read /proc/PID/maps: Protocol error"). A child maps and unmaps
 * next to 400 mappings without pause while its maps are read: every read must succeed (a torn
 * read is read again). */
#define CHURN_MAPS  400
#define CHURN_LOADS 2000
/* smaps: fewer mappings, read more often. A read is torn at about the same rate per pass
 * whatever their number (more mappings: more reads a pass, each less likely torn), and a pass
 * of fewer is faster: without the check, 4 000 passes of 16 tore 1-47 times (6 runs). */
#define SMAPS_MAPS  16
#define SMAPS_LOADS 4000

/* A child whose mappings merge and split without pause: once it reads a byte from *go, it
 * changes the pages between n one-page mappings, one after the other, until killed, so
 * that each joins its neighbours and parts from them again.
 * - prot: the mappings are PROT_READ pages of a PROT_NONE region, the pages between them made
 *   PROT_READ and PROT_NONE again: mappings come and go.
 * - advise: the region is read-write, every other page MADV_DONTFORK (a flag that keeps a
 *   mapping apart but shows in no field of smaps), the pages between them made MADV_DOFORK and
 *   MADV_DONTFORK again: the mappings merge and split, the read-write memory stays the same.
 * Returns its pid once its mappings are made, or -1. */
enum churn { CHURN_PROT, CHURN_ADVISE };

static pid_t churn_child(enum churn how, int n, int *go)
{
	long page = sysconf(_SC_PAGESIZE);
	int ready[2], start[2];
	pid_t child;
	char c;

	if (pipe(ready))
		return -1;
	if (pipe(start)) {
		close(ready[0]);
		close(ready[1]);
		return -1;
	}
	child = fork();
	if (child == 0) {
		uint8_t *base;

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the test */
		base = mmap(NULL, (size_t)page * 2 * (size_t)n,
			    how == CHURN_ADVISE ? PROT_READ | PROT_WRITE : PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (base == MAP_FAILED)
			_exit(1);
		for (int i = 0; i < n; i++) {
			if (how == CHURN_ADVISE)
				madvise(base + (size_t)page * (2 * i + 1), (size_t)page,
					MADV_DONTFORK);
			else
				mprotect(base + (size_t)page * 2 * i, (size_t)page, PROT_READ);
		}
		if (write(ready[1], "r", 1) != 1 || read(start[0], &c, 1) != 1)
			_exit(1);
		for (unsigned i = 0;; i = (i + 1) % (unsigned)n) {
			uint8_t *gap = base + (size_t)page * (2 * i + 1);

			if (how == CHURN_ADVISE) { /* merges with its neighbours, splits again */
				madvise(gap, (size_t)page, MADV_DOFORK);
				madvise(gap, (size_t)page, MADV_DONTFORK);
			} else {
				mprotect(gap, (size_t)page, PROT_READ);
				mprotect(gap, (size_t)page, PROT_NONE);
			}
		}
	}
	close(ready[1]);
	close(start[0]);
	if (child < 0 || read(ready[0], &c, 1) != 1) {
		if (child > 0) {
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
		}
		close(ready[0]);
		close(start[1]);
		return -1;
	}
	close(ready[0]);
	*go = start[1];
	return child;
}

static void churn_stop(pid_t child, int go)
{
	close(go);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

static void test_churn(void)
{
	int go, fails = 0, other = 0;
	pid_t child = churn_child(CHURN_PROT, CHURN_MAPS, &go);

	CHECK("churning child ready", child > 0);
	if (child <= 0 || write(go, "g", 1) != 1)
		return;
	for (int i = 0; i < CHURN_LOADS; i++) {
		struct proc_maps *maps = NULL;
		int rc = proc_maps__load(child, &maps);

		fails += rc == -EPROTO;
		other += rc != 0 && rc != -EPROTO;
		proc_maps__free(maps);
	}
	churn_stop(child, go);
	CHECK_INT("maps loaded while they change: none torn", 0, fails);
	CHECK_INT("maps loaded while they change: no other error", 0, other);
}

/* The same for /proc/PID/smaps, which only sums: a torn read there did not fail but counted a
 * mapping twice (alloc's anonymous memory). The child's mappings merge and split while its
 * read-write memory stays the same: every sum taken meanwhile must equal the one taken still.
 * The child does nothing else, faster than any VM: a load torn SMAPS_TRIES times in a row fails
 * with -EAGAIN (said, never summed), 0-3 of the 4 000 on an idle 2-core machine (3 December
 * 2026); more than 1 % would say the retries do not work. */
static void test_smaps_churn(void)
{
	struct smaps_anon still, a;
	int go, rc, torn = 0, errs = 0, off = 0;
	uint64_t worst = 0;
	pid_t child = churn_child(CHURN_ADVISE, SMAPS_MAPS, &go);

	CHECK("smaps: churning child ready", child > 0);
	if (child <= 0)
		return;
	rc = smaps__anon_rw(child, &still);
	CHECK_INT("smaps of the still child", 0, rc);
	CHECK("smaps: its mappings counted apart", still.mappings >= 2 * SMAPS_MAPS);
	if (rc || write(go, "g", 1) != 1) {
		churn_stop(child, go);
		return;
	}
	for (int i = 0; i < SMAPS_LOADS; i++) {
		rc = smaps__anon_rw(child, &a);
		torn += rc == -EAGAIN;
		errs += rc != 0 && rc != -EAGAIN;
		if (!rc && a.size != still.size) {
			off++;
			worst = a.size > worst ? a.size : worst;
		}
	}
	churn_stop(child, go);
	CHECK_INT("smaps read while they change: no error but torn", 0, errs);
	printf("smaps read while they change: %d of %d loads torn every try\n", torn, SMAPS_LOADS);
	CHECK("smaps read while they change: at most 1 % torn every try",
	      torn <= SMAPS_LOADS / 100);
	CHECK_INT("smaps read while they change: every sum the still one", 0, off);
	if (off)
		fprintf(stderr, "  still %llu bytes, worst %llu\n", (unsigned long long)still.size,
			(unsigned long long)worst);
}

int main(void)
{
	test_sample();
	test_malformed();
	test_self();
	test_namespace_ids();
	test_churn();
	test_smaps_churn();
	return check_done();
}
