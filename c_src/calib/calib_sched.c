/* The scheduler table: ErtsSchedulerData field offsets from the narrowed candidate sets, the
 * stride from normal schedulers 1..N, array bases (normal: esdp of scheduler 1; dirty: an observed
 * esdp minus (dirty_no - 1) strides), every array element checked through mem__self_read, and OS
 * thread ids from /proc/self/task/TID/comm, and the run queues they point to (their index and
 * back-pointer, for record --trigger runq). Reference §5. Runs in the dirty scan.
 * Does not own: observing esdp by running (calib_self.c, calib_dirty.c). */
#include <dirent.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "calib_sched.h"
#include "calib_self.h"
#include "mem.h"

static uint32_t first_of(const struct facts *f, uint32_t type)
{
	return type == XP_SCHED_NORMAL	    ? 0
	       : type == XP_SCHED_DIRTY_CPU ? f->n_normal
					    : f->n_normal + f->n_dirty_cpu;
}

static uint32_t count_of(const struct facts *f, uint32_t type)
{
	return type == XP_SCHED_NORMAL	    ? f->n_normal
	       : type == XP_SCHED_DIRTY_CPU ? f->n_dirty_cpu
					    : f->n_dirty_io;
}

static void resolve_esd_fields(struct calib *c, const struct xp_layout *row)
{
	if (!c->esd_bits_init)
		return;
	calib__from_bits(c, row, XP_OFF_ESD_TYPE, &c->esd_type_bits, ESD_SCAN_WORDS, 8,
			 "the word equal to 0/1/2 on normal/dirty-cpu/dirty-io schedulers");
	calib__from_bits(c, row, XP_OFF_ESD_NO, &c->esd_no_bits, ESD_SCAN_WORDS, 8,
			 "the word equal to N on normal scheduler N, 0 on dirty ones");
	calib__from_bits(
	    c, row, XP_OFF_ESD_DIRTY_NO, &c->esd_dirty_no_bits, ESD_SCAN_WORDS, 8,
	    "the word equal to N on dirty scheduler N (thread name), 0 on normal ones");
}

/* (esdp_N - esdp_1) / (N - 1), the same for every observed normal scheduler. */
static void resolve_stride(struct calib *c, const struct facts *f)
{
	const struct xp_sched *s1 = &c->sched[0];
	uint64_t stride = 0;
	uint32_t n, seen = 0;

	if (!(s1->flags & XP_VAL_VERIFIED)) {
		calib__fail(c, XP_OFF_ESD_STRIDE, XP_WHY_NOT_FOUND, "scheduler 1 was not observed");
		return;
	}
	for (n = 2; n <= f->n_normal && n <= XP_MAX_SCHED; n++) {
		const struct xp_sched *s = &c->sched[n - 1];
		uint64_t d;

		if (!(s->flags & XP_VAL_VERIFIED) || s->esdp <= s1->esdp)
			continue;
		d = (s->esdp - s1->esdp) / (n - 1);
		if ((s->esdp - s1->esdp) % (n - 1) || (stride && d != stride)) {
			calib__fail(c, XP_OFF_ESD_STRIDE, XP_WHY_CHECK_FAILED,
				    "normal schedulers' esdp are not evenly spaced");
			return;
		}
		stride = d;
		seen++;
	}
	if (seen)
		calib__found(c, XP_OFF_ESD_STRIDE, (int64_t)stride,
			     "(esdp of scheduler N - esdp of scheduler 1) / (N - 1)");
}

/* Without two online normal schedulers the stride is not measured, but an array of two or
 * more elements whose every element names its own type and number at the table's stride
 * checks it. */
static void check_stride(const struct agent *a, struct calib *c)
{
	static const enum xp_addr_id bases[3] = {XP_ADDR_SCHED_DATA, XP_ADDR_DIRTY_CPU_SCHED_DATA,
						 XP_ADDR_DIRTY_IO_SCHED_DATA};
	uint32_t type;

	if (c->off[XP_OFF_ESD_STRIDE].state == DISC_FOUND)
		return;
	for (type = 0; type < 3; type++) {
		if (count_of(&a->facts, type) >= 2 &&
		    (c->addr[bases[type]].flags & XP_VAL_VERIFIED)) {
			calib__table_ok(
			    c, a->row, XP_OFF_ESD_STRIDE,
			    "a scheduler array checked element by element at this stride");
			return;
		}
	}
	calib__fail(c, XP_OFF_ESD_STRIDE, XP_WHY_UNCHECKABLE,
		    "one online normal scheduler and no array of two or more to check it on");
}

/* Every element of the array at base must name its own type and number. */
static int array_ok(uint64_t base, uint64_t stride, uint32_t type, uint32_t n, int32_t off_type,
		    int32_t off_no, int32_t off_dirty_no)
{
	uint32_t i, t;
	uint64_t no, dno;

	for (i = 0; i < n; i++) {
		uint64_t e = base + i * stride;

		if (mem__self_read_u32(e + (uint64_t)off_type, &t) ||
		    mem__self_read_u64(e + (uint64_t)off_no, &no) ||
		    mem__self_read_u64(e + (uint64_t)off_dirty_no, &dno))
			return 0;
		if (t != type || no != (type == XP_SCHED_NORMAL ? i + 1 : 0) ||
		    dno != (type == XP_SCHED_NORMAL ? 0 : i + 1))
			return 0;
	}
	return 1;
}

static uint64_t dynsym_ptr(const char *name)
{
	void *sym = dlsym(RTLD_DEFAULT, name);
	uint64_t v = 0;

	if (!sym || mem__self_read_u64((uint64_t)(uintptr_t)sym, &v))
		return 0;
	return v;
}

static void resolve_base(const struct agent *a, struct calib *c, uint32_t type, enum xp_addr_id id,
			 const char *sym)
{
	struct addr_obs *o = &c->addr[id];
	uint32_t first = first_of(&a->facts, type), n = count_of(&a->facts, type), i;
	int32_t stride = calib__off(c, a->row, XP_OFF_ESD_STRIDE);
	int32_t ot = calib__off(c, a->row, XP_OFF_ESD_TYPE),
		on = calib__off(c, a->row, XP_OFF_ESD_NO);
	int32_t od = calib__off(c, a->row, XP_OFF_ESD_DIRTY_NO);

	o->dynsym = dynsym_ptr(sym);
	if (n == 0 || stride <= 0 || ot < 0 || on < 0 || od < 0) {
		o->reason = n == 0 ? XP_WHY_UNSUPPORTED : XP_WHY_NOT_FOUND;
		o->note = n == 0 ? "no schedulers of this type" : "stride or field offsets unknown";
		return;
	}
	for (i = 0; i < n && first + i < XP_MAX_SCHED; i++) {
		const struct xp_sched *s = &c->sched[first + i];

		if (!(s->flags & XP_VAL_VERIFIED))
			continue;
		o->value = s->esdp - (uint64_t)i * (uint64_t)stride;
		o->source = XP_SRC_RUNTIME;
		break;
	}
	if (!o->value) {
		o->reason = XP_WHY_NOT_FOUND;
		o->note = "no NIF call was observed on a scheduler of this type";
		return;
	}
	if (array_ok(o->value, (uint64_t)stride, type, n, ot, on, od)) {
		o->flags = XP_VAL_PRESENT | XP_VAL_VERIFIED;
		o->reason = XP_WHY_NONE;
		o->note = "every element names its own type and number";
	} else {
		o->flags = XP_VAL_PRESENT;
		o->reason = XP_WHY_CHECK_FAILED;
		o->note = "an element does not name its own type and number";
	}
}

/* Fill tids (and, for unobserved dirty schedulers, esdp) from the thread names. A normal
 * scheduler whose observed tid disagrees with its name loses VERIFIED. */
static void fill_from_threads(const struct agent *a, struct calib *c)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");
	char comm[32];

	if (!d)
		return;
	while ((de = readdir(d))) {
		int32_t tid = (int32_t)atoi(de->d_name);
		uint32_t type, no, idx;
		struct xp_sched *s;

		if (tid <= 0 || calib__thread_name(tid, comm, sizeof(comm)) ||
		    layout__parse_thread_name(a->row, comm, &type, &no) || no < 1 ||
		    no > count_of(&a->facts, type))
			continue;
		idx = first_of(&a->facts, type) + no - 1;
		if (idx >= XP_MAX_SCHED)
			continue;
		s = &c->sched[idx];
		if (s->tid && s->tid != tid)
			s->flags &= ~XP_VAL_VERIFIED;
		s->type = type;
		s->number = no;
		s->tid = tid;
		s->flags |= XP_VAL_PRESENT;
	}
	closedir(d);
}

static void fill_esdp(const struct agent *a, struct calib *c)
{
	static const enum xp_addr_id base_of[3] = {XP_ADDR_SCHED_DATA, XP_ADDR_DIRTY_CPU_SCHED_DATA,
						   XP_ADDR_DIRTY_IO_SCHED_DATA};
	int32_t stride = calib__off(c, a->row, XP_OFF_ESD_STRIDE);
	uint32_t type, i;

	for (type = 0; type < 3 && stride > 0; type++) {
		const struct addr_obs *o = &c->addr[base_of[type]];

		for (i = 0; i < count_of(&a->facts, type); i++) {
			uint32_t idx = first_of(&a->facts, type) + i;

			if (idx >= XP_MAX_SCHED || !(o->flags & XP_VAL_VERIFIED) ||
			    (c->sched[idx].flags & XP_VAL_VERIFIED))
				continue;
			/* Known from the verified array, not from running there: no VERIFIED. */
			c->sched[idx].esdp = o->value + (uint64_t)i * (uint64_t)stride;
			c->sched[idx].type = type;
			c->sched[idx].number = i + 1;
			c->sched[idx].flags |= XP_VAL_PRESENT;
		}
	}
}

static void runq_fail(struct calib *c, enum xp_reason why, const char *note)
{
	calib__fail(c, XP_OFF_ESD_RUN_QUEUE, why, note);
	calib__fail(c, XP_OFF_RQ_IX, why, note);
	calib__fail(c, XP_OFF_RQ_SCHEDULER, why, note);
	calib__fail(c, XP_OFF_RQ_STRIDE, why, note);
}

/* The run queues (record --trigger runq): each normal scheduler's run_queue must hold a queue
 * whose ix is its number - 1 and whose scheduler field points back at it, all at the aligned
 * array's stride from one base. The lengths are only bounded, by the sampler on each read. */
static void check_runq(const struct agent *a, struct calib *c)
{
	const struct xp_layout *r = a->row;
	uint32_t i, ix, n = 0, first = first_of(&a->facts, XP_SCHED_NORMAL);
	uint64_t rq, back, base = 0;

	calib__fail(c, XP_OFF_RQ_LEN, XP_WHY_UNCHECKABLE, "a length: bounded on each read");
	calib__fail(c, XP_OFF_RQ_PROCS_LEN, XP_WHY_UNCHECKABLE, "a length: bounded on each read");
	calib__fail(c, XP_OFF_RQ_INFO_SIZE, XP_WHY_UNCHECKABLE, "a size: bounded on each read");
	if (!r || r->off[XP_OFF_ESD_RUN_QUEUE] < 0 || r->off[XP_OFF_RQ_IX] < 0 ||
	    r->off[XP_OFF_RQ_SCHEDULER] < 0 || r->off[XP_OFF_RQ_STRIDE] <= 0) {
		runq_fail(c, XP_WHY_UNSUPPORTED, "no run-queue offsets in the table");
		return;
	}
	for (i = 0; i < count_of(&a->facts, XP_SCHED_NORMAL) && first + i < XP_MAX_SCHED; i++) {
		const struct xp_sched *s = &c->sched[first + i];

		if (!(s->flags & XP_VAL_PRESENT) || !s->esdp || !s->number)
			continue;
		if (mem__self_read_u64(s->esdp + (uint64_t)r->off[XP_OFF_ESD_RUN_QUEUE], &rq) ||
		    mem__self_read_u32(rq + (uint64_t)r->off[XP_OFF_RQ_IX], &ix) ||
		    mem__self_read_u64(rq + (uint64_t)r->off[XP_OFF_RQ_SCHEDULER], &back) ||
		    ix != s->number - 1 || back != s->esdp ||
		    (n && rq != base + (uint64_t)ix * (uint64_t)r->off[XP_OFF_RQ_STRIDE])) {
			runq_fail(c, XP_WHY_CHECK_FAILED,
				  "a run queue's ix, back-pointer or place in the array");
			return;
		}
		base = rq - (uint64_t)ix * (uint64_t)r->off[XP_OFF_RQ_STRIDE];
		n++;
	}
	if (!n) {
		runq_fail(c, XP_WHY_UNCHECKABLE, "no normal scheduler's data known");
		return;
	}
	calib__table_ok(c, r, XP_OFF_ESD_RUN_QUEUE, "each normal scheduler's queue points back");
	calib__table_ok(c, r, XP_OFF_RQ_IX, "each normal scheduler's queue has its index");
	calib__table_ok(c, r, XP_OFF_RQ_SCHEDULER, "each normal scheduler's queue points back");
	if (n >= 2)
		calib__table_ok(c, r, XP_OFF_RQ_STRIDE, "the queues sit one stride apart");
	else
		calib__fail(c, XP_OFF_RQ_STRIDE, XP_WHY_UNCHECKABLE, "one normal scheduler");
}

void calib__sched_resolve(const struct agent *a, struct calib *c)
{
	resolve_esd_fields(c, a->row);
	resolve_stride(c, &a->facts);
	resolve_base(a, c, XP_SCHED_NORMAL, XP_ADDR_SCHED_DATA, "erts_aligned_scheduler_data");
	resolve_base(a, c, XP_SCHED_DIRTY_CPU, XP_ADDR_DIRTY_CPU_SCHED_DATA,
		     "erts_aligned_dirty_cpu_scheduler_data");
	resolve_base(a, c, XP_SCHED_DIRTY_IO, XP_ADDR_DIRTY_IO_SCHED_DATA,
		     "erts_aligned_dirty_io_scheduler_data");
	check_stride(a, c);
	fill_from_threads(a, c);
	fill_esdp(a, c);
	check_runq(a, c);
}
