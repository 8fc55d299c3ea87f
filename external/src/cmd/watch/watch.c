/* `extrospect watch PID --erlang-pid P | --name NAME`: a wall-clock profile of one Erlang process
 * from a spy's snapshots. Finds P's Process struct through the process table, leases a spy and
 * points it at the struct (spies.c), opens a context-switch perf event on the spy's tid whose
 * user-stack copy is the struct, and turns each snapshot into P's state and, when not running,
 * the function and line it resumes at. The time between two snapshots is split between them. Ends
 * on -d, Ctrl-C, P exiting, the VM exiting or the lease lost; always parks the spy it leased when
 * the VM is still there. Does not own: finding P (watch_find.c), the stacks under resume points
 * (watch_stack.c), on-CPU functions (watch_cpu.c), --method poll (watch_poll.c), the report
 * (watch_report.c), the lease (spies.c), decoding a Process (process.c), the perf ring (perf.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "jitmap.h"
#include "names.h"
#include "json.h"
#include "perf.h"
#include "process.h"
#include "ptab.h"
#include "spies.h"
#include "watch.h"
#include "watch_cpu.h"
#include "watch_find.h"
#include "watch_hist.h"
#include "watch_int.h"
#include "watch_poll.h"
#include "watch_report.h"
#include "watch_stack.h"

#define WATCH_POLL_MS	    50
#define WATCH_RENEW_NS	    (XP_SPY_LEASE_NS / 5)
#define WATCH_GAP_CAP	    10	  /* a snapshot holds for at most this many intervals */
#define WATCH_WAKE_NS	    30000 /* a punctual spy's wake-up, beyond its interval */
#define WATCH_JIT_RETRY	    1000000000ull
#define WATCH_PAGES	    128
#define WATCH_STACK_MIN	    256
#define WATCH_EXIT_SNAPS    3	       /* snapshots without P's pid before it counts as exited */
#define WATCH_STACK_TRIES   20	       /* reads of the stack under one resume point */
#define WATCH_STACK_SPACING 3000000ull /* ns between two: snapshots come in batches */
#define WATCH_STACK_LEN	    1024

const char watch__usage[] =
    "Usage: extrospect watch [OPTIONS] (--erlang-pid P | --name NAME) PID\n"
    "\n"
    "Where one Erlang process spends its wall time, on and off CPU: running, runnable (waiting\n"
    "for a scheduler), waiting (in a receive: the function and line it resumes at, and the\n"
    "stack under it), gc, suspended, exiting. The extrospect agent's spy threads take the\n"
    "snapshots: watch leases a parked spy and points its stack pointer at P's Process struct\n"
    "(the one write extrospect makes into the VM, into a slot the agent published), and the\n"
    "kernel copies the struct at each of the spy's loops. P is never stopped, signalled or\n"
    "traced. The spy is parked again at the end; if watch is killed, the agent parks it after\n"
    "about a second.\n"
    "\n"
    "  --erlang-pid '<0.123.0>'  the process to watch\n"
    "  --name NAME           or a registered process (MyApp.Repo or Elixir.MyApp.Repo);\n"
    "                        with none registered so, the one process top and pstack name\n"
    "                        NAME (its initial call, my_server:init/1); several: listed\n"
    "                        with their pids, exit 2\n"
    "  --erlang-names        print Elixir modules as Erlang does, not in Elixir form\n"
    "  --rate INTERVAL       time between snapshots, 100us to 1s: 1ms (default), 250us, 0.01s;\n"
    "                        or a number of snapshots per second. On a busy machine fewer are\n"
    "                        taken (the summary says how many; the spy policy:\n"
    "                        docs/accuracy-and-cost.md)\n"
    "  -d, --duration SECS   stop after SECS seconds, or a duration: 500ms, 30s, 5m (default:\n"
    "                        until Ctrl-C or P exits)\n"
    "  --json                print one JSON object (keys in docs/guide.md)\n"
    "  -o, --output FILE     also write the time as a flame graph whose roots are the states\n"
    "  --format svg|speedscope|collapsed  default: from FILE's extension, as record\n"
    "  --cpu-hz HZ           scheduler samples a second that split P's running time by function\n"
    "                        (default 997, as record; 0: none, running stays one (on CPU) row).\n"
    "                        They cost the VM as record's do: 4-7 % more scheduler CPU per unit\n"
    "                        of work at 997 Hz in bench/watch_cost; the spy costs ~2 % of a core\n"
    "  --method spy|poll     spy (default), or poll: the sampler reads P's struct itself every\n"
    "                        interval with process_vm_readv (no agent needed; a comparison,\n"
    "                        bench/watch_methods: reads are late whenever the sampler is)\n"
    "\n"
    "Needs the agent with spies (the extrospect application starts {spies, 2}; see\n"
    "extrospect:start_spies/1), and perf_event_open on the spy thread (root, or CAP_PERFMON with\n"
    "kernel.perf_event_paranoid <= 1). Exit 6, with the reason, when there is no agent or no\n"
    "free spy.\n"
    "\n"
    "Examples:\n"
    "  extrospect watch --name my_server -d 10 4242\n"
    "  extrospect watch --erlang-pid '<0.811.0>' --rate 250us -d 5 4242\n"
    "  extrospect watch --name my_server -d 10 --json 4242 | jq .states\n"
    "  extrospect watch --name my_server -d 30 -o server.svg 4242\n"
    "  extrospect watch --name my_server --cpu-hz 0 -d 60 4242   # the spy alone, cheapest\n";

/* The order of erts_process_state2status (process.c); FREE: the struct is being released. */
int watch__classify(uint32_t state, enum watch_state *out)
{
	if (state & XP_PSFLG_FREE)
		return -ESRCH;
	if (state & XP_PSFLG_EXITING)
		*out = WS_EXITING;
	else if (state & XP_PSFLG_GC)
		*out = WS_GC;
	else if (state & XP_PSFLG_SUSPENDED)
		*out = WS_SUSPENDED;
	else if (process__is_running(state))
		*out = WS_RUNNING;
	else if (state & (XP_PSFLG_ACTIVE | XP_PSFLG_ACTIVE_SYS | XP_PSFLG_DIRTY_ACTIVE_SYS))
		*out = WS_RUNNABLE;
	else
		*out = WS_WAITING;
	return 0;
}

/* "mod:fun/2 (mod.erl:12)" for the resume address, reloading the JIT map (at most once a
 * second) when it does not know the address yet. */
static void resume_fn(struct watch *w, uint64_t i, char *buf, size_t len)
{
	const struct jit_range *r = w->t->jit ? jitmap__lookup(w->t->jit, i) : NULL;
	const char *file;
	uint32_t line;
	char name[WATCH_FN_LEN - 64];

	if (!r && w->t->addr[XP_ADDR_JIT_DESCRIPTOR].present && watch__now_ns() > w->jit_retry_ns) {
		w->jit_retry_ns = watch__now_ns() + WATCH_JIT_RETRY;
		if (w->cpu) /* the sampler holds pointers into the map: it refreshes it */
			watch_cpu__refresh_code(w->cpu);
		else
			target__refresh_jit(w->t);
		r = w->t->jit ? jitmap__lookup(w->t->jit, i) : NULL;
	}
	if (!r) {
		snprintf(buf, len, "[unknown code 0x%" PRIx64 "]", i);
		return;
	}
	if (jitmap__frame_name(r, name, sizeof(name)))
		names__display_inplace(name, sizeof(name), w->o->erlang_names);
	if (jitmap__line(w->t->jit, r, i, &file, &line))
		snprintf(buf, len, "%s (%s:%" PRIu32 ")", name, file, line);
	else
		snprintf(buf, len, "%s", name);
}

static int row_of(struct watch *w, enum watch_state st, const char *fn)
{
	size_t i;

	for (i = 0; i < w->nrows; i++) {
		if (w->rows[i].state == st && strcmp(w->rows[i].fn, fn) == 0)
			return (int)i;
	}
	if (w->nrows == WATCH_MAX_ROWS)
		return -1;
	w->rows[w->nrows].state = st;
	snprintf(w->rows[w->nrows].fn, WATCH_FN_LEN, "%s", fn);
	return (int)w->nrows++;
}

/* Does a late spy's lateness go to the running side of this change (see credit())? */
static bool lateness_runs(enum watch_state a, enum watch_state b)
{
	return (a == WS_RUNNING) != (b == WS_RUNNING) && a != WS_RUNNABLE && b != WS_RUNNABLE;
}

/* Split the time since the previous snapshot (the spy blocked then for one interval) between
 * it and the new one (row). The part a punctual spy would have waited is split evenly: where in
 * it the state changed is unknown. The spy's lateness beyond that goes to the running side when
 * one of the two is running and the other idle (waiting, gc, suspended, exiting): a spy is late
 * because the cores are busy, and P running is what keeps them so. P starting made the spy late
 * (that time ran); P stopping freed a core, so the late spy ran at once (the time before ran
 * too). Even splits of late gaps made running short by 2-6 points on a loaded machine
 * (bench/watch_methods). Next to runnable the lateness is split evenly too: runnable means
 * another process holds P's scheduler, as busy as P running, so the lateness says nothing of
 * where the change fell; giving it to the running side made runnable 1-5 points short and the
 * runnable episodes' median 8-17 % short (bench/watch_methods, two runs). A gap counts at most
 * WATCH_GAP_CAP intervals. Returns where the split put the change: the end of the previous
 * snapshot's part (t for the first snapshot). */
static uint64_t credit(struct watch *w, uint64_t t, int row, enum watch_state st)
{
	uint64_t dt, cap = WATCH_GAP_CAP * w->interval_ns, planned, late = 0;
	int late_row = -1;

	if (w->prev_row < 0 || t <= w->prev_ns)
		return t;
	dt = t - w->prev_ns;
	if (dt > cap)
		dt = cap;
	planned = w->interval_ns + WATCH_WAKE_NS;
	if (dt > planned && lateness_runs(st, w->prev_state)) {
		late = dt - planned;
		late_row = st == WS_RUNNING ? row : w->prev_row;
		dt = planned;
	}
	w->rows[w->prev_row].ns += dt / 2;
	if (row >= 0)
		w->rows[row].ns += dt - dt / 2;
	if (late_row >= 0)
		w->rows[late_row].ns += late;
	return w->prev_ns + dt / 2 + (late_row >= 0 && late_row == w->prev_row ? late : 0);
}

/* Runnable episodes (queued for a scheduler): each starts and ends where credit() put the
 * changes around its edges, so the histogram holds the same time as the runnable share. An
 * edge is known to about one interval, and an episode shorter than the gap between two
 * snapshots may go unseen. */
static void runq_track(struct watch *w, enum watch_state st, uint64_t edge)
{
	if (st == WS_RUNNABLE && !w->runq_start) {
		w->runq_start = edge;
		return;
	}
	if (st == WS_RUNNABLE || !w->runq_start)
		return;
	watch_hist__add(w->runq_fine, edge > w->runq_start ? (edge - w->runq_start) / 1000 : 0);
	w->runq_start = 0;
}

/* Read the stack under a resume point once: P must still be there when it is read, a few
 * milliseconds after the snapshot (they arrive in batches), so tries are spaced in time. */
static void stack_under(struct watch *w, struct watch_row *r, uint64_t i)
{
	char buf[WATCH_STACK_LEN];
	uint64_t now;

	if (r->stack || !w->stacks || r->stack_tries >= WATCH_STACK_TRIES)
		return;
	now = watch__now_ns();
	if (now - r->stack_tried_ns < WATCH_STACK_SPACING)
		return;
	r->stack_tried_ns = now;
	r->stack_tries++;
	if (watch_stack__read(w->stacks, w->proc, i, buf, sizeof(buf)) == 0)
		r->stack = strdup(buf);
}

static void take(struct watch *w, const struct process_snap *s, uint64_t time)
{
	char fn[WATCH_FN_LEN];
	enum watch_state st;
	int row;

	if (watch__classify(s->state, &st)) {
		w->end = WATCH_END_PROCESS_EXITED;
		w->done = true;
		return;
	}
	if (st == WS_RUNNING)
		snprintf(fn, sizeof(fn), "(on CPU)");
	else if (s->have_i)
		resume_fn(w, s->i, fn, sizeof(fn));
	else
		snprintf(fn, sizeof(fn), "(resume point unknown)");
	row = row_of(w, st, fn);
	if (row >= 0 && st != WS_RUNNING && s->have_i)
		stack_under(w, &w->rows[row], s->i);
	runq_track(w, st, credit(w, time, row, st));
	if (row >= 0)
		w->rows[row].n++;
	if (w->timeline)
		fprintf(w->timeline, "s %" PRIu64 " %s\n", time, watch__state_name(st));
	w->prev_row = row;
	w->prev_state = st;
	w->prev_ns = time;
	if (!w->first_ns)
		w->first_ns = time;
	w->last_ns = time;
	w->c.taken++;
}

/* A word of the copy at one of the target's resolved offsets; false when outside the copy. */
static bool copy_word(const struct watch *w, const struct perf_sample *ps, enum xp_off_id id,
		      size_t width, void *out)
{
	const struct target_value *o = &w->t->off[id];

	if (!o->present || o->value < 0 || (uint64_t)o->value + width > ps->stack_size)
		return false;
	memcpy(out, ps->stack + o->value, width);
	return true;
}

/* One copy of P's struct: P's pid first (else the struct was freed and maybe reused), its state
 * (FREE: being released), then the whole snapshot; an exiting process whose heap fields are
 * already torn down still counts as exiting. */
static void snapshot(struct watch *w, const struct perf_sample *ps)
{
	struct process_snap s;
	uint64_t pid = 0;
	uint32_t state = 0;

	if (!copy_word(w, ps, XP_OFF_P_ID, 8, &pid) ||
	    !copy_word(w, ps, XP_OFF_P_STATE, 4, &state)) {
		w->c.unreadable++;
		return;
	}
	if (pid != w->pid_term) {
		w->c.not_process++;
		if (++w->foreign_in_a_row >= WATCH_EXIT_SNAPS) {
			w->end = WATCH_END_PROCESS_EXITED;
			w->done = true;
		}
		return;
	}
	w->foreign_in_a_row = 0;
	if (state & XP_PSFLG_FREE) {
		w->end = WATCH_END_PROCESS_EXITED;
		w->done = true;
		return;
	}
	if (process__parse_snap(&w->pr, w->proc, ps->stack, ps->stack_size, &s) == 0) {
		take(w, &s, ps->time);
		return;
	}
	/* P's pid is there but its heap fields disagree: a garbage collection moving the heap
	 * (or a delayed one on a fragment), an exit tearing it down. The state word still says
	 * what P is doing; the resume address is kept when it is in the copy. */
	memset(&s, 0, sizeof(s));
	s.state = state;
	s.have_state = true;
	s.have_i = copy_word(w, ps, XP_OFF_P_I, 8, &s.i);
	w->c.heap_in_flux++;
	take(w, &s, ps->time);
}

void watch__on_sample(const struct perf_sample *ps, void *ctx)
{
	struct watch *w = ctx;

	if (w->done)
		return;
	if ((pid_t)ps->tid != w->lease.host_tid) {
		w->c.other++;
		return;
	}
	/* Preempted outside its wait, or not yet retargeted: the copy is of its own stack. */
	if (!ps->regs_valid || ps->regs[PERF_R_SP] != w->proc || !ps->stack) {
		w->c.off_target++;
		return;
	}
	snapshot(w, ps);
}

static int lease_spy(struct watch *w, char *err, size_t errlen)
{
	enum spies_status st = spy_lease__acquire(w->t, w->proc, w->interval_ns, &w->lease);

	if (st == SPIES_OK)
		return 0;
	if (st == SPIES_NO_AGENT || st == SPIES_NONE || st == SPIES_BUSY)
		snprintf(err, errlen,
			 "watch needs a spy thread of the extrospect agent: %s (load the "
			 "extrospect application; extrospect:start_spies(2) starts spies)",
			 spies__status_str(st));
	else
		snprintf(err, errlen, "cannot lease a spy: %s", spies__status_str(st));
	return TARGET_EUNSUPPORTED;
}

static int open_events(struct watch *w, char *err, size_t errlen)
{
	size_t bytes = (process__snap_len(&w->pr) + 7) & ~(size_t)7;
	struct perf_opts po = {
	    .event = PERF_EV_CTX_SWITCH,
	    .stack_bytes = (uint32_t)(bytes < WATCH_STACK_MIN ? WATCH_STACK_MIN : bytes),
	    .mmap_pages = WATCH_PAGES,
	    .wakeup_events = 16,
	};
	pid_t tid = w->lease.host_tid;
	int rc = perf_session__open(&w->ps, &tid, 1, &po);

	if (rc == -EACCES || rc == -EPERM) {
		snprintf(err, errlen,
			 "perf_event_open on the spy thread refused (%s): run as root, or with "
			 "CAP_PERFMON and kernel.perf_event_paranoid <= 1",
			 strerror(-rc));
		return TARGET_EPERM;
	}
	if (rc)
		snprintf(err, errlen, "perf_event_open on spy tid %d: %s", (int)tid, strerror(-rc));
	return rc;
}

/* A thread that exists and is not a zombie (a killed VM stays one until its parent reaps it). */
static bool task_alive(pid_t pid, pid_t tid)
{
	char path[64], buf[512];
	const char *paren;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

/* The spy thread is gone: stopped by the agent (the region, read again, is consistent without
 * it, or the block was retired by an unload while the VM lives on), or the whole VM is dying
 * (its threads go first, the leader last). Watched for up to half a second. */
static enum watch_end why_spy_gone(struct watch *w)
{
	struct spies_view *v = malloc(sizeof(*v));
	enum watch_end end = WATCH_END_LEASE_LOST;
	int i;

	for (i = 0; i < 10 && v; i++) {
		enum spies_status st;

		if (!task_alive(w->t->pid, w->t->pid)) {
			end = WATCH_END_VM_EXITED;
			break;
		}
		st = spies__read(w->t, v);
		if (st == SPIES_OK || st == SPIES_NONE)
			break;
		usleep(50000);
	}
	free(v);
	return end;
}

/* Poll until an end; renew the lease on the way. */
static void run(struct watch *w, volatile sig_atomic_t *stop)
{
	uint64_t end_ns = w->o->duration_s > 0 ? w->start_ns + (uint64_t)(w->o->duration_s * 1e9)
					       : UINT64_MAX,
		 renew_ns = w->start_ns + WATCH_RENEW_NS;

	while (!w->done) {
		int rc = perf_session__poll(w->ps, w->cpu ? 0 : WATCH_POLL_MS, watch__on_sample, w);
		uint64_t now;

		watch_cpu__poll(w->cpu, WATCH_POLL_MS); /* the VM's exit is the spy's to notice */
		now = watch__now_ns();

		if (w->done)
			break;
		if (*stop) {
			w->end = WATCH_END_INTERRUPTED;
			break;
		}
		if (now >= end_ns) {
			w->end = WATCH_END_DURATION;
			break;
		}
		if (rc < 0 || perf_session__nthreads(w->ps) == 0 ||
		    !task_alive(w->t->pid, w->lease.host_tid)) {
			w->end = why_spy_gone(w);
			break;
		}
		if (now >= renew_ns) {
			if (spy_lease__renew(w->t, &w->lease) != SPIES_OK) {
				w->end = WATCH_END_LEASE_LOST;
				break;
			}
			renew_ns = now + WATCH_RENEW_NS;
		}
	}
	/* Drain what the kernel copied before the end. */
	if (w->end != WATCH_END_PROCESS_EXITED)
		perf_session__poll(w->ps, 0, watch__on_sample, w);
}

/* The scheduler sampler for on-CPU functions; without it (no perf on the schedulers, no JIT
 * map, or --cpu-hz 0: the spy alone), running time stays one "(on CPU)" row. */
static void start_cpu(struct watch *w)
{
	char e[256] = "";

	if (w->o->watch_poll || !w->t->jit || w->o->watch_cpu_off)
		return;
	if (watch_cpu__new(&w->cpu, w->t, w->pid_text, w->o->watch_cpu_hz, e, sizeof(e)))
		fprintf(stderr, "extrospect: watch: running time not split by function: %s\n",
			e[0] ? e : "the scheduler sampler did not start");
	watch_cpu__set_timeline(w->cpu, w->timeline);
}

/* XP_WATCH_TIMELINE=FILE, for bench/watch_methods' delays: one line per snapshot taken ("s
 * TIME_NS STATE") and per scheduler sample of P ("c TIME_NS FUNCTION"), CLOCK_MONOTONIC. */
static void open_timeline(struct watch *w)
{
	const char *path = getenv("XP_WATCH_TIMELINE");

	if (path && path[0] && !(w->timeline = fopen(path, "we")))
		fprintf(stderr, "extrospect: watch: XP_WATCH_TIMELINE %s: %s\n", path,
			strerror(errno));
}

int cmd__watch(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	       size_t errlen)
{
	struct watch *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	w->o = o;
	w->t = t;
	w->prev_row = -1;
	w->interval_ns = o->interval_ns ? o->interval_ns : 1000000;
	if (!o->watch_poll && !target__has_agent(t)) {
		snprintf(err, errlen,
			 "watch needs the extrospect agent in the VM (%s): load the extrospect "
			 "application, or `extrospect inject`",
			 agent__status_str(t->agent ? t->agent->status : AGENT_ABSENT));
		rc = TARGET_EUNSUPPORTED;
		goto cleanup;
	}
	if ((rc = watch__find_process(w, err, errlen)))
		goto cleanup;
	open_timeline(w);
	if (t->jit)
		watch_stack__new(&w->stacks, t, &w->pr); /* without: no stacks, still the states */
	if (o->watch_poll) {
		w->start_ns = watch__now_ns();
		watch__run_poll(w, stop, watch__on_sample);
		watch__report(w);
		rc = w->end == WATCH_END_VM_EXITED ? TARGET_EGONE : 0;
		goto cleanup;
	}
	if ((rc = lease_spy(w, err, errlen)))
		goto cleanup;
	if ((rc = open_events(w, err, errlen)))
		goto release;
	start_cpu(w);
	w->start_ns = watch__now_ns();
	run(w, stop);
	watch__report(w);
	rc = w->end == WATCH_END_VM_EXITED ? TARGET_EGONE : 0;
release:
	if (w->end != WATCH_END_VM_EXITED)
		spy_lease__release(t, &w->lease);
cleanup:
	perf_session__free(w->ps);
	watch_cpu__free(w->cpu);
	watch_stack__free(w->stacks);
	for (size_t i = 0; i < w->nrows; i++)
		free(w->rows[i].stack);
	if (w->timeline)
		fclose(w->timeline);
	free(w);
	return rc;
}
