/* The GDB JIT map from inside the VM. See jitself.h. The walk and the symfile parser are the vm
 * library's (external/vm/jitmap.c) over guarded self-reads (mem__open_self); this file keeps
 * what only the agent asks: the scan's in-place prefilter, retries while the list changes, and
 * the answers the calibration checks (the emulator entry, one module, named ranges). */
#include <errno.h>
#include <string.h>

#include "jitmap.h"
#include "jitself.h"
#include "mem.h"

#define DESC_SIZE    24
#define WALK_RETRIES 4

static int has_module(const struct jitmap *map, const char *name)
{
	size_t i;

	for (i = 0; i < jitmap__module_count(map); i++) {
		if (strcmp(jitmap__module(map, (uint32_t)i)->name, name) == 0)
			return 1;
	}
	return 0;
}

/* The newest range named want->range, in a module named want->module. */
static void find_want(const struct jitmap *map, struct jitself_want *want)
{
	const struct jit_range *r = jitmap__find(map, want->range);
	const struct jit_module_info *mod = r ? jitmap__module(map, r->module) : NULL;

	if (mod && strcmp(mod->name, want->module) == 0 && r->start <= r->end) {
		want->start = r->start;
		want->end = r->end;
		want->mod_base = mod->base;
		want->mod_size = mod->code_size;
	}
}

static void answer(const struct jitmap *map, const char *must_module, struct jitself_want *want,
		   unsigned nwant, struct jitself_result *res)
{
	const struct jitmap_stats *st = jitmap__stats(map);
	unsigned i;

	res->entries = (unsigned)st->entries;
	res->modules = (unsigned)st->modules;
	res->emulator_found = st->emulator > 0;
	res->frame_layout = st->frame_layout;
	res->normal_exit = st->normal_exit;
	res->module_found = must_module && has_module(map, must_module);
	for (i = 0; i < nwant; i++)
		find_want(map, &want[i]);
}

/* One walk: -EAGAIN when an entry could not be read or parsed or a link broke (27+ frees entries
 * on purge while we walk). */
static int walk_once(struct mem *m, uint64_t desc, const char *must_module,
		     struct jitself_want *want, unsigned nwant, struct jitself_result *res)
{
	struct jit_descriptor d;
	struct jitmap *map = NULL;
	int err;

	err = jitmap__read_descriptor(m, desc, &d);
	if (err)
		return err == -EPROTO ? -EPROTO : -EFAULT;
	if (!d.first_entry)
		return -EPROTO;
	err = jitmap__load(m, desc, &map);
	if (err)
		return err == -ENOMEM ? err : -EAGAIN;
	if (jitmap__stats(map)->chain_broken || jitmap__stats(map)->bad_entries)
		err = -EAGAIN;
	else
		answer(map, must_module, want, nwant, res);
	jitmap__free(map);
	return err;
}

int jitself__walk(uint64_t desc, const char *must_module, struct jitself_want *want, unsigned nwant,
		  struct jitself_result *res)
{
	struct mem *m = NULL;
	unsigned attempt, i;
	int err;

	err = mem__open_self(&m);
	if (err)
		return err;
	err = -EAGAIN;
	for (attempt = 0; attempt < WALK_RETRIES && err == -EAGAIN; attempt++) {
		memset(res, 0, sizeof(*res));
		res->frame_layout = -1;
		for (i = 0; i < nwant; i++)
			want[i].start = want[i].end = want[i].mod_base = want[i].mod_size = 0;
		err = walk_once(m, desc, must_module, want, nwant, res);
	}
	mem__free(m);
	return err;
}

/* Cheap test on the directly readable section bytes before any syscall. */
static int prefilter(uint64_t a, void *ctx)
{
	uint32_t hdr[2];
	uint64_t first;

	memcpy(hdr, (const void *)(uintptr_t)a, 8);
	memcpy(&first, (const void *)(uintptr_t)(a + 16), 8);
	return hdr[0] == 1 && hdr[1] <= 2 && first && (first & 7) == 0 && mem__plausible(first);
}

/* A descriptor whose list walks and holds the emulator (and must_module, when given). */
static int confirm(uint64_t a, void *ctx)
{
	const char *must_module = ctx;
	struct jitself_result res;

	return !jitself__walk(a, must_module, NULL, 0, &res) && res.emulator_found &&
	       (!must_module || res.module_found);
}

int jitself__scan(const struct selfelf *se, const char *must_module, uint64_t *addr,
		  unsigned *candidates)
{
	return selfelf__scan_unique(se, DESC_SIZE, prefilter, confirm, (void *)must_module, addr,
				    candidates);
}
