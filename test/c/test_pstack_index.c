/* pstack --all's index (external/src/cmd/pstack/pstack_index.c): 16 Processes laid out with the
 * OTP 27 row in a memory snapshot, listed in the reverse of their address order by pid. Each kept
 * ref must name its own Process's place (its address and mark) and come out in pid order, with a
 * bad Process skipped and counted: none, one in the lower half (the refs then close a gap), one in
 * the upper half. A mark agrees with its own Process's marks and with no other's: not when the
 * pid, the frame pointer, the resume point, the reductions or a stack bound differ. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "layout.h"
#include "mem.h"
#include "pstack_list.h"

#define NPROC  16
#define STRIDE 1024
#define PROC   0x10000ull
#define HEAP   0x100000ull
#define HEAP_W 233

struct fixture {
	const struct xp_layout *row;
	struct target_value off[XP_OFF_COUNT];
	uint8_t bytes[NPROC * STRIDE];
};

static void put(struct fixture *f, int i, enum xp_off_id id, uint64_t v)
{
	memcpy(f->bytes + (size_t)i * STRIDE + f->row->off[id], &v, 8);
}

/* Process i's pid: the last in address order has the lowest. */
static uint64_t pid_of(int i)
{
	return (uint64_t)(100 - i) << 4 | XP_TAG_PID;
}

static uint64_t heap_of(int i)
{
	return HEAP + (uint64_t)i * 4096;
}

/* Every Process plausible, but bad (its heap size not its bounds') when bad >= 0. */
static void fixture_init(struct fixture *f, int bad)
{
	memset(f, 0, sizeof(*f));
	f->row = layout__find("15.2.7", XP_FLAVOR_JIT, "x86_64");
	layout__values(f->row, f->off);
	for (int i = 0; i < NPROC; i++) {
		put(f, i, XP_OFF_P_ID, pid_of(i));
		put(f, i, XP_OFF_P_HEAP, heap_of(i));
		put(f, i, XP_OFF_P_HEND, heap_of(i) + HEAP_W * 8);
		put(f, i, XP_OFF_P_HEAP_SZ, i == bad ? HEAP_W + 1 : HEAP_W);
		put(f, i, XP_OFF_P_HTOP, heap_of(i) + 100 * 8);
		put(f, i, XP_OFF_P_STOP, heap_of(i) + (uint64_t)(220 + i % 8) * 8);
		put(f, i, XP_OFF_P_REDS, 1000 + (uint64_t)i);
	}
}

/* Does a mark agree with a copy of its Process in which any one thing that tells a move
 * differs? true if one such copy agrees (a mark that misses a move). */
static bool moved_same(const struct index_mark *m, const struct process_marks *own)
{
	for (int k = 0; k < 7; k++) {
		struct process_marks b = *own;

		switch (k) {
		case 0:
			b.pid += 16;
			break;
		case 1:
			b.fp += 8;
			break;
		case 2:
			b.i += 4;
			break;
		case 3:
			b.reds += 1;
			break;
		case 4:
			b.stop -= 8;
			break;
		case 5:
			b.heap += 8;
			break;
		default:
			b.hend += 8;
			break;
		}
		if (pstack_index__same(m, &b))
			return true;
	}
	return false;
}

/* The index of the fixture with Process bad (-1: none) unreadable as a Process. */
static void check_index(int bad, const char *what)
{
	static struct fixture f;
	struct mem_region r = {.addr = PROC, .len = sizeof(f.bytes), .data = f.bytes};
	struct pid_format pids = {.format = XP_PID_PIXDATA}; /* not known: no slot check */
	volatile sig_atomic_t stop = 0;
	struct target t = {0};
	struct pstack_ctx c = {.t = &t, .stop = &stop};
	struct listing l = {.c = &c};
	struct pstack_index x = {0};
	uint32_t ixs[NPROC];
	uint64_t procs[NPROC];
	size_t kept = 0, i;
	char name[160];
	bool pids_ok = true, order_ok = true, marks_ok = true, moved_ok = false;

	fixture_init(&f, bad);
	if (mem__open_snapshot(&t.mem, &r, 1) ||
	    process__reader_init(&c.pr, t.mem, f.off, &pids, NULL)) {
		CHECK(what, false);
		return;
	}
	for (i = 0; i < NPROC; i++) { /* in table order: not address order */
		ixs[i] = (uint32_t)i;
		procs[i] = PROC + (uint64_t)((i * 7) % NPROC) * STRIDE;
	}
	snprintf(name, sizeof(name), "%s: the index is built", what);
	CHECK_INT(name, 0, pstack_index__all(&l, ixs, procs, NPROC, &x));
	kept = x.kept;
	snprintf(name, sizeof(name), "%s: kept", what);
	CHECK_U64(name, bad >= 0 ? NPROC - 1 : NPROC, kept);
	snprintf(name, sizeof(name), "%s: skipped as invalid", what);
	CHECK_U64(name, bad >= 0 ? 1 : 0, l.skipped[SKIP_INVALID]);
	for (i = 0; x.v && x.marks && i < kept; i++) {
		int at = (int)((x.procs[x.v[i].at] - PROC) / STRIDE);
		const struct index_mark *m = &x.marks[x.v[i].at];
		struct process_marks own;

		process__parse_marks(&c.pr, x.procs[x.v[i].at], f.bytes + (size_t)at * STRIDE,
				     STRIDE, &own);
		pids_ok &= at != bad && own.pid == pid_of(at) && pstack_index__same(m, &own) &&
			   pstack_index__walkable(m);
		marks_ok &= m->stop == heap_of(at) + (uint64_t)(220 + at % 8) * 8 &&
			    m->hend == heap_of(at) + HEAP_W * 8 && m->heap == heap_of(at);
		order_ok &= i == 0 || x.v[i - 1].order < x.v[i].order;
		if (i == 0)
			moved_ok = !moved_same(m, &own);
	}
	snprintf(name, sizeof(name), "%s: each ref's mark agrees with its own Process", what);
	CHECK(name, pids_ok);
	snprintf(name, sizeof(name), "%s: ... and holds its stack and heap bounds", what);
	CHECK(name, marks_ok);
	snprintf(name, sizeof(name), "%s: ... and agrees with none that moved", what);
	CHECK(name, moved_ok);
	snprintf(name, sizeof(name), "%s: in pid order", what);
	CHECK(name, order_ok);
	pstack_index__free(&x);
	mem__free(t.mem);
}

int main(void)
{
	check_index(-1, "none skipped");
	check_index(2, "one skipped in the lower half");
	check_index(13, "one skipped in the upper half");
	return check_done();
}
