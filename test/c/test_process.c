/* Unit tests for the Process snapshot `heap` reads (process.c): a Process laid out with the OTP 27
 * row in a memory snapshot, its memory fields read and checked (process__snap_memory), each
 * corruption caught by its reason, a delayed GC's abandoned heap accepted, a missing offset
 * reported as such. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "layout.h"
#include "mem.h"
#include "process.h"

#define PROC 0x10000ull
#define HEAP 0x20000ull

struct fixture {
	const struct xp_layout *row;
	struct target_value off[XP_OFF_COUNT];
	uint8_t bytes[1024];
};

static void put(struct fixture *f, enum xp_off_id id, uint64_t v)
{
	memcpy(f->bytes + f->row->off[id], &v, 8);
}

static void fixture_init(struct fixture *f)
{

	memset(f, 0, sizeof(*f));
	f->row = layout__find("15.2.7", XP_FLAVOR_JIT, "x86_64");
	layout__values(f->row, f->off);
	put(f, XP_OFF_P_ID, 0x1234 << 4 | XP_TAG_PID);
	put(f, XP_OFF_P_HEAP, HEAP);
	put(f, XP_OFF_P_HEND, HEAP + 233 * 8);
	put(f, XP_OFF_P_HEAP_SZ, 233);
	put(f, XP_OFF_P_HTOP, HEAP + 100 * 8);
	put(f, XP_OFF_P_STOP, HEAP + 230 * 8);
	put(f, XP_OFF_P_OLD_HEAP, 0x40000);
	put(f, XP_OFF_P_OLD_HTOP, 0x40000 + 50 * 8);
	put(f, XP_OFF_P_OLD_HEND, 0x40000 + 376 * 8);
	put(f, XP_OFF_P_MBUF_SZ, 12);
	put(f, XP_OFF_P_OFF_HEAP_OVERHEAD, 1000);
	put(f, XP_OFF_P_BIN_OLD_VHEAP, 24);
	put(f, XP_OFF_P_BIN_VHEAP_SZ, 46422);
	put(f, XP_OFF_P_REDS, 4242);
}

/* Read the fixture's Process back through a snapshot, as `heap` does. */
static int snap(struct fixture *f, struct process_snap *s, enum snap_mem_fault *fault)
{
	struct mem_region r = {.addr = PROC, .len = sizeof(f->bytes), .data = f->bytes};
	struct pid_format pids = {.format = XP_PID_PIXDATA};
	struct process_reader pr;
	struct mem *m = NULL;
	int rc;

	if ((rc = mem__open_snapshot(&m, &r, 1)))
		return rc;
	rc = process__reader_init(&pr, m, f->off, &pids, NULL);
	if (!rc)
		rc = process__read_snap(&pr, PROC, s);
	if (!rc)
		*fault = process__snap_memory(s);
	mem__free(m);
	return rc;
}

static void test_plausible(void)
{
	struct fixture f;
	struct process_snap s;
	enum snap_mem_fault fault = SNAP_MEM_FAULT_COUNT;

	fixture_init(&f);
	CHECK_INT("a plausible Process reads", 0, snap(&f, &s, &fault));
	CHECK_INT("its memory fields pass", SNAP_MEM_OK, fault);
	CHECK("every memory field shown", s.have_old && s.have_mbuf && s.have_vheap && s.have_reds);
	CHECK_INT("old heap size (bytes)", 376 * 8, (int64_t)(s.old_hend - s.old_heap));
	CHECK_INT("old heap used (bytes)", 50 * 8, (int64_t)(s.old_htop - s.old_heap));
	CHECK_INT("fragments (words)", 12, (int64_t)s.mbuf_sz);
	CHECK_INT("vheap young + old (words)", 1024, (int64_t)(s.vheap + s.old_vheap));
	CHECK_INT("reductions", 4242, (int64_t)s.reds);
}

static void test_no_old_heap(void)
{
	struct fixture f;
	struct process_snap s;
	enum snap_mem_fault fault = SNAP_MEM_FAULT_COUNT;

	fixture_init(&f);
	put(&f, XP_OFF_P_OLD_HEAP, 0);
	put(&f, XP_OFF_P_OLD_HTOP, 0);
	put(&f, XP_OFF_P_OLD_HEND, 0);
	CHECK_INT("no old generation (all NULL) reads", 0, snap(&f, &s, &fault));
	CHECK_INT("and passes", SNAP_MEM_OK, fault);
	CHECK("its old heap is shown, 0", s.have_old && s.old_hend == s.old_heap);
}

static void test_faults(void)
{
	struct fixture f;
	struct process_snap s;
	enum snap_mem_fault fault = SNAP_MEM_OK;

	fixture_init(&f);
	put(&f, XP_OFF_P_OLD_HTOP, 0x40000 + 400 * 8); /* past old_hend */
	CHECK_INT("old_htop > old_hend: still listed", 0, snap(&f, &s, &fault));
	CHECK_INT("old_htop > old_hend: bad_old_heap", SNAP_MEM_BAD_OLD, fault);
	CHECK("old heap not shown, the rest is", !s.have_old && s.have_mbuf && s.have_vheap);
	fixture_init(&f);
	put(&f, XP_OFF_P_MBUF_SZ, 1ull << 40);
	snap(&f, &s, &fault);
	CHECK_INT("fragments larger than any heap", SNAP_MEM_BAD_MBUF, fault);
	fixture_init(&f);
	put(&f, XP_OFF_P_OFF_HEAP_OVERHEAD, 0x7f0000001234ull); /* a pointer, not a count */
	snap(&f, &s, &fault);
	CHECK_INT("a pointer where the vheap count is", SNAP_MEM_BAD_VHEAP, fault);
	fixture_init(&f);
	f.off[XP_OFF_P_REDS].present = false;
	snap(&f, &s, &fault);
	CHECK_INT("an offset this VM lacks", SNAP_MEM_NO_OFFSET, fault);
	CHECK("reductions not shown", !s.have_reds && s.have_old);
}

/* A delayed GC runs the process on a fragment: hend - heap != heap_sz, abandoned_heap set
 * (B/erl_gc.c delay_garbage_collection). */
static void test_abandoned_heap(void)
{
	struct fixture f;
	struct process_snap s;
	enum snap_mem_fault fault;

	fixture_init(&f);
	put(&f, XP_OFF_P_HEAP_SZ, 987);
	CHECK_INT("heap_sz disagreeing with hend - heap: not a Process", -EINVAL,
		  snap(&f, &s, &fault));
	put(&f, XP_OFF_P_ABANDONED_HEAP, 0x30000);
	CHECK_INT("the same in a delayed GC (abandoned heap set) reads", 0, snap(&f, &s, &fault));
	CHECK_INT("heap_sz is the abandoned heap's", 987, (int64_t)s.heap_sz);
}

/* The end of a collection on a delayed heap (B/erl_gc.c erts_deallocate_young_generation): stop
 * already in the new heap, heap and hend a freed fragment's, heap_sz the abandoned heap's,
 * abandoned_heap cleared. The bounds refuse that copy; process__bounds_from_span_moved takes it,
 * and nothing else. */
static void test_moved_bounds(void)
{
	struct mem_region r;
	struct fixture f;
	struct pid_format pids = {.format = XP_PID_PIXDATA};
	struct process_reader pr;
	struct process_view p;
	struct mem *m = NULL;
	const uint8_t *span;

	fixture_init(&f);
	put(&f, XP_OFF_P_HEAP, 0x50000);
	put(&f, XP_OFF_P_HTOP, 0x50000);
	put(&f, XP_OFF_P_HEND, 0x50000 + 67 * 8);
	put(&f, XP_OFF_P_HEAP_SZ, 987);
	put(&f, XP_OFF_P_STOP, 0x70000 + 980 * 8);
	/* The snapshot copies the bytes: the reads now see this Process, the span checks below f.
	 */
	r = (struct mem_region){.addr = PROC, .len = sizeof(f.bytes), .data = f.bytes};
	if (mem__open_snapshot(&m, &r, 1) || process__reader_init(&pr, m, f.off, &pids, NULL) ||
	    !pr.bounds_len) {
		CHECK("moved bounds setup", false);
		mem__free(m);
		return;
	}
	span = f.bytes + pr.bounds_lo;
	CHECK_INT("a fragment's bounds, stop elsewhere: not bounds", -EINVAL,
		  process__bounds_from_span(&pr, PROC, span, &p));
	CHECK_INT("taken as a stack moved to its new heap", 0,
		  process__bounds_from_span_moved(&pr, PROC, span, &p));
	CHECK_INT("from stop", 0x70000 + 980 * 8, (int64_t)p.stop);
	CHECK_INT("its pid", 0x1234 << 4 | XP_TAG_PID, (int64_t)p.pid);
	CHECK_INT("the same read now", 0, process__read_bounds_moved(&pr, PROC, &p));
	CHECK_INT("read now: from stop", 0x70000 + 980 * 8, (int64_t)p.stop);
	CHECK_INT("read now: not bounds either", -EINVAL, process__read_bounds(&pr, PROC, &p));
	put(&f, XP_OFF_P_STOP, 0x50000 + 60 * 8);
	CHECK_INT("stop inside heap and hend: not moved", -EINVAL,
		  process__bounds_from_span_moved(&pr, PROC, span, &p));
	put(&f, XP_OFF_P_STOP, 0x70000 + 980 * 8 + 4);
	CHECK_INT("stop misaligned", -EINVAL, process__bounds_from_span_moved(&pr, PROC, span, &p));
	put(&f, XP_OFF_P_STOP, 0x70000 + 980 * 8);
	put(&f, XP_OFF_P_ABANDONED_HEAP, 0x30000);
	CHECK_INT("abandoned heap still set: the bounds' case, not this", -EINVAL,
		  process__bounds_from_span_moved(&pr, PROC, span, &p));
	put(&f, XP_OFF_P_ABANDONED_HEAP, 0);
	put(&f, XP_OFF_P_ID, 0x1234 << 4);
	CHECK_INT("not a pid", -EINVAL, process__bounds_from_span_moved(&pr, PROC, span, &p));
	mem__free(m);
}

/* The VM's heap sizes (B/erl_gc.c erts_init_gc): 233 and 999,631 words are two (the default
 * minimum, the first past the Fibonacci part); one word more is not; the table ends below 2^50
 * words. */
static void test_heap_sizes(void)
{
	uint64_t w[PROCESS_HEAP_SIZES];
	size_t n = process__heap_sizes(w, PROCESS_HEAP_SIZES);

	CHECK("heap_sizes.start", w[0] == 12 && w[1] == 38 && w[2] == 51 && w[5] == 233);
	CHECK("heap_sizes.fib_end", w[22] == 833026 && w[23] == 999631);
	CHECK("heap_sizes.bounded", n > 100 && n < PROCESS_HEAP_SIZES && w[n - 1] <= (1ULL << 50) &&
					w[n] == 0 && w[n - 1] + w[n - 1] / 5 > (1ULL << 50));
	CHECK("heap_sizes.is", process__is_heap_size(233) && process__is_heap_size(999631));
	CHECK("heap_sizes.is_not", !process__is_heap_size(234) && !process__is_heap_size(0));
	CHECK_INT("heap_sizes.short", 3, (int)process__heap_sizes(w, 3));
}

/* process__parse_marks against process__parse_snap on the same bytes: the same return, and the
 * snap's marks when it parses (pstack --all checks a million Processes with the first). */
static void test_marks(void)
{
	static const struct {
		enum xp_off_id id;
		uint64_t v;
	} edits[] = {{XP_OFF_P_ID, 0},
		     {XP_OFF_P_ID, 0x1234 << 4 | XP_TAG_PID},
		     {XP_OFF_P_HEAP_SZ, 987},
		     {XP_OFF_P_ABANDONED_HEAP, 0x30000},
		     {XP_OFF_P_HEND, HEAP + 1},
		     {XP_OFF_P_HEND, HEAP + 987 * 8},
		     {XP_OFF_P_FRAME_POINTER, 0x1234},
		     {XP_OFF_P_I, 0x7f0000001000},
		     {XP_OFF_P_STATE, 0x404},
		     {XP_OFF_P_HEAP, HEAP + 8}};
	struct pid_format pids = {.format = XP_PID_PIXDATA};
	struct process_marks m, want;
	struct process_reader pr;
	struct process_snap s;
	struct fixture f;
	int bad = 0, rc1, rc2;
	size_t i, n;

	fixture_init(&f);
	process__reader_init(&pr, NULL, f.off, &pids, NULL);
	n = process__snap_len(&pr);
	for (i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		put(&f, edits[i].id, edits[i].v);
		rc1 = process__parse_snap(&pr, PROC, f.bytes, n, &s);
		rc2 = process__parse_marks(&pr, PROC, f.bytes, n, &m);
		process__snap_marks(&s, &want);
		bad += rc1 != rc2 || (!rc1 && memcmp(&m, &want, sizeof(m)));
	}
	CHECK("marks as the snap's, rc and fields", bad == 0);
	CHECK_INT("misaligned address", -EINVAL,
		  process__parse_marks(&pr, PROC + 4, f.bytes, n, &m));
	CHECK_INT("a copy too short", -EINVAL, process__parse_marks(&pr, PROC, f.bytes, 16, &m));
}

int main(void)
{
	test_marks();
	test_plausible();
	test_no_old_heap();
	test_faults();
	test_abandoned_heap();
	test_moved_bounds();
	test_heap_sizes();
	return check_done();
}
