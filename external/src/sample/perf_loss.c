/* Records perf lost, named by scheduler and time window. See perf_loss.h. Does not own: counting
 * them (kernel/perf_ring.c). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "perf_loss.h"

static const char *const sched_type[] = {"normal", "dirty_cpu", "dirty_io"};

/* "normal scheduler 5 (tid 1234)", or "thread 1234" when tid is no scheduler. */
static void thread_name(const struct target *t, pid_t tid, char *buf, size_t len)
{
	for (size_t i = 0; t && i < t->nsched; i++) {
		const struct target_sched *s = &t->sched[i];

		if (s->tid != tid)
			continue;
		snprintf(buf, len, "%s scheduler %u (tid %d)",
			 s->type < 3 ? sched_type[s->type] : "other", s->number, (int)tid);
		return;
	}
	snprintf(buf, len, "thread %d", (int)tid);
}

static double rel_s(const struct perf_stats *ps, uint64_t ns)
{
	return ns > ps->opened_ns ? (double)(ns - ps->opened_ns) / 1e9 : 0.0;
}

void perf_loss__format(const struct perf_loss *l, const struct perf_stats *ps,
		       const struct target *t, char *buf, size_t len)
{
	char who[96], when[64];

	thread_name(t, l->tid, who, sizeof(who));
	if (l->to_ns)
		snprintf(when, sizeof(when), "between %.3f and %.3f s", rel_s(ps, l->from_ns),
			 rel_s(ps, l->to_ns));
	else
		snprintf(when, sizeof(when), "after %.3f s", rel_s(ps, l->from_ns));
	if (l->cpu < 0)
		snprintf(buf, len, "perf: %" PRIu64 " records lost from %s's ring %s", l->lost, who,
			 when);
	else
		snprintf(buf, len,
			 "perf: %" PRIu64 " records lost on CPU %d's ring %s (of the threads "
			 "that ran there; %s's when it had room again)",
			 l->lost, l->cpu, when, who);
}

void perf_loss__print(const struct perf_stats *ps, const struct target *t, FILE *f)
{
	char line[320];

	for (uint32_t i = 0; i < ps->nlosses; i++) {
		perf_loss__format(&ps->losses[i], ps, t, line, sizeof(line));
		fprintf(f, "    %s\n", line);
	}
	if (ps->lost_unlisted)
		fprintf(f, "    perf: %" PRIu64 " records lost in windows past the first %d\n",
			ps->lost_unlisted, PERF_LOSS_MAX);
}

void perf_loss__print_rings(const struct perf_stats *ps, FILE *f)
{
	if (!ps->rings)
		return;
	fprintf(f,
		"  perf rings: %" PRIu32 " (one per %s) of %" PRIu64 " KiB: %" PRIu64
		" KiB; fullest at a drain %" PRIu64 " KiB (%.0f%%); longest between drains %.1f "
		"ms, longest drain %.1f ms\n",
		ps->rings, ps->shared_rings ? "CPU" : "thread", ps->ring_bytes >> 10,
		(ps->rings * ps->ring_bytes) >> 10, ps->peak_fill >> 10,
		ps->ring_bytes ? 100.0 * (double)ps->peak_fill / (double)ps->ring_bytes : 0.0,
		(double)ps->longest_gap_ns / 1e6, (double)ps->longest_drain_ns / 1e6);
}

char *perf_loss__text(const struct perf_stats *ps, const struct target *t)
{
	size_t cap = (size_t)(ps->nlosses + 1) * 320, n = 0;
	char *buf, line[320];

	if (!ps->lost)
		return NULL;
	buf = malloc(cap);
	if (!buf)
		return NULL;
	buf[0] = '\0';
	for (uint32_t i = 0; i < ps->nlosses; i++) {
		perf_loss__format(&ps->losses[i], ps, t, line, sizeof(line));
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "\n" : "", line);
	}
	if (ps->lost_unlisted || !ps->nlosses)
		snprintf(buf + n, cap - n, "%sperf: %" PRIu64 " records lost%s", n ? "\n" : "",
			 ps->lost_unlisted ? ps->lost_unlisted : ps->lost,
			 ps->lost_unlisted ? " in windows past the list" : "");
	return buf;
}
