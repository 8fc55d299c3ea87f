/* events --source uprobes (events_uprobes.h). The functions, from beam.smp's .dynsym (OTP 25 and
 * 27; the newest's beam.smp is stripped: refused): erl_create_process (its return: the child's
 * pid; its entry: the parent), erts_do_exit_process (the process, its reason), erts_send_message
 * (sender, receiver), erts_garbage_collect and erts_garbage_collect_nobump (entry to return: a
 * collection's pause, minor or major not told). Each hit becomes the record the agent's tracer
 * writes, so the figures are made the same way. A Process's pid is read through the layout's
 * offset when the hit is drained (within ~10 ms): unreadable (an exited process's freed), the
 * hit is counted VM-wide, in no process's row. No
 * schedule-in or -out: run-queue waits and message waits are not measured. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atom.h"
#include "commands.h"
#include "mem.h"
#include "process.h"
#include "readers.h"
#include "uprobe.h"
#include "events_uprobes.h"

#define DRAIN_NS     10000000ull
#define WATERMARK_NS 5000000ull
#define PEND_SLOTS   4096
#define RING_PAGES   256 /* 1 MiB a CPU */

enum { P_SPAWN, P_SPAWN_RET, P_EXIT, P_SEND, P_GC, P_GC_RET, P_GCNB, P_GCNB_RET, P_COUNT };

static const struct {
	const char *sym;
	bool ret;
} probes[P_COUNT] = {
    {"erl_create_process", false},	    {"erl_create_process", true},
    {"erts_do_exit_process", false},	    {"erts_send_message", false},
    {"erts_garbage_collect", false},	    {"erts_garbage_collect", true},
    {"erts_garbage_collect_nobump", false}, {"erts_garbage_collect_nobump", true},
};

/* An entry waiting for its return on the same thread. */
struct pend {
	pid_t tid;
	uint8_t gc; /* 1: a collection's, 0: a spawn's */
	uint64_t proc, ts;
};

struct upctx {
	struct target *t;
	struct evstats *s;
	struct process_reader pr;
	uint32_t pid_off;
	struct pend pend[PEND_SLOTS];
	uint64_t unreadable;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool is_pid(uint64_t term)
{
	return (term & 0xf) == 0x3;
}

/* The pid term of the Process at addr, 0 when unreadable or not a pid. */
static uint64_t pid_of(struct upctx *c, uint64_t proc)
{
	uint64_t v = 0;

	if (!proc || mem__read(c->t->mem, proc + c->pid_off, &v, sizeof(v)) || !is_pid(v)) {
		c->unreadable++;
		return 0;
	}
	return v;
}

/* The exit reason's class as the tracer tells it: an atom, or {shutdown, _}. */
static uint16_t exit_class(struct upctx *c, uint64_t reason)
{
	char name[32] = "";
	uint64_t w[2];

	if ((reason & 0x3) == 0x2 && !mem__read(c->t->mem, reason - 2, w, sizeof(w)) &&
	    (w[0] & 0x3f) == 0 && (w[0] >> 6) >= 1)
		reason = w[1]; /* a tuple: its first element */
	else if ((reason & 0x3f) != 0x0b)
		return XP_EXIT_ERROR;
	if (!c->pr.have_atoms || atom__text(&c->pr.atoms, reason, name, sizeof(name)))
		return XP_EXIT_ERROR;
	if (!strcmp(name, "normal"))
		return XP_EXIT_NORMAL;
	if (!strcmp(name, "shutdown"))
		return XP_EXIT_SHUTDOWN;
	if (!strcmp(name, "killed"))
		return XP_EXIT_KILLED;
	if (!strcmp(name, "noproc") || !strcmp(name, "noconnection"))
		return XP_EXIT_NOPROC;
	return XP_EXIT_ERROR;
}

static struct pend *pend_at(struct upctx *c, pid_t tid, uint8_t gc)
{
	return &c->pend[((unsigned)tid * 2u + gc) % PEND_SLOTS];
}

static void hold(struct upctx *c, uint16_t kind, uint64_t ts, uint64_t pid, uint64_t extra,
		 uint16_t arg, unsigned cpu)
{
	struct xp_ev e = {.ts_ns = ts, .pid = pid, .extra = extra, .kind = kind, .arg = arg};

	/* pid 0 (unreadable): counted VM-wide, in no process's row. */
	evstats__hold(c->s, &e, cpu);
}

static void on_return(struct upctx *c, const struct uprobe_hit *h, uint8_t gc)
{
	struct pend *p = pend_at(c, h->tid, gc);
	uint64_t pid;

	if (p->tid != h->tid || !p->proc || h->time_ns < p->ts)
		return;
	pid = pid_of(c, p->proc);
	if (gc) {
		hold(c, XP_EV_GC_MINOR_START, p->ts, pid, 0, EV_GC_KIND_UNKNOWN, h->cpu);
		hold(c, XP_EV_GC_MINOR_END, h->time_ns, pid, 0, EV_GC_KIND_UNKNOWN, h->cpu);
	} else if (is_pid(h->ax)) {
		hold(c, XP_EV_SPAWN, h->time_ns, pid, h->ax, 0, h->cpu);
	}
	p->proc = 0;
}

static void on_hit(const struct uprobe_hit *h, void *ctx)
{
	struct upctx *c = ctx;
	struct pend *p;

	if (h->pid != c->t->pid)
		return;
	switch (h->probe) {
	case P_SPAWN:
	case P_GC:
	case P_GCNB:
		p = pend_at(c, h->tid, h->probe != P_SPAWN);
		*p = (struct pend){h->tid, h->probe != P_SPAWN, h->di, h->time_ns};
		break;
	case P_SPAWN_RET:
		on_return(c, h, 0);
		break;
	case P_GC_RET:
	case P_GCNB_RET:
		on_return(c, h, 1);
		break;
	case P_EXIT:
		hold(c, XP_EV_EXIT, h->time_ns, pid_of(c, h->di), 0, exit_class(c, h->si), h->cpu);
		break;
	case P_SEND:
		hold(c, XP_EV_SEND, h->time_ns, pid_of(c, h->di), pid_of(c, h->si), 0, h->cpu);
		break;
	}
}

/* Each probe's offset in beam.smp, from its .dynsym symbol as mapped. */
static int offsets(struct target *t, struct uprobe_spec *sp, char *err, size_t errlen)
{
	for (unsigned i = 0; i < P_COUNT; i++) {
		struct elf_sym sym;
		const struct proc_map *m;
		uint64_t at;

		if (!t->beam || elf_image__symbol(t->beam, probes[i].sym, &sym)) {
			snprintf(err, errlen,
				 "uprobes: %s is not in beam.smp's symbols (a stripped build, as "
				 "the newest OTP's): use the default source, the agent's tracer",
				 probes[i].sym);
			return TARGET_EUNSUPPORTED;
		}
		at = t->bias + sym.value;
		m = proc_maps__find(t->maps, at);
		if (!m || !(m->perms & PROC_PERM_X)) {
			snprintf(err, errlen, "uprobes: %s is not in beam.smp's mapped code",
				 probes[i].sym);
			return TARGET_EUNSUPPORTED;
		}
		sp[i] = (struct uprobe_spec){at - m->start + m->offset, probes[i].ret};
	}
	return 0;
}

static int record(struct uprobe_set *u, struct upctx *c, double secs, volatile sig_atomic_t *stop)
{
	uint64_t end, now;
	struct timespec nap = {0, (long)DRAIN_NS};
	int rc;

	/* Enabling installs the breakpoints (each a copy of a page of beam.smp's text in the VM,
	 * up to ~0.5 s for them all): the window starts once they are in. */
	if ((rc = uprobe_set__enable(u)))
		return rc;
	c->s->t0 = now_ns();
	end = c->s->t0 + (uint64_t)(secs * 1e9);
	while (!*stop && (now = now_ns()) < end) {
		uprobe_set__drain(u, on_hit, c);
		evstats__process(c->s, now - WATERMARK_NS);
		nanosleep(&nap, NULL);
	}
	c->s->t1 = now_ns();
	uprobe_set__drain(u, on_hit, c);
	evstats__process(c->s, UINT64_MAX);
	return 0;
}

/* The probes opened, or an error with err set. */
static int open_probes(struct upctx *c, struct uprobe_set **u, char *err, size_t errlen)
{
	struct uprobe_spec sp[P_COUNT];
	int rc;

	if (process__reader(&c->pr, c->t) || process__pid_offset(&c->pr, &c->pid_off)) {
		snprintf(err, errlen, "uprobes: the Process layout of this VM is unknown");
		return TARGET_EUNSUPPORTED;
	}
	if ((rc = offsets(c->t, sp, err, errlen)))
		return rc;
	rc = uprobe_set__open(u, c->t->exe_host, sp, P_COUNT, RING_PAGES);
	if (!rc)
		return 0;
	snprintf(err, errlen, "uprobes: %s",
		 rc == -EACCES || rc == -EPERM
		     ? "perf_event_open refused: system-wide uprobes need root or CAP_PERFMON"
		 : rc == -ENOENT ? "this kernel has no uprobe PMU"
				 : strerror(-rc));
	return rc == -EACCES || rc == -EPERM ? EVENTS_EREFUSED : TARGET_EUNSUPPORTED;
}

int events__uprobes(struct target *t, double secs, volatile sig_atomic_t *stop, struct evstats *s,
		    uint64_t *lost, char *err, size_t errlen)
{
	struct upctx *c = calloc(1, sizeof(*c)); /* 64 KiB of pending entries */
	struct uprobe_set *u = NULL;
	int rc;

	if (!c)
		return -ENOMEM;
	c->t = t;
	c->s = s;
	if ((rc = open_probes(c, &u, err, errlen)))
		goto out;
	fprintf(stderr, "events: recording for %.1f s with uprobes (Ctrl-C stops)\n", secs);
	rc = record(u, c, secs, stop);
	fprintf(stderr, "events: stopped recording\n");
	*lost = uprobe_set__lost(u);
	if (c->unreadable)
		fprintf(stderr,
			"events: %llu hits whose process could not be read when drained (an "
			"exited process, freed): counted VM-wide, not per process\n",
			(unsigned long long)c->unreadable);
out:
	uprobe_set__free(u);
	free(c);
	return rc;
}
