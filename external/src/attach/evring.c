/* The event tracer from outside (see evring.h). Everything read from the VM is untrusted: the
 * block is read again (magic, ABI, stable seq), the region's counts, sizes and addresses are
 * recomputed, the control slot must lie in one private writable mapping, and a ring's head
 * must only move forward. A record counts only when its seq is its index + 1 and the ring had
 * not wrapped past it by the time the copy ended. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "evring.h"

#define BLOCK_READ_TRIES 5
#define MAX_RECORDS	 (1u << 20)

static const char *const status_str[EVRING_STATUS_COUNT] = {
    [EVRING_OK] = "ok",
    [EVRING_NO_AGENT] = "no extrospect agent in the VM",
    [EVRING_BLOCK_GONE] = "the agent block is gone (agent unloaded or upgrading)",
    [EVRING_NONE] = "the agent has no event tracer (an agent older than events, or it could "
		    "not allocate its rings)",
    [EVRING_BAD_VERSION] = "unsupported event tracer version",
    [EVRING_BAD_REGION] = "event tracer region out of range",
    [EVRING_NOT_WRITABLE] = "event tracer control slot outside a writable mapping",
    [EVRING_BUSY] = "another sampler is reading events from this VM",
    [EVRING_WRITE_FAILED] = "process_vm_writev to the event tracer's control slot failed",
    [EVRING_READ_FAILED] = "an event ring could not be read",
};

const char *evring__status_str(enum evring_status st)
{
	return (unsigned)st < EVRING_STATUS_COUNT ? status_str[st] : "?";
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

enum evring_status evring__check_region(const struct xp_tracer_region *g)
{
	if (g->version == 0)
		return EVRING_NONE;
	if (g->version != XP_TRACER_REGION_VERSION)
		return EVRING_BAD_VERSION;
	if (g->nrings == 0 || g->nrings > XP_TRACER_MAX_RINGS ||
	    g->record_size != sizeof(struct xp_ev) || g->ring_records < 2 ||
	    g->ring_records > MAX_RECORDS || (g->ring_records & (g->ring_records - 1)) ||
	    g->ring_bytes != sizeof(struct xp_ev_ring) + (uint64_t)g->ring_records * 32 ||
	    g->ctl_size != sizeof(struct xp_tracer_ctl) || !g->ctl_addr || (g->ctl_addr & 63) ||
	    !g->rings_addr || (g->rings_addr & 63) || g->rings_addr > UINT64_MAX / 4 ||
	    g->ctl_addr > UINT64_MAX / 4)
		return EVRING_BAD_REGION;
	return EVRING_OK;
}

static enum evring_status read_region(const struct target *t, struct xp_tracer_region *g)
{
	struct xp_agent_block *b = malloc(sizeof(*b));
	enum evring_status st = EVRING_BLOCK_GONE;
	uint64_t seq;
	int i;

	if (!b)
		return EVRING_BLOCK_GONE;
	for (i = 0; i < BLOCK_READ_TRIES; i++) {
		if (mem__read(t->mem, t->agent->addr, b, sizeof(*b)))
			break;
		if (agent__validate(b, sizeof(*b)) != AGENT_OK ||
		    mem__read_u64(t->mem, t->agent->addr + offsetof(struct xp_agent_block, seq),
				  &seq) ||
		    seq != b->seq)
			continue;
		*g = b->tracer;
		st = evring__check_region(g);
		break;
	}
	free(b);
	return st;
}

static enum evring_status check_ctl_mapping(pid_t pid, const struct xp_tracer_region *g)
{
	const struct proc_map *m;
	struct proc_maps *maps = NULL;
	enum evring_status st = EVRING_NOT_WRITABLE;

	if (proc_maps__load(pid, &maps))
		return EVRING_BLOCK_GONE;
	m = proc_maps__find(maps, g->ctl_addr);
	if (m && (m->perms & PROC_PERM_W) && !(m->perms & PROC_PERM_SHARED) &&
	    g->ctl_addr + g->ctl_size <= m->end)
		st = EVRING_OK;
	proc_maps__free(maps);
	return st;
}

enum evring_status evring__open(const struct target *t, struct evring *r)
{
	enum evring_status st;

	memset(r, 0, sizeof(*r));
	if (!target__has_agent(t))
		return EVRING_NO_AGENT;
	st = read_region(t, &r->region);
	if (st == EVRING_OK)
		st = check_ctl_mapping(t->pid, &r->region);
	if (st != EVRING_OK)
		return st;
	r->buf = malloc((size_t)r->region.ring_records * sizeof(struct xp_ev));
	if (!r->buf)
		return EVRING_READ_FAILED;
	r->pid = t->pid;
	r->mem = t->mem;
	return EVRING_OK;
}

void evring__close(struct evring *r)
{
	free(r->buf);
	r->buf = NULL;
}

enum evring_status evring__ctl(const struct evring *r, struct xp_tracer_ctl *out)
{
	return mem__read(r->mem, r->region.ctl_addr, out, sizeof(*out)) ? EVRING_READ_FAILED
									: EVRING_OK;
}

/* The one kind of write: bytes [off, off + len) of the validated control slot, within the part
 * the sampler owns. */
static enum evring_status ctl_write(struct evring *r, size_t off, const void *data, size_t len)
{
	struct iovec local = {(void *)data, len};
	struct iovec remote = {(void *)(uintptr_t)(r->region.ctl_addr + off), len};

	if (off + len > XP_TRACER_WRITABLE)
		return EVRING_WRITE_FAILED;
	if (process_vm_writev(r->pid, &local, 1, &remote, 1, 0) != (ssize_t)len)
		return EVRING_WRITE_FAILED;
	return EVRING_OK;
}

static int ring_head(struct evring *r, unsigned i, struct xp_ev_ring *h)
{
	return mem__read(r->mem, r->region.rings_addr + (uint64_t)i * r->region.ring_bytes, h,
			 sizeof(*h));
}

enum evring_status evring__start(struct evring *r, uint64_t want, uint64_t sample_n)
{
	struct xp_tracer_ctl c;
	struct xp_ev_ring h;
	uint64_t w[XP_TRACER_WRITABLE / 8];
	unsigned i;

	if (evring__ctl(r, &c))
		return EVRING_READ_FAILED;
	if (c.want && c.owner != (uint64_t)getpid() && c.lease_expiry_ns > now_ns() &&
	    (c.state == XP_TRACER_STARTING || c.state == XP_TRACER_ON))
		return EVRING_BUSY;
	for (i = 0; i < r->region.nrings; i++) {
		if (ring_head(r, i, &h))
			return EVRING_READ_FAILED;
		r->next[i] = h.head;
		r->tid[i] = h.tid;
	}
	r->session = c.session;
	r->lease = c.lease + 1;
	w[0] = r->lease; /* struct xp_tracer_ctl's writable part: want last */
	w[1] = (uint64_t)getpid();
	w[2] = sample_n;
	w[3] = want;
	if (ctl_write(r, 0, w, sizeof(w)))
		return EVRING_WRITE_FAILED;
	r->leased = 1;
	return EVRING_OK;
}

enum evring_status evring__renew(struct evring *r)
{
	uint64_t lease = r->lease + 1;

	if (!r->leased)
		return EVRING_OK;
	if (ctl_write(r, offsetof(struct xp_tracer_ctl, lease), &lease, sizeof(lease)))
		return EVRING_WRITE_FAILED;
	r->lease = lease;
	return EVRING_OK;
}

enum evring_status evring__stop(struct evring *r)
{
	uint64_t zero = 0;

	if (!r->leased)
		return EVRING_OK;
	r->leased = 0;
	return ctl_write(r, offsetof(struct xp_tracer_ctl, want), &zero, sizeof(zero));
}

/* Copy records [from, to) of ring i into r->buf (in at most two reads). */
static int copy_span(struct evring *r, unsigned i, uint64_t from, uint64_t to)
{
	uint64_t cap = r->region.ring_records, base, first, n = to - from, a;
	struct mem_req q[2];
	size_t nq = 1;

	base =
	    r->region.rings_addr + (uint64_t)i * r->region.ring_bytes + sizeof(struct xp_ev_ring);
	a = from & (cap - 1);
	first = cap - a < n ? cap - a : n;
	q[0] = (struct mem_req){.addr = base + a * 32, .buf = r->buf, .len = (size_t)first * 32};
	if (first < n) {
		q[1] = (struct mem_req){
		    .addr = base, .buf = r->buf + first, .len = (size_t)(n - first) * 32};
		nq = 2;
	}
	if (mem__read_many(r->mem, q, nq))
		return -EFAULT;
	return q[0].rc || (nq == 2 && q[1].rc) ? -EFAULT : 0;
}

/* One ring: what the producers completed since our last look. */
static enum evring_status drain_ring(struct evring *r, unsigned i, evring_fn fn, void *ctx)
{
	uint64_t cap = r->region.ring_records, from = r->next[i], to, k;
	struct xp_ev_ring h;

	if (ring_head(r, i, &h))
		return EVRING_READ_FAILED;
	r->tid[i] = h.tid;
	if (h.head < from) /* a head never moves back: a new tracer; start over */
		from = r->next[i] = h.head;
	to = h.head;
	if (to - from > cap) { /* wrapped past what we had not read */
		r->lost[EVLOSS_LAPPED] += to - from - cap;
		from = to - cap;
	}
	if (to == from)
		return EVRING_OK;
	if (copy_span(r, i, from, to))
		return EVRING_READ_FAILED;
	if (ring_head(r, i, &h))
		return EVRING_READ_FAILED;
	for (k = from; k < to; k++) {
		const struct xp_ev *e = &r->buf[k - from];

		if (h.head > k + cap || e->seq != (uint32_t)(k + 1) || e->kind == XP_EV_NONE ||
		    e->kind >= XP_EV_KIND_COUNT) {
			/* A record still being written at the end of a shared ring: next time. */
			if (e->seq == 0 && k + 64 > to && h.head <= k + cap) {
				to = k;
				break;
			}
			r->lost[EVLOSS_TORN]++;
			continue;
		}
		r->read++;
		fn(e, i, ctx);
	}
	r->next[i] = to;
	return EVRING_OK;
}

enum evring_status evring__drain(struct evring *r, evring_fn fn, void *ctx)
{
	enum evring_status st = EVRING_OK;
	unsigned i;

	for (i = 0; i < r->region.nrings && st == EVRING_OK; i++)
		st = drain_ring(r, i, fn, ctx);
	return st;
}
