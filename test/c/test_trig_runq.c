/* Unit tests for the runq trigger (external/src/cmd/record/trig_runq.c) on a memory snapshot laid
 * out with the OTP 27 row: each way it refuses (fail closed, as `record --ring --trigger runq=N`
 * then exits 6 with the message): an offset this VM's layout lacks, implausible offsets, a
 * scheduler's run_queue that is not a pointer, a queue whose ix or back-pointer does not hold;
 * and, on a queue that holds, that it fires at N, not again until every queue fell under N / 2,
 * and keeps the readings for the summary. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "layout.h"
#include "mem.h"
#include "trig_runq.h"

#define ESDP 0x100000ull
#define RQ   0x200000ull
#define MS   1000000ull

struct fixture {
	const struct xp_layout *row;
	struct target t;
	struct target_sched sched[2];
	uint8_t esdp[4096], rq[4096];
	struct mem_region regions[2];
};

static void put64(uint8_t *b, int64_t off, uint64_t v)
{
	memcpy(b + off, &v, sizeof(v));
}

static void put32(uint8_t *b, int64_t off, int32_t v)
{
	memcpy(b + off, &v, sizeof(v));
}

/* The processes waiting at each of the four priorities of the queue. */
static void set_len(struct fixture *f, int32_t normal)
{
	const int32_t *o = f->row->off;
	int i;

	put32(f->rq, o[XP_OFF_RQ_LEN], normal);
	for (i = 0; i < RUNQ_PRIO_LEVELS; i++)
		put32(f->rq, (int64_t)o[XP_OFF_RQ_PROCS_LEN] + i * o[XP_OFF_RQ_INFO_SIZE],
		      i == 2 ? normal : 0);
}

/* One normal scheduler (number 1) and one dirty one; its queue's ix 0 and back-pointer hold. */
static int fixture_init(struct fixture *f)
{

	memset(f, 0, sizeof(*f));
	f->row = layout__find("15.2.7", XP_FLAVOR_JIT, "x86_64");
	if (!f->row)
		return -1;
	layout__values(f->row, f->t.off);
	f->sched[0] = (struct target_sched){.type = XP_SCHED_NORMAL, .number = 1, .esdp = ESDP};
	f->sched[1] = (struct target_sched){.type = XP_SCHED_DIRTY_CPU, .number = 1};
	f->t.sched = f->sched;
	f->t.nsched = 2;
	put64(f->esdp, f->row->off[XP_OFF_ESD_RUN_QUEUE], RQ);
	put32(f->rq, f->row->off[XP_OFF_RQ_IX], 0);
	put64(f->rq, f->row->off[XP_OFF_RQ_SCHEDULER], ESDP);
	set_len(f, 0);
	return 0;
}

/* The VM's memory as the fixture's bytes are now (a snapshot keeps its own copy). */
static int fixture_open(struct fixture *f)
{
	mem__free(f->t.mem);
	f->t.mem = NULL;
	f->regions[0] = (struct mem_region){.addr = ESDP, .len = sizeof(f->esdp), .data = f->esdp};
	f->regions[1] = (struct mem_region){.addr = RQ, .len = sizeof(f->rq), .data = f->rq};
	return mem__open_snapshot(&f->t.mem, f->regions, 2);
}

static void fixture_free(struct fixture *f)
{
	mem__free(f->t.mem);
}

/* runq__init's return and message on the fixture as changed by `change`. */
static int refused(void (*change)(struct fixture *f), char *err, size_t len)
{
	struct fixture f;
	struct runq_watch w;
	int rc;

	err[0] = '\0';
	if (fixture_init(&f))
		return -999;
	change(&f);
	if (fixture_open(&f))
		return -998;
	rc = runq__init(&w, &f.t, 10, err, len);
	runq__free(&w);
	fixture_free(&f);
	return rc;
}

static void no_rq_len(struct fixture *f)
{
	f->t.off[XP_OFF_RQ_LEN].present = false;
}

static void tiny_info(struct fixture *f)
{
	f->t.off[XP_OFF_RQ_INFO_SIZE].value = 2;
}

static void odd_pointer(struct fixture *f)
{
	put64(f->esdp, f->row->off[XP_OFF_ESD_RUN_QUEUE], RQ + 4);
}

static void wrong_ix(struct fixture *f)
{
	put32(f->rq, f->row->off[XP_OFF_RQ_IX], 3);
}

static void wrong_back(struct fixture *f)
{
	put64(f->rq, f->row->off[XP_OFF_RQ_SCHEDULER], ESDP + 0x1000);
}

static void negative_len(struct fixture *f)
{
	set_len(f, -5);
}

static void test_refusals(void)
{
	char err[256];

	CHECK_INT("missing offset: refused", -ENOTSUP, refused(no_rq_len, err, sizeof(err)));
	CHECK_STR("missing offset: says which",
		  "--trigger runq: the run queues' layout of this VM is unknown (rq_len)", err);
	CHECK_INT("implausible offsets: refused", -ENOTSUP, refused(tiny_info, err, sizeof(err)));
	CHECK_STR("implausible offsets: says so", "--trigger runq: implausible run-queue offsets",
		  err);
	CHECK_INT("run_queue not a pointer: refused", -ENOTSUP,
		  refused(odd_pointer, err, sizeof(err)));
	CHECK_STR("run_queue not a pointer: says so",
		  "--trigger runq: scheduler 1's run_queue (0x200004) is not a pointer: this VM's "
		  "run-queue offsets do not hold",
		  err);
	CHECK_INT("wrong ix: refused", -ENOTSUP, refused(wrong_ix, err, sizeof(err)));
	CHECK_STR("wrong ix: says so",
		  "--trigger runq: scheduler 1's run queue at 0x200000 fails its checks (ix, "
		  "back-pointer, lengths): this VM's run-queue offsets do not hold",
		  err);
	CHECK_INT("wrong back-pointer: refused", -ENOTSUP, refused(wrong_back, err, sizeof(err)));
	CHECK_INT("negative length: refused", -ENOTSUP, refused(negative_len, err, sizeof(err)));
}

static void test_fires(void)
{
	struct fixture f;
	struct runq_watch w;
	struct trig_event ev;
	char err[256] = "";
	uint64_t t = 1000 * MS;

	if (fixture_init(&f) || fixture_open(&f)) {
		CHECK("fixture", false);
		return;
	}
	CHECK_INT("init on a queue that holds", 0, runq__init(&w, &f.t, 10, err, sizeof(err)));
	CHECK_INT("one queue: the normal scheduler's", 1, (int)w.nq);
	set_len(&f, 12);
	fixture_open(&f);
	CHECK_INT("12 >= 10: fires", 1, runq__check(&w, t += 20 * MS, &ev));
	CHECK_INT("the event is runq's", TRIG_RUNQ, ev.kind);
	CHECK_STR("the event says which queue and how long",
		  "the run queue of scheduler 1 held 12 processes (>= 10)", ev.detail);
	CHECK_INT("read again before 20 ms: nothing", 0, runq__check(&w, t + 5 * MS, &ev));
	CHECK_INT("still 12: not again", 0, runq__check(&w, t += 20 * MS, &ev));
	set_len(&f, 6);
	fixture_open(&f);
	CHECK_INT("6: not under 10 / 2, not re-armed", 0, runq__check(&w, t += 20 * MS, &ev));
	set_len(&f, 11);
	fixture_open(&f);
	CHECK_INT("11 without falling under 5: not again", 0, runq__check(&w, t += 20 * MS, &ev));
	set_len(&f, 4);
	fixture_open(&f);
	CHECK_INT("4: re-armed, no event", 0, runq__check(&w, t += 20 * MS, &ev));
	set_len(&f, 10);
	fixture_open(&f);
	CHECK_INT("10 once re-armed: fires", 1, runq__check(&w, t += 20 * MS, &ev));
	CHECK_INT("the summary's most in the window", 12, (int)runq__max_in(&w, 0, 1000 * MS, t));
	CHECK_INT("no reading of the dirty scheduler", -1, (int)runq__max_in(&w, 1, 0, t));
	/* A queue verified once that fails a later read is counted, not believed. */
	put32(f.rq, f.row->off[XP_OFF_RQ_IX], 7);
	fixture_open(&f);
	CHECK_INT("a bad read after a good one: not refused", 0,
		  runq__check(&w, t += 20 * MS, &ev));
	CHECK_INT("and counted", 1, (int)w.bad);
	runq__free(&w);
	fixture_free(&f);
}

int main(void)
{
	test_refusals();
	test_fires();
	return check_done();
}
