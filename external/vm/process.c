/* Process structs read from outside. See process.h. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "process.h"

static bool have(const struct target_value *off, enum xp_off_id id)
{
	return off[id].present && off[id].value >= 0 && off[id].value < 4096;
}

#define BOUNDS_MAX_BYTES 512

static const enum xp_off_id bounds_ids[] = {
    XP_OFF_P_ID,      XP_OFF_P_HTOP,	      XP_OFF_P_STOP,	       XP_OFF_P_HEAP, XP_OFF_P_HEND,
    XP_OFF_P_HEAP_SZ, XP_OFF_P_FRAME_POINTER, XP_OFF_P_ABANDONED_HEAP, XP_OFF_P_I};

/* The identity fields, copied with the bounds when the span can hold them too: the in-kernel
 * capture then keeps them as they were at the sample. */
static const enum xp_off_id ident_ids[] = {XP_OFF_P_REG, XP_OFF_P_INITIAL, XP_OFF_P_DICTIONARY};

static void span_extend(const struct process_reader *r, enum xp_off_id id, int64_t *lo, int64_t *hi)
{
	int64_t end = r->off[id].value + (id == XP_OFF_P_INITIAL ? 24 : 8);

	if (r->off[id].value < *lo)
		*lo = r->off[id].value;
	if (end > *hi)
		*hi = end;
}

/* The bytes of a Process that hold the fields read for every sample: one process_vm_readv
 * instead of one per field. Left 0 (a read per field) if they lie too far apart. */
static void bounds_span(struct process_reader *r)
{
	int64_t lo = INT64_MAX, hi = 0, ilo, ihi;
	size_t i;

	for (i = 0; i < sizeof(bounds_ids) / sizeof(bounds_ids[0]); i++) {
		if (have(r->off, bounds_ids[i]))
			span_extend(r, bounds_ids[i], &lo, &hi);
	}
	if (!(hi > lo && hi - lo <= BOUNDS_MAX_BYTES))
		return;
	r->bounds_lo = (uint32_t)lo;
	r->bounds_len = (uint32_t)(hi - lo);
	ilo = lo;
	ihi = hi;
	for (i = 0; i < sizeof(ident_ids) / sizeof(ident_ids[0]); i++) {
		if (!have(r->off, ident_ids[i]))
			return;
		span_extend(r, ident_ids[i], &ilo, &ihi);
	}
	if (ihi - ilo <= BOUNDS_MAX_BYTES) {
		r->bounds_lo = (uint32_t)ilo;
		r->bounds_len = (uint32_t)(ihi - ilo);
		r->with_ident = true;
	}
}

int process__reader_init(struct process_reader *r, struct mem *m, const struct target_value *off,
			 const struct pid_format *pids, const struct atom_reader *atoms)
{
	static const enum xp_off_id need[] = {XP_OFF_P_ID,   XP_OFF_P_HTOP, XP_OFF_P_STOP,
					      XP_OFF_P_HEAP, XP_OFF_P_HEND, XP_OFF_P_HEAP_SZ};
	size_t i;

	memset(r, 0, sizeof(*r));
	r->mem = m;
	r->off = off;
	r->pids = *pids;
	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (!have(off, need[i]))
			return -ENOTSUP;
	}
	if (atoms) {
		r->atoms = *atoms;
		r->have_atoms = true;
	}
	bounds_span(r);
	return 0;
}

static int word(const struct process_reader *r, uint64_t addr, enum xp_off_id id, uint64_t *out)
{
	return mem__read_u64(r->mem, addr + (uint64_t)r->off[id].value, out);
}

/* A field of the bounds span copied in buf. */
static uint64_t span_word(const struct process_reader *r, const uint8_t *buf, enum xp_off_id id)
{
	uint64_t v;

	memcpy(&v, buf + (r->off[id].value - r->bounds_lo), sizeof(v));
	return v;
}

static void parse_span(const struct process_reader *r, const uint8_t *buf, struct process_view *p,
		       uint64_t *sz)
{
	p->pid = span_word(r, buf, XP_OFF_P_ID);
	p->heap = span_word(r, buf, XP_OFF_P_HEAP);
	p->hend = span_word(r, buf, XP_OFF_P_HEND);
	*sz = span_word(r, buf, XP_OFF_P_HEAP_SZ);
	p->htop = span_word(r, buf, XP_OFF_P_HTOP);
	p->stop = span_word(r, buf, XP_OFF_P_STOP);
	if (have(r->off, XP_OFF_P_FRAME_POINTER))
		p->frame_pointer = span_word(r, buf, XP_OFF_P_FRAME_POINTER);
	if (have(r->off, XP_OFF_P_ABANDONED_HEAP))
		p->abandoned_heap = span_word(r, buf, XP_OFF_P_ABANDONED_HEAP);
	if (have(r->off, XP_OFF_P_I))
		p->i = span_word(r, buf, XP_OFF_P_I);
	if (r->with_ident) {
		p->reg = span_word(r, buf, XP_OFF_P_REG);
		p->dict = span_word(r, buf, XP_OFF_P_DICTIONARY);
		memcpy(p->mfa, buf + (r->off[XP_OFF_P_INITIAL].value - r->bounds_lo),
		       sizeof(p->mfa));
		p->ident_copied = true;
	}
}

static int read_bounds_span(const struct process_reader *r, uint64_t addr, struct process_view *p,
			    uint64_t *sz)
{
	uint8_t buf[BOUNDS_MAX_BYTES];
	int err;

	if ((err = mem__read(r->mem, addr + r->bounds_lo, buf, r->bounds_len)))
		return err;
	parse_span(r, buf, p, sz);
	return 0;
}

/* hend - heap is heap_sz words, except while a delayed garbage collection (waiting for a dirty
 * scheduler, or for a process too large to collect now) runs the process on a heap fragment:
 * heap and hend are the fragment's, heap_sz the abandoned heap's, and abandoned_heap is set
 * (B/erl_gc.c delay_garbage_collection, 25-29; its ASSERT allows exactly this). */
static int bounds_check(uint64_t pid, uint64_t heap, uint64_t hend, uint64_t abandoned_heap,
			uint64_t sz)
{
	bool abandoned = abandoned_heap && !(abandoned_heap & 7);

	if ((pid & XP_TAG_IMMED1_MASK) != XP_TAG_PID || heap >= hend ||
	    (hend - heap != sz * 8 && !abandoned) || sz * 8 > PROCESS_MAX_HEAP ||
	    hend - heap > PROCESS_MAX_HEAP || (hend & 7))
		return -EINVAL;
	return 0;
}

static int check_bounds(const struct process_view *p, uint64_t sz)
{
	return bounds_check(p->pid, p->heap, p->hend, p->abandoned_heap, sz);
}

int process__read_bounds(const struct process_reader *r, uint64_t addr, struct process_view *p)
{
	uint64_t sz;
	int err;

	memset(p, 0, sizeof(*p));
	p->addr = addr;
	if (!addr || (addr & 7))
		return -EINVAL;
	if (r->bounds_len) {
		if ((err = read_bounds_span(r, addr, p, &sz)))
			return err;
	} else if ((err = word(r, addr, XP_OFF_P_ID, &p->pid)) ||
		   (err = word(r, addr, XP_OFF_P_HEAP, &p->heap)) ||
		   (err = word(r, addr, XP_OFF_P_HEND, &p->hend)) ||
		   (err = word(r, addr, XP_OFF_P_HEAP_SZ, &sz)) ||
		   (err = word(r, addr, XP_OFF_P_HTOP, &p->htop)) ||
		   (err = word(r, addr, XP_OFF_P_STOP, &p->stop))) {
		return err;
	} else {
		if (have(r->off, XP_OFF_P_FRAME_POINTER))
			word(r, addr, XP_OFF_P_FRAME_POINTER, &p->frame_pointer);
		if (have(r->off, XP_OFF_P_ABANDONED_HEAP))
			word(r, addr, XP_OFF_P_ABANDONED_HEAP, &p->abandoned_heap);
		if (have(r->off, XP_OFF_P_I))
			word(r, addr, XP_OFF_P_I, &p->i);
	}
	return check_bounds(p, sz);
}

/* p and *sz from a copy of the bounds span, unchecked: 0, or -ENOTSUP, -EINVAL (the address). */
static int from_span(const struct process_reader *r, uint64_t addr, const uint8_t *span,
		     struct process_view *p, uint64_t *sz)
{
	memset(p, 0, sizeof(*p));
	p->addr = addr;
	if (!r->bounds_len)
		return -ENOTSUP;
	if (!addr || (addr & 7))
		return -EINVAL;
	parse_span(r, span, p, sz);
	return 0;
}

int process__bounds_from_span(const struct process_reader *r, uint64_t addr, const uint8_t *span,
			      struct process_view *p)
{
	uint64_t sz;
	int rc = from_span(r, addr, span, p, &sz);

	return rc ? rc : check_bounds(p, sz);
}

/* The last steps of a collection on a delayed heap (B/erl_gc.c erts_deallocate_young_generation
 * and its callers, 25-29): the stack is already copied whole to the new heap, stop at its top
 * (copy_erlang_stack), abandoned_heap already cleared, while heap and hend are still the freed
 * fragment's and heap_sz the abandoned heap's, until the old heap is freed (munmap: long). */
int process__bounds_from_span_moved(const struct process_reader *r, uint64_t addr,
				    const uint8_t *span, struct process_view *p)
{
	uint64_t sz;
	int rc = from_span(r, addr, span, p, &sz);

	if (rc)
		return rc;
	if ((p->pid & XP_TAG_IMMED1_MASK) != XP_TAG_PID || !p->stop || (p->stop & 7) ||
	    p->abandoned_heap || (p->stop > p->heap && p->stop < p->hend) ||
	    sz * 8 > PROCESS_MAX_HEAP)
		return -EINVAL;
	return 0;
}

int process__read_bounds_moved(const struct process_reader *r, uint64_t addr,
			       struct process_view *p)
{
	uint8_t buf[BOUNDS_MAX_BYTES];
	int err;

	memset(p, 0, sizeof(*p));
	if (!r->bounds_len)
		return -ENOTSUP;
	if (!addr || (addr & 7))
		return -EINVAL;
	if ((err = mem__read(r->mem, addr + r->bounds_lo, buf, r->bounds_len)))
		return err;
	return process__bounds_from_span_moved(r, addr, buf, p);
}

/* The VM's heap sizes (B/erl_gc.c erts_init_gc, 25:261, 27:262, 29:265): 12 and 38, each next
 * the sum of the two before plus one up to the 23rd, then 20 % more each; kept below 2^50 words
 * (the VM's own bound is 2^50 on 64 bits). */
size_t process__heap_sizes(uint64_t *out, size_t max)
{
	uint64_t a = 12, b = 38, next;
	size_t n = 0;

	if (max > 0)
		out[n++] = a;
	if (max > 1)
		out[n++] = b;
	for (; n < max; n++) {
		next = n < 23 ? a + b + 1 : b + b / 5;
		if (next > (1ULL << 50))
			break;
		out[n] = next;
		a = b;
		b = next;
	}
	for (size_t i = n; i < max; i++)
		out[i] = 0;
	return n;
}

bool process__is_heap_size(uint64_t words)
{
	uint64_t sizes[PROCESS_HEAP_SIZES];
	size_t n = process__heap_sizes(sizes, PROCESS_HEAP_SIZES);

	for (size_t i = 0; i < n; i++) {
		if (sizes[i] == words)
			return true;
	}
	return false;
}

void process__pid_format_read(struct pid_format *f, const struct xp_layout *row, struct mem *m,
			      uint64_t ptab)
{
	uint32_t shifts[2] = {0, 0};

	memset(f, 0, sizeof(*f));
	if (!row)
		return;
	f->format = row->pid_format;
	f->num_bits = row->pid_num_bits;
	if (row->pid_format == XP_PID_HIGH_PIX) {
		f->known = true;
		return;
	}
	f->known =
	    ptab && mem__read_u64(m, ptab + (uint64_t)row->ptab_pix_mask, &f->pix_mask) == 0 &&
	    mem__read_u64(m, ptab + (uint64_t)row->ptab_pix_cl_mask, &f->cl_mask) == 0 &&
	    mem__read_u64(m, ptab + (uint64_t)row->ptab_pix_cli_mask, &f->cli_mask) == 0 &&
	    mem__read(m, ptab + (uint64_t)row->ptab_pix_cl_shift, shifts, sizeof(shifts)) == 0 &&
	    shifts[0] < 64 && shifts[1] < 64;
	f->cl_shift = shifts[0];
	f->cli_shift = shifts[1];
}

uint64_t process__pid_data(const struct pid_format *f, uint64_t pid)
{
	uint64_t pixdata;

	if (!f->known || !f->num_bits)
		return pid;
	if (f->format == XP_PID_HIGH_PIX)
		return (pid & 0xffffffffu) >> XP_PID_DATA_SHIFT;
	/* erts_ptab_pixdata2data (B/erl_ptab.h 27:286) */
	pixdata = pid >> XP_PID_DATA_SHIFT;
	return (pixdata & ~f->pix_mask) | ((pixdata >> f->cl_shift) & f->cl_mask) |
	       ((pixdata & f->cli_mask) << f->cli_shift);
}

/* "<0.NUM.SER>" without printf: pstack --all writes a million of them. */
static void pid_digits(char *buf, size_t len, uint64_t num, uint64_t ser)
{
	char b[48];
	size_t i = sizeof(b), n;

	b[--i] = '\0';
	b[--i] = '>';
	do {
		b[--i] = (char)('0' + ser % 10);
		ser /= 10;
	} while (ser);
	b[--i] = '.';
	do {
		b[--i] = (char)('0' + num % 10);
		num /= 10;
	} while (num);
	b[--i] = '.';
	b[--i] = '0';
	b[--i] = '<';
	if (!len)
		return;
	n = sizeof(b) - 1 - i < len - 1 ? sizeof(b) - 1 - i : len - 1; /* as snprintf truncates */
	memcpy(buf, b + i, n);
	buf[n] = '\0';
}

void process__pid_text(const struct pid_format *f, uint64_t pid, char *buf, size_t len)
{
	uint64_t data;

	if (!f->known || !f->num_bits) {
		snprintf(buf, len, "<pid 0x%" PRIx64 ">", pid);
		return;
	}
	data = process__pid_data(f, pid);
	pid_digits(buf, len, data & (((uint64_t)1 << f->num_bits) - 1), data >> f->num_bits);
}

void process__atom_quoted(const char *text, char *buf, size_t len)
{
	bool plain = islower((unsigned char)text[0]);
	const char *p;
	size_t o = 0;

	for (p = text; *p && plain; p++)
		plain = isalnum((unsigned char)*p) || *p == '_' || *p == '@';
	if (plain) {
		snprintf(buf, len, "%s", text);
		return;
	}
	if (len < 3) {
		if (len)
			buf[0] = '\0';
		return;
	}
	buf[o++] = '\'';
	for (p = text; *p && o + 3 < len; p++) {
		if (*p == '\'' || *p == '\\')
			buf[o++] = '\\';
		buf[o++] = *p;
	}
	buf[o++] = '\'';
	buf[o] = '\0';
}

static void atom_text(const struct process_reader *r, uint64_t term, char *buf, size_t len)
{
	char raw[XP_ATOM_MAX_BYTES + 1];

	buf[0] = '\0';
	if (atom__text(&r->atoms, term, raw, sizeof(raw)) == 0)
		process__atom_quoted(raw, buf, len);
}

int process__still_alive(const struct process_reader *r, const struct process_view *p)
{
	uint64_t pid;
	int err;

	if ((err = word(r, p->addr, XP_OFF_P_ID, &pid)))
		return err;
	return pid == p->pid;
}

/* "mod:fun/2" of u.initial into p->initial, left "" when an atom is unreadable. */
static void initial_text(const struct process_reader *r, const uint64_t mfa[3],
			 struct process_view *p)
{
	char m[XP_ATOM_MAX_BYTES + 3], f[XP_ATOM_MAX_BYTES + 3];

	if (mfa[2] > 255)
		return;
	atom_text(r, mfa[0], m, sizeof(m));
	atom_text(r, mfa[1], f, sizeof(f));
	if (m[0] && f[0])
		snprintf(p->initial, sizeof(p->initial), "%s:%s/%" PRIu64, m, f, mfa[2]);
}

/* The registered name only while the process lives (its RegProc is freed with it); the initial
 * call from the sample's copy when there is one (atoms are never freed), else live. */
static void read_names(const struct process_reader *r, struct process_view *p, bool alive)
{
	uint64_t reg, name, mfa[3];

	p->name[0] = p->initial[0] = '\0';
	if (!r->have_atoms)
		return;
	if (alive && have(r->off, XP_OFF_P_REG) && have(r->off, XP_OFF_REGPROC_NAME) &&
	    word(r, p->addr, XP_OFF_P_REG, &reg) == 0 && reg &&
	    mem__read_u64(r->mem, reg + (uint64_t)r->off[XP_OFF_REGPROC_NAME].value, &name) == 0)
		atom_text(r, name, p->name, sizeof(p->name));
	if (p->ident_copied)
		memcpy(mfa, p->mfa, sizeof(mfa));
	else if (!alive || !have(r->off, XP_OFF_P_INITIAL) ||
		 mem__read(r->mem, p->addr + (uint64_t)r->off[XP_OFF_P_INITIAL].value, mfa,
			   sizeof(mfa)))
		return;
	initial_text(r, mfa, p);
}

void process__read_identity(const struct process_reader *r, struct process_view *p)
{
	/* Not read (a capture without those bytes): read on, as the fields' own reads may work. */
	bool alive = process__still_alive(r, p) != 0;

	read_names(r, p, alive);
	p->pd_result =
	    alive ? procdict__initial_call(r, p, p->pd_initial, sizeof(p->pd_initial)) : PDICT_GONE;
	if (!alive)
		p->pd_initial[0] = '\0';
	names__display_inplace(p->name, sizeof(p->name), r->erlang_names);
	names__display_inplace(p->initial, sizeof(p->initial), r->erlang_names);
	names__display_inplace(p->pd_initial, sizeof(p->pd_initial), r->erlang_names);
}

bool process__identity_copied(const struct process_reader *r, struct process_view *p)
{
	if (!p->ident_copied || p->reg || p->dict || !r->have_atoms)
		return false;
	p->name[0] = p->initial[0] = p->pd_initial[0] = '\0';
	p->pd_result = PDICT_ABSENT;
	initial_text(r, p->mfa, p);
	names__display_inplace(p->initial, sizeof(p->initial), r->erlang_names);
	return true;
}

const char *process__label(const struct process_view *p)
{
	return p->name[0] ? p->name : p->pd_initial[0] ? p->pd_initial : p->initial;
}

#define SNAP_MAX_BYTES 1024 /* the Process prefix read in one copy */

static bool snap_field(const struct process_reader *r, const uint8_t *buf, size_t n,
		       enum xp_off_id id, size_t width, void *out)
{
	if (!have(r->off, id) || (size_t)r->off[id].value + width > n)
		return false;
	memcpy(out, buf + r->off[id].value, width);
	return true;
}

/* How many bytes of the Process to copy: every field we use must fall inside. */
size_t process__snap_len(const struct process_reader *r)
{
	static const enum xp_off_id ids[] = {XP_OFF_P_ID,
					     XP_OFF_P_HTOP,
					     XP_OFF_P_STOP,
					     XP_OFF_P_HEAP,
					     XP_OFF_P_HEND,
					     XP_OFF_P_HEAP_SZ,
					     XP_OFF_P_I,
					     XP_OFF_P_STATE,
					     XP_OFF_P_MSG_LEN,
					     XP_OFF_P_REG,
					     XP_OFF_P_INITIAL,
					     XP_OFF_P_FRAME_POINTER,
					     XP_OFF_P_OLD_HEAP,
					     XP_OFF_P_OLD_HTOP,
					     XP_OFF_P_OLD_HEND,
					     XP_OFF_P_MBUF_SZ,
					     XP_OFF_P_OFF_HEAP_OVERHEAD,
					     XP_OFF_P_BIN_OLD_VHEAP,
					     XP_OFF_P_BIN_VHEAP_SZ,
					     XP_OFF_P_REDS,
					     XP_OFF_P_ABANDONED_HEAP,
					     XP_OFF_P_DICTIONARY};
	size_t i, n = 0;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		size_t end = (size_t)r->off[ids[i]].value + (ids[i] == XP_OFF_P_INITIAL ? 24 : 8);

		if (have(r->off, ids[i]) && end > n)
			n = end;
	}
	return n < SNAP_MAX_BYTES ? n : SNAP_MAX_BYTES;
}

/* The fields `heap` shows; checked by process__snap_memory. */
static void snap_memory_fields(const struct process_reader *r, const uint8_t *buf, size_t n,
			       struct process_snap *s)
{
	s->have_old = snap_field(r, buf, n, XP_OFF_P_OLD_HEAP, 8, &s->old_heap) &&
		      snap_field(r, buf, n, XP_OFF_P_OLD_HTOP, 8, &s->old_htop) &&
		      snap_field(r, buf, n, XP_OFF_P_OLD_HEND, 8, &s->old_hend);
	s->have_mbuf = snap_field(r, buf, n, XP_OFF_P_MBUF_SZ, 8, &s->mbuf_sz);
	s->have_vheap = snap_field(r, buf, n, XP_OFF_P_OFF_HEAP_OVERHEAD, 8, &s->vheap) &&
			snap_field(r, buf, n, XP_OFF_P_BIN_OLD_VHEAP, 8, &s->old_vheap) &&
			snap_field(r, buf, n, XP_OFF_P_BIN_VHEAP_SZ, 8, &s->vheap_sz);
	s->have_reds = snap_field(r, buf, n, XP_OFF_P_REDS, 8, &s->reds);
}

/* A snap zeroed but for its name buffers, emptied: a million processes are parsed twice each
 * (pstack --all), and the buffers are most of a snap's 1.6 KB. */
static void snap_clear(struct process_snap *s)
{
	memset(&s->v, 0, offsetof(struct process_view, name));
	s->v.name[0] = s->v.initial[0] = s->v.pd_initial[0] = '\0';
	s->v.pd_result = 0;
	memset((uint8_t *)s + offsetof(struct process_snap, heap_sz), 0,
	       sizeof(*s) - offsetof(struct process_snap, heap_sz));
}

int process__pid_offset(const struct process_reader *r, uint32_t *off)
{
	if (!have(r->off, XP_OFF_P_ID))
		return -ENOTSUP;
	*off = (uint32_t)r->off[XP_OFF_P_ID].value;
	return 0;
}

int process__read_snap(const struct process_reader *r, uint64_t addr, struct process_snap *s)
{
	uint8_t buf[SNAP_MAX_BYTES];
	size_t n = process__snap_len(r);
	int err;

	memset(s, 0, sizeof(*s));
	s->v.addr = addr;
	if (!addr || (addr & 7))
		return -EINVAL;
	if ((err = mem__read(r->mem, addr, buf, n)))
		return err;
	return process__parse_snap(r, addr, buf, n, s);
}

int process__parse_snap(const struct process_reader *r, uint64_t addr, const uint8_t *buf, size_t n,
			struct process_snap *s)
{
	struct process_view *p = &s->v;

	snap_clear(s);
	p->addr = addr;
	if (!addr || (addr & 7))
		return -EINVAL;
	if (!snap_field(r, buf, n, XP_OFF_P_ID, 8, &p->pid) ||
	    !snap_field(r, buf, n, XP_OFF_P_HEAP, 8, &p->heap) ||
	    !snap_field(r, buf, n, XP_OFF_P_HEND, 8, &p->hend) ||
	    !snap_field(r, buf, n, XP_OFF_P_HEAP_SZ, 8, &s->heap_sz) ||
	    !snap_field(r, buf, n, XP_OFF_P_HTOP, 8, &p->htop) ||
	    !snap_field(r, buf, n, XP_OFF_P_STOP, 8, &p->stop))
		return -EINVAL;
	snap_field(r, buf, n, XP_OFF_P_ABANDONED_HEAP, 8, &p->abandoned_heap);
	if (check_bounds(p, s->heap_sz))
		return -EINVAL;
	snap_field(r, buf, n, XP_OFF_P_FRAME_POINTER, 8, &p->frame_pointer);
	s->have_sizes = p->heap <= p->htop && p->htop <= p->stop && p->stop <= p->hend;
	s->have_state = snap_field(r, buf, n, XP_OFF_P_STATE, 4, &s->state);
	s->have_i = snap_field(r, buf, n, XP_OFF_P_I, 8, &s->i);
	s->have_msg_len = snap_field(r, buf, n, XP_OFF_P_MSG_LEN, 8, &s->msg_len) &&
			  s->msg_len >= 0 && s->msg_len < ((int64_t)1 << 40);
	s->have_reg = snap_field(r, buf, n, XP_OFF_P_REG, 8, &s->reg);
	s->have_initial = snap_field(r, buf, n, XP_OFF_P_INITIAL, 24, s->initial);
	/* The identity as copied, as process__read_bounds's span keeps it: the dictionary's
	 * search then starts from this copy's ProcDict * instead of reading it again. */
	if (s->have_reg && s->have_initial &&
	    snap_field(r, buf, n, XP_OFF_P_DICTIONARY, 8, &p->dict)) {
		p->reg = s->reg;
		memcpy(p->mfa, s->initial, sizeof(p->mfa));
		p->ident_copied = true;
	}
	snap_memory_fields(r, buf, n, s);
	return 0;
}

int process__parse_marks(const struct process_reader *r, uint64_t addr, const uint8_t *buf,
			 size_t n, struct process_marks *m)
{
	uint64_t sz, htop, abandoned = 0;

	*m = (struct process_marks){0};
	if (!addr || (addr & 7))
		return -EINVAL;
	if (!snap_field(r, buf, n, XP_OFF_P_ID, 8, &m->pid) ||
	    !snap_field(r, buf, n, XP_OFF_P_HEAP, 8, &m->heap) ||
	    !snap_field(r, buf, n, XP_OFF_P_HEND, 8, &m->hend) ||
	    !snap_field(r, buf, n, XP_OFF_P_HEAP_SZ, 8, &sz) ||
	    !snap_field(r, buf, n, XP_OFF_P_HTOP, 8, &htop) ||
	    !snap_field(r, buf, n, XP_OFF_P_STOP, 8, &m->stop))
		return -EINVAL;
	snap_field(r, buf, n, XP_OFF_P_ABANDONED_HEAP, 8, &abandoned);
	if (bounds_check(m->pid, m->heap, m->hend, abandoned, sz))
		return -EINVAL;
	snap_field(r, buf, n, XP_OFF_P_FRAME_POINTER, 8, &m->fp);
	m->have_state = snap_field(r, buf, n, XP_OFF_P_STATE, 4, &m->state);
	m->have_i = snap_field(r, buf, n, XP_OFF_P_I, 8, &m->i);
	m->have_reds = snap_field(r, buf, n, XP_OFF_P_REDS, 8, &m->reds);
	return 0;
}

void process__snap_marks(const struct process_snap *s, struct process_marks *m)
{
	*m = (struct process_marks){.pid = s->v.pid,
				    .stop = s->v.stop,
				    .heap = s->v.heap,
				    .hend = s->v.hend,
				    .i = s->i,
				    .fp = s->v.frame_pointer,
				    .reds = s->reds,
				    .state = s->state,
				    .have_state = s->have_state,
				    .have_i = s->have_i,
				    .have_reds = s->have_reds};
}

#define VHEAP_MAX_WORDS (1ULL << 41) /* 16 TiB of binaries: garbage */

static const char *const mem_fault_names[SNAP_MEM_FAULT_COUNT] = {
    "ok", "no_offset", "bad_old_heap", "bad_heap_fragments", "bad_vheap"};

const char *process__snap_mem_fault_name(enum snap_mem_fault f)
{
	return (unsigned)f < SNAP_MEM_FAULT_COUNT ? mem_fault_names[f] : "unknown";
}

enum snap_mem_fault process__snap_memory(struct process_snap *s)
{
	enum snap_mem_fault f = SNAP_MEM_OK;
	bool no_old = !s->old_heap && !s->old_htop && !s->old_hend;

	if (!s->have_old || !s->have_mbuf || !s->have_vheap || !s->have_reds)
		f = SNAP_MEM_NO_OFFSET;
	/* B/erl_gc.c: old_heap <= old_htop <= old_hend, all NULL before the first minor GC that
	 * keeps data (25-29). */
	if (s->have_old && !no_old &&
	    (s->old_heap > s->old_htop || s->old_htop > s->old_hend || !s->old_heap ||
	     ((s->old_heap | s->old_htop | s->old_hend) & 7) ||
	     s->old_hend - s->old_heap > PROCESS_MAX_HEAP)) {
		s->have_old = false;
		f = f ? f : SNAP_MEM_BAD_OLD;
	}
	if (s->have_mbuf && s->mbuf_sz * 8 > PROCESS_MAX_HEAP) {
		s->have_mbuf = false;
		f = f ? f : SNAP_MEM_BAD_MBUF;
	}
	if (s->have_vheap && (s->vheap > VHEAP_MAX_WORDS || s->old_vheap > VHEAP_MAX_WORDS ||
			      s->vheap_sz > VHEAP_MAX_WORDS)) {
		s->have_vheap = false;
		f = f ? f : SNAP_MEM_BAD_VHEAP;
	}
	return f;
}

/* The order of erts_process_state2status (B/erl_process.c 25:9162, 27:9205, 29:9305). */
const char *process__status_name(uint32_t state)
{
	if (state & XP_PSFLG_FREE)
		return "free";
	if (state & XP_PSFLG_EXITING)
		return "exiting";
	if (state & XP_PSFLG_GC)
		return "garbage_collecting";
	if (state & XP_PSFLG_SUSPENDED)
		return "suspended";
	if (process__is_running(state))
		return "running";
	if (state & (XP_PSFLG_ACTIVE | XP_PSFLG_ACTIVE_SYS | XP_PSFLG_DIRTY_ACTIVE_SYS))
		return "runnable";
	return "waiting";
}

bool process__is_running(uint32_t state)
{
	return state & (XP_PSFLG_RUNNING | XP_PSFLG_RUNNING_SYS | XP_PSFLG_DIRTY_RUNNING |
			XP_PSFLG_DIRTY_RUNNING_SYS);
}
