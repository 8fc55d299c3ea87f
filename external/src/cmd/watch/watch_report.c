/* watch's report: P's wall time by state, then by (state, function), as a table or JSON, and
 * the names of states and ends. Shares are of the time the snapshots cover. Does not own: taking
 * the snapshots (watch.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "cli.h"
#include "json.h"
#include "report/report.h"
#include "watch_cpu.h"
#include "watch_hist.h"
#include "watch_int.h"
#include "watch_report.h"

#define XP_GROUP_LEN 320

static const char *const state_names[WS_COUNT] = {
    [WS_RUNNING] = "running", [WS_RUNNABLE] = "runnable",   [WS_WAITING] = "waiting",
    [WS_GC] = "gc",	      [WS_SUSPENDED] = "suspended", [WS_EXITING] = "exiting",
};

const char *const watch__end_names[] = {
    [WATCH_END_DURATION] = "duration",
    [WATCH_END_INTERRUPTED] = "interrupted",
    [WATCH_END_PROCESS_EXITED] = "process exited",
    [WATCH_END_VM_EXITED] = "VM exited",
    [WATCH_END_LEASE_LOST] = "spy lost (agent stopped its spies, unloaded, or revoked the lease)",
};

const char *watch__state_name(enum watch_state s)
{
	return (unsigned)s < WS_COUNT ? state_names[s] : "?";
}

static uint64_t covered(const struct watch_report *r, uint64_t by_state[WS_COUNT])
{
	uint64_t total = 0;
	size_t i;

	memset(by_state, 0, WS_COUNT * sizeof(*by_state));
	for (i = 0; i < r->nrows; i++) {
		by_state[r->rows[i].state] += r->rows[i].ns;
		total += r->rows[i].ns;
	}
	return total;
}

static double share(uint64_t part, uint64_t total)
{
	return total ? 100.0 * (double)part / (double)total : 0.0;
}

static int by_time(const void *a, const void *b)
{
	const struct watch_report_row *x = a, *y = b;

	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

static uint64_t invalid(const struct watch_report *r)
{
	return r->c.unreadable + r->c.not_process;
}

/* Snapshots the interval asked for over the wall time. */
static uint64_t asked(const struct watch_report *r)
{
	return r->interval_ns ? r->wall_ns / r->interval_ns : 0;
}

static struct watch_report_row *sorted(const struct watch_report *r)
{
	struct watch_report_row *v = malloc((r->nrows ? r->nrows : 1) * sizeof(*v));

	if (!v)
		return NULL;
	memcpy(v, r->rows, r->nrows * sizeof(*v));
	qsort(v, r->nrows, sizeof(*v), by_time);
	return v;
}

/* The runnable-episode histogram: "[lo, hi) us  count" rows, and the median's bucket. */
static void runq_text(const struct watch_report *r, FILE *f)
{
	uint64_t n = 0, seen = 0;
	unsigned b;

	for (b = 0; b < WATCH_HIST_BUCKETS; b++)
		n += r->runq_hist[b];
	if (!n)
		return;
	fprintf(f,
		"\nrunnable episodes (queued for a scheduler; +- one interval): %" PRIu64
		", median %.0f us, 90th percentile %.0f us\n",
		n, r->runq_median_us, r->runq_p90_us);
	for (b = 0; b < WATCH_HIST_BUCKETS; b++) {
		uint64_t lo = b ? 1ull << b : 0, hi = 2ull << b;

		if (!r->runq_hist[b])
			continue;
		seen += r->runq_hist[b];
		fprintf(f, "  %8" PRIu64 " - %-8" PRIu64 " us %6" PRIu64 "%s\n", lo, hi,
			r->runq_hist[b],
			seen - r->runq_hist[b] < (n + 1) / 2 && seen >= (n + 1) / 2 ? "  <- median"
										    : "");
	}
}

void watch__print_text(const struct watch_report *r, FILE *f)
{
	uint64_t st[WS_COUNT], total = covered(r, st);
	struct watch_report_row *v = sorted(r);
	uint64_t a = asked(r);
	size_t i;

	fprintf(f, "%s%s%s: %.2f s watched, ended: %s\n", r->pid_text, r->name[0] ? " " : "",
		r->name, (double)r->wall_ns / 1e9, r->end);
	fprintf(f,
		"snapshots: %" PRIu64 " taken of %" PRIu64 " asked (every %.3f ms, %.1f %%), "
		"%" PRIu64 " invalid (%.2f %%), %" PRIu64 " off target, %" PRIu64 " lost; ",
		r->c.taken, a, (double)r->interval_ns / 1e6, share(r->c.taken, a), invalid(r),
		share(invalid(r), r->c.taken + invalid(r)), r->c.off_target, r->c.lost);
	if (strcmp(r->method, "spy") == 0)
		fprintf(f, "spy xp_spy_%u (tid %d)\n\n", r->spy_index + 1, r->spy_tid);
	else
		fprintf(f, "method %s\n\n", r->method);
	fprintf(f, "%-10s %7s %11s\n", "STATE", "SHARE", "TIME_MS");
	for (i = 0; i < WS_COUNT; i++) {
		if (st[i])
			fprintf(f, "%-10s %6.1f%% %11.1f\n", watch__state_name(i),
				share(st[i], total), (double)st[i] / 1e6);
	}
	fprintf(f, "\n%-10s %7s %11s %9s  %s\n", "STATE", "SHARE", "TIME_MS", "SNAPSHOTS",
		"FUNCTION (running: where it runs; else: where it resumes)");
	for (i = 0; v && i < r->nrows; i++) {
		fprintf(f, "%-10s %6.1f%% %11.1f %9" PRIu64 "  %s\n", watch__state_name(v[i].state),
			share(v[i].ns, total), (double)v[i].ns / 1e6, v[i].n, v[i].fn);
		if (v[i].stack[0])
			fprintf(f, "%43s called from %s\n", "", v[i].stack);
	}
	free(v);
	runq_text(r, f);
}

static void json_counts(const struct watch_report *r, struct json *j)
{
	json__key(j, "snapshots");
	json__object(j);
	json__kv_int(j, "asked", (int64_t)asked(r));
	json__kv_int(j, "taken", (int64_t)r->c.taken);
	json__kv_int(j, "invalid", (int64_t)invalid(r));
	json__kv_int(j, "unreadable", (int64_t)r->c.unreadable);
	json__kv_int(j, "not_process", (int64_t)r->c.not_process);
	json__kv_int(j, "off_target", (int64_t)r->c.off_target);
	json__kv_int(j, "heap_in_flux", (int64_t)r->c.heap_in_flux);
	json__kv_int(j, "lost", (int64_t)r->c.lost);
	json__end_object(j);
}

void watch__print_json(const struct watch_report *r, FILE *f)
{
	uint64_t st[WS_COUNT], total = covered(r, st);
	struct watch_report_row *v = sorted(r);
	struct json j;
	size_t i;

	json__init(&j, f);
	json__object(&j);
	json__kv_string(&j, "pid", r->pid_text);
	json__kv_string(&j, "name", r->name[0] ? r->name : NULL);
	json__kv_string(&j, "ended", r->end);
	json__kv_string(&j, "method", r->method);
	json__key(&j, "wall_s");
	json__double(&j, (double)r->wall_ns / 1e9, 3);
	json__kv_int(&j, "interval_ns", (int64_t)r->interval_ns);
	json__kv_int(&j, "spy_tid", r->spy_tid);
	json_counts(r, &j);
	json__key(&j, "states");
	json__object(&j);
	for (i = 0; i < WS_COUNT; i++) {
		json__key(&j, watch__state_name(i));
		json__object(&j);
		json__key(&j, "share");
		json__double(&j, share(st[i], total) / 100.0, 4);
		json__key(&j, "ms");
		json__double(&j, (double)st[i] / 1e6, 3);
		json__end_object(&j);
	}
	json__end_object(&j);
	json__key(&j, "runnable_episodes_us"); /* [[lo, hi, count], ...], log2 buckets */
	json__array(&j);
	for (i = 0; i < WATCH_HIST_BUCKETS; i++) {
		if (!r->runq_hist[i])
			continue;
		json__array(&j);
		json__uint(&j, i ? 1ull << i : 0);
		json__uint(&j, 2ull << i);
		json__uint(&j, r->runq_hist[i]);
		json__end_array(&j);
	}
	json__end_array(&j);
	/* null without episodes */
	json__kv_uint_known(&j, "runnable_median_us", r->runq_median_us > 0,
			    (uint64_t)(r->runq_median_us + 0.5));
	json__kv_uint_known(&j, "runnable_p90_us", r->runq_p90_us > 0,
			    (uint64_t)(r->runq_p90_us + 0.5));
	json__key(&j, "functions");
	json__array(&j);
	for (i = 0; v && i < r->nrows; i++) {
		json__object(&j);
		json__kv_string(&j, "state", watch__state_name(v[i].state));
		json__kv_string(&j, "function", v[i].fn);
		json__kv_string(&j, "called_from", v[i].stack[0] ? v[i].stack : NULL);
		json__key(&j, "share");
		json__double(&j, share(v[i].ns, total) / 100.0, 4);
		json__key(&j, "ms");
		json__double(&j, (double)v[i].ns / 1e6, 3);
		json__kv_int(&j, "snapshots", (int64_t)v[i].n);
		json__end_object(&j);
	}
	json__end_array(&j);
	json__end_object(&j);
	fputc('\n', f);
	free(v);
}

static int fill_agg(const struct watch_report *r, struct agg *a)
{
	char group[XP_GROUP_LEN];
	uint32_t g, fr[2];
	size_t i;
	int rc;

	snprintf(group, sizeof(group), "%s%s%s", r->pid_text, r->name[0] ? " " : "", r->name);
	if ((rc = agg__group(a, group, &g)))
		return rc;
	for (i = 0; i < r->nrows; i++) {
		const struct watch_report_row *w = &r->rows[i];

		if (w->ns < 1000)
			continue;
		if ((rc = agg__frame(a, watch__state_name(w->state), FRAME_LABEL, &fr[0])) ||
		    (rc = agg__frame(a, w->fn, w->state == WS_RUNNING ? FRAME_LABEL : FRAME_ERLANG,
				     &fr[1])) ||
		    (rc = agg__add(a, g, fr, 2, w->ns / 1000)))
			return rc;
	}
	return 0;
}

int watch__write_graph(const struct watch_report *r, const char *path, int format)
{
	struct agg *a = NULL;
	FILE *f = NULL;
	char title[128];
	int rc;

	if ((rc = agg__new(&a)) || (rc = fill_agg(r, a)))
		goto cleanup;
	if ((rc = report__open_output(path, &f)))
		goto cleanup;
	snprintf(title, sizeof(title), "extrospect watch %s: wall time (us) by state", r->pid_text);
	if (format == CLI_FMT_SVG)
		rc = report__svg(a, f, title);
	else if (format == CLI_FMT_SPEEDSCOPE)
		rc = report__speedscope(a, f, title);
	else
		rc = report__collapsed(a, f);
	if (!rc)
		rc = report__finish(f);
cleanup:
	if (f && fclose(f) && !rc)
		rc = -EIO;
	agg__free(a);
	return rc;
}

/* The running row, split by P's on-CPU functions in proportion to their scheduler samples. */
static size_t split_running(const struct watch *w, const struct watch_row *run,
			    struct watch_report_row *out, size_t room)
{
	struct watch_cpu_fn fns[WATCH_CPU_FNS];
	uint64_t total, ns = 0, n = 0;
	size_t k, nf = watch_cpu__functions(w->cpu, fns, WATCH_CPU_FNS, &total);

	if (!total || room < nf + 1)
		return 0;
	for (k = 0; k < nf; k++) {
		out[k] = (struct watch_report_row){WS_RUNNING, fns[k].name, "",
						   run->ns * fns[k].samples / total,
						   run->n * fns[k].samples / total};
		ns += out[k].ns;
		n += out[k].n;
	}
	if (nf == WATCH_CPU_FNS) /* the functions past the first WATCH_CPU_FNS */
		out[k++] = (struct watch_report_row){WS_RUNNING, "(on CPU: other functions)", "",
						     run->ns - ns, run->n - n};
	else if (nf) { /* the rounding, to the first */
		out[0].ns += run->ns - ns;
		out[0].n += run->n - n;
	}
	return k;
}

void watch__report(struct watch *w)
{
	struct watch_report_row rows[WATCH_MAX_ROWS + WATCH_CPU_FNS + 1];
	int rc;
	struct watch_report r = {
	    .pid_text = w->pid_text,
	    .name = w->name,
	    .end = watch__end_names[w->end],
	    .method = w->o->watch_poll ? "poll" : "spy",
	    .spy_tid = w->lease.host_tid,
	    .spy_index = w->lease.index,
	    .interval_ns = w->interval_ns,
	    .wall_ns = watch__now_ns() - w->start_ns,
	    .c = w->c,
	    .rows = rows,
	};
	size_t i, n = 0, k;

	r.c.lost = w->ps ? perf_session__stats(w->ps)->lost : 0;
	watch_hist__log2(w->runq_fine, r.runq_hist);
	r.runq_median_us = watch_hist__quantile(w->runq_fine, 0.5);
	r.runq_p90_us = watch_hist__quantile(w->runq_fine, 0.9);
	for (i = 0; i < w->nrows; i++) {
		const struct watch_row *x = &w->rows[i];

		if (x->state == WS_RUNNING &&
		    (k = split_running(w, x, rows + n, WATCH_CPU_FNS + 1 + (w->nrows - i)))) {
			n += k;
			continue;
		}
		rows[n++] = (struct watch_report_row){x->state, x->fn, x->stack ? x->stack : "",
						      x->ns, x->n};
	}
	r.nrows = n;
	if (w->o->json)
		watch__print_json(&r, stdout);
	else
		watch__print_text(&r, stdout);
	fflush(stdout);
	rc = w->o->output ? watch__write_graph(&r, w->o->output, (int)w->o->format) : 0;
	if (rc)
		fprintf(stderr, "extrospect: cannot write %s: %s\n", w->o->output,
			report__output_error(rc));
}
