/* The runq trigger and the run-queue lengths of the summary. See trig_runq.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trig_runq.h"

#define RUNQ_MAX_LEN  (1u << 27) /* ERTS_PTAB_MAX_SIZE: no queue holds more processes */
#define RUNQ_MAX_SPAN 4096u
#define RUNQ_UNKNOWN  UINT32_MAX

static const enum xp_off_id needed[] = {XP_OFF_ESD_RUN_QUEUE, XP_OFF_RQ_IX,
					XP_OFF_RQ_SCHEDULER,  XP_OFF_RQ_LEN,
					XP_OFF_RQ_PROCS_LEN,  XP_OFF_RQ_INFO_SIZE};

static int64_t off(const struct runq_watch *w, enum xp_off_id id)
{
	return w->t->off[id].value;
}

static int64_t span_of(const struct runq_watch *w)
{
	int64_t end = off(w, XP_OFF_RQ_PROCS_LEN) + RUNQ_PRIO_LEVELS * off(w, XP_OFF_RQ_INFO_SIZE);

	end = off(w, XP_OFF_RQ_SCHEDULER) + 8 > end ? off(w, XP_OFF_RQ_SCHEDULER) + 8 : end;
	end = off(w, XP_OFF_RQ_LEN) + 4 > end ? off(w, XP_OFF_RQ_LEN) + 4 : end;
	return off(w, XP_OFF_RQ_IX) + 4 > end ? off(w, XP_OFF_RQ_IX) + 4 : end;
}

static int alloc_watch(struct runq_watch *w)
{
	size_t i, n = 0;

	for (i = 0; i < w->t->nsched; i++)
		n += w->t->sched[i].type == XP_SCHED_NORMAL;
	w->q = calloc(n ? n : 1, sizeof(*w->q));
	w->buf = calloc(n ? n : 1, w->span);
	w->reqs = calloc(n ? n : 1, sizeof(*w->reqs));
	w->h_time = calloc(RUNQ_HISTORY, sizeof(*w->h_time));
	w->h_len = calloc(RUNQ_HISTORY * (n ? n : 1), sizeof(*w->h_len));
	if (!w->q || !w->buf || !w->reqs || !w->h_time || !w->h_len)
		return -ENOMEM;
	for (i = 0; i < w->t->nsched; i++) {
		if (w->t->sched[i].type == XP_SCHED_NORMAL)
			w->q[w->nq++].sched = i;
	}
	return 0;
}

/* Processes waiting in one queue's bytes, or -1 when they fail the checks. */
static int64_t check_one(const struct runq_watch *w, const struct runq_q *q, const uint8_t *b)
{
	const struct target_sched *s = &w->t->sched[q->sched];
	int32_t ix, len, plen;
	uint64_t back;
	int64_t sum = 0;
	int i;

	memcpy(&ix, b + off(w, XP_OFF_RQ_IX), sizeof(ix));
	memcpy(&back, b + off(w, XP_OFF_RQ_SCHEDULER), sizeof(back));
	memcpy(&len, b + off(w, XP_OFF_RQ_LEN), sizeof(len));
	if (ix != (int32_t)s->number - 1 || back != q->esdp || len < 0 ||
	    (uint32_t)len > RUNQ_MAX_LEN)
		return -1;
	for (i = 0; i < RUNQ_PRIO_LEVELS; i++) {
		memcpy(&plen,
		       b + off(w, XP_OFF_RQ_PROCS_LEN) + (int64_t)i * off(w, XP_OFF_RQ_INFO_SIZE),
		       sizeof(plen));
		if (plen < 0 || (uint32_t)plen > RUNQ_MAX_LEN)
			return -1;
		sum += plen;
	}
	return sum;
}

int runq__init(struct runq_watch *w, struct target *t, int64_t limit, char *err, size_t errlen)
{
	size_t i;

	*w = (struct runq_watch){.t = t, .limit = limit, .armed = true};
	for (i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		if (!t->off[needed[i]].present) {
			snprintf(
			    err, errlen,
			    "--trigger runq: the run queues' layout of this VM is unknown (%s)",
			    layout__off_name(needed[i]));
			return -ENOTSUP;
		}
	}
	w->span = (size_t)span_of(w);
	if (w->span > RUNQ_MAX_SPAN || off(w, XP_OFF_RQ_INFO_SIZE) < 4) {
		snprintf(err, errlen, "--trigger runq: implausible run-queue offsets");
		return -ENOTSUP;
	}
	if (alloc_watch(w))
		return -ENOMEM;
	/* Verify now what is known now; schedulers whose data is learned later, when first read. */
	return runq__check(w, 0, NULL) < 0 ? (snprintf(err, errlen, "%s", w->why), -ENOTSUP) : 0;
}

void runq__free(struct runq_watch *w)
{
	free(w->q);
	free(w->buf);
	free(w->reqs);
	free(w->h_time);
	free(w->h_len);
	w->q = NULL;
	w->buf = NULL;
	w->reqs = NULL;
	w->h_time = NULL;
	w->h_len = NULL;
}

/* Each queue's address, from its scheduler's data once that is known. */
static int locate(struct runq_watch *w)
{
	size_t i;

	for (i = 0; i < w->nq; i++) {
		struct runq_q *q = &w->q[i];
		uint64_t esdp = w->t->sched[q->sched].esdp, rq;

		if (q->rq || !esdp)
			continue;
		if (mem__read_u64(w->t->mem, esdp + (uint64_t)off(w, XP_OFF_ESD_RUN_QUEUE), &rq))
			continue; /* tried again next time */
		if (!mem__plausible(rq) || rq % 8) {
			snprintf(
			    w->why, sizeof(w->why),
			    "--trigger runq: scheduler %u's run_queue (0x%llx) is not a pointer: "
			    "this VM's run-queue offsets do not hold",
			    w->t->sched[q->sched].number, (unsigned long long)rq);
			return -ENOTSUP;
		}
		q->esdp = esdp;
		q->rq = rq;
	}
	return 0;
}

/* One reading of every located queue into the history; the longest, or -1 when none. */
static int64_t read_all(struct runq_watch *w, uint64_t now_ns)
{
	uint32_t *row = &w->h_len[w->h_next * w->nq];
	int64_t best = -1, n;
	size_t i, k = 0;

	for (i = 0; i < w->nq; i++) {
		row[i] = RUNQ_UNKNOWN;
		if (w->q[i].rq)
			w->reqs[k++] = (struct mem_req){
			    .addr = w->q[i].rq, .buf = w->buf + i * w->span, .len = w->span};
	}
	if (!k || mem__read_many(w->t->mem, w->reqs, k))
		return -1;
	w->reads++;
	for (i = 0, k = 0; i < w->nq; i++) {
		if (!w->q[i].rq)
			continue;
		n = w->reqs[k++].rc ? -1 : check_one(w, &w->q[i], w->buf + i * w->span);
		if (n < 0 && !w->q[i].verified && !w->refused) {
			w->refused = true;
			snprintf(
			    w->why, sizeof(w->why),
			    "--trigger runq: scheduler %u's run queue at 0x%llx fails its checks "
			    "(ix, back-pointer, lengths): this VM's run-queue offsets do not hold",
			    w->t->sched[w->q[i].sched].number, (unsigned long long)w->q[i].rq);
		}
		if (n < 0) {
			w->bad++;
			continue;
		}
		w->q[i].verified = true;
		row[i] = (uint32_t)n;
		best = n > best ? n : best;
	}
	w->h_time[w->h_next] = now_ns;
	w->h_next = (w->h_next + 1) % RUNQ_HISTORY;
	w->h_count += w->h_count < RUNQ_HISTORY;
	return best;
}

int runq__check(struct runq_watch *w, uint64_t now_ns, struct trig_event *ev)
{
	int64_t best;
	size_t i, at = 0;

	if (w->refused || now_ns < w->next_read_ns)
		return w->refused ? -ENOTSUP : 0;
	w->next_read_ns = now_ns + TRIG_RUNQ_EVERY_MS * 1000000ull;
	if (locate(w) || (best = read_all(w, now_ns), w->refused)) {
		w->refused = true;
		return -ENOTSUP;
	}
	if (best >= 0 && best < w->limit / 2)
		w->armed = true;
	if (!ev || !w->limit || !w->armed || best < w->limit)
		return 0;
	for (i = 0; i < w->nq; i++) {
		if (w->h_len[((w->h_next + RUNQ_HISTORY - 1) % RUNQ_HISTORY) * w->nq + i] ==
		    (uint32_t)best)
			at = i;
	}
	w->armed = false;
	ev->kind = TRIG_RUNQ;
	ev->time_ns = now_ns;
	ev->has_sched = true;
	ev->sched = w->q[at].sched;
	snprintf(ev->detail, sizeof(ev->detail),
		 "the run queue of scheduler %u held %lld processes (>= %lld)",
		 w->t->sched[w->q[at].sched].number, (long long)best, (long long)w->limit);
	return 1;
}

int64_t runq__max_in(const struct runq_watch *w, size_t sched, uint64_t from_ns, uint64_t to_ns)
{
	int64_t best = -1;
	size_t i, k, qi;

	for (qi = 0; qi < w->nq && w->q[qi].sched != sched; qi++)
		;
	if (qi == w->nq || !w->h_len)
		return -1;
	for (k = 0; k < w->h_count; k++) {
		i = (w->h_next + RUNQ_HISTORY - 1 - k) % RUNQ_HISTORY;
		if (w->h_time[i] < from_ns || w->h_time[i] > to_ns ||
		    w->h_len[i * w->nq + qi] == RUNQ_UNKNOWN)
			continue;
		best = (int64_t)w->h_len[i * w->nq + qi] > best ? w->h_len[i * w->nq + qi] : best;
	}
	return best;
}
