/* The sampler's view of the JIT map and the maps: re-walked when the VM registered or purged
 * code, re-read when a library was mapped since attach, and the lookup of a sample's pc that
 * tries both before calling it unnamed. See sampler_int.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sampler_int.h"
#include "path.h"

uint64_t sampler__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool returns_from(void *ctx, uint64_t ra, const struct jit_range *callee)
{
	struct sampler *s = ctx;

	return callsite__returns_from(s->calls, s->t->jit, ra, callee);
}

/* The walker takes an unaligned return address at the top of a stack only when the call-site
 * check confirms it. */
void sampler__verify_returns(struct sampler *s)
{
	s->ecfg.returns_from = returns_from;
	s->ecfg.returns_ctx = s;
}

static bool same_descriptor(const struct jit_descriptor *a, const struct jit_descriptor *b)
{
	return a->first_entry == b->first_entry && a->relevant_entry == b->relevant_entry &&
	       a->action == b->action;
}

/* The JIT map read at attach goes stale: modules loaded since are missing, and OTP 27+ frees
 * purged code and reuses its memory (otp-internals.md §3.2). Bring it up to date when the
 * descriptor changed (GDB's protocol: every register / unregister updates it) or its newest entry
 * is no longer the map's (a module purged and the next registered at the freed entry's address
 * leave the descriptor as it was, the code perhaps elsewhere), at most every min_ns: OTP 25's list
 * only grows, so only its new entries are read (jitmap__extend); others are walked whole. A walk
 * that races a purge can break: the map in use is kept and the walk tried again after JIT_RETRY_NS
 * (after 100 ms, a sampler under ASAN and strace, whose samples are resolved 100-300 ms late, left
 * up to 9.6 % of a 108-loads-a-second workload's walks unresolved on OTP 27). */
void sampler__refresh_jit(struct sampler *s, uint64_t min_ns)
{
	const struct target_value *a = &s->t->addr[XP_ADDR_JIT_DESCRIPTOR];
	struct jit_descriptor d;
	uint64_t now = sampler__now_ns();
	int err;

	if (s->replay || !a->present || now - s->jit_tried_ns < min_ns)
		return;
	/* The descriptor itself is read at most every JIT_CHECK_NS from the polling loop (a
	 * syscall per wake-up otherwise); a sample in code the map lacks asks at once. Unchanged,
	 * its newest entry is checked too (two more reads), at most every JIT_RETRY_NS: code that
	 * no map names, sample after sample, must not cost three syscalls a sample. */
	if (min_ns >= JIT_REFRESH_POLL_NS && now - s->jit_checked_ns < JIT_CHECK_NS)
		return;
	s->jit_checked_ns = now;
	if (jitmap__read_descriptor(s->t->mem, (uint64_t)a->value, &d))
		return;
	if (same_descriptor(&d, &s->jdesc)) {
		if (now - s->jit_head_checked_ns < JIT_RETRY_NS)
			return;
		s->jit_head_checked_ns = now;
		if (jitmap__head_current(s->t->mem, s->t->jit, &d))
			return;
	}
	s->jit_tried_ns = now;
	err = target__refresh_jit(s->t);
	if (err == -EAGAIN) /* the walk raced a purge, which says nothing of the next walk */
		s->jit_tried_ns = now - JIT_REFRESH_MISS_NS + JIT_RETRY_NS;
	if (err)
		return;
	s->jdesc = *jitmap__descriptor(s->t->jit);
	s->jit_walked_ns = now;
	s->st.jit_refreshes++;
	s->st.jit_carried = jitmap__stats(s->t->jit)->carried;
	s->st.jit_entries = jitmap__stats(s->t->jit)->entries;
	s->st.jit_ranges = jitmap__range_count(s->t->jit);
	s->st.jit_pruned = jitmap__stats(s->t->jit)->pruned;
	/* Purged code's addresses may be reused, and the old map's ranges are gone. */
	callsite__reset(s->calls);
	s->njit_ids = 0;
	s->names_epoch++;
	erlang_stack__cfg(&s->ecfg, s->t->jit, s->t->frame_layout,
			  (uint64_t)s->t->addr[XP_ADDR_NORMAL_EXIT].value, s->t->layout);
	sampler__verify_returns(s);
}

void sampler__refresh_code(struct sampler *s)
{
	if (s)
		sampler__refresh_jit(s, 0);
}

void sampler__unnamed_where(const struct sampler *s, uint64_t addr, char *buf, size_t len)
{
	const struct jit_range *r = jitmap__lookup(s->t->jit, addr);
	const struct proc_map *m = proc_maps__find(s->maps ? s->maps : s->t->maps, addr);

	if (r) {
		snprintf(buf, len, "in %s, no function", r->name);
	} else if (!m) {
		snprintf(buf, len, "unmapped");
	} else if (!m->path[0]) {
		snprintf(buf, len, "anonymous %c%c%c memory, in no JIT range",
			 m->perms & PROC_PERM_R ? 'r' : '-', m->perms & PROC_PERM_W ? 'w' : '-',
			 m->perms & PROC_PERM_X ? 'x' : '-');
	} else {
		snprintf(buf, len, "%s+0x%" PRIx64, path__base(m->path),
			 addr - m->start + m->offset);
	}
}

/* A file mapped since attach (a NIF library loaded later): re-read /proc/PID/maps, at most
 * every MAPS_REFRESH_NS, and report the new files to the unwinder. */
static bool refresh_maps(struct sampler *s, uint64_t pc)
{
	struct proc_maps *m = NULL;
	uint64_t now = sampler__now_ns();

	if (s->replay || now - s->maps_tried_ns < MAPS_REFRESH_NS)
		return false;
	s->maps_tried_ns = now;
	if (proc_maps__load(s->t->pid, &m))
		return false;
	if (unwinder__refresh(s->unw, m) > 0)
		s->st.maps_refreshes++;
	proc_maps__free(s->maps);
	s->maps = m; /* the unwinder may keep pointers into it */
	return unwinder__module(s->unw, pc) != NULL;
}

/* The map's range at pc for a sample taken at time: a range kept from the map before the last
 * walk (jitmap__carry: purged code) names only samples taken before that walk began; code at pc
 * since then is code the walk did not see. */
static const struct jit_range *range_at(const struct sampler *s, uint64_t pc, uint64_t time)
{
	const struct jit_range *r = jitmap__lookup(s->t->jit, pc);

	if (r && time >= s->jit_walked_ns && jitmap__module(s->t->jit, r->module)->carried)
		return NULL;
	return r;
}

/* A pc the JIT map does not name and no mapped file holds: JIT code loaded since the map was
 * read, or a library mapped since attach. Re-walk the JIT map, then the maps, and look again. */
const struct jit_range *sampler__lookup_jit(struct sampler *s, uint64_t pc, uint64_t time,
					    bool *unnamed)
{
	const struct jit_range *r = range_at(s, pc, time);

	*unnamed = false;
	if (r || sampler_src__module(s, pc))
		return r;
	sampler__refresh_jit(s, JIT_REFRESH_MISS_NS);
	r = range_at(s, pc, time);
	if (!r && refresh_maps(s, pc))
		return NULL;
	*unnamed = !r;
	return r;
}
