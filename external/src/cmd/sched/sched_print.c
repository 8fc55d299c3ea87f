/* The tables of `extrospect sched` (see sched.c), as text and as one JSON object. Does not own:
 * collecting them (sched.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info.h"
#include "json.h"
#include "sched_view.h"
#include "tally.h"

static const char *type_name(uint32_t type)
{
	return type == XP_SCHED_NORMAL	    ? "normal"
	       : type == XP_SCHED_DIRTY_CPU ? "dirty-cpu"
					    : "dirty-io";
}

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

void sched__print_text(struct sched_view *v, const struct run_ctx *ctx, FILE *f)
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
	sched_spin__print_text(v, ctx, f);
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

void sched__print_json(struct sched_view *v, const struct run_ctx *ctx, FILE *f)
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
	sched_spin__print_json(v, ctx, &j);
	info__json_mem_failures(v->t, &j);
	json__end_object(&j);
	fputc('\n', f);
}

/* ---- command ---- */
