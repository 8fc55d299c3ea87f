/* watch --method poll: P's struct read by the sampler itself every interval with
 * process_vm_readv, through the same decoding and accounting as a spy's copies (watch.c), for
 * the comparison in bench/watch_methods. Needs no agent. Does not own: the decoding. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "watch_int.h"
#include "watch_poll.h"

void watch__run_poll(struct watch *w, volatile sig_atomic_t *stop, perf_sample_fn on_sample)
{
	size_t n = (process__snap_len(&w->pr) + 7) & ~(size_t)7;
	uint64_t end_ns = w->o->duration_s > 0 ? w->start_ns + (uint64_t)(w->o->duration_s * 1e9)
					       : UINT64_MAX,
		 next = w->start_ns;
	struct perf_sample ps = {.regs_valid = true};
	uint8_t *buf = malloc(n);

	ps.regs[PERF_R_SP] = w->proc;
	ps.stack = buf;
	ps.stack_size = n;
	while (buf && !w->done) {
		struct timespec ts;
		uint64_t now = watch__now_ns();
		int rc;

		if (*stop || now >= end_ns) {
			w->end = *stop ? WATCH_END_INTERRUPTED : WATCH_END_DURATION;
			break;
		}
		rc = mem__read(w->t->mem, w->proc, buf, n);
		if (rc == -ESRCH) {
			w->end = WATCH_END_VM_EXITED;
			break;
		}
		ps.time = watch__now_ns();
		if (rc)
			w->c.unreadable++;
		else
			on_sample(&ps, w);
		next += w->interval_ns;
		if (next < now)
			next = now;
		ts.tv_sec = (time_t)(next / 1000000000ull);
		ts.tv_nsec = (long)(next % 1000000000ull);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	free(buf);
}
