/* The process table from outside: its geometry and its slots. See ptab.h. Slots are read in chunks
 * of PTAB_CHUNK words: a default table (262144 slots) is 2 MB, 32 reads; a slot is NULL, the
 * invalid element (a process being created) or a Process * (B/erl_ptab.c 29:480-630). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptab.h"
#include "radix.h"

#define PTAB_CHUNK    8192u /* slots per read (64 KB) */
#define PTAB_MIN_SIZE 1024u /* erts rounds +P up to a power of 2; never this small */

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

bool ptab__pid_in_slot(const struct pid_format *f, uint64_t pid, uint32_t ix)
{
	if ((pid & XP_TAG_IMMED1_MASK) != XP_TAG_PID || !f->known)
		return false;
	if (f->format == XP_PID_HIGH_PIX)
		return (pid >> 32) == ix;
	return ((pid >> XP_PID_DATA_SHIFT) & f->pix_mask) == ix;
}

bool ptab__geometry(const struct xp_layout *row, int64_t p_sizeof, const uint8_t *b,
		    struct ptab *out)
{
	uint64_t esz;

	memcpy(&out->tab, b + row->ptab_tab, 8);
	memcpy(&out->max, b + row->ptab_max, 4);
	memcpy(&out->invalid, b + row->ptab_invalid_element, 8);
	memcpy(&esz, b + row->ptab_element_size, 8);
	return out->tab && !(out->tab & 7) && out->invalid && !(out->invalid & 7) &&
	       is_pow2(out->max) && out->max >= PTAB_MIN_SIZE && out->max <= XP_PTAB_MAX_SIZE &&
	       (p_sizeof <= 0 || esz == (uint64_t)p_sizeof);
}

static int grow(uint32_t **ixs, uint64_t **procs, size_t *cap)
{
	size_t ncap = *cap ? *cap * 2 : 4096;
	uint32_t *ni = realloc(*ixs, ncap * sizeof(**ixs));
	uint64_t *np;

	if (!ni)
		return -ENOMEM;
	*ixs = ni;
	np = realloc(*procs, ncap * sizeof(**procs));
	if (!np)
		return -ENOMEM;
	*procs = np;
	*cap = ncap;
	return 0;
}

int ptab__collect(const struct ptab *pt, struct mem *m, uint32_t **ixs, uint64_t **procs, size_t *n,
		  struct ptab_stats *st)
{
	uint64_t *w = malloc(PTAB_CHUNK * 8);
	size_t cap = 0;
	uint32_t base, i;
	int rc = 0;

	*ixs = NULL;
	*procs = NULL;
	*n = 0;
	memset(st, 0, sizeof(*st));
	if (!w)
		return -ENOMEM;
	for (base = 0; base < pt->max && rc == 0; base += PTAB_CHUNK) {
		uint32_t k = pt->max - base < PTAB_CHUNK ? pt->max - base : PTAB_CHUNK;

		st->slots += k;
		if (mem__read(m, pt->tab + (uint64_t)base * 8, w, (size_t)k * 8)) {
			st->unreadable_slots += k;
			continue;
		}
		for (i = 0; i < k && rc == 0; i++) {
			if (!w[i])
				continue;
			if (w[i] == pt->invalid) {
				st->reserved++;
				continue;
			}
			if (w[i] & 7) {
				st->bad++;
				continue;
			}
			if (*n == cap && (rc = grow(ixs, procs, &cap)))
				break;
			(*ixs)[*n] = base + i;
			(*procs)[(*n)++] = w[i];
			st->used++;
		}
	}
	free(w);
	return rc;
}

/* The 16-byte way: {address, slot} pairs. */
static int by_address_pairs(uint32_t *ixs, uint64_t *procs, size_t n)
{
	struct entry {
		uint64_t addr; /* the key: first */
		uint64_t ix;
	} *e = malloc((n ? n : 1) * sizeof(*e));
	size_t i;

	if (!e)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		e[i] = (struct entry){.addr = procs[i], .ix = ixs[i]};
	if (radix__sort(e, n, sizeof(*e))) {
		free(e);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		procs[i] = e[i].addr;
		ixs[i] = (uint32_t)e[i].ix;
	}
	free(e);
	return 0;
}

/* Each entry as one 8-byte key, (address - lowest) / 8 above the slot's bits, when every
 * address is 8-aligned and their span fits, packed in place of its address: a million entries
 * touch the sort's 8 MB, not the pairs' 32 MB (every new page is a fault). Equal addresses come
 * out in slot order, as ptab__collect listed them and as the stable pairs' sort leaves them. */
int ptab__by_address(uint32_t *ixs, uint64_t *procs, size_t n)
{
	uint64_t lo = UINT64_MAX, hi = 0, odd = 0, *k = procs, mask;
	uint32_t ixmax = 0;
	unsigned bits = 1;
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		lo = procs[i] < lo ? procs[i] : lo;
		hi = procs[i] > hi ? procs[i] : hi;
		odd |= procs[i] & 7;
		ixmax = ixs[i] > ixmax ? ixs[i] : ixmax;
	}
	while (bits < 32 && (ixmax >> bits))
		bits++;
	if (n < 2 || odd || ((hi - lo) >> 3) >> (64 - bits))
		return n < 2 ? 0 : by_address_pairs(ixs, procs, n);
	mask = ((uint64_t)1 << bits) - 1;
	for (i = 0; i < n; i++)
		k[i] = (procs[i] - lo) >> 3 << bits | ixs[i];
	rc = radix__sort(k, n, sizeof(*k));
	/* Unpacked either way: sorted, or as they were when the sort had no memory. */
	for (i = 0; i < n; i++) {
		ixs[i] = (uint32_t)(k[i] & mask);
		procs[i] = lo + (k[i] >> bits << 3);
	}
	return rc;
}
