/* `sched`'s busy-wait table: per scheduler type, the sampled time spent running processes against
 * the time with no process, split into spinning (the scheduler's wait loop: sched_yield calls, and
 * the loop's own code, found as the function that calls sched_yield, since it is a static function
 * unnamed in beam.smp), sleeping and waking (futex, epoll and the other system calls) and other
 * scheduler work (aux work, timers, I/O polling); and whether +sbwt none and its dirty siblings
 * would give CPU back. Does not own: sampling, the other tables (sched.c, sched_print.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "sched_view.h"

/* A type's busy wait is worth a flag when it spins at least SPIN_SHARE_PCT of its samples and
 * SPIN_CORES on average, and at least SPIN_OVER_WAKE times as much as it already spends in the
 * system calls that sleep and wake it: those calls are what spinning saves, and with the flag off
 * every idle moment costs one. A VM whose schedulers wake each other for short messages can use
 * more CPU with the flag off (measured: docs/guide.md, "Is the VM burning CPU busy-waiting?"). */
#define SPIN_SHARE_PCT 10.0
#define SPIN_CORES     0.01
#define SPIN_OVER_WAKE 2

static const char *const yield_names[] = {"sched_yield", "__sched_yield"};
/* The wait loop itself where the symbols name it (debug builds, hand-built VMs). */
static const char *const loop_names[] = {"scheduler_wait", "sched_spin_wait", "sched_busy_wait",
					 "ethr_event_swait"};
static const char *const syscall_names[] = {
    "[kernel]",	 "syscall",	    "epoll_wait",  "epoll_pwait",  "__read",	     "read",
    "write",	 "__write",	    "futex",	   "poll",	   "ppoll",	     "select",
    "nanosleep", "clock_nanosleep", "__libc_read", "__libc_write", "timerfd_settime"};
static const char *const flags[] = {"+sbwt none", "+sbwtdcpu none", "+sbwtdio none"};
static const char *const names[] = {"normal", "dirty-cpu", "dirty-io"};

static bool named(const char *name, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (strcmp(name, list[i]) == 0)
			return true;
	}
	return false;
}

#define NAMED(s, arr) named((s), (arr), sizeof(arr) / sizeof((arr)[0]))

static int add_id(uint32_t **v, size_t *n, uint32_t id)
{
	size_t i;
	uint32_t *p;

	for (i = 0; i < *n; i++) {
		if ((*v)[i] == id)
			return 0;
	}
	p = realloc(*v, (*n + 1) * sizeof(**v));
	if (!p)
		return -ENOMEM;
	*v = p;
	(*v)[(*n)++] = id;
	return 0;
}

static int add_leaf(struct spin_view *sv, uint32_t type, uint32_t frame, bool unknown)
{
	struct spin_leaf *p;
	size_t i;

	for (i = 0; i < sv->nleaf; i++) {
		if (sv->leaf[i].frame == frame && sv->leaf[i].type == type &&
		    sv->leaf[i].unknown == unknown) {
			sv->leaf[i].n++;
			return 0;
		}
	}
	p = realloc(sv->leaf, (sv->nleaf + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	sv->leaf = p;
	sv->leaf[sv->nleaf++] =
	    (struct spin_leaf){.frame = frame, .type = type, .unknown = unknown, .n = 1};
	return 0;
}

/* A sample with no process: a sched_yield call is spinning (its caller is the wait loop); a
 * system call is sleeping or waking; the rest is judged by its leaf once the loop is known. */
static int add_idle(struct sched_view *v, const struct sample_record *rec, uint32_t type)
{
	struct spin_view *sv = &v->spin;
	uint32_t i;

	for (i = rec->nerlang; i < rec->nframes; i++) {
		if (NAMED(agg__frame_name(v->agg, rec->frames[i]), yield_names)) {
			sv->type[type].spin++;
			return i > rec->nerlang ? add_id(&sv->loop, &sv->nloop, rec->frames[i - 1])
						: 0;
		}
	}
	for (i = rec->nerlang; i < rec->nframes; i++) {
		if (NAMED(agg__frame_name(v->agg, rec->frames[i]), syscall_names)) {
			sv->type[type].syscall++;
			return 0;
		}
	}
	if (!rec->nframes)
		return 0;
	return add_leaf(sv, type, rec->frames[rec->nframes - 1],
			strstr(agg__group_name(v->agg, rec->group), "process unknown") != NULL);
}

void sched_spin__add(struct sched_view *v, const struct sample_record *rec)
{
	uint32_t type = rec->sched->type;

	if (type > XP_SCHED_DIRTY_IO)
		return;
	v->spin.type[type].samples++;
	if (rec->kind == SAMPLE_ERLANG)
		v->spin.type[type].running++;
	else if (add_idle(v, rec, type))
		v->err = -ENOMEM;
}

static bool is_loop(const struct sched_view *v, uint32_t frame)
{
	size_t i;

	for (i = 0; i < v->spin.nloop; i++) {
		if (v->spin.loop[i] == frame)
			return true;
	}
	return NAMED(agg__frame_name(v->agg, frame), loop_names);
}

/* Leaves in the wait loop are spinning; the other leaves are other scheduler work, or, where the
 * sampler could not tell whether a process ran (OTP 28+ dirty schedulers without the agent),
 * unknown. */
void sched_spin__finish(struct sched_view *v)
{
	struct spin_view *sv = &v->spin;
	size_t i;

	for (i = 0; i < sv->nleaf; i++) {
		struct spin_type *t = &sv->type[sv->leaf[i].type];

		if (is_loop(v, sv->leaf[i].frame))
			t->spin += sv->leaf[i].n;
		else if (sv->leaf[i].unknown)
			t->unknown += sv->leaf[i].n;
		else
			t->other += sv->leaf[i].n;
	}
	sv->nleaf = 0;
}

void sched_spin__free(struct spin_view *sv)
{
	free(sv->leaf);
	free(sv->loop);
}

static double share(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

/* Cores spent spinning on average: spin samples / (rate x seconds). */
static double cores(const struct sched_view *v, const struct run_ctx *ctx, uint64_t n)
{
	double per_core = (double)v->o->freq_hz * ctx->final.elapsed_s;

	return per_core > 0 ? (double)n / per_core : 0.0;
}

enum spin_verdict { SPIN_LITTLE, SPIN_TRADE, SPIN_WORTH };

static enum spin_verdict verdict(const struct sched_view *v, const struct run_ctx *ctx,
				 uint32_t type)
{
	const struct spin_type *t = &v->spin.type[type];

	if (share(t->spin, t->samples) < SPIN_SHARE_PCT || cores(v, ctx, t->spin) < SPIN_CORES)
		return SPIN_LITTLE;
	return t->spin >= SPIN_OVER_WAKE * t->syscall ? SPIN_WORTH : SPIN_TRADE;
}

static void print_verdict(const struct sched_view *v, const struct run_ctx *ctx, uint32_t k,
			  FILE *f)
{
	const struct spin_type *t = &v->spin.type[k];

	fprintf(f, "  %s: spinning %.1f%% (%.2f cores), sleeping and waking %.1f%%: ", names[k],
		share(t->spin, t->samples), cores(v, ctx, t->spin), share(t->syscall, t->samples));
	switch (verdict(v, ctx, k)) {
	case SPIN_WORTH:
		fprintf(f, "%s would give that CPU back\n", flags[k]);
		break;
	case SPIN_TRADE:
		fprintf(f,
			"%s would trade spinning for more wake-ups, which can cost as much; "
			"compare the VM's CPU with and without it\n",
			flags[k]);
		break;
	default:
		fprintf(f, "little to give back\n");
	}
}

void sched_spin__print_text(const struct sched_view *v, const struct run_ctx *ctx, FILE *f)
{
	char fl[64] = "";
	uint32_t k;

	fputs("\nBusy wait (share of each scheduler type's samples; CORES: spinning samples / "
	      "(rate x seconds)):\n",
	      f);
	fprintf(f, "  %-9s %8s %8s %9s %11s %7s %8s %6s\n", "TYPE", "SAMPLES", "RUNNING",
		"SPINNING", "SLEEP/WAKE", "OTHER", "UNKNOWN", "CORES");
	for (k = 0; k <= XP_SCHED_DIRTY_IO; k++) {
		const struct spin_type *t = &v->spin.type[k];

		fprintf(f, "  %-9s %8llu %7.1f%% %8.1f%% %10.1f%% %6.1f%% %7.1f%% %6.2f\n",
			names[k], (unsigned long long)t->samples, share(t->running, t->samples),
			share(t->spin, t->samples), share(t->syscall, t->samples),
			share(t->other, t->samples), share(t->unknown, t->samples),
			cores(v, ctx, t->spin));
	}
	for (k = 0; k <= XP_SCHED_DIRTY_IO; k++) {
		print_verdict(v, ctx, k, f);
		if (verdict(v, ctx, k) == SPIN_WORTH)
			snprintf(fl + strlen(fl), sizeof(fl) - strlen(fl), "%s%s", fl[0] ? " " : "",
				 flags[k]);
	}
	fprintf(f, "Busy-wait flags that would give CPU back: %s\n", fl[0] ? fl : "none");
}

void sched_spin__print_json(const struct sched_view *v, const struct run_ctx *ctx, struct json *j)
{
	uint32_t k;

	json__key(j, "busy_wait");
	json__array(j);
	for (k = 0; k <= XP_SCHED_DIRTY_IO; k++) {
		const struct spin_type *t = &v->spin.type[k];

		json__object(j);
		json__kv_string(j, "type", names[k]);
		json__kv_int(j, "samples", (int64_t)t->samples);
		json__kv_int(j, "running", (int64_t)t->running);
		json__kv_int(j, "spinning", (int64_t)t->spin);
		json__kv_int(j, "sleep_wake", (int64_t)t->syscall);
		json__kv_int(j, "other", (int64_t)t->other);
		json__kv_int(j, "unknown", (int64_t)t->unknown);
		json__key(j, "spinning_cores");
		json__double(j, cores(v, ctx, t->spin), 3);
		json__key(j, "flag");
		if (verdict(v, ctx, k) == SPIN_WORTH)
			json__string(j, flags[k]);
		else
			json__null(j);
		json__end_object(j);
	}
	json__end_array(j);
}
