/* Dirty schedulers from inside a dirty NIF: which one we run on (thread name, independent of
 * any ErtsSchedulerData offset) and its ErtsSchedulerData, found on our own thread's stack.
 * Does not own: array bases (calib_sched.c). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "calib_self.h"
#include "mem.h"

#define STACK_SCAN_MAX (64u << 10)
#define TRIED_MAX      256

struct dirty_scan {
	uint64_t real, shadow, lo, hi, esdp;
	int32_t cp;
	unsigned hits, ntried;
	uint64_t tried[TRIED_MAX];
	uint64_t esd[ESD_SCAN_WORDS];
};

int calib__thread_name(int32_t tid, char *buf, size_t cap)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

static int tried_before(struct dirty_scan *d, uint64_t p)
{
	unsigned i;

	for (i = 0; i < d->ntried; i++)
		if (d->tried[i] == p)
			return 1;
	if (d->ntried < TRIED_MAX)
		d->tried[d->ntried++] = p;
	return d->ntried >= TRIED_MAX;
}

static void try_candidate(struct dirty_scan *d, uint64_t p)
{
	uint64_t t[ESD_SCAN_WORDS];
	size_t n, j;

	if ((p & 7) || !mem__plausible(p) || p == d->real || p == d->shadow ||
	    (p >= d->lo && p < d->hi) || tried_before(d, p))
		return;
	n = mem__self_read_prefix(p, t, sizeof(t), sizeof(t)) / 8;
	if (n != ESD_SCAN_WORDS || t[d->cp / 8] != d->real)
		return;
	for (j = 0; j < n && t[j] != d->shadow; j++)
		;
	if (j == n || d->esdp == p)
		return;
	d->hits++;
	d->esdp = p;
	memcpy(d->esd, t, sizeof(t));
}

/* In a dirty NIF env->proc is the scheduler's shadow process (erts_make_dirty_shadow_proc,
 * B/erl_nfunc_sched.h 25:281); neither it nor the real process has scheduler_data set
 * (erts_schedule sets it for normal schedulers only, B/erl_process.c 25:10020). But
 * esdp->current_process is the real process and esdp->dirty_shadow_process the shadow, and
 * erts_dirty_process_main(esdp) keeps esdp on this thread's stack: take the one pointer there
 * whose target holds both. */
static int scan_stack(struct dirty_scan *d)
{
	pthread_attr_t attr;
	void *stack_lo;
	size_t stack_sz;
	uint64_t a, top;

	if (pthread_getattr_np(pthread_self(), &attr))
		return -ENOTSUP;
	if (pthread_attr_getstack(&attr, &stack_lo, &stack_sz)) {
		pthread_attr_destroy(&attr);
		return -ENOTSUP;
	}
	pthread_attr_destroy(&attr);
	top = (uint64_t)(uintptr_t)stack_lo + stack_sz;
	d->lo = (uint64_t)(uintptr_t)&a & ~7ull;
	d->hi = top;
	if (top - d->lo > STACK_SCAN_MAX)
		top = d->lo + STACK_SCAN_MAX;
	/* Our own stack, between our frame and the thread's stack top: always mapped. */
	for (a = d->lo; a + 8 <= top; a += 8)
		try_candidate(d, *(const uint64_t *)(uintptr_t)a);
	if (d->hits == 0)
		return -ENOENT;
	return d->hits == 1 ? 0 : -EEXIST;
}

static int where_am_i(ErlNifEnv *env, const struct agent *a, int32_t tid, uint32_t *type,
		      uint32_t *no)
{
	char comm[32];
	int tt = enif_thread_type();

	if (calib__thread_name(tid, comm, sizeof(comm)) ||
	    layout__parse_thread_name(a->row, comm, type, no))
		return -ENOENT;
	if (!((tt == ERL_NIF_THR_DIRTY_CPU_SCHEDULER && *type == XP_SCHED_DIRTY_CPU) ||
	      (tt == ERL_NIF_THR_DIRTY_IO_SCHEDULER && *type == XP_SCHED_DIRTY_IO)))
		return -ESRCH;
	return 0;
}

static void record_sched(struct agent *a, struct dirty_scan *d, uint32_t type, uint32_t no,
			 int32_t tid)
{
	const struct facts *f = &a->facts;
	uint32_t n = type == XP_SCHED_DIRTY_CPU ? f->n_dirty_cpu : f->n_dirty_io;
	uint32_t idx = f->n_normal + (type == XP_SCHED_DIRTY_IO ? f->n_dirty_cpu : 0) + no - 1;
	struct xp_sched *e;

	calib__narrow_esd(&a->calib, d->esd, type, 0, no);
	if (no < 1 || no > n || idx >= XP_MAX_SCHED)
		return;
	e = &a->calib.sched[idx];
	e->type = type;
	e->number = no;
	e->tid = tid;
	e->flags = XP_VAL_PRESENT | XP_VAL_VERIFIED;
	e->esdp = d->esdp;
}

int calib__dirty(struct agent *a, ErlNifEnv *env, uint64_t real_proc, uint32_t *type,
		 uint32_t *dirty_no, int32_t *tid)
{
	struct dirty_scan *d;
	int err;

	*tid = (int32_t)syscall(SYS_gettid);
	err = where_am_i(env, a, *tid, type, dirty_no);
	if (err)
		return err;
	d = enif_alloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	memset(d, 0, sizeof(*d));
	d->real = real_proc;
	memcpy(&d->shadow, (const char *)env + ENV_OFF_PROC, 8);
	enif_mutex_lock(a->lock);
	d->cp = calib__off(&a->calib, a->row, XP_OFF_ESD_CURRENT_PROCESS);
	enif_mutex_unlock(a->lock);
	err = d->cp >= 0 && d->cp < ESD_SCAN_BYTES && !(d->cp & 7) ? scan_stack(d) : -ENOENT;
	if (!err) {
		enif_mutex_lock(a->lock);
		record_sched(a, d, *type, *dirty_no, *tid);
		enif_mutex_unlock(a->lock);
	}
	enif_free(d);
	return err;
}
