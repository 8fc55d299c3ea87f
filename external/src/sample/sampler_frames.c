/* Frames and groups of resolved samples: interned names (native names cached by pc), process
 * identity (cached by Process address and pid), filters, the dirty-scheduler trim, and the
 * aggregate + record consumer. See sampler_int.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "sampler_int.h"

static int intern_label(struct sampler *s, const char *label, uint32_t *group)
{
	return agg__group(s->agg, label, group);
}

/* The root of a process's samples, as --group asks. A process with no name of its own is its
 * pid. */
static void group_label(const struct sampler *s, const struct process_view *p, char *buf,
			size_t len)
{
	char pid[32];

	process__pid_text(&s->pr.pids, p->pid, pid, sizeof(pid));
	if (s->opts.group == GROUP_NONE)
		snprintf(buf, len, "processes");
	else if (!process__label(p)[0]) /* nothing known but the pid: no trailing space */
		snprintf(buf, len, "%s", pid);
	else if (s->opts.group == GROUP_PID)
		snprintf(buf, len, "%s %s", pid, process__label(p));
	else
		snprintf(buf, len, "%s", process__label(p));
}

/* Append "key=value" to a label set's text (AGG_LABEL_SEP first unless at its start); a
 * separator inside the value becomes a space. */
static void label_add(char *buf, size_t len, const char *key, const char *value)
{
	size_t at = strlen(buf), i;

	if (!value[0] || at + 2 >= len)
		return;
	snprintf(buf + at, len - at, "%s%s=%s", at ? "\x1f" : "", key, value);
	for (i = at + 1; buf[i]; i++) {
		if (buf[i] == AGG_LABEL_SEP)
			buf[i] = ' ';
	}
}

/* A process's labels for pprof: pid, and registered_name or initial_call (what observer shows:
 * '$initial_call', else the initial call). Its label set id + 1, 0 when none could be made. */
static uint32_t process_labels(struct sampler *s, const struct process_view *p)
{
	char text[sizeof(p->pd_initial) + 128] = "", pid[32];
	uint32_t id;

	process__pid_text(&s->pr.pids, p->pid, pid, sizeof(pid));
	label_add(text, sizeof(text), "pid", pid);
	if (p->name[0])
		label_add(text, sizeof(text), "registered_name", process__label(p));
	else
		label_add(text, sizeof(text), "initial_call", process__label(p));
	return agg__labelset(s->agg, text, &id) ? 0 : id + 1;
}

/* The sample's label set: its process's, and its scheduler; its id + 1, 0 when none. */
static uint32_t sample_labels(struct sampler *s, const struct target_sched *sch)
{
	static const char *const types[] = {"normal", "dirty_cpu", "dirty_io"};
	const char *proc = s->plabels ? agg__labelset_text(s->agg, s->plabels - 1) : NULL;
	char text[1024], sched[32];
	uint32_t id;

	snprintf(text, sizeof(text), "%s", proc ? proc : "");
	if (sch && sch->type <= XP_SCHED_DIRTY_IO) {
		snprintf(sched, sizeof(sched), "%s %u", types[sch->type], sch->number);
		label_add(text, sizeof(text), "scheduler", sched);
	}
	if (!text[0])
		return 0;
	return agg__labelset(s->agg, text, &id) ? 0 : id + 1;
}

static int group_for(struct sampler *s, struct process_view *p, uint32_t *group)
{
	struct ident *slot = &s->ident[(p->addr >> 3) % IDENT_SLOTS];
	char name[sizeof(p->pd_initial) + 64];

	if (slot->used && slot->addr == p->addr && slot->pid == p->pid) {
		*group = slot->group;
		s->plabels = slot->plabels;
		return 0;
	}
	process__read_identity(&s->pr, p);
	s->st.pdict[p->pd_result]++;
	group_label(s, p, name, sizeof(name));
	if (agg__group(s->agg, name, group))
		return -ENOMEM;
	s->plabels = s->opts.labels ? process_labels(s, p) : 0;
	/* proc_lib writes '$initial_call' first thing in init_p: a process sampled before that,
	 * or whose dictionary read failed for a moment (it moved in a GC, a read raced it), is
	 * read again next time rather than kept as proc_lib:init_p/5 for the whole run (a busy
	 * gen_server's every sample went to '<0.84.0> proc_lib:init_p/5' in one CI run). A term
	 * that does not parse is one a collection was moving (ci21: a gen_server in a collection
	 * 40 % of its time, its every sample '<0.85.0> proc_lib:init_p/5', bad_term). */
	if ((p->pd_result == PDICT_ABSENT || p->pd_result == PDICT_READ_FAILED ||
	     p->pd_result == PDICT_BAD_HEADER || p->pd_result == PDICT_BAD_TERM ||
	     p->pd_result == PDICT_GONE) &&
	    !p->name[0] && strncmp(p->initial, "proc_lib:", 9) == 0)
		return 0;
	*slot = (struct ident){
	    .addr = p->addr, .pid = p->pid, .group = *group, .plabels = s->plabels, .used = true};
	return 0;
}

/* --name takes the atom's text, or its Elixir form: shown (a name as names.h shows it, quoted
 * when Erlang quotes it) matches Elixir.MyApp.Repo as MyApp.Repo or 'Elixir.MyApp.Repo'. */
static bool name_matches(const char *shown, const char *want)
{
	size_t n = strlen(want), k = strlen(shown);

	if (strcmp(shown, want) == 0)
		return true;
	if (k == n + 2 && shown[0] == '\'' && shown[k - 1] == '\'' &&
	    strncmp(shown + 1, want, n) == 0)
		return true;
	return strncmp(want, "Elixir.", 7) == 0 && strcmp(shown, want + 7) == 0;
}

bool sampler_frames__filtered_out(struct sampler *s, struct process_view *p)
{
	char pid[32];

	if (!s->opts.erlang_pid && !s->opts.name)
		return false;
	if (s->opts.erlang_pid) {
		process__pid_text(&s->pr.pids, p->pid, pid, sizeof(pid));
		if (strcmp(pid, s->filter_pid) != 0)
			return true;
	}
	if (s->opts.name) {
		if (!p->name[0])
			process__read_identity(&s->pr, p);
		/* A registered name; for a process registered under none, what the flame graph's
		 * root and top's process table call it (process__label: proc_lib's '$initial_call',
		 * else its initial call), so that every worker of one kind is kept. */
		if (!name_matches(p->name, s->opts.name) &&
		    (p->name[0] || strcmp(process__label(p), s->opts.name) != 0))
			return true;
	}
	return false;
}

/* The id of a frame named by a string literal (its address is the key): the aggregate's, looked up
 * once an aggregate rather than hashed and compared at every sample that has it. */
static int fixed_frame(struct sampler *s, const char *text, enum frame_kind kind, uint32_t *id)
{
	size_t k = ((uintptr_t)text >> 3) % FIXED_SLOTS;
	int rc;

	if (s->fixed[k].text == text && s->fixed[k].epoch == s->names_epoch) {
		*id = s->fixed[k].id;
		return 0;
	}
	if ((rc = agg__frame(s->agg, text, kind, id)) == 0) {
		s->fixed[k].text = text;
		s->fixed[k].epoch = s->names_epoch;
		s->fixed[k].id = *id;
	}
	return rc;
}

/* Where range r's frame id is kept: by r's index in the current map, whose every range has a slot.
 * Before, a direct-mapped cache of 4,096 slots by the range's address (ranges i and i + 4,096
 * shared one) sent a compiler's frames back to be named and interned: 10 s of `record` of
 * xp_compiler (OTP 29) called agg__frame ~22,000 times, against ~2,100 with this and
 * fixed_frame. NULL for a range of no current map, or with no memory for the array: named every
 * time. */
static uint32_t *jit_id_slot(struct sampler *s, const struct jit_range *r)
{
	const struct jit_range *base = jitmap__range(s->t->jit, 0);
	size_t n = jitmap__range_count(s->t->jit), i;

	if (!base || (uintptr_t)r < (uintptr_t)base)
		return NULL;
	i = ((uintptr_t)r - (uintptr_t)base) / sizeof(*r);
	if (i >= n || &base[i] != r)
		return NULL;
	if (s->njit_ids != n || s->jit_ids_map != s->t->jit) {
		uint32_t *v = realloc(s->jit_ids, n * sizeof(*v));

		if (!v)
			return NULL;
		memset(v, 0, n * sizeof(*v));
		s->jit_ids = v;
		s->njit_ids = n;
		s->jit_ids_map = s->t->jit;
	}
	return &s->jit_ids[i];
}

/* A JIT frame's aggregate id. With --lines an Erlang function's name carries the source line of
 * pc, "mod:fun/2 (mod.erl:12)", so each line is a frame of its own; fragments (global::...),
 * prologues and code without a line table keep the bare name. */
static int jit_frame(struct sampler *s, const struct jit_range *r, uint64_t pc, uint32_t *id)
{
	uint32_t *slot = s->opts.lines ? NULL : jit_id_slot(s, r);
	char name[1024];
	bool erlang;
	const char *file;
	uint32_t line;
	int rc;

	/* Without --lines a range is one frame: its name is built and interned once per map. */
	if (slot && *slot) {
		*id = *slot - 1;
		return 0;
	}
	erlang = jitmap__frame_name(r, name, sizeof(name));
	if (erlang)
		names__display_inplace(name, sizeof(name), s->opts.erlang_names);

	if (erlang && s->opts.lines && jitmap__line(s->t->jit, r, pc, &file, &line)) {
		size_t n = strlen(name);

		snprintf(name + n, sizeof(name) - n, " (%s:%u)", file, line);
	}
	rc = agg__frame(s->agg, name, erlang ? FRAME_ERLANG : FRAME_JIT_GLOBAL, id);
	if (rc == 0 && slot && *id < UINT32_MAX)
		*slot = *id + 1;
	return rc;
}

/* Where the leaf frame is: the sampled pc in JIT code; for a sample in native code, the call
 * into it (the return address by which the unwind reached JIT code, less one). */
static uint64_t leaf_pc(const struct sample_record *rec, const struct unwind_result *ur)
{
	return ur ? ur->jit_pc - 1 : rec->ps->ip;
}

/* The aggregate's frame id of a native frame; names are cached by pc, as resolving one through
 * libdw costs far more than the rest of a sample and samples must be resolved promptly. */
static int native_frame(struct sampler *s, const struct unwind_frame *f, uint32_t *id,
			bool *dirty_main)
{
	const struct sampler_hooks *h = &s->hooks;
	struct native_name *slot = &s->names[(f->pc ^ (f->pc >> 13)) % NAME_SLOTS];
	struct fn_name *fn = NULL;
	uint64_t key = 0, size = 0;
	char name[512];

	if (slot->used && slot->pc == f->pc && slot->activation == f->activation) {
		*id = slot->id;
		*dirty_main = slot->dirty_main;
		return 0;
	}
	/* A pc not seen before (most often a sampled leaf) in a function named before: its name
	 * is that one's, found by the function's start without being made and interned again.
	 * Not with hooks: a replay names by pc, and a capture keeps every pc's name and module. */
	if (s->unw && !h->name && !h->saw_name && !h->module && !h->saw_module)
		key = unwinder__name_key(s->unw, f, &size);
	if (key) {
		fn = &s->fn_names[(key ^ (key >> 13)) % NAME_SLOTS];
		if (fn->used && fn->key == key && fn->size == size) {
			*id = fn->id;
			*dirty_main = fn->dirty_main;
			goto keep;
		}
	}
	if (sampler_src__name(s, f, name, sizeof(name)))
		snprintf(name, sizeof(name), "[unknown]");
	if (agg__frame(s->agg, name, FRAME_NATIVE, id))
		return -ENOMEM;
	agg__frame_set_module(s->agg, *id, sampler_src__module(s, f->pc));
	*dirty_main = strcmp(name, "erts_dirty_process_main") == 0;
	if (fn)
		*fn = (struct fn_name){
		    .key = key, .size = size, .id = *id, .used = true, .dirty_main = *dirty_main};
keep:
	*slot = (struct native_name){.pc = f->pc,
				     .id = *id,
				     .activation = f->activation,
				     .used = true,
				     .dirty_main = *dirty_main};
	return 0;
}

/* Native frames, outermost first, appended to s->frames. A dirty scheduler's thread start and
 * loop, outside the dirty call, are left out when they are named (OTP 28+ hides the name). */
static uint32_t native_frames(struct sampler *s, const struct unwind_result *ur, uint32_t n)
{
	uint32_t base = n;
	size_t i;

	if (s->opts.only_erlang)
		return n;
	for (i = ur->nframes; i-- > 0 && n < MAX_FRAMES;) {
		uint32_t id;
		bool dirty_main;

		if (native_frame(s, &ur->frames[i], &id, &dirty_main))
			continue;
		if (ur->stop != UNWIND_STOP_JIT && dirty_main) {
			n = base;
			continue;
		}
		s->frames[n++] = id;
	}
	return n;
}

/* --fold-recursion: each run of one frame id in s->frames[from, n) (direct recursion: the same
 * function, and with --lines the same call line; a native function's frames too) becomes one
 * frame "NAME [recursive xK]" of the same kind. Returns the new n; a run whose frame cannot be
 * interned stays as it was. */
static uint32_t fold_recursion(struct sampler *s, uint32_t from, uint32_t n)
{
	uint32_t out = from, i = from, j, id;
	char name[512];

	while (i < n) {
		for (j = i + 1; j < n && s->frames[j] == s->frames[i]; j++)
			;
		if (j - i > 1 &&
		    snprintf(name, sizeof(name), "%s [recursive x%u]",
			     agg__frame_name(s->agg, s->frames[i]), j - i) < (int)sizeof(name) &&
		    agg__frame(s->agg, name, agg__frame_kind(s->agg, s->frames[i]), &id) == 0) {
			s->frames[out++] = id;
		} else {
			memmove(&s->frames[out], &s->frames[i], (j - i) * sizeof(s->frames[0]));
			out += j - i;
		}
		i = j;
	}
	return out;
}

/* Add the stack in s->frames[0..n) to the aggregate, and hand it to the record consumer. */
static void keep(struct sampler *s, struct sample_record *rec, uint32_t group, uint32_t n,
		 uint32_t nerlang)
{
	uint32_t id, folded;

	/* Erlang and native frames folded apart: a native function never continues an Erlang run.
	 */
	if (s->opts.fold_recursion) {
		folded = fold_recursion(s, 0, nerlang);
		memmove(&s->frames[folded], &s->frames[nerlang],
			(n - nerlang) * sizeof(s->frames[0]));
		n = fold_recursion(s, folded, folded + n - nerlang);
		nerlang = folded;
	}
	/* Taken in the kernel on the thread's behalf: the code that entered it is the leaf below.
	 */
	if (rec->ps->kernel) {
		s->st.kernel++;
		if (!s->opts.only_erlang && n < MAX_FRAMES &&
		    fixed_frame(s, "[kernel]", FRAME_NATIVE, &id) == 0)
			s->frames[n++] = id;
	}
	if (agg__add_tagged(s->agg, group, s->opts.labels ? sample_labels(s, rec->sched) : 0,
			    s->frames, n, 1))
		return;
	s->st.kept++;
	if (!s->opts.on_record)
		return;
	rec->group = group;
	rec->frames = s->frames;
	rec->nframes = n;
	rec->nerlang = nerlang;
	s->opts.on_record(rec, s->opts.record_ctx);
}

void sampler_frames__label(struct sampler *s, struct sample_record *rec,
			   const struct jit_range *leaf, const struct unwind_result *ur, bool known)
{
	static const char *const labels[] = {"[normal scheduler: no process]",
					     "[dirty cpu scheduler: no process]",
					     "[dirty io scheduler: no process]"};
	/* A dirty scheduler whose scheduler data is unknown (OTP 28+ without the agent), or a
	 * sample in a scheduler's C code with no capture to say which process it worked for (a GC
	 * at schedule time, a system task): its process cannot be read, which is not the same as
	 * having none. */
	static const char *const unknown[] = {"[normal scheduler: process unknown]",
					      "[dirty cpu scheduler: process unknown]",
					      "[dirty io scheduler: process unknown]"};
	const struct target_sched *sch = rec->sched;
	uint32_t group, n = 0, id, nerlang;
	const char *label = "[other thread]";

	if (!s->opts.include_idle) {
		s->st.excluded_idle++;
		return;
	}
	s->plabels = 0; /* no process: the scheduler is its only label */
	if (sch && sch->type <= XP_SCHED_DIRTY_IO)
		label = !known || (!sch->esdp && sch->type != XP_SCHED_NORMAL) ? unknown[sch->type]
									       : labels[sch->type];
	if (intern_label(s, label, &group))
		return;
	if (leaf && !s->opts.only_erlang && jit_frame(s, leaf, leaf_pc(rec, ur), &id) == 0)
		s->frames[n++] = id;
	nerlang = n;
	if (ur)
		n = native_frames(s, ur, n);
	rec->kind = SAMPLE_NO_PROCESS;
	keep(s, rec, group, n, nerlang);
}

/* The root label of a stack whose Erlang callers are unknown or cut (erlang_stack__root_label,
 * and how much a cut left out), or NULL for a whole stack. */
static const char *root_label(const struct estack_result *er, char *buf, size_t len)
{
	if (er->end != ESTACK_END_TRUNCATED)
		return erlang_stack__root_label(er->end);
	if (er->more_unknown)
		snprintf(buf, len, "[truncated: more than %u frames]",
			 (unsigned)er->nframes + er->more);
	else
		snprintf(buf, len, "[truncated: %u frames]", er->more);
	return buf;
}

/* The ids of the sample's walk's frames, root first, kept for the process's next (NULL: none
 * kept), and how many of the first ones are the last walk's (*reuse). */
static struct memo_ids *memo_ids(struct sampler *s, size_t *reuse)
{
	struct memo_ids *mi;
	size_t taken;

	*reuse = 0;
	if (s->memo_slot < 0)
		return NULL;
	mi = &s->memo_ids[s->memo_slot];
	if (!mi->ids && !(mi->ids = malloc(ESTACK_MAX_FRAMES * sizeof(*mi->ids))))
		return NULL;
	if (mi->names_epoch == s->names_epoch) {
		taken = s->memo[s->memo_slot].last_taken;
		*reuse = taken < mi->n ? taken : mi->n;
	}
	mi->names_epoch = s->names_epoch;
	return mi;
}

/* Erlang frames outermost first, then the leaf JIT frame, then native frames. */
void sampler_frames__erlang(struct sampler *s, struct sample_record *rec, struct process_view *p,
			    const struct estack_result *er, const struct jit_range *leaf,
			    const struct leaf_via *via, bool unnamed,
			    const struct unwind_result *ur)
{
	uint32_t group, n = 0, id, nerlang;
	struct memo_ids *mi;
	const char *label;
	char buf[64];
	size_t i, j, reuse;

	if (group_for(s, p, &group)) {
		if (s->memo_slot >= 0) /* the walk's ids are not kept: none are the memo's */
			s->memo_ids[s->memo_slot].n = 0;
		return;
	}
	/* A stack whose callers are unknown keeps only what the sample itself holds (its leaf and
	 * native frames), and says why at the root; a cut one says how much was cut. */
	label = rec->exiting ? "[process exiting]" : root_label(er, buf, sizeof(buf));
	if (label && agg__frame(s->agg, label, FRAME_LABEL, &id) == 0)
		s->frames[n++] = id;
	/* A caller's line is its call's: ra - 1, as ERTS does for stack traces (beam_common.c).
	 * The frames the walk took from the process's last one have that one's ids. */
	mi = memo_ids(s, &reuse);
	for (i = er->nframes, j = 0; i-- > 0 && n < MAX_FRAMES; j++) {
		if (j < reuse) {
			id = mi->ids[j];
		} else if (jit_frame(s, er->frames[i].fn, er->frames[i].ra - 1, &id) != 0) {
			if (mi) /* a frame left out: the ids after it are not at their place */
				mi->n = j;
			mi = NULL;
			continue;
		} else if (mi) {
			mi->ids[j] = id;
		}
		s->frames[n++] = id;
	}
	if (mi)
		mi->n = j;
	if (leaf && n < MAX_FRAMES &&
	    jit_frame(s, leaf, via ? via->leaf_pc : leaf_pc(rec, ur), &id) == 0 &&
	    (!s->opts.only_erlang || agg__frame_kind(s->agg, id) == FRAME_ERLANG))
		s->frames[n++] = id;
	if (via && !s->opts.only_erlang && n < MAX_FRAMES &&
	    jit_frame(s, via->frag, leaf_pc(rec, ur), &id) == 0)
		s->frames[n++] = id;
	if (unnamed && !s->opts.only_erlang && n < MAX_FRAMES &&
	    fixed_frame(s, "[unnamed JIT code]", FRAME_JIT_GLOBAL, &id) == 0)
		s->frames[n++] = id;
	nerlang = n;
	/* Not the process running its code: the scheduler working for it where it is parked (a
	 * garbage collection deferred from its allocations, signals, system tasks). */
	if (rec->scheduler_work && !s->opts.only_erlang && n < MAX_FRAMES &&
	    fixed_frame(s, "[scheduler work for the process]", FRAME_LABEL, &id) == 0)
		s->frames[n++] = id;
	/* A dirty scheduler's system task for it; a collection, from the process's state. */
	if (rec->dirty_task && !s->opts.only_erlang && n < MAX_FRAMES &&
	    fixed_frame(s, "[dirty system task]", FRAME_LABEL, &id) == 0)
		s->frames[n++] = id;
	if (rec->gc && !s->opts.only_erlang && n < MAX_FRAMES &&
	    fixed_frame(s, "[garbage collection]", FRAME_LABEL, &id) == 0)
		s->frames[n++] = id;
	if (ur)
		n = native_frames(s, ur, n);
	rec->kind = SAMPLE_ERLANG;
	rec->process = p->addr;
	keep(s, rec, group, n, nerlang);
}

void sampler_frames__unknown_callers(struct sampler *s, struct sample_record *rec,
				     struct process_view *p, const char *why,
				     const struct jit_range *leaf, const struct unwind_result *ur)
{
	uint32_t group, n = 0, id, nerlang;
	char label[160];

	/* Without the process (not known at the sample), the time is still a process's: a group
	 * of its own, kept whatever --include-idle says. */
	s->plabels = 0;
	if (p ? group_for(s, p, &group)
	      : agg__group(s->agg, "[process unknown: native unwind stopped]", &group))
		return;
	snprintf(label, sizeof(label), "[Erlang callers unknown: %s]", why);
	if (agg__frame(s->agg, label, FRAME_LABEL, &id) == 0)
		s->frames[n++] = id;
	/* A parked process's resume point, known without its stack (a dirty system task's). */
	if (leaf && jit_frame(s, leaf, leaf->start, &id) == 0)
		s->frames[n++] = id;
	nerlang = n;
	if (rec->dirty_task && !s->opts.only_erlang &&
	    fixed_frame(s, "[dirty system task]", FRAME_LABEL, &id) == 0)
		s->frames[n++] = id;
	if (rec->gc && !s->opts.only_erlang &&
	    fixed_frame(s, "[garbage collection]", FRAME_LABEL, &id) == 0)
		s->frames[n++] = id;
	n = native_frames(s, ur, n);
	rec->kind = p ? SAMPLE_ERLANG : SAMPLE_NO_PROCESS;
	rec->process = p ? p->addr : 0;
	keep(s, rec, group, n, nerlang);
}

void sampler__swap_agg(struct sampler *s, struct agg *new_agg)
{
	s->agg = new_agg;
	s->names_epoch++;
	memset(s->ident, 0, sizeof(s->ident));
	memset(s->names, 0, sizeof(s->names));
	memset(s->fn_names, 0, sizeof(s->fn_names));
	s->njit_ids = 0;
}
