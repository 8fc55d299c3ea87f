/* A sampler's life (see sampler.h): opening the perf events and the in-kernel capture over a
 * target's scheduler threads (or a replay with no events), polling them, its counters, closing.
 * Does not own: what is done with each sample (sampler.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "privilege.h"
#include "process.h"
#include "sampler_int.h"

/* The in-kernel capture, unless --no-bpf or the kernel says no (st.kcapture_why). Each scheduler
 * thread whose esdp is known gets its current_process looked up at the sample. */
static void open_kcapture(struct sampler *s)
{
	const struct target_value *htop = &s->t->off[XP_OFF_P_HTOP];
	const struct target_value *hend = &s->t->off[XP_OFF_P_HEND];
	struct kcap_cfg c = {.span_lo = s->pr.bounds_lo,
			     .span_len = s->pr.bounds_len,
			     .htop_off = (uint32_t)htop->value,
			     .hend_off = (uint32_t)hend->value,
			     .stop_off = (uint32_t)s->t->off[XP_OFF_P_STOP].value,
			     .heap_off = (uint32_t)s->t->off[XP_OFF_P_HEAP].value,
			     .rate_hz = s->opts.freq_hz,
			     .perf_stack = PERF_STACK_CAPTURED};
	const struct target_value *state = &s->t->off[XP_OFF_P_STATE];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t i;

	c.cpus = cpus > 0 ? (uint32_t)cpus : 1;
	c.normal_exit = s->ecfg.normal_exit;
	/* Those of a heap the reader takes (PROCESS_MAX_HEAP): the verifier walks the program's
	 * search once per size: 19 ms to load with the 66 kept, 36 ms with all 138, 4 ms before
	 * the search was added. */
	process__heap_sizes(c.heap_words, KCAP_HEAP_SIZES);
	for (i = 0; i < KCAP_HEAP_SIZES; i++) {
		if (c.heap_words[i] > PROCESS_MAX_HEAP / 8)
			c.heap_words[i] = 0;
	}
	if (state->present && state->value > 0 && state->value < 4096)
		c.state_off = (uint32_t)state->value;

	if (s->opts.no_bpf) {
		snprintf(s->st.kcapture_why, sizeof(s->st.kcapture_why), "--no-bpf");
		return;
	}
	if (kcapture__open(&s->kc, &c, s->st.kcapture_why, sizeof(s->st.kcapture_why)))
		return;
	for (i = 0; i < s->t->nsched; i++)
		sampler__watch_sched(s, &s->t->sched[i]);
}

/* Until every normal scheduler's data is known, the capture copies r13's process, which a
 * native function may have reused: those samples are read live, so they are read soon (in the
 * first second only: a scheduler that never runs Erlang code is never learned). */
static bool learning(const struct sampler *s)
{
	if (!s->kc || s->learn_tries >= LEARN_ESDP_TRIES || sampler__now_ns() >= s->learn_until)
		return false;
	for (size_t i = 0; i < s->t->nsched; i++) {
		if (s->t->sched[i].type == XP_SCHED_NORMAL && !s->t->sched[i].esdp_checked)
			return true;
	}
	return false;
}

/* Why perf_event_open said no, and the exact line that grants it (SECURITY.md "Privileges"). */
static void perf_refused(char *err, size_t errlen)
{
	int paranoid = privilege__paranoid();
	char setcap[4200];

	privilege__setcap_line(setcap, sizeof(setcap));
	if (paranoid >= 3)
		snprintf(
		    err, errlen,
		    "perf_event_open refused: kernel.perf_event_paranoid is %d, which lets no "
		    "one without CAP_PERFMON sample, even their own processes: run as root, or "
		    "grant it: %s (or: sysctl kernel.perf_event_paranoid=2)",
		    paranoid, setcap);
	else
		snprintf(
		    err, errlen,
		    "perf_event_open refused (kernel.perf_event_paranoid is %d), or its rings "
		    "were over what this user may lock (kernel.perf_event_mlock_kb, ulimit -l): "
		    "run as root, or grant it: %s",
		    paranoid, setcap);
}

#define PERF_MIN_RETRY_PAGES PERF_RING_MIN_PAGES

/* Shared rings unless the bench asks for a ring per thread (XP_PERF_RINGS=thread, bench/ceiling:
 * the two side by side). */
static bool rings_shared(void)
{
	const char *v = getenv("XP_PERF_RINGS");

	return !v || strcmp(v, "thread") != 0;
}

static int open_perf(struct sampler *s, char *err, size_t errlen)
{
	struct perf_opts po = {.event = s->opts.event,
			       .freq_hz = s->opts.freq_hz,
			       .stack_bytes = 16384,
			       /* Woken by every sample: one taken in native code reads its
				* process's Erlang stack live, and each microsecond of delay lets
				* more processes move on (--skid-summary). */
			       .wakeup_events = 1,
			       .user_only = s->opts.user_only,
			       .switches = s->opts.on_switch != NULL,
			       .shared_rings = !s->opts.snapshot && rings_shared()};
	long page = sysconf(_SC_PAGESIZE);
	struct proc_task *tasks = NULL;
	pid_t *tids;
	size_t ntasks = 0, n = 0, i;
	int rc;

	if (s->opts.all_threads && proc__tasks(s->t->pid, &tasks, &ntasks) == 0) {
		tids = calloc(ntasks ? ntasks : 1, sizeof(*tids));
		for (i = 0; tids && i < ntasks; i++)
			tids[n++] = tasks[i].tid;
	} else {
		tids = calloc(s->t->nsched ? s->t->nsched : 1, sizeof(*tids));
		for (i = 0; tids && i < s->t->nsched; i++)
			tids[n++] = s->t->sched[i].tid;
	}
	free(tasks);
	if (!tids)
		return -ENOMEM;
	open_kcapture(s);
	if (s->kc) {
		/* Captured at the sample: nothing is lost by reading samples in batches, and
		 * wake-ups were most of the sampler's cost (a wake-up every 8 samples: 3.5 % of a
		 * core on the bench workload; woken when a ring is half full or every RUN_POLL_MS:
		 * 1.5 %). The Erlang stack is in the capture, so perf copies less of the native
		 * one: 2 KiB, and the program copies a deeper C stack's rest (copy_native), up
		 * to KCAP_CSTACK_MAX more (16 -> 8 KiB: 1.5 -> 1.3 %; 8 -> 4 KiB: 6 % less of the
		 * sampler's CPU, and half the bytes the VM's sampling interrupt copies; 4 -> 2
		 * KiB: 3-5 % less). */
		po.bpf_prog_fd = kcapture__prog_fd(s->kc);
		po.stack_bytes = PERF_STACK_CAPTURED;
		po.wakeup_events = 0;
	}
	/* A ring holds PERF_RING_SECONDS of one CPU's samples at the rate asked (perf.h): with
	 * shared rings, one per CPU whatever the number of threads (docs/accuracy-and-cost.md, "Big
	 * VMs"). */
	po.mmap_pages = s->opts.snapshot ? PERF_RING_MIN_PAGES
					 : perf__ring_pages(po.freq_hz, po.stack_bytes,
							    s->kc ? PERF_RING_SECONDS_BATCHED
								  : PERF_RING_SECONDS,
							    page > 0 ? (size_t)page : 4096);
	/* Without CAP_IPC_LOCK a user may lock kernel.perf_event_mlock_kb (516 KiB) per CPU of
	 * rings, then RLIMIT_MEMLOCK: beyond, mmap says EPERM. Smaller rings are read more often
	 * (woken when half full), down to PERF_MIN_RETRY_PAGES. */
	for (;;) {
		rc = n ? perf_session__open(&s->perf, tids, n, &po) : -ESRCH;
		if ((rc != -EPERM && rc != -EACCES) || po.mmap_pages <= PERF_MIN_RETRY_PAGES)
			break;
		po.mmap_pages /= 4;
		if (po.mmap_pages < PERF_MIN_RETRY_PAGES)
			po.mmap_pages = PERF_MIN_RETRY_PAGES;
	}
	free(tids);
	/* Woken early when deep stacks' captures fill their ring faster than the polling reads it.
	 * Should that fail, such captures may be lost, and their samples are counted as read
	 * without one ("no record: ring full"). */
	if (!rc && s->kc)
		(void)perf_session__wake_on(s->perf, kcapture__wake_fd(s->kc));
	if (!rc && s->opts.on_switch)
		perf_session__on_switch(s->perf, s->opts.on_switch, s->opts.record_ctx);
	if (rc == -EACCES || rc == -EPERM)
		perf_refused(err, errlen);
	else if (rc == -ENOENT)
		snprintf(err, errlen,
			 "hardware cycles are not available on this machine: "
			 "use the default cpu-clock event");
	else if (rc)
		snprintf(err, errlen, "perf_event_open failed: %s", strerror(-rc));
	return rc;
}

/* What a live and a replayed sampler share: the JIT map's configuration, the caches, the Process
 * reader. */
static int sampler_setup(struct target *t, const struct sampler_opts *opts, struct agg *agg,
			 struct sampler **out, char *err, size_t errlen)
{
	const struct target_value *xr = &t->off[XP_OFF_REGS_X_REG_ARRAY];
	struct sampler *s;
	int rc;

	*out = NULL;
	if (!t->jit) {
		snprintf(err, errlen, "no JIT map: cannot name Erlang code (%s)",
			 strerror(-t->jit_err));
		return -ENOTSUP;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->t = t;
	s->opts = *opts;
	s->agg = agg;
	s->lea_disp = (uint8_t)(-(xr->present ? (int)xr->value : 0));
	if (opts->erlang_pid)
		snprintf(s->filter_pid, sizeof(s->filter_pid), "%s", opts->erlang_pid);
	/* The descriptor the map was walked from, not one read now: a module loaded since would
	 * make the map look current and never be re-walked (seen: a module loaded while attaching
	 * stayed "[unnamed JIT code]" for a whole run). */
	s->jdesc = *jitmap__descriptor(t->jit);
	s->jit_tried_ns = sampler__now_ns();
	s->words = malloc(STACK_CAP_BYTES);
	if (!s->words || callsite__new(&s->calls, t->mem)) {
		rc = -ENOMEM;
		goto cleanup;
	}
	if ((rc = process__reader(&s->pr, t))) {
		snprintf(err, errlen, "the Process layout of this VM is unknown");
		goto cleanup;
	}
	s->pr.erlang_names = opts->erlang_names;
	/* Pids print as <pid 0x...> when their encoding is unknown (OTP 28+ without the agent, when
	 * run.c's scan found no process table): no '<0.N.0>' would ever match. */
	if (opts->erlang_pid && !s->pr.pids.known) {
		snprintf(
		    err, errlen,
		    "--erlang-pid needs the pid encoding of this VM, which is unknown (no agent, "
		    "and no process table found by a scan): use --name, or load the extrospect "
		    "application");
		rc = TARGET_EUNSUPPORTED;
		goto cleanup;
	}
	erlang_stack__cfg(&s->ecfg, t->jit, t->frame_layout,
			  (uint64_t)t->addr[XP_ADDR_NORMAL_EXIT].value, t->layout);
	sampler__verify_returns(s);
	*out = s;
	return 0;
cleanup:
	sampler__free(s);
	return rc;
}

int sampler__new(struct target *t, const struct sampler_opts *opts, struct agg *agg,
		 struct sampler **out, char *err, size_t errlen)
{
	struct sampler *s;
	int rc;

	if ((rc = sampler_setup(t, opts, agg, &s, err, errlen)))
		return rc;
	if ((rc = unwinder__new(&s->unw, t->pid, t->maps, t->mem))) {
		snprintf(err, errlen, "cannot set up native unwinding: %s", strerror(-rc));
		goto cleanup;
	}
	if ((rc = open_perf(s, err, errlen)))
		goto cleanup;
	s->learn_until = sampler__now_ns() + LEARN_POLL_NS;
	*out = s;
	return 0;
cleanup:
	sampler__free(s);
	return rc;
}

int sampler__new_replay(struct target *t, const struct sampler_opts *opts, struct agg *agg,
			const struct sampler_hooks *h, struct sampler **out, char *err,
			size_t errlen)
{
	int rc = sampler_setup(t, opts, agg, out, err, errlen);

	if (rc)
		return rc;
	(*out)->replay = true;
	(*out)->hooks = *h;
	return 0;
}

int sampler__poll(struct sampler *s, int timeout_ms)
{
	int rc;

	if (timeout_ms > LEARN_POLL_MS && learning(s))
		timeout_ms = LEARN_POLL_MS;
	sampler__refresh_jit(s, JIT_REFRESH_POLL_NS);
	rc = perf_session__poll(s->perf, timeout_ms, sampler__on_sample, s);

	if (rc < 0)
		return rc;
	return perf_session__nthreads(s->perf) == 0 ? -ESRCH : 0;
}

const struct sampler_stats *sampler__stats(const struct sampler *s)
{
	return &s->st;
}

const struct perf_stats *sampler__perf_stats(const struct sampler *s)
{
	return perf_session__stats(s->perf);
}

void sampler__more_stats(const struct sampler *s, struct unwind_stats *unw, struct kcap_stats *kc)
{
	*unw = *unwinder__stats(s->unw);
	memset(kc, 0, sizeof(*kc));
	if (s->kc)
		*kc = *kcapture__stats(s->kc);
}

size_t sampler__nthreads(const struct sampler *s)
{
	return perf_session__nthreads(s->perf);
}

void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	perf_session__free(s->perf);
	kcapture__free(s->kc);
	callsite__free(s->calls);
	unwinder__free(s->unw);
	proc_maps__free(s->maps);
	free(s->words);
	free(s->jit_ids);
	for (size_t i = 0; i < MEMO_SLOTS; i++) {
		erlang_stack__memo_free(&s->memo[i]);
		free(s->memo_ids[i].ids);
	}
	free(s);
}
