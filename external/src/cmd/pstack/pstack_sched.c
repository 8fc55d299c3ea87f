/* pstack's scheduler snapshot: a sampler on every scheduler thread for at most SNAP_WINDOW_MS,
 * keeping the first sample of each, until every runnable thread gave one, or (more runnable
 * threads than CPUs: they wait their turn) as many as the CPUs did, after SNAP_SHORT_MS; a
 * scheduler that gave none (asleep, or waiting for a CPU) is
 * described by its thread state in /proc and the current_process of its ErtsSchedulerData, whose
 * stack is then read from stop to hend (exact on a dirty scheduler, whose process's Erlang stack
 * is frozen while the dirty code runs: otp-internals.md §2 "Dirty schedulers"). See pstack.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pstack.h"
#include "run.h"
#include "sampler.h"

#define SNAP_FREQ_HZ   1000
#define SNAP_WINDOW_MS 40.0
#define SNAP_SHORT_MS  10.0
#define SNAP_POLL_MS   2

static const char *const type_names[] = {"normal", "dirty_cpu", "dirty_io"};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The state letter of /proc/PID/task/TID/stat (after the last ')' of the comm). */
static char thread_state(pid_t pid, pid_t tid)
{
	char path[64], buf[512];
	const char *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (proc__read_file(path, buf, sizeof(buf)))
		return '?';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] ? p[2] : '?';
}

/* "<0.85.0> name" as the sampler names a group: split into pid and the rest. */
static void split_group(struct pstack_sched *ps, const char *group)
{
	const char *sp = strchr(group, ' ');
	size_t n = sp ? (size_t)(sp - group) : strlen(group);

	snprintf(ps->pid, sizeof(ps->pid), "%.*s", (int)n, group);
	snprintf(ps->name, sizeof(ps->name), "%s", sp ? sp + 1 : "");
}

struct snap {
	struct pstack_ctx *c;
	size_t sampled;
};

static void on_record(const struct sample_record *r, void *ctx)
{
	struct snap *sn = ctx;
	struct pstack_ctx *c = sn->c;
	struct pstack_sched *ps;
	uint32_t i;

	if (!r->sched || r->sched < c->t->sched || r->sched >= c->t->sched + c->t->nsched)
		return;
	ps = &c->scheds[r->sched - c->t->sched];
	if (ps->sampled)
		return;
	ps->sampled = true;
	sn->sampled++;
	ps->stack = "sampled";
	ps->frames.n = 0;
	/* The record is root first; pstack prints innermost first. */
	for (i = r->nframes; i-- > 0 && ps->frames.n < PSTACK_MAX_FRAMES;) {
		ps->frames.id[ps->frames.n] = r->frames[i];
		ps->frames.addr[ps->frames.n++] = 0;
	}
	if (r->kind == SAMPLE_ERLANG) {
		ps->process = r->process;
		split_group(ps, agg__group_name(c->agg, r->group));
	}
}

/* Sampled enough? Every runnable thread; or, with more runnable threads than CPUs (138
 * schedulers on 2 cores: 100 runnable threads take turns for 100 ms and more), as many as the
 * CPUs after SNAP_SHORT_MS, or any number after twice that; or SNAP_WINDOW_MS passed (a loaded
 * machine's runnable threads wait for a CPU). The others' scheduler data says what they run (each
 * labelled "[not sampled:
 * ...]"). */
static bool window_done(size_t sampled, size_t runnable, double ms)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (sampled >= runnable || ms >= SNAP_WINDOW_MS)
		return true;
	if (cpus <= 0 || runnable <= (size_t)cpus)
		return false;
	return ms >= 2 * SNAP_SHORT_MS || (sampled >= (size_t)cpus && ms >= SNAP_SHORT_MS);
}

/* Sample until window_done, or the VM exits. */
static int sample_window(struct pstack_ctx *c, size_t runnable, char *err, size_t errlen)
{
	struct snap sn = {.c = c};
	struct sampler_opts so = {.freq_hz = SNAP_FREQ_HZ,
				  .event = PERF_EV_CPU_CLOCK,
				  .include_idle = true,
				  .only_erlang = c->o->only_erlang,
				  .group = GROUP_PID, /* split_group reads "<pid> name" */
				  .erlang_names = c->o->erlang_names,
				  .snapshot = true,
				  .on_record = on_record,
				  .record_ctx = &sn};
	struct sampler *s;
	double start;
	int rc;

	rc = sampler__new(c->t, &so, c->agg, &s, err, errlen);
	if (rc)
		return rc;
	start = now_ms();
	do {
		rc = sampler__poll(s, SNAP_POLL_MS);
		if (rc == -ESRCH) {
			snprintf(err, errlen, "the VM exited during the snapshot");
			rc = TARGET_EGONE;
			break;
		}
	} while (rc == 0 && !*c->stop && !window_done(sn.sampled, runnable, now_ms() - start));
	sampler__free(s);
	return rc;
}

/* Every unsampled scheduler's current_process, in a few reads (mem__read_many) whatever their
 * number; ps->process stays 0 when unknown or unreadable, and ps->stack says which. */
static int read_current(struct pstack_ctx *c)
{
	const struct target_value *o = &c->t->off[XP_OFF_ESD_CURRENT_PROCESS];
	struct mem_req *q = calloc(c->nscheds ? c->nscheds : 1, sizeof(*q));
	size_t i, n = 0;

	if (!q)
		return -ENOMEM;
	for (i = 0; i < c->nscheds; i++) {
		struct pstack_sched *ps = &c->scheds[i];
		const struct target_sched *sch = ps->sched;

		if (ps->sampled)
			continue;
		ps->stack = "none";
		if (!sch->esdp || !sch->esdp_checked || !o->present) {
			ps->stack = "scheduler data unknown";
			continue;
		}
		q[n++] = (struct mem_req){.addr = sch->esdp + (uint64_t)o->value,
					  .buf = &ps->process,
					  .len = sizeof(ps->process)};
	}
	mem__read_many(c->t->mem, q, n);
	for (i = 0; i < n; i++) {
		if (q[i].rc)
			*(uint64_t *)q[i].buf = 0;
	}
	free(q);
	return 0;
}

/* No sample: what its ErtsSchedulerData says runs there (read_current), with that process's
 * stack. */
static void from_sched_data(struct pstack_ctx *c, struct pstack_sched *ps)
{
	struct process_snap s;
	enum estack_end end;

	if (!ps->process)
		return;
	if (process__read_snap(&c->pr, ps->process, &s)) {
		ps->stack = "process unreadable";
		return;
	}
	process__pid_text(&c->pr.pids, s.v.pid, ps->pid, sizeof(ps->pid));
	process__read_identity(&c->pr, &s.v);
	snprintf(ps->name, sizeof(ps->name), "%s", process__label(&s.v));
	end = pstack__process_stack(c, &s, &ps->frames);
	ps->stack = erlang_stack__end_name(end);
}

int pstack__schedulers(struct pstack_ctx *c, char *err, size_t errlen)
{
	size_t i, runnable = 0;
	double start = now_ms();
	int rc;

	c->nscheds = c->t->nsched;
	c->scheds = calloc(c->nscheds ? c->nscheds : 1, sizeof(*c->scheds));
	if (!c->scheds)
		return -ENOMEM;
	/* As record does: 100 runnable scheduler threads on 2 cores would otherwise delay each
	 * step of the snapshot, its /proc reads first, by their time slices. */
	if (!c->o->keep_priority)
		run__raise_priority(c->t->pid);
	for (i = 0; i < c->nscheds; i++) {
		c->scheds[i].sched = &c->t->sched[i];
		c->scheds[i].thread_state = thread_state(c->t->pid, c->t->sched[i].tid);
		runnable += c->scheds[i].thread_state == 'R';
	}
	if (c->nscheds && (rc = sample_window(c, runnable, err, errlen)))
		return rc;
	if ((rc = read_current(c)))
		return rc;
	for (i = 0; i < c->nscheds; i++) {
		struct pstack_sched *ps = &c->scheds[i];

		if (ps->sampled)
			continue;
		ps->thread_state = thread_state(c->t->pid, ps->sched->tid);
		from_sched_data(c, ps);
	}
	c->sched_ms = now_ms() - start;
	return 0;
}

static const char *state_of(const struct pstack_sched *ps)
{
	if (ps->process)
		return "running";
	if (ps->sampled)
		return "scheduling";
	return ps->thread_state == 'R' ? "busy" : "idle";
}

static const char *source_of(const struct pstack_sched *ps)
{
	return ps->sampled ? "sample" : "scheduler_data";
}

void pstack__print_schedulers(const struct pstack_ctx *c, FILE *f)
{
	size_t i;

	fprintf(f, "%zu schedulers, snapshot in %.0f ms\n", c->nscheds, c->sched_ms);
	for (i = 0; i < c->nscheds; i++) {
		const struct pstack_sched *ps = &c->scheds[i];

		/* Schedulers with a stack stand apart; idle ones list compactly. */
		fprintf(f, "%s%s scheduler %u (tid %d, thread %c): %s",
			ps->frames.n || i == 0 ? "\n" : "", type_names[ps->sched->type],
			ps->sched->number, (int)ps->sched->tid, ps->thread_state, state_of(ps));
		if (ps->process)
			fprintf(f, " %s%s%s", ps->pid, ps->name[0] ? " " : "", ps->name);
		if (ps->process && !ps->sampled)
			fprintf(f, "  [not sampled: stack from its scheduler data, %s]", ps->stack);
		fputc('\n', f);
		pstack__print_frames(c, &ps->frames, f);
	}
}

void pstack__json_schedulers(const struct pstack_ctx *c, struct json *j)
{
	char st[2];
	size_t i;

	json__kv_int(j, "snapshot_ms", (int64_t)(c->sched_ms + 0.5));
	json__key(j, "schedulers");
	json__array(j);
	for (i = 0; i < c->nscheds; i++) {
		const struct pstack_sched *ps = &c->scheds[i];

		st[0] = ps->thread_state;
		st[1] = '\0';
		json__object(j);
		json__kv_string(j, "type", type_names[ps->sched->type]);
		json__kv_int(j, "number", ps->sched->number);
		json__kv_int(j, "tid", ps->sched->tid);
		json__kv_string(j, "thread_state", st);
		json__kv_string(j, "state", state_of(ps));
		json__kv_string(j, "source", source_of(ps));
		json__key(j, "process");
		if (ps->process) {
			json__object(j);
			json__kv_string(j, "pid", ps->pid);
			json__kv_string(j, "name", ps->name[0] ? ps->name : NULL);
			json__kv_addr(j, "address", ps->process);
			json__end_object(j);
		} else {
			json__null(j);
		}
		json__kv_string(j, "stack", ps->stack);
		pstack__json_frames(c, &ps->frames, j);
		json__end_object(j);
	}
	json__end_array(j);
}
