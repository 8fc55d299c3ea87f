/* uprobe.c tests: a forked child calls a known function exactly NCALLS times once told to (a
 * pipe), the first half on its last CPU and the second on its first; a uprobe on its entry and a
 * uretprobe on its return, opened on this very executable, must each see exactly NCALLS hits of
 * the child, in time order across the CPUs' rings: its pid, the first argument in rdi, the return
 * value in rax. (Drained ring by ring, the second half comes first: all 1,000 arguments wrong.)
 * Exits 77 when uprobes are refused (not root) or absent. Does not own: what the events source
 * makes of hits (events_uprobes.c). */
#include "check.h"
#include "proc.h"
#include "uprobe.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NCALLS 1000

static __attribute__((noinline, used)) uint64_t xp_uprobe_target(uint64_t x, uint64_t y)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + y;
}

struct seen {
	pid_t child;
	uint64_t entries, returns, bad_arg, bad_ret, backwards, last_entry_ns;
};

static void on_hit(const struct uprobe_hit *h, void *ctx)
{
	struct seen *s = ctx;

	if (h->pid != s->child)
		return;
	if (h->probe == 0) {
		s->bad_arg += h->di != s->entries + 7 || h->si != 2;
		s->backwards += h->time_ns < s->last_entry_ns;
		s->last_entry_ns = h->time_ns;
		s->entries++;
	} else {
		s->bad_ret += h->ax != (s->returns + 7) * 3 + 2;
		s->returns++;
	}
}

/* The file offset of fn in this executable, from our own maps. */
static int offset_of(const void *fn, uint64_t *off, char *path, size_t len)
{
	struct proc_maps *maps;
	const struct proc_map *m;
	int rc = proc_maps__load(getpid(), &maps);

	if (rc)
		return rc;
	m = proc_maps__find(maps, (uint64_t)(uintptr_t)fn);
	if (m)
		snprintf(path, len, "%s", m->path);
	if (m)
		*off = (uint64_t)(uintptr_t)fn - m->start + m->offset;
	proc_maps__free(maps);
	return m ? 0 : -ENOENT;
}

/* The lowest and highest CPUs this process may run on (both -1: none known). */
static void allowed_cpus(int *lo, int *hi)
{
	cpu_set_t set;

	*lo = *hi = -1;
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &set)) {
			if (*lo < 0)
				*lo = c;
			*hi = c;
		}
	}
}

static void pin_to(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
}

/* The child makes its first half of the calls on the last CPU it may use and the second half on
 * the first (when it may use two): its hits are in two rings, the later ones in the ring a drain
 * reads first, so only a drain merged by time gives them in order. */
static pid_t child_start(int *go)
{
	int fds[2];
	pid_t pid;
	char c;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		int lo, hi;

		close(fds[1]);
		allowed_cpus(&lo, &hi);
		if (read(fds[0], &c, 1) == 1)
			for (uint64_t i = 0; i < NCALLS; i++) {
				if (lo != hi && (i == 0 || i == NCALLS / 2))
					pin_to(i ? lo : hi);
				(void)xp_uprobe_target(i + 7, 2);
			}
		_exit(0);
	}
	close(fds[0]);
	*go = fds[1];
	return pid;
}

int main(void)
{
	struct uprobe_spec sp[2];
	struct uprobe_set *u = NULL;
	struct seen s = {0};
	char path[4096] = "";
	uint64_t off = 0;
	int go = -1, rc;

	if (!CHECK_INT("offset", 0,
		       offset_of((const void *)xp_uprobe_target, &off, path, sizeof(path))))
		return check_done();
	sp[0] = (struct uprobe_spec){off, false};
	sp[1] = (struct uprobe_spec){off, true};
	CHECK_INT("bad_count", -EINVAL, uprobe_set__open(&u, path, sp, 0, 8));
	CHECK_INT("bad_pages", -EINVAL, uprobe_set__open(&u, path, sp, 2, 3));
	rc = uprobe_set__open(&u, path, sp, 2, 64);
	if (rc == -EACCES || rc == -EPERM || rc == -ENOENT)
		return check_skip("uprobes are refused (not root) or absent here");
	if (!CHECK_INT("open", 0, rc))
		return check_done();
	CHECK_INT("enable", 0, uprobe_set__enable(u));
	s.child = child_start(&go);
	CHECK("child", s.child > 0);
	CHECK("go", write(go, "g", 1) == 1);
	waitpid(s.child, NULL, 0);
	uprobe_set__drain(u, on_hit, &s);
	CHECK_INT("entries", NCALLS, s.entries);
	CHECK_INT("returns", NCALLS, s.returns);
	CHECK_INT("first_argument_in_rdi", 0, s.bad_arg);
	CHECK_INT("return_value_in_rax", 0, s.bad_ret);
	CHECK_INT("entries_in_time_order", 0, s.backwards);
	CHECK_INT("lost", 0, uprobe_set__lost(u));
	CHECK_INT("bad_records", 0, uprobe_set__bad(u));
	close(go);
	uprobe_set__free(u);
	return check_done();
}
