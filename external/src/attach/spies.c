/* The spy region and slots from outside, and leases (see spies.h). Everything read from the VM
 * is untrusted: the block is read again (magic, ABI, even and stable seq), the region's counts,
 * sizes and slot addresses are recomputed, the slot array must lie in one writable mapping, and
 * each tid must be a thread of the VM named xp_spy_N. Only then may slot_write run. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "spies.h"

#define BLOCK_READ_TRIES 5

static const char *const status_str[SPIES_STATUS_COUNT] = {
    [SPIES_OK] = "ok",
    [SPIES_NO_AGENT] = "no extrospect agent in the VM",
    [SPIES_BLOCK_GONE] = "the agent block is gone (agent unloaded or upgrading)",
    [SPIES_NONE] = "the agent runs no spy threads",
    [SPIES_BAD_VERSION] = "unsupported spy region version",
    [SPIES_BAD_REGION] = "spy region out of range",
    [SPIES_NOT_WRITABLE] = "spy slots outside a writable mapping",
    [SPIES_BAD_TID] = "a spy tid is not a thread of the VM named xp_spy_N",
    [SPIES_BAD_SLOT] = "a spy slot disagrees with the region",
    [SPIES_BUSY] = "every spy is already leased",
    [SPIES_LEASE_LOST] = "the spy's lease was revoked or taken over",
    [SPIES_WRITE_FAILED] = "process_vm_writev to the spy slot failed",
};

const char *spies__status_str(enum spies_status st)
{
	return (unsigned)st < SPIES_STATUS_COUNT ? status_str[st] : "?";
}

/* A whole, current copy of the block: magic and ABI valid, seq even and unchanged. */
static enum spies_status read_block(const struct target *t, struct xp_agent_block *b)
{
	uint64_t addr = t->agent->addr, seq;
	int i;

	for (i = 0; i < BLOCK_READ_TRIES; i++) {
		if (mem__read(t->mem, addr, b, sizeof(*b)))
			return SPIES_BLOCK_GONE;
		if (agent__validate(b, sizeof(*b)) != AGENT_OK)
			continue;
		if (mem__read_u64(t->mem, addr + offsetof(struct xp_agent_block, seq), &seq))
			return SPIES_BLOCK_GONE;
		if (seq == b->seq)
			return SPIES_OK;
	}
	return SPIES_BLOCK_GONE;
}

enum spies_status spies__check_region(const struct xp_spy_region *r)
{
	unsigned i;

	if (r->version == 0 || r->nslots == 0)
		return SPIES_NONE;
	if (r->version != XP_SPY_REGION_VERSION)
		return SPIES_BAD_VERSION;
	if (r->nslots > XP_SPY_MAX || r->slot_size != sizeof(struct xp_spy_slot) ||
	    !r->slots_addr || (r->slots_addr & 63) || r->slots_addr > UINT64_MAX / 2)
		return SPIES_BAD_REGION;
	for (i = 0; i < r->nslots; i++) {
		if (r->desc[i].index != i || r->desc[i].tid <= 0 ||
		    r->desc[i].slot != r->slots_addr + (uint64_t)i * r->slot_size)
			return SPIES_BAD_REGION;
	}
	return SPIES_OK;
}

/* The slot array lies inside one private writable mapping of the VM, as read now. */
static enum spies_status check_mapping(const struct target *t, const struct xp_spy_region *r)
{
	uint64_t end = r->slots_addr + (uint64_t)r->nslots * r->slot_size;
	const struct proc_map *m;
	struct proc_maps *maps = NULL;
	enum spies_status st = SPIES_NOT_WRITABLE;

	if (proc_maps__load(t->pid, &maps))
		return SPIES_BLOCK_GONE;
	m = proc_maps__find(maps, r->slots_addr);
	if (m && (m->perms & PROC_PERM_W) && !(m->perms & PROC_PERM_SHARED) && end <= m->end)
		st = SPIES_OK;
	proc_maps__free(maps);
	return st;
}

/* /proc/PID/task/TID/comm is "xp_spy_N" for spy i (N = i + 1). */
bool spies__tid_is_spy(pid_t pid, int32_t tid, unsigned i)
{
	char path[64], comm[32] = "", want[16];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	snprintf(want, sizeof(want), "xp_spy_%u", i + 1);
	return strcmp(comm, want) == 0;
}

static enum spies_status read_slots(const struct target *t, struct spies_view *v)
{
	const struct xp_spy_region *r = &v->region;
	unsigned i;

	if (mem__read(t->mem, r->slots_addr, v->slot, (size_t)r->nslots * r->slot_size))
		return SPIES_BLOCK_GONE;
	for (i = 0; i < r->nslots; i++) {
		if (proc__host_tid(t->pid, r->desc[i].tid, &v->host_tid[i]) ||
		    !spies__tid_is_spy(t->pid, v->host_tid[i], i))
			return SPIES_BAD_TID;
		v->slot_ok[i] =
		    v->slot[i].tid == r->desc[i].tid && v->slot[i].state <= XP_SPY_STOPPED;
	}
	return SPIES_OK;
}

enum spies_status spies__read(const struct target *t, struct spies_view *out)
{
	struct xp_agent_block *b;
	enum spies_status st;

	memset(out, 0, sizeof(*out));
	if (!target__has_agent(t))
		return SPIES_NO_AGENT;
	b = malloc(sizeof(*b));
	if (!b)
		return SPIES_BLOCK_GONE;
	st = read_block(t, b);
	if (st == SPIES_OK) {
		out->block_addr = t->agent->addr;
		out->block_generation = b->generation;
		out->region = b->spy;
		st = spies__check_region(&out->region);
	}
	free(b);
	if (st == SPIES_OK)
		st = check_mapping(t, &out->region);
	if (st == SPIES_OK)
		st = read_slots(t, out);
	return st;
}

/* The one write into the VM: bytes [off, off + len) of a validated slot, off + len within the
 * part the sampler owns. */
static enum spies_status slot_write(const struct target *t, uint64_t slot, size_t off,
				    const void *data, size_t len)
{
	struct iovec local = {(void *)data, len};
	struct iovec remote = {(void *)(uintptr_t)(slot + off), len};

	if (off + len > XP_SPY_WRITABLE)
		return SPIES_BAD_SLOT;
	if (process_vm_writev(t->pid, &local, 1, &remote, 1, 0) != (ssize_t)len)
		return SPIES_WRITE_FAILED;
	return SPIES_OK;
}

enum spies_status spy_lease__still_ours(const struct spies_view *v, const struct spy_lease *l)
{
	const struct xp_spy_slot *s = &v->slot[l->index];

	if (l->index >= v->region.nslots || v->region.desc[l->index].tid != l->tid ||
	    v->region.desc[l->index].slot != l->slot || !v->slot_ok[l->index])
		return SPIES_LEASE_LOST;
	if (s->generation != l->generation || s->target != l->target ||
	    s->owner != (uint64_t)l->pid)
		return SPIES_LEASE_LOST;
	return SPIES_OK;
}

static int pick_parked(const struct spies_view *v)
{
	unsigned i;

	for (i = 0; i < v->region.nslots; i++) {
		if (v->slot_ok[i] && v->slot[i].state == XP_SPY_PARKED && v->slot[i].target == 0)
			return (int)i;
	}
	return -1;
}

enum spies_status spy_lease__acquire(const struct target *t, uint64_t target, uint64_t interval_ns,
				     struct spy_lease *out)
{
	struct spies_view *v = malloc(sizeof(*v));
	uint64_t w[XP_SPY_WRITABLE / 8];
	enum spies_status st;
	int i;

	memset(out, 0, sizeof(*out));
	if (!v)
		return SPIES_BLOCK_GONE;
	st = spies__read(t, v);
	if (st != SPIES_OK)
		goto cleanup;
	i = pick_parked(v);
	if (i < 0) {
		st = SPIES_BUSY;
		goto cleanup;
	}
	out->pid = getpid();
	out->index = (unsigned)i;
	out->tid = v->region.desc[i].tid;
	out->host_tid = v->host_tid[i];
	out->slot = v->region.desc[i].slot;
	out->target = target;
	out->generation = v->slot[i].generation;
	out->lease = v->slot[i].lease + 1;
	out->block_generation = v->block_generation;
	w[0] = interval_ns; /* the layout of struct xp_spy_slot's writable part: target last */
	w[1] = out->lease;
	w[2] = (uint64_t)out->pid;
	w[3] = target;
	st = slot_write(t, out->slot, 0, w, sizeof(w));
	if (st != SPIES_OK)
		goto cleanup;
	/* The spy may have bumped the generation for its previous lease meanwhile: ours is the one
	 * seen with our target and pid in place. */
	if (spies__read(t, v) != SPIES_OK || v->slot[i].target != target ||
	    v->slot[i].owner != (uint64_t)out->pid)
		st = SPIES_LEASE_LOST;
	out->generation = v->slot[i].generation;
cleanup:
	free(v);
	return st;
}

static enum spies_status checked_write(const struct target *t, struct spy_lease *l, size_t off,
				       uint64_t value)
{
	struct spies_view *v = malloc(sizeof(*v));
	enum spies_status st;

	if (!v)
		return SPIES_BLOCK_GONE;
	st = spies__read(t, v);
	if (st == SPIES_OK)
		st = spy_lease__still_ours(v, l);
	if (st == SPIES_OK)
		st = slot_write(t, l->slot, off, &value, sizeof(value));
	free(v);
	return st;
}

enum spies_status spy_lease__renew(const struct target *t, struct spy_lease *l)
{
	enum spies_status st =
	    checked_write(t, l, offsetof(struct xp_spy_slot, lease), l->lease + 1);

	if (st == SPIES_OK)
		l->lease++;
	return st;
}

enum spies_status spy_lease__release(const struct target *t, struct spy_lease *l)
{
	enum spies_status st;

	if (!l->slot)
		return SPIES_OK;
	st = checked_write(t, l, offsetof(struct xp_spy_slot, target), 0);
	l->slot = 0;
	return st;
}

const char *spies__state_name(uint32_t st)
{
	static const char *const names[] = {"starting", "parked", "retargeted", "stopped"};

	return st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}
