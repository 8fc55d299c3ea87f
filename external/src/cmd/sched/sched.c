/* extrospect sched PID: how sampled time spreads over schedulers and CPUs, and NIFs that hold a
 * normal scheduler too long. Per scheduler thread: the share of its samples in Erlang code,
 * emulator native code, NIFs, GC and idle (classify.c), its busiest processes and the CPUs it ran
 * on; NIFs by library and function; dirty-scheduler use; processes moving between schedulers;
 * NIF runs longer than 1 ms on normal schedulers, from consecutive samples. Owns: the command and
 * collecting its view from the samples. Does not own: printing the tables (sched_print.c),
 * sampling (run.c), frame classes (classify.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "classify.h"
#include "commands.h"
#include "run.h"
#include "sched_view.h"
#include "tally.h"

const char sched__usage[] =
    "Usage: extrospect sched [OPTIONS] PID\n"
    "\n"
    "How is the workload spread over schedulers and CPUs, and are NIFs hurting scheduling?\n"
    "For each scheduler thread: the share of its samples in Erlang code, emulator native code\n"
    "(BIFs, JIT fragments, the runtime), NIFs, garbage collection and idle (scheduler time\n"
    "without a process: spinning, scheduling, aux work), an estimate of how much of the time it\n"
    "ran at all (ON-CPU: samples / (rate x time); a sleeping scheduler is not sampled), its\n"
    "busiest processes and the CPUs it ran on. Then NIFs by library and function, on normal and\n"
    "dirty schedulers; processes that moved between schedulers; and NIF runs on normal\n"
    "schedulers longer than 1 ms: consecutive samples of one scheduler, less than 1.5 sample\n"
    "periods apart, in the same NIF for the same process, with the calling Erlang function.\n"
    "A run is a lower bound of the NIF's time (first to last sample): it ends at a gap (the OS\n"
    "preempted the thread, or perf dropped records); two calls of the same NIF back to back by\n"
    "the same process, with no sample between them, count as one run. -F 4999 samples every\n"
    "0.2 ms, so fewer calls merge, at five times the sampler's cost. On OTP 28+ GC is only\n"
    "recognised when entered from Erlang code (global::garbage_collect); other GC counts as\n"
    "emulator or idle time. Without the agent on OTP 28+, a dirty scheduler's process is\n"
    "unknown: its NIF time is counted, its process is not.\n"
    "Last, busy wait per scheduler type: the share of samples running processes, spinning\n"
    "with no process (the wait loop), sleeping and waking (futex, epoll), other scheduler work,\n"
    "and the cores spent spinning; it says when +sbwt none, +sbwtdcpu none or +sbwtdio none\n"
    "would give CPU back (spinning >= 10%, >= 0.01 cores, and twice the sleep/wake time).\n"
    "\n"
    "  --json                one JSON object on stdout\n"
    "  -n, --limit N         rows per table (default 20; processes per scheduler: at most 3)\n"
    "\n"
    "Examples:\n"
    "  extrospect sched -d 10 4242\n"
    "  extrospect sched -d 10 -F 4999 4242          # finer NIF runs\n"
    "  extrospect sched -d 10 --json 4242 | jq '.long_nif_runs'\n";

static void nif_name(struct sched_view *v, uint32_t frame, char *buf, size_t len)
{
	const char *m = classify__module(v->cls, frame);

	snprintf(buf, len, "%s %s", m ? m : "?", agg__frame_name(v->agg, frame));
}

static struct long_run *run_slot(struct sched_view *v, const char *key)
{
	size_t i;
	void *p;

	for (i = 0; i < v->nrun_info; i++) {
		if (strcmp(v->run_info[i].key, key) == 0)
			return &v->run_info[i].v;
	}
	p = realloc(v->run_info, (v->nrun_info + 1) * sizeof(*v->run_info));
	if (!p)
		return NULL;
	v->run_info = p;
	v->run_info[v->nrun_info].key = strdup(key);
	if (!v->run_info[v->nrun_info].key)
		return NULL;
	memset(&v->run_info[v->nrun_info].v, 0, sizeof(struct long_run));
	if (tally__new(&v->run_info[v->nrun_info].v.callers)) {
		free(v->run_info[v->nrun_info].key);
		return NULL;
	}
	return &v->run_info[v->nrun_info++].v;
}

/* A run ended: flag it when it spanned more than 1 ms. */
static void close_run(struct sched_view *v, struct nif_run *r)
{
	char key[3 * NAME_LEN], nif[NAME_LEN];
	struct long_run *lr;
	uint64_t span = r->last - r->first;
	uint32_t i;

	if (!r->active)
		return;
	r->active = false;
	if (span <= LONG_RUN_NS)
		return;
	nif_name(v, r->nif_frame, nif, sizeof(nif));
	snprintf(key, sizeof(key), "%s\t%s", nif, agg__group_name(v->agg, r->group));
	lr = run_slot(v, key);
	if (!lr || tally__add(v->runs, key, 1)) {
		v->err = -ENOMEM;
		return;
	}
	for (i = 0; i < r->ncallers; i++) {
		if (tally__add(lr->callers,
			       r->callers[i] == NO_CALLER ? "[no Erlang frame]"
							  : agg__frame_name(v->agg, r->callers[i]),
			       1))
			v->err = -ENOMEM;
	}
	lr->runs++;
	lr->samples += r->samples;
	if (span > lr->longest_ns)
		lr->longest_ns = span;
	if (r->samples > lr->most_samples)
		lr->most_samples = r->samples;
}

static void track_run(struct sched_view *v, struct sched_stat *s, const struct sample_record *rec,
		      int nif)
{
	struct nif_run *r = &s->run;
	uint64_t now = rec->ps->time;
	uint32_t frame = nif >= 0 ? rec->frames[nif] : 0;
	int caller = nif >= 0 ? classify__erlang_caller(v->agg, rec, (uint32_t)nif) : -1;

	/* A gap of more than 1.5 sample periods: the thread was off the CPU in between (a CPU
	 * clock does not tick for a sleeping thread: separate calls), was preempted by the OS, or
	 * samples were lost. A run never bridges such a gap: runs are lower bounds. */
	if (!(r->active && nif >= 0 && r->nif_frame == frame && r->group == rec->group &&
	      (now - r->last) * 2 <= v->period_ns * 3)) {
		close_run(v, r);
		if (nif < 0)
			return;
		*r = (struct nif_run){
		    .active = true, .nif_frame = frame, .group = rec->group, .first = now};
	}
	r->last = now;
	r->samples++;
	if (r->ncallers < RUN_CALLERS)
		r->callers[r->ncallers++] = caller >= 0 ? rec->frames[caller] : NO_CALLER;
}

/* A process seen on another scheduler than last time moved. */
static void track_process(struct sched_view *v, const struct sample_record *rec, size_t idx)
{
	if (rec->group >= v->nproc_sched) {
		size_t n = v->nproc_sched ? v->nproc_sched : 256;
		uint32_t *p;

		while (n <= rec->group)
			n *= 2;
		p = realloc(v->proc_sched, n * sizeof(*p));
		if (!p) {
			v->err = -ENOMEM;
			return;
		}
		memset(p + v->nproc_sched, 0, (n - v->nproc_sched) * sizeof(*p));
		v->proc_sched = p;
		v->nproc_sched = n;
	}
	if (v->proc_sched[rec->group] && v->proc_sched[rec->group] != idx + 1 &&
	    tally__add(v->moves, agg__group_name(v->agg, rec->group), 1))
		v->err = -ENOMEM;
	v->proc_sched[rec->group] = (uint32_t)idx + 1;
}

static void on_record(const struct sample_record *rec, void *ctx)
{
	struct sched_view *v = ctx;
	struct sched_stat *s;
	enum sample_class k;
	char nif[NAME_LEN];
	size_t idx;
	int n;

	if (!rec->sched) {
		v->other_threads++;
		return;
	}
	idx = (size_t)(rec->sched - v->t->sched);
	s = &v->st[idx];
	k = classify__sample(v->cls, rec, &n);
	s->n++;
	s->cls[k]++;
	if (s->n > 1 && rec->ps->cpu != s->last_cpu)
		s->moves++;
	s->last_cpu = rec->ps->cpu;
	if (rec->ps->cpu < MAX_CPUS)
		s->cpus[rec->ps->cpu]++;
	if (rec->kind == SAMPLE_ERLANG) {
		if (tally__add(s->procs, agg__group_name(v->agg, rec->group), 1))
			v->err = -ENOMEM;
		track_process(v, rec, idx);
	}
	if (k == CLASS_NIF) {
		nif_name(v, rec->frames[n], nif, sizeof(nif));
		if (tally__add(rec->sched->type == XP_SCHED_NORMAL ? v->nif_normal : v->nif_dirty,
			       nif, 1))
			v->err = -ENOMEM;
	}
	if (rec->sched->type == XP_SCHED_NORMAL)
		track_run(v, s, rec, k == CLASS_NIF ? n : -1);
	sched_spin__add(v, rec);
	s->last_time = rec->ps->time;
}

/* ---- report ---- */

static int view_new(struct sched_view *v)
{
	size_t i;

	v->st = calloc(v->t->nsched ? v->t->nsched : 1, sizeof(*v->st));
	if (!v->st || tally__new(&v->nif_normal) || tally__new(&v->nif_dirty) ||
	    tally__new(&v->moves) || tally__new(&v->runs))
		return -ENOMEM;
	for (i = 0; i < v->t->nsched; i++) {
		v->st[i].cpus = calloc(MAX_CPUS, sizeof(uint64_t));
		if (!v->st[i].cpus || tally__new(&v->st[i].procs))
			return -ENOMEM;
	}
	return classify__new(v->t, v->agg, &v->cls);
}

static void view_free(struct sched_view *v)
{
	size_t i;

	for (i = 0; v->st && i < v->t->nsched; i++) {
		free(v->st[i].cpus);
		tally__free(v->st[i].procs);
	}
	free(v->st);
	for (i = 0; i < v->nrun_info; i++) {
		free(v->run_info[i].key);
		tally__free(v->run_info[i].v.callers);
	}
	free(v->run_info);
	free(v->proc_sched);
	tally__free(v->nif_normal);
	tally__free(v->nif_dirty);
	tally__free(v->moves);
	tally__free(v->runs);
	sched_spin__free(&v->spin);
	classify__free(v->cls);
}

int cmd__sched(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	       size_t errlen)
{
	struct run_ctx ctx = {
	    .t = t, .stop = stop, .progress = isatty(STDERR_FILENO), .verbose = o->verbose};
	struct sched_view v = {.o = o, .t = t, .period_ns = 1000000000ull / o->freq_hz};
	size_t i;
	int rc;

	if ((rc = agg__new(&ctx.agg)))
		return rc;
	v.agg = ctx.agg;
	if ((rc = view_new(&v))) {
		snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	/* Idle time is one of the answers: scheduler samples without a process are kept. */
	cmd__sampler_opts(o, &ctx.opts);
	ctx.opts.include_idle = true;
	ctx.opts.only_erlang = false; /* native frames say NIF, GC or emulator */
	ctx.opts.group = GROUP_PID;   /* processes move between schedulers one by one */
	ctx.opts.on_record = on_record;
	ctx.opts.record_ctx = &v;
	if ((rc = run__sample(&ctx))) {
		snprintf(err, errlen, "%s", ctx.err);
		goto cleanup;
	}
	for (i = 0; i < t->nsched; i++)
		close_run(&v, &v.st[i].run);
	sched_spin__finish(&v);
	if ((rc = v.err)) {
		snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	if (o->json)
		sched__print_json(&v, &ctx, stdout);
	else
		sched__print_text(&v, &ctx, stdout);
	fflush(stdout);
	run__summary(&ctx, "the tables", stderr);
	rc = ctx.target_exited ? TARGET_EGONE : 0;
cleanup:
	view_free(&v);
	agg__free(ctx.agg);
	return rc;
}
