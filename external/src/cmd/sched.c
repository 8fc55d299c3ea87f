/* extrospect sched PID: how sampled time spreads over schedulers and CPUs, and NIFs that hold a
 * normal scheduler too long. Per scheduler thread: the share of its samples in Erlang code,
 * emulator native code, NIFs, GC and idle (classify.c), its busiest processes and the CPUs it ran
 * on; NIFs by library and function; dirty-scheduler use; processes moving between schedulers;
 * NIF runs longer than 1 ms on normal schedulers, from consecutive samples. Owns: these tables
 * (text and --json). Does not own: sampling (run.c), frame classes (classify.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "classify.h"
#include "info.h"
#include "commands.h"
#include "json.h"
#include "run.h"
#include "tally.h"

#define MAX_CPUS    1024
#define LONG_RUN_NS 1000000ull /* a NIF run longer than this is flagged */
#define RUN_CALLERS 16
#define NO_CALLER   UINT32_MAX
#define NAME_LEN    512

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
    "\n"
    "  --json                one JSON object on stdout\n"
    "  -n, --limit N         rows per table (default 20; processes per scheduler: at most 3)\n"
    "\n"
    "Examples:\n"
    "  extrospect sched -d 10 4242\n"
    "  extrospect sched -d 10 -F 4999 4242          # finer NIF runs\n"
    "  extrospect sched -d 10 --json 4242 | jq '.long_nif_runs'\n";

/* Consecutive samples of one normal scheduler in one NIF for one process. The calling Erlang
 * function of each sample is kept: a sample read after the process left the NIF can show a
 * later stack, so the caller reported is the one most samples of the flagged runs agree on. */
struct nif_run {
	bool active;
	uint32_t nif_frame, group;
	uint64_t first, last, samples;
	uint32_t callers[RUN_CALLERS]; /* frame ids, NO_CALLER when none */
	uint32_t ncallers;
};

struct sched_stat {
	uint64_t n, cls[CLASS_COUNT];
	struct tally *procs;
	uint64_t *cpus; /* samples per CPU */
	uint32_t last_cpu;
	uint64_t moves, last_time;
	struct nif_run run;
};

struct long_run {
	uint64_t runs, samples, longest_ns;
	uint64_t most_samples; /* in one run */
	struct tally *callers;
};

struct sched_view {
	const struct cli_opts *o;
	struct target *t;
	struct agg *agg;
	struct classify *cls;
	struct sched_stat *st; /* one per t->sched */
	struct tally *nif_normal, *nif_dirty, *moves;
	struct tally *runs; /* "nif\tprocess" -> runs; details in run_info */
	struct {
		char *key;
		struct long_run v;
	} * run_info;
	size_t nrun_info;
	uint32_t *proc_sched; /* per group id: scheduler index + 1, 0: not seen */
	size_t nproc_sched;
	uint64_t period_ns, other_threads;
	int err;
};

static const char *type_name(uint32_t type)
{
	return type == XP_SCHED_NORMAL	    ? "normal"
	       : type == XP_SCHED_DIRTY_CPU ? "dirty-cpu"
					    : "dirty-io";
}

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
	s->last_time = rec->ps->time;
}

/* ---- report ---- */

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

static uint64_t total_samples(const struct sched_view *v)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < v->t->nsched; i++)
		n += v->st[i].n;
	return n;
}

static double on_cpu(const struct sched_view *v, const struct run_ctx *ctx, uint64_t n)
{
	double expect = (double)v->o->freq_hz * ctx->final.elapsed_s, r;

	r = expect > 0 ? 100.0 * (double)n / expect : 0.0;
	return r > 100.0 ? 100.0 : r;
}

static void print_cpus(const struct sched_stat *s, FILE *f)
{
	uint32_t c;

	for (c = 0; c < MAX_CPUS; c++) {
		if (s->cpus[c])
			fprintf(f, " cpu%u:%.0f%%", c, pct(s->cpus[c], s->n));
	}
	fprintf(f, " (%llu moves)\n", (unsigned long long)s->moves);
}

static void print_schedulers(const struct sched_view *v, const struct run_ctx *ctx, FILE *f)
{
	size_t i, idle = 0;
	int k;

	fprintf(f, "%-13s %7s %7s %7s %7s %8s %6s %6s %6s  CPUS\n", "SCHEDULER", "TID", "ON-CPU",
		"SAMPLES", "ERLANG", "EMULATOR", "NIF", "GC", "IDLE");
	for (i = 0; i < v->t->nsched; i++) {
		const struct target_sched *sc = &v->t->sched[i];
		const struct sched_stat *s = &v->st[i];
		char label[32];

		if (!s->n && sc->type != XP_SCHED_NORMAL) {
			idle++;
			continue;
		}
		snprintf(label, sizeof(label), "%s %u", type_name(sc->type), sc->number);
		fprintf(f, "%-13s %7d %6.1f%% %7llu", label, (int)sc->tid, on_cpu(v, ctx, s->n),
			(unsigned long long)s->n);
		for (k = 0; k < CLASS_COUNT; k++)
			fprintf(f, " %*.1f%%",
				k == CLASS_EMULATOR ? 7
				: k == CLASS_ERLANG ? 6
						    : 5,
				pct(s->cls[k], s->n));
		print_cpus(s, f);
	}
	if (idle)
		fprintf(f, "(%zu dirty schedulers never ran while sampled)\n", idle);
}

static void print_busiest(const struct sched_view *v, FILE *f)
{
	unsigned lim = v->o->limit < 3 ? v->o->limit : 3;
	size_t i, j, n;

	fputs("\nBusiest processes per scheduler (share of that scheduler's samples):\n", f);
	for (i = 0; i < v->t->nsched; i++) {
		const struct tally_row *rows = tally__sorted(v->st[i].procs, &n);

		if (!n)
			continue;
		fprintf(f, "  %s %u:", type_name(v->t->sched[i].type), v->t->sched[i].number);
		for (j = 0; j < n && j < lim; j++)
			fprintf(f, "%s %.1f%% %s", j ? "," : "", pct(rows[j].count, v->st[i].n),
				rows[j].name);
		fputc('\n', f);
	}
}

/* Rows of a tally: count, share of `of`, name. `what` names the count column. */
static void print_tally(struct tally *t, uint64_t of, unsigned limit, const char *what,
			const char *head, FILE *f)
{
	const struct tally_row *rows = tally__sorted(t, &(size_t){0});
	size_t n = tally__size(t), i;

	if (!n) {
		fprintf(f, "  none\n");
		return;
	}
	fprintf(f, "  %8s  %6s  %s\n", what, "SHARE", head);
	for (i = 0; rows && i < n && i < limit; i++)
		fprintf(f, "  %8llu  %5.1f%%  %s\n", (unsigned long long)rows[i].count,
			pct(rows[i].count, of), rows[i].name);
}

static int by_longest(const void *pa, const void *pb, void *ctx)
{
	const struct sched_view *v = ctx;
	const size_t *a = pa, *b = pb;
	const struct long_run *ra = &v->run_info[*a].v, *rb = &v->run_info[*b].v;

	if (ra->longest_ns != rb->longest_ns)
		return ra->longest_ns > rb->longest_ns ? -1 : 1;
	return strcmp(v->run_info[*a].key, v->run_info[*b].key);
}

static size_t *sorted_runs(struct sched_view *v)
{
	size_t *ix = calloc(v->nrun_info ? v->nrun_info : 1, sizeof(*ix)), i;

	for (i = 0; ix && i < v->nrun_info; i++)
		ix[i] = i;
	if (ix)
		qsort_r(ix, v->nrun_info, sizeof(*ix), by_longest, v);
	return ix;
}

/* A flagged (nif, process) pair: its key split, and the caller most of its samples agree on. */
struct run_row {
	char key[2 * NAME_LEN];
	const char *nif, *process, *caller;
	uint64_t caller_samples, samples;
};

static bool run_row(struct sched_view *v, size_t i, struct run_row *out)
{
	struct long_run *r = &v->run_info[i].v;
	const struct tally_row *c = tally__sorted(r->callers, &(size_t){0});
	char *tab;

	snprintf(out->key, sizeof(out->key), "%s", v->run_info[i].key);
	tab = strchr(out->key, '\t');
	if (!tab || !c)
		return false;
	*tab = '\0';
	out->nif = out->key;
	out->process = tab + 1;
	out->caller = c[0].name;
	out->caller_samples = c[0].count;
	out->samples = tally__total(r->callers);
	return true;
}

static void print_runs(struct sched_view *v, FILE *f)
{
	size_t *ix = sorted_runs(v), i;
	struct run_row row;

	fprintf(f,
		"\nNIF runs longer than 1 ms on normal schedulers (from consecutive samples):\n");
	if (!v->nrun_info || !ix) {
		fputs("  none\n", f);
		free(ix);
		return;
	}
	fprintf(f, "  %5s  %9s  %s\n", "RUNS", "LONGEST",
		"NIF | CALLER (share of its samples) | PROCESS");
	for (i = 0; i < v->nrun_info && i < v->o->limit; i++) {
		const struct long_run *r = &v->run_info[ix[i]].v;

		if (!run_row(v, ix[i], &row))
			continue;
		fprintf(f, "  %5llu  %6.1f ms  %s | %s (%.0f%%) | %s\n",
			(unsigned long long)r->runs, (double)r->longest_ns / 1e6, row.nif,
			row.caller, pct(row.caller_samples, row.samples), row.process);
	}
	free(ix);
}

static void print_text(struct sched_view *v, const struct run_ctx *ctx, FILE *f)
{
	uint64_t total = total_samples(v);

	fprintf(f,
		"extrospect sched: pid %d, OTP %s, %.1fs at %u Hz, %llu scheduler samples "
		"(shares are of each scheduler's samples)\n\n",
		(int)v->t->pid, v->t->otp_release[0] ? v->t->otp_release : "?",
		ctx->final.elapsed_s, v->o->freq_hz, (unsigned long long)total);
	print_schedulers(v, ctx, f);
	print_busiest(v, f);
	fputs("\nNIFs on normal schedulers (share of all scheduler samples):\n", f);
	print_tally(v->nif_normal, total, v->o->limit, "SAMPLES", "LIBRARY FUNCTION", f);
	fputs("\nNIFs on dirty schedulers:\n", f);
	print_tally(v->nif_dirty, total, v->o->limit, "SAMPLES", "LIBRARY FUNCTION", f);
	print_runs(v, f);
	fputs("\nProcesses that moved between schedulers (between two of their samples; a dirty "
	      "NIF or BIF call moves a process to a dirty scheduler and back):\n",
	      f);
	print_tally(v->moves, tally__total(v->moves), v->o->limit, "MOVES", "PROCESS", f);
}

/* ---- JSON ---- */

static void json_tally(struct json *j, const char *key, struct tally *t, unsigned limit)
{
	const struct tally_row *rows = tally__sorted(t, &(size_t){0});
	size_t n = tally__size(t), i;

	json__key(j, key);
	json__array(j);
	for (i = 0; rows && i < n && i < limit; i++) {
		json__object(j);
		json__kv_string(j, "name", rows[i].name);
		json__kv_int(j, "samples", (int64_t)rows[i].count);
		json__end_object(j);
	}
	json__end_array(j);
}

static void json_sched(struct sched_view *v, const struct run_ctx *ctx, struct json *j, size_t i)
{
	const struct target_sched *sc = &v->t->sched[i];
	struct sched_stat *s = &v->st[i];
	char cpu[16];
	uint32_t c;
	int k;

	json__object(j);
	json__kv_string(j, "type", type_name(sc->type));
	json__kv_int(j, "number", sc->number);
	json__kv_int(j, "tid", sc->tid);
	json__kv_int(j, "samples", (int64_t)s->n);
	json__key(j, "on_cpu_pct");
	json__int(j, (int64_t)(on_cpu(v, ctx, s->n) + 0.5));
	json__key(j, "samples_by_class");
	json__object(j);
	for (k = 0; k < CLASS_COUNT; k++)
		json__kv_int(j, classify__class_name(k), (int64_t)s->cls[k]);
	json__end_object(j);
	json__key(j, "cpus");
	json__object(j);
	for (c = 0; c < MAX_CPUS; c++) {
		if (!s->cpus[c])
			continue;
		snprintf(cpu, sizeof(cpu), "%u", c);
		json__kv_int(j, cpu, (int64_t)s->cpus[c]);
	}
	json__end_object(j);
	json__kv_int(j, "cpu_moves", (int64_t)s->moves);
	json_tally(j, "processes", s->procs, v->o->limit);
	json__end_object(j);
}

static void json_runs(struct sched_view *v, struct json *j)
{
	size_t *ix = sorted_runs(v), i;
	struct run_row row;

	json__key(j, "long_nif_runs");
	json__array(j);
	for (i = 0; ix && i < v->nrun_info; i++) {
		const struct long_run *r = &v->run_info[ix[i]].v;

		if (!run_row(v, ix[i], &row))
			continue;
		json__object(j);
		json__kv_string(j, "nif", row.nif);
		json__kv_string(j, "caller", row.caller);
		json__kv_int(j, "caller_samples", (int64_t)row.caller_samples);
		json__kv_string(j, "process", row.process);
		json__kv_int(j, "runs", (int64_t)r->runs);
		json__kv_int(j, "samples", (int64_t)r->samples);
		json__kv_int(j, "most_samples_in_a_run", (int64_t)r->most_samples);
		json__kv_int(j, "longest_us", (int64_t)(r->longest_ns / 1000));
		json__end_object(j);
	}
	json__end_array(j);
	free(ix);
}

static void print_json(struct sched_view *v, const struct run_ctx *ctx, FILE *f)
{
	struct json j;
	size_t i;

	json__init(&j, f);
	json__object(&j);
	json__kv_int(&j, "pid", v->t->pid);
	json__kv_string(&j, "otp_release", v->t->otp_release[0] ? v->t->otp_release : NULL);
	json__kv_int(&j, "rate_hz", v->o->freq_hz);
	json__kv_int(&j, "duration_ms", (int64_t)(ctx->final.elapsed_s * 1000));
	json__kv_int(&j, "samples", (int64_t)total_samples(v));
	json__key(&j, "schedulers");
	json__array(&j);
	for (i = 0; i < v->t->nsched; i++)
		json_sched(v, ctx, &j, i);
	json__end_array(&j);
	json_tally(&j, "nifs_normal", v->nif_normal, v->o->limit);
	json_tally(&j, "nifs_dirty", v->nif_dirty, v->o->limit);
	json_runs(v, &j);
	json_tally(&j, "process_moves", v->moves, v->o->limit);
	info__json_mem_failures(v->t, &j);
	json__end_object(&j);
	fputc('\n', f);
}

/* ---- command ---- */

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
	ctx.opts.on_record = on_record;
	ctx.opts.record_ctx = &v;
	if ((rc = run__sample(&ctx))) {
		snprintf(err, errlen, "%s", ctx.err);
		goto cleanup;
	}
	for (i = 0; i < t->nsched; i++)
		close_run(&v, &v.st[i].run);
	if ((rc = v.err)) {
		snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	if (o->json)
		print_json(&v, &ctx, stdout);
	else
		print_text(&v, &ctx, stdout);
	fflush(stdout);
	run__summary(&ctx, "the tables", stderr);
	rc = ctx.target_exited ? TARGET_EGONE : 0;
cleanup:
	view_free(&v);
	agg__free(ctx.agg);
	return rc;
}
