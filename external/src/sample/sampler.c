/* The per-sample algorithm. See sampler.h (and sampler_int.h for the files that help it).
 *  1. IP in JIT code: c_p = r13, E = rsp, frame pointer = rbp (exact, otp-internals.md §1.1).
 *  2. IP in native code: unwind with CFI until a return address lands in JIT code; c_p is the
 *     scheduler's current_process (authoritative) or the CFI-recovered r13; E is c_p->stop (FP
 *     layout, or an eStack call site) or the recovered rbp (a plain call site), told apart from
 *     the call site's code bytes (otp-internals.md §2; sampler_stack.c reads the words).
 *  3. No process: the sample is scheduler time, labelled, excluded unless --include-idle. The
 *     attribution rule, the labels and the alternatives tried are in docs/how-it-works.md
 *     ("Which Erlang function gets native time"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "process.h"
#include "sampler_int.h"

static const char *const drop_names[DROP_COUNT] = {
    [DROP_NO_USER_REGS] = "no user registers",
    [DROP_UNKNOWN_THREAD] = "unknown thread",
    [DROP_PROCESS_UNREADABLE] = "process unreadable",
    [DROP_STACK_UNREADABLE] = "stack unreadable",
};

const char *sampler__drop_name(enum sampler_drop d)
{
	return (unsigned)d < DROP_COUNT ? drop_names[d] : "?";
}

/* How long ago a sample taken at time t (perf's CLOCK_MONOTONIC) was. */
static uint64_t delay_since(uint64_t t)
{
	uint64_t now = sampler__now_ns();

	return now > t ? now - t : 0;
}

/* The scheduler loop (global::process_main, and erts_schedule below it) runs between processes:
 * r13 there is whichever process ran last, not the sample's (otp-internals.md §2). */
static bool is_scheduler_loop(const struct jit_range *r)
{
	return r && r->sched_loop;
}

static const struct target_sched *find_sched(const struct sampler *s, pid_t tid)
{
	size_t i;

	for (i = 0; i < s->t->nsched; i++) {
		if (s->t->sched[i].tid == tid)
			return &s->t->sched[i];
	}
	return NULL;
}

static bool is_jit(uint64_t pc, void *ctx)
{
	const struct sampler *s = ctx;

	return jitmap__lookup(s->t->jit, pc) != NULL;
}

static uint64_t current_process(struct sampler *s, const struct target_sched *sch, bool *known)
{
	const struct target_value *o = &s->t->off[XP_OFF_ESD_CURRENT_PROCESS];
	uint64_t cp = 0;

	*known = sch && sch->esdp && sch->esdp_checked && o->present &&
		 mem__read_u64(s->t->mem, sch->esdp + (uint64_t)o->value, &cp) == 0;
	return cp;
}

/* Where a sample stands: its process, its leaf JIT frame, E and the frame pointer. */
struct where {
	const struct jit_range *leaf;
	struct unwind_result *ur; /* NULL for a sample in JIT code */
	uint64_t cp, e, fp;	  /* e = 0: find E from the call site */
	struct leaf_via via;	  /* a fragment the leaf called on the runtime stack */
	bool unnamed;		  /* the pc is JIT code the map does not name */
	bool dirty;		  /* on a dirty scheduler, or in a system task: E is c_p->stop */
};

static void learn_esdp(struct sampler *s, const struct target_sched *sch, uint64_t cp);
static const struct jit_range *resume_leaf(struct sampler *s, const struct process_view *p);

/* The most words a fragment called on the runtime stack keeps above its return address there. */
#define RUNTIME_FRAME_WORDS 2

/* A shared fragment called on the runtime stack, after its caller entered the runtime: OTP 26+'s
 * bs_create_bin allocates through bs_init_bits_shared, which makes a frame there (push rbp; mov
 * rbp,rsp) and calls C, and writes some segments through get_sint64_shared and store_unaligned
 * (otp-internals.md §2.3). The return address into the caller is on the runtime stack, not on
 * the Erlang stack, whose top is the caller's caller. Up to words words from at, the first that
 * is code is taken, as the leaf, when it returns into an Erlang function after a call to the
 * fragment; the fragment is kept to show (w->via). */
static void runtime_caller(struct sampler *s, const struct perf_sample *ps, struct where *w,
			   uint64_t at, unsigned words)
{
	const uint64_t sp = ps->regs[PERF_R_SP];
	const struct jit_range *r = NULL;
	uint64_t ra = 0;

	if (!erlang_stack__is_fragment(w->leaf))
		return;
	for (unsigned i = 0; i < words && !r; i++, at += 8) {
		if (at < sp || at + 8 > sp + ps->stack_size)
			return; /* only as the sample copied it: that frame is gone by now */
		memcpy(&ra, ps->stack + (at - sp), sizeof(ra));
		if (at + 8 - sp > s->runtime_used)
			s->runtime_used = at + 8 - sp; /* a capture keeps that much of the copy */
		r = jitmap__lookup(s->t->jit, ra);
	}
	if (!erlang_stack__is_function(r) || erlang_stack__is_fragment(r) ||
	    !callsite__returns_from(s->calls, s->t->jit, ra, w->leaf))
		return;
	w->via = (struct leaf_via){.frag = w->leaf, .leaf_pc = ra - 1};
	w->leaf = r;
	s->st.runtime_fragment++;
}

/* A JIT sample in the yield test's shared fragment (global::i_test_yield_shared): a function
 * whose reductions were spent at its entry jumped there to be scheduled out, its own address in
 * rdx (ARG3), which the fragment never writes (otp-internals.md §2.3 row 9b, verified on 25, 27
 * and 29). That function is the leaf, the fragment shown under it: its caller, the top of the
 * stack, would get the sample otherwise. Its frame is on the stack already (FP layout) or has
 * not been made (RA layout), as at its entry. */
static void yield_caller(struct sampler *s, const struct perf_sample *ps, struct where *w)
{
	const uint64_t at = ps->regs[PERF_R_DX];
	const struct jit_range *r;

	if (!w->leaf || !w->leaf->yield_test)
		return;
	r = jitmap__lookup(s->t->jit, at);
	if (!erlang_stack__is_function(r) || erlang_stack__is_fragment(r))
		return;
	w->via = (struct leaf_via){.frag = w->leaf, .leaf_pc = at};
	w->leaf = r;
	s->st.yield_test++;
}

/* A JIT sample on a veneer in a module's footer (OTP 26+ call shared fragments through one, a
 * single jmp: otp-internals.md §2.3) is entering the fragment it jumps to: that fragment is its
 * leaf, and the return address the call left above E is checked against it (take_top). */
static const struct jit_range *veneer_leaf(struct sampler *s, uint64_t ip,
					   const struct jit_range *leaf)
{
	const struct jit_range *to;
	uint64_t target;

	if (!leaf || erlang_stack__is_function(leaf) ||
	    !(target = callsite__veneer_target(s->calls, s->t->jit, ip)))
		return leaf;
	to = jitmap__lookup(s->t->jit, target);
	return erlang_stack__is_fragment(to) ? to : leaf;
}

/* A sample in native code: unwind to the JIT code that called it. c_p is r13 there, recovered by
 * CFI as the sample saw it; the scheduler's current_process is read now, after the scheduler may
 * have switched processes or gone idle, so it is only the fallback. Returns false when the
 * unwind did not reach JIT code. */
static bool from_native(struct sampler *s, const struct target_sched *sch,
			const struct perf_sample *ps, const struct kcap_rec *k, struct where *w)
{
	bool known;

	/* The capture's copy of a C stack deeper than perf's (a BIF with a large frame): the
	 * unwinder reads it where perf's copy ends (at perf_stack bytes, or earlier at a page
	 * never touched, where both stop), not the live stack. */
	if (k && k->cstack && k->cstack_addr >= ps->regs[PERF_R_SP] &&
	    k->cstack_addr <= ps->regs[PERF_R_SP] + ps->stack_size) {
		unwinder__set_extra(s->unw, UNWIND_EXTRA_DEEPER, k->cstack_addr, k->cstack,
				    k->cstack_len);
		s->st.native_extended++;
	}
	/* The words below sp at the sample: registers a function in its epilogue popped, which
	 * its CFI still finds there (live, the next call has overwritten them). */
	if (k && k->below && k->sp == ps->regs[PERF_R_SP])
		unwinder__set_extra(s->unw, UNWIND_EXTRA_BELOW, k->sp - KCAP_BELOW_SP, k->below,
				    KCAP_BELOW_SP);
	sampler_src__unwind(s, ps, is_jit, w->ur);
	unwinder__set_extra(s->unw, UNWIND_EXTRA_DEEPER, 0, NULL, 0);
	unwinder__set_extra(s->unw, UNWIND_EXTRA_BELOW, 0, NULL, 0);
	if (w->ur->stop != UNWIND_STOP_JIT) {
		s->st.native_stopped++;
		return false;
	}
	s->st.native_reached_jit++;
	w->leaf = jitmap__lookup(s->t->jit, w->ur->jit_pc - 1);
	if (is_scheduler_loop(w->leaf)) {
		w->cp = 0;
	} else if (w->ur->jit_r13_valid) {
		/* r13 as the JIT code had it: c_p. A scheduler that runs only native code (a long
		 * bignum multiplication) is learned from it too; the learning reads it back. */
		w->cp = w->ur->jit_r13;
		learn_esdp(s, sch, w->cp);
	} else {
		w->cp = current_process(s, sch, &known);
	}
	w->fp = w->ur->jit_bp;
	w->e = 0;
	/* The fragment's own frame, right above the C code's return address into it: only when
	 * rbp says it made one there (mov rbp,rsp just before the call). The words at another
	 * fragment's sp are the scheduler's registers, where a stale return address may lie. */
	if (w->ur->jit_bp_valid && w->ur->jit_bp == w->ur->jit_sp)
		runtime_caller(s, ps, w, w->ur->jit_bp + 8, 1);
	return true;
}

/* A dirty scheduler runs BIFs and NIFs from C, not from JIT code: the unwind never reaches
 * JIT code. Its process is the scheduler's current_process, parked on the dirty call with its
 * Erlang stack at c_p->stop (otp-internals.md §2): as the in-kernel capture read it at the sample
 * when there is one (a dirty garbage collection may end before the sampler reads it), else now. */
static bool on_dirty(struct sampler *s, const struct target_sched *sch, const struct kcap_rec *k,
		     struct where *w)
{
	bool known = true;

	if (!sch || sch->type == XP_SCHED_NORMAL)
		return false;
	/* The capture read it at the sample; NULL then (sched_none) is no process, not r13. */
	if (k && (k->from_scheduler || k->sched_none))
		w->cp = k->from_scheduler ? k->cp : 0;
	else
		w->cp = current_process(s, sch, &known);
	w->dirty = true;
	w->leaf = NULL;
	w->e = w->fp = 0;
	return known && w->cp;
}

/* The scheduler loop also does a process's work while it names the process as its current one:
 * signals, system tasks, a garbage collection when it is scheduled in or out (B/erl_process.c
 * erts_schedule: current_process is set before execute_sys_tasks and scheduler_gc_proc). When
 * the capture saw such a process at the sample, the time is its, and its Erlang stack is parked
 * at c_p->stop, as on a dirty scheduler. Without a capture it is not known at the sample, and
 * never guessed from a later read. */
static bool system_task(struct sampler *s, const struct kcap_rec *k, struct where *w)
{
	if (!is_scheduler_loop(w->leaf) || !k || !k->from_scheduler || !k->cp || !k->span)
		return false;
	w->cp = k->cp;
	w->dirty = true; /* parked: E is c_p->stop, nothing to check against a call */
	w->leaf = NULL;	 /* the scheduler loop is no frame of the process: resume_leaf() */
	w->via.frag = NULL;
	w->e = w->fp = 0;
	s->st.system_task++;
	return true;
}

/* The process's state word (Process.state, XP_PSFLG_*): as the capture read it at the sample, else
 * read now (*late), for a sample whose process was itself found by a read after the sample (a
 * dirty scheduler's without the capture). False when neither can be had. */
static bool process_state(struct sampler *s, uint64_t cp, bool late_ok, uint32_t *state, bool *late)
{
	const struct target_value *o = &s->t->off[XP_OFF_P_STATE];

	*late = false;
	if (s->cap && s->cap->state_known) {
		*state = s->cap->state;
		return true;
	}
	if (!late_ok || !o->present || o->value <= 0 || o->value >= 4096)
		return false;
	*late = true;
	return mem__read(s->t->mem, cp + (uint64_t)o->value, state, sizeof(*state)) == 0;
}

/* The bounds of the sample's process: from the capture's copy at the sample, else read now. A
 * copy refused because a collection on a delayed heap was ending (process__bounds_from_span_moved:
 * the stack already whole in the new heap, heap and hend a freed fragment's) is the process's
 * still, for a sample in native code or on a dirty scheduler whose copied state says it is in a
 * collection: its stack is walked from stop as copied (sampler_stack__read), and the sample
 * counted, not dropped (*moved: E is then stop, where the collection put the stack). Read after the
 * sample (no capture), only a dirty scheduler's collection is taken so (its state read now too):
 * kept at its resume point without its callers, as every dirty collection read late is (resolve).
 */
static int sample_bounds(struct sampler *s, const struct where *w, struct process_view *p,
			 bool *moved)
{
	uint32_t state;
	bool late;

	*moved = false;
	if (!s->cap) {
		if (!process__read_bounds(&s->pr, w->cp, p))
			return 0;
		if (!w->dirty || process__read_bounds_moved(&s->pr, w->cp, p) ||
		    !process_state(s, w->cp, true, &state, &late) || !(state & XP_PSFLG_GC) ||
		    !(state & XP_PSFLG_DIRTY_RUNNING_SYS))
			return -EINVAL;
		s->st.gc_moved_late++;
		return 0;
	}
	if (!process__bounds_from_span(&s->pr, w->cp, s->cap->span, p))
		return 0;
	if (!(w->ur || w->dirty) ||
	    process__bounds_from_span_moved(&s->pr, w->cp, s->cap->span, p) ||
	    !process_state(s, w->cp, false, &state, &late) || !(state & XP_PSFLG_GC))
		return -EINVAL;
	s->st.gc_moved++;
	*moved = true;
	return 0;
}

/* A sample on a dirty scheduler is either the process's own dirty BIF or NIF (its stack parked in
 * the call, read from c_p->stop) or a system task the scheduler runs for it, a collection too
 * large for a normal scheduler above all (B/erl_process.c erts_dirty_process_main: the state's
 * ERTS_PSFLG_DIRTY_RUNNING_SYS selects erts_execute_dirty_system_task). A system task's process
 * was parked where it will resume, c_p->i: the function it stands in, whose frame, if any, is
 * not on the stack yet (a yield at a function's entry), so that is the innermost frame, as for a
 * system task on a normal scheduler. And either scheduler's sample in the collector says so,
 * from the state's ERTS_PSFLG_GC (B/erl_gc.c garbage_collect sets it for the collection). */
static void task_state(struct sampler *s, struct sample_record *rec, struct where *w,
		       const struct process_view *p, bool task)
{
	uint32_t state;
	bool late;

	if (!(w->ur || w->dirty) || !process_state(s, w->cp, w->dirty && !task, &state, &late))
		return;
	if (w->dirty && !task && (state & XP_PSFLG_DIRTY_RUNNING_SYS)) {
		rec->dirty_task = true;
		s->st.dirty_task++;
		s->st.dirty_task_late += late;
		w->leaf = resume_leaf(s, p);
	}
	if (state & XP_PSFLG_GC) {
		rec->gc = true;
		s->st.gc_state++;
	}
}

/* A parked process's innermost function is where it resumes, c_p->i (as pstack --all shows a
 * waiting process), not on its stack: a tail-recursive loop at the stack's bottom has no frame
 * there. Read with the process's bounds: in the capture's copy, at the sample, beside the stack it
 * is the top of (read later, a process gone on to a dirty scheduler has another c_p->i). */
static const struct jit_range *resume_leaf(struct sampler *s, const struct process_view *p)
{
	const struct jit_range *r;

	if (!p->i)
		return NULL;
	r = jitmap__lookup(s->t->jit, p->i);
	return erlang_stack__is_function(r) ? r : NULL;
}

/* The skid summary: the Process was copied at the sample (s->cap), or read rec->read_delay_ns
 * after it, perhaps part of its stack too. The call-site check (cc) already caught a stack that
 * had moved on. With --skid-summary, also ask the scheduler now which process it runs: another
 * one means the reads after the sample saw a process that had moved on; frames read then and not
 * verified by the call site are at risk. */
static void skid_check(struct sampler *s, const struct target_sched *sch, const struct where *w,
		       enum call_check cc, struct sample_record *rec)
{
	struct skid_stats *k = &s->st.skid;
	enum skid_contradiction why = SKID_CONTRA_COUNT;
	uint64_t now_cp = w->cp;
	bool known = true;

	if (s->cap)
		skid__captured(k);
	else
		skid__delay(k, rec->read_delay_ns);
	k->live_stack += s->live_read;
	/* Asked only where it can contradict: a captured sample's scheduler is not read again. */
	if (s->opts.skid && !s->cap)
		now_cp = current_process(s, sch, &known);
	if (!known)
		return;
	k->checked++;
	/* A sample the capture copied was not read later: that its scheduler runs another process
	 * by now, or that its heap moved since, contradicts nothing it used. */
	if (cc == CALL_DISAGREES)
		why = SKID_CALL_SITE;
	else if (s->cap)
		return;
	else if (now_cp != w->cp)
		why = SKID_SWITCHED;
	else if (s->heap_moved)
		why = SKID_HEAP_MOVED;
	if (why == SKID_CONTRA_COUNT)
		return;
	k->contradicted[why]++;
	rec->contradicted = true;
	k->at_risk += why != SKID_CALL_SITE && s->live_read && cc != CALL_AGREES;
}

/* Have the capture look up this scheduler's current_process at the sample, once its data is
 * known and checked. */
void sampler__watch_sched(struct sampler *s, const struct target_sched *sch)
{
	const struct target_value *cur = &s->t->off[XP_OFF_ESD_CURRENT_PROCESS];

	const struct target_value *regs = &s->t->off[XP_OFF_ESD_REGISTERS];

	if (s->kc && cur->present && sch->esdp && sch->esdp_checked)
		kcapture__watch(s->kc, sch->tid, sch->esdp + (uint64_t)cur->value,
				regs->present ? sch->esdp + (uint64_t)regs->value : 0);
}

/* A JIT sample's process is exact (r13): learn its scheduler's data from it when attach could
 * not, so that the capture (and the native samples' fallback) can ask for current_process. */
static void learn_esdp(struct sampler *s, const struct target_sched *sch, uint64_t cp)
{
	struct target_sched *m;

	if (!sch || sch->esdp_checked || s->learn_tries >= LEARN_ESDP_TRIES)
		return;
	s->learn_tries++;
	m = &s->t->sched[sch - s->t->sched];
	if (!target__learn_esdp(s->t, m, cp))
		return;
	sampler__watch_sched(s, m);
	if (target__learn_dirty(s->t, m)) {
		for (size_t i = 0; i < s->t->nsched; i++) {
			if (s->t->sched[i].type != XP_SCHED_NORMAL)
				sampler__watch_sched(s, &s->t->sched[i]);
		}
	}
}

/* The stack's check against the sample, for a stack not wholly the sample's own: a native
 * sample's (not dirty: its process waits in the call), or a JIT sample's whose code ran on the C
 * stack (E from rbp or c_p->stop). A stack whose top does not call the sampled code loses its
 * Erlang frames, labelled with what really happened: its top was read after the sample (no
 * capture, or a capture too small to hold it), or it was copied at the sample and still does not
 * match (E was not where the call left it). */
static enum call_check check_call(struct sampler *s, const struct perf_sample *ps,
				  const struct where *w, struct estack_result *er)
{
	enum call_check cc;

	if (w->ur ? w->dirty : w->e == ps->regs[PERF_R_SP])
		return CALL_UNKNOWN;
	/* A shared fragment is always called from Erlang code, whose return address is on the
	 * stack: a walk that finds none started at the wrong place (a c_p->stop from before). */
	if (!er->nframes)
		cc = er->end == ESTACK_END_BOTTOM && erlang_stack__is_fragment(w->leaf)
			 ? CALL_DISAGREES
			 : CALL_UNKNOWN;
	else
		cc = callsite__check(s->calls, s->t->jit, w->leaf, er->frames[0].ra);
	/* Read after the sample with nothing to check it by: a shared fragment's caller that no
	 * scan can confirm may be a later moment's (the process returned in the meantime). Long
	 * calls through an export entry (BIFs, NIFs), which cannot be checked either, are kept:
	 * the process waits in them. */
	if (cc == CALL_UNKNOWN && s->top_live && !s->cap && erlang_stack__is_fragment(w->leaf) &&
	    !callsite__export_call(w->leaf)) {
		er->end = ESTACK_END_UNVERIFIED;
		er->nframes = 0;
		return cc;
	}
	if (cc != CALL_DISAGREES)
		return cc;
	er->end = !s->top_live ? ESTACK_END_CALL_MISMATCH
		  : s->cap     ? ESTACK_END_COPY_SHORT
		  : s->kc      ? ESTACK_END_NOT_CAPTURED
			       : ESTACK_END_MOVED_ON;
	er->nframes = 0;
	return cc;
}

/* A native sample whose unwind stopped before JIT code (a chain deeper than the unwinder goes, a
 * stack word unreadable, code without CFI) on a normal scheduler: the time is its process's,
 * when the capture says which process ran at the sample; its callers are unknown, and say why.
 * Returns false when the sample is no process's (the unwind reached the thread's start). */
static bool native_cut(struct sampler *s, struct sample_record *rec, const struct kcap_rec *k,
		       const struct unwind_result *ur)
{
	struct process_view p;
	char why[96];

	if (ur->stop == UNWIND_STOP_END || ur->stop == UNWIND_STOP_JIT || !rec->sched ||
	    rec->sched->type != XP_SCHED_NORMAL)
		return false;
	s->st.unwind_cut[ur->stop]++;
	if (ur->stop == UNWIND_STOP_DEPTH)
		snprintf(why, sizeof(why), "native unwind cut at %d frames", UNWIND_MAX_FRAMES);
	else
		snprintf(why, sizeof(why), "native unwind stopped: %s",
			 unwinder__stop_name(ur->stop));
	if (!k || !k->from_scheduler || !k->cp || !k->span ||
	    process__bounds_from_span(&s->pr, k->cp, k->span, &p)) {
		/* Which process ran is not known at the sample: never guessed from a later read. */
		sampler_frames__unknown_callers(s, rec, NULL, why, NULL, ur);
		return true;
	}
	if (sampler_frames__filtered_out(s, &p)) {
		s->st.excluded_filter++;
		return true;
	}
	sampler_frames__unknown_callers(s, rec, &p, why, NULL, ur);
	return true;
}

/* Where else the sample's stack may start: E and the frame pointer are inferred (the call
 * site's kind from its code bytes; c_p->frame_pointer is fresh only after some runtime entries,
 * rbp only in some code), so when the first choice does not walk to the stack bottom, or its top
 * does not call the sampled code, the other values the sample holds are tried: rbp as the JIT
 * code had it (CFI-recovered at the call, or sampled), c_p->stop, c_p->frame_pointer (the
 * Process as the capture copied it, else as read). RA layout: E is one of them; FP layout: E is
 * c_p->stop and the frame chain starts at one of them. The first that walks whole and whose top
 * is confirmed to call the sampled code (check_call) is kept. */
static void try_alternatives(struct sampler *s, const struct perf_sample *ps, struct where *w,
			     const struct process_view *p, struct estack_result **er,
			     enum call_check *cc)
{
	const bool fp_layout = s->t->frame_layout == XP_LAYOUT_FP;
	uint64_t vals[3] = {w->ur ? w->ur->jit_bp : ps->regs[PERF_R_BP], p->stop, p->frame_pointer};
	struct where alt = *w;
	size_t nwords;
	bool complete;

	for (size_t i = 0; i < 3; i++) {
		uint64_t v = vals[i];
		enum call_check acc;

		if (v <= p->heap || v >= p->hend || (v & 7) || (fp_layout ? v == w->fp : v == w->e))
			continue;
		alt.e = fp_layout ? p->stop : v;
		alt.fp = fp_layout ? v : 0;
		if (alt.e <= p->heap || alt.e >= p->hend ||
		    sampler_stack__read_at(s, ps, alt.e, p->hend, &nwords, &complete))
			continue;
		erlang_stack__walk(&s->ecfg, s->sw, nwords, alt.e, alt.fp, complete, w->leaf,
				   &s->er_alt);
		acc = check_call(s, ps, &alt, &s->er_alt);
		/* Only a start whose top provably calls the sampled code: any stale pointer at the
		 * stack's bottom would walk "whole" too. */
		if (s->er_alt.end != ESTACK_END_BOTTOM || acc != CALL_AGREES)
			continue;
		*er = &s->er_alt;
		*w = alt;
		*cc = acc;
		s->st.alternative_start++;
		return;
	}
}

/* That a scheduler ran no process at a sample it is not known to have run one in: the capture
 * read its current_process at the sample (NULL), or the sample is in the JIT's scheduler loop
 * itself, between two processes. A sample in the scheduler's C code read without the capture
 * (a GC at schedule time, a system task, going to sleep) may have been working for one. */
static bool no_process_known(const struct kcap_rec *k, const struct where *w)
{
	return (k && (k->from_scheduler || k->sched_none)) || (w->leaf && !w->ur);
}

/* The JIT code a process runs once its last function returned (erts_beamasm:normal_exit/0) or
 * when its exit resumes after a yield (continue_exit/0): erts_continue_exit_process frees its heap,
 * messages and links from there (B/erl_process.c), with no Erlang stack left to walk. */
static bool is_exit_code(const struct jit_range *r)
{
	return r && r->exit_code;
}

/* A sample of a process whose stack is not walked, kept with its native frames under leaf (NULL:
 * none) and the walk's end. A process exiting: its time, under "[process exiting]", complete
 * (there is no stack to cut), never "read too late". A dirty system task's sample without the
 * capture, whose process was read after it in a garbage collection: its stack is being moved
 * (c_p->stop in the new heap, heap and hend the old one's), so it is not walked; its innermost
 * frame is where it resumes (c_p->i, read with the rest), its callers unknown: read too late. */
static void stackless_sample(struct sampler *s, struct sample_record *rec, struct process_view *p,
			     const struct where *w, enum estack_end end)
{
	struct estack_result *er = &s->er;
	bool exiting = end == ESTACK_END_BOTTOM;

	if (sampler_frames__filtered_out(s, p)) {
		s->st.excluded_filter++;
		return;
	}
	erlang_stack__none(er);
	er->end = end;
	rec->exiting = exiting;
	s->st.exiting += exiting;
	s->st.captured += exiting && s->cap != NULL;
	s->st.erlang++;
	s->st.estack_end[end]++;
	sampler_frames__erlang(s, rec, p, er, exiting ? NULL : w->leaf, NULL, false, w->ur);
}

/* The first word of a walk that ended unresolved that named no function: the walk's own, the
 * sampled pc when that was code the map does not name, or, when the walk kept none (it took its
 * bottom from the walk before, the memo; or the word was 0), the plain walk's, walked again here
 * for it (in er_alt, before try_alternatives uses it: s->words are still the sample's). */
static uint64_t unresolved_word(struct sampler *s, const struct where *w, uint64_t pc,
				size_t nwords, bool complete, const struct estack_result *er)
{
	if (er->unresolved_ra)
		return er->unresolved_ra;
	if (w->unnamed)
		return pc;
	erlang_stack__walk(&s->ecfg, s->sw, nwords, w->e, w->fp, complete, w->leaf, &s->er_alt);
	return s->er_alt.unresolved_ra;
}

/* A walk that ended unresolved counted under its word (unresolved_word), for the summary: the
 * first SAMPLER_UNRESOLVED_KEPT words seen each with where it lies, any other in
 * unresolved_more. */
static void count_unresolved(struct sampler *s, uint64_t ra)
{
	struct sampler_stats *st = &s->st;
	size_t i;

	for (i = 0; i < SAMPLER_UNRESOLVED_KEPT; i++) {
		struct sampler_unresolved *u = &st->unresolved[i];

		if (u->n && u->ra != ra)
			continue;
		if (!u->n++) {
			u->ra = ra;
			sampler__unnamed_where(s, ra, u->where, sizeof(u->where));
		}
		return;
	}
	st->unresolved_more++;
}

/* A walk of a stack read after the sample (no capture) that did not reach the bottom: the
 * process's bounds read again. A stop or heap other than the walk's says the process moved its
 * stack after the sample, so the words read need not be one moment's: a deep stack read live
 * while the process returns through it holds, where frames were, what its later calls pushed
 * (return addresses, saved registers; words such as 0 that name no function). Seen in
 * xp_class's bin_append_framed/1 (a 1 000-2 000 frame body recursion appending a binary on the
 * way back), 1.2-1.4 % of the walks of a no-capture record on OTP 25 (2 December 2026). A
 * process that reads the same is not taken as moved: that walk stays as it ended. */
static bool moved_since(struct sampler *s, const struct where *w, const struct process_view *p)
{
	struct process_view now;

	if (process__read_bounds(&s->pr, w->cp, &now))
		return false;
	return now.stop != p->stop || now.heap != p->heap || now.hend != p->hend;
}

static void resolve(struct sampler *s, const struct perf_sample *ps)
{
	const struct target_sched *sch = find_sched(s, (pid_t)ps->tid);
	struct sample_record rec = {.ps = ps, .sched = sch};
	struct estack_result *er = &s->er;
	struct unwind_result ur;
	struct where w = {0};
	struct process_view p;
	const struct kcap_rec *k;
	enum call_check cc;
	size_t nwords;
	uint64_t unresolved = 0;
	bool complete, task = false, moved;

	s->memo_slot = -1;
	s->st.samples++;
	s->runtime_used = 0;
	if (!ps->regs_valid) {
		s->st.dropped[DROP_NO_USER_REGS]++;
		return;
	}
	/* Claimed for every sample, used or not, so that captures do not pile up. */
	k = sampler_src__capture(s, ps);
	if (!sch && !s->opts.all_threads) {
		s->st.dropped[DROP_UNKNOWN_THREAD]++;
		return;
	}
	w.leaf = veneer_leaf(s, ps->ip, sampler__lookup_jit(s, ps->ip, ps->time, &w.unnamed));
	if (w.leaf || w.unnamed) {
		/* In JIT code r13 is c_p, exactly; the scheduler's copy can lag. */
		w.cp = is_scheduler_loop(w.leaf) ? 0 : ps->regs[PERF_R_R13];
		learn_esdp(s, sch, w.cp);
		w.e = ps->regs[PERF_R_SP];
		w.fp = ps->regs[PERF_R_BP];
		yield_caller(s, ps, &w);
	} else {
		w.ur = &ur;
		if (!from_native(s, sch, ps, k, &w) && !on_dirty(s, sch, k, &w)) {
			if (!native_cut(s, &rec, k, w.ur))
				sampler_frames__label(s, &rec, NULL, w.ur, no_process_known(k, &w));
			return;
		}
	}
	if (!w.cp && !(task = system_task(s, k, &w))) {
		sampler_frames__label(s, &rec, w.leaf, w.ur, no_process_known(k, &w));
		return;
	}
	/* The capture copied the process r13 or the scheduler named at the sample: used when it
	 * is the one this sample resolved to (r13 may be a native function's scratch). With no
	 * current process it copied r13's span alone, which only an exiting process needs. */
	s->cap =
	    k && k->cp == w.cp && k->span && (!k->sched_none || is_exit_code(w.leaf)) ? k : NULL;
	/* How late the Process is read, when it is read (the skid summary). */
	rec.read_delay_ns = s->cap ? 0 : delay_since(ps->time);
	/* The capture is on, yet holds no copy of this process at the sample: say which way. */
	if (s->kc && !s->cap)
		s->st.not_captured[k ? NOT_CAPTURED_OTHER : NOT_CAPTURED_NO_RECORD]++;
	if (sample_bounds(s, &w, &p, &moved)) {
		s->st.dropped[DROP_PROCESS_UNREADABLE]++;
		return;
	}
	if (moved)
		w.e = p.stop;
	if (is_exit_code(w.leaf) && !task) {
		stackless_sample(s, &rec, &p, &w, ESTACK_END_BOTTOM);
		return;
	}
	if (w.dirty)
		w.e = p.stop;
	/* A JIT sample in a fragment running on the runtime stack: rsp is outside the heap. */
	if (!w.ur && !task && !w.dirty && (w.e <= p.heap || w.e >= p.hend))
		runtime_caller(s, ps, &w, w.e, RUNTIME_FRAME_WORDS);
	if (task) {
		w.leaf = resume_leaf(s, &p);
		rec.scheduler_work = true;
	}
	task_state(s, &rec, &w, &p, task);
	if (rec.dirty_task && rec.gc && !s->cap) {
		stackless_sample(s, &rec, &p, &w, ESTACK_END_MOVED_ON);
		return;
	}
	/* FP layout, native sample: the runtime entry saved rbp to c_p->frame_pointer beside
	 * c_p->stop, and the two were read together. The CFI-recovered rbp is not it: a fragment
	 * may use rbp, and a GC moves the stack under it. */
	if (s->t->frame_layout == XP_LAYOUT_FP && (w.ur || w.dirty) && p.frame_pointer >= p.stop &&
	    p.frame_pointer < p.hend && !(p.frame_pointer & 7))
		w.fp = p.frame_pointer;
	if (sampler_stack__read(s, ps, &ur, &p, &w.e, &w.fp, &nwords, &complete)) {
		/* A native sample whose process's stack is gone (a GC freeing the old heap, in
		 * munmap): still that process's time, kept with its native frames and said so. */
		if (!w.ur) {
			s->st.dropped[DROP_STACK_UNREADABLE]++;
			return;
		}
		if (sampler_frames__filtered_out(s, &p)) {
			s->st.excluded_filter++;
			return;
		}
		s->st.stack_unreadable_kept++;
		/* In a collection (the state says so), the collector is moving or freeing it:
		 * during a realloc of the heap block it is at no address the process holds. */
		sampler_frames__unknown_callers(s, &rec, &p,
						rec.gc ? "stack unreadable in a garbage collection"
						       : "stack unreadable",
						rec.dirty_task ? w.leaf : NULL, w.ur);
		return;
	}
	if (sampler_frames__filtered_out(s, &p)) {
		s->st.excluded_filter++;
		return;
	}
	/* The attribution rule (docs/how-it-works.md, "Which Erlang function gets native time"):
	 * the innermost Erlang frame of a native sample is the function whose JIT code made the
	 * native call, named by the return address that call left on the Erlang stack, aligned or
	 * not. */
	if (nwords >= MEMO_MIN_WORDS) {
		s->memo_slot = (int)(((p.addr * 0x9e3779b97f4a7c15ull) >> 32) % MEMO_SLOTS);
		erlang_stack__walk_memo(&s->ecfg, &s->memo[s->memo_slot], s->sw, nwords, w.e, w.fp,
					complete, w.leaf, er);
	} else {
		erlang_stack__walk(&s->ecfg, s->sw, nwords, w.e, w.fp, complete, w.leaf, er);
	}
	/* Code the map does not name makes the stack unresolved, wherever it is. */
	if (w.unnamed && er->end == ESTACK_END_BOTTOM)
		er->end = ESTACK_END_UNRESOLVED;
	if (er->end == ESTACK_END_UNRESOLVED)
		unresolved = unresolved_word(s, &w, ps->ip, nwords, complete, er);
	cc = check_call(s, ps, &w, er);
	/* Not for a parked process (nothing to check another start by) nor a stack cut for its
	 * depth (another start would be cut the same way, after reading it again). */
	if ((er->end != ESTACK_END_BOTTOM || cc == CALL_DISAGREES) && !s->heap_moved && !w.dirty &&
	    er->end != ESTACK_END_TRUNCATED)
		try_alternatives(s, ps, &w, &p, &er, &cc);
	/* Read after the sample, and short of the bottom: seen moving, it was read too late. */
	if (!s->cap && !w.dirty &&
	    (er->end == ESTACK_END_UNRESOLVED || er->end == ESTACK_END_NO_BOTTOM ||
	     er->end == ESTACK_END_BAD_CHAIN) &&
	    moved_since(s, &w, &p)) {
		s->st.moved_reread++;
		er->end = ESTACK_END_MOVED_ON;
		er->nframes = 0;
	}
	if (er != &s->er && s->memo_slot >= 0) { /* the memo holds the first start's walk */
		s->memo_ids[s->memo_slot].n = 0;
		s->memo_slot = -1;
	}
	skid_check(s, sch, &w, cc, &rec);
	s->st.captured += s->cap != NULL;
	s->st.erlang++;
	s->st.estack_end[er->end]++;
	/* Unresolved, this is the first walk (another start replaces it only when whole). */
	if (er->end == ESTACK_END_UNRESOLVED)
		count_unresolved(s, unresolved);
	sampler_frames__erlang(s, &rec, &p, er, w.leaf, w.via.frag ? &w.via : NULL, w.unnamed,
			       w.ur);
}

void sampler__on_sample(const struct perf_sample *ps, void *ctx)
{
	struct sampler *s = ctx;

	if (s->hooks.begin)
		s->hooks.begin(s->hooks.ctx, ps);
	resolve(s, ps);
	if (s->hooks.end)
		s->hooks.end(s->hooks.ctx, s);
}

void sampler__resolve_one(struct sampler *s, const struct perf_sample *ps)
{
	resolve(s, ps);
}
