/* proc_lib's '$initial_call' from a process dictionary read from outside. See procdict.h.
 * Every slot is searched instead of hashing the key: the hash of an atom key (MAKE_HASH,
 * B/erl_process_dict.c) is atom_val in 25, 27 and 29, but need not stay so, and a dictionary of
 * at most PDICT_MAX_SLOTS slots is one read. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procdict.h"
#include "process.h"

static const char *const result_names[PDICT_RESULT_COUNT] = {
    "found", "absent", "no_offset", "read_failed", "bad_header", "too_large", "bad_term", "gone"};

const char *procdict__result_name(enum pdict_result res)
{
	return (unsigned)res < PDICT_RESULT_COUNT ? result_names[res] : "unknown";
}

static bool is_boxed(uint64_t t)
{
	return (t & XP_TAG_PRIMARY_MASK) == XP_TAG_BOXED && t > 0xfff;
}

static bool is_atom(uint64_t t)
{
	return (t & XP_TAG_IMMED2_MASK) == XP_TAG_ATOM;
}

static uint64_t ptr_of(uint64_t t)
{
	return t & ~(uint64_t)XP_TAG_PRIMARY_MASK;
}

/* {M, F, A} of the value term v, written as "m:f/a". */
static enum pdict_result mfa_text(const struct process_reader *r, uint64_t v, char *buf, size_t len)
{
	char raw[XP_ATOM_MAX_BYTES + 1], m[XP_ATOM_MAX_BYTES + 3], f[XP_ATOM_MAX_BYTES + 3];
	uint64_t w[4];

	if (!is_boxed(v))
		return PDICT_BAD_TERM;
	if (mem__read(r->mem, ptr_of(v), w, sizeof(w)))
		return PDICT_READ_FAILED;
	if (w[0] != XP_TUPLE_HDR(3) || !is_atom(w[1]) || !is_atom(w[2]) ||
	    (w[3] & XP_TAG_IMMED1_MASK) != XP_TAG_SMALL || (w[3] >> 4) > 255)
		return PDICT_BAD_TERM;
	if (atom__text(&r->atoms, w[1], raw, sizeof(raw)))
		return PDICT_READ_FAILED;
	process__atom_quoted(raw, m, sizeof(m));
	if (atom__text(&r->atoms, w[2], raw, sizeof(raw)))
		return PDICT_READ_FAILED;
	process__atom_quoted(raw, f, sizeof(f));
	snprintf(buf, len, "%s:%s/%" PRIu64, m, f, w[3] >> 4);
	return PDICT_FOUND;
}

/* One {Key, Value} tuple: PDICT_FOUND (buf filled) when Key is '$initial_call'. */
static enum pdict_result try_pair(const struct process_reader *r, uint64_t tuple, char *buf,
				  size_t len)
{
	char key[sizeof("$initial_call") + 1];
	uint64_t w[3];

	if (!is_boxed(tuple))
		return PDICT_BAD_TERM;
	if (mem__read(r->mem, ptr_of(tuple), w, sizeof(w)))
		return PDICT_READ_FAILED;
	if (w[0] != XP_TUPLE_HDR(2))
		return PDICT_BAD_TERM;
	/* Only atom keys can match; a longer atom text fails the read into key[] (-ENOSPC). */
	if (!is_atom(w[1]) || atom__text(&r->atoms, w[1], key, sizeof(key)) ||
	    strcmp(key, "$initial_call") != 0)
		return PDICT_ABSENT;
	return mfa_text(r, w[2], buf, len);
}

/* A slot: NIL, one tuple, or a list of tuples (B/erl_process_dict.c pd_hash_put, 25-29). */
static enum pdict_result try_slot(const struct process_reader *r, uint64_t t, char *buf, size_t len)
{
	enum pdict_result res;
	uint64_t cell[2];
	int n;

	if (t == XP_TERM_NIL)
		return PDICT_ABSENT;
	if (is_boxed(t))
		return try_pair(r, t, buf, len);
	for (n = 0; n < PDICT_MAX_CHAIN && t != XP_TERM_NIL; n++) {
		if ((t & XP_TAG_PRIMARY_MASK) != XP_TAG_LIST || t < 0x1000)
			return PDICT_BAD_TERM;
		if (mem__read(r->mem, ptr_of(t), cell, sizeof(cell)))
			return PDICT_READ_FAILED;
		if ((res = try_pair(r, cell[0], buf, len)) != PDICT_ABSENT)
			return res;
		t = cell[1];
	}
	return t == XP_TERM_NIL ? PDICT_ABSENT : PDICT_BAD_TERM;
}

static enum pdict_result search(const struct process_reader *r, uint64_t pd, char *buf, size_t len)
{
	uint32_t sizes[2]; /* arraySize, splitPosition */
	enum pdict_result res = PDICT_ABSENT, one;
	uint64_t nelems, *slots;
	uint32_t i;

	if (mem__read(r->mem, pd + XP_PDICT_ARRAY_SIZE, sizes, sizeof(sizes)) ||
	    mem__read_u64(r->mem, pd + XP_PDICT_NUM_ELEMENTS, &nelems))
		return PDICT_READ_FAILED;
	if (!sizes[0] || sizes[1] > sizes[0] || nelems > ((uint64_t)1 << 32))
		return PDICT_BAD_HEADER;
	if (sizes[0] > PDICT_MAX_SLOTS)
		return PDICT_TOO_LARGE;
	if (!(slots = malloc(sizes[0] * sizeof(*slots))))
		return PDICT_READ_FAILED;
	if (mem__read(r->mem, pd + XP_PDICT_DATA, slots, sizes[0] * sizeof(*slots))) {
		free(slots);
		return PDICT_READ_FAILED;
	}
	/* A slot that cannot be read does not hide the key in another: keep looking. */
	for (i = 0; i < sizes[0] && res != PDICT_FOUND; i++) {
		one = try_slot(r, slots[i], buf, len);
		if (one != PDICT_ABSENT && res != PDICT_FOUND)
			res = one;
	}
	free(slots);
	return res;
}

static int dict_pointer(const struct process_reader *r, uint64_t proc_addr, uint64_t *pd)
{
	return mem__read_u64(r->mem, proc_addr + (uint64_t)r->off[XP_OFF_P_DICTIONARY].value, pd);
}

/* One try at pd; PDICT_GONE when the process exited or its dictionary moved meanwhile. */
static enum pdict_result initial_call_at(const struct process_reader *r,
					 const struct process_view *p, uint64_t pd, char *buf,
					 size_t len)
{
	enum pdict_result res;
	uint64_t again;

	if (!pd)
		return PDICT_ABSENT;
	if (pd & 7)
		return PDICT_BAD_HEADER;
	res = search(r, pd, buf, len);
	/* The search read memory the process owns: it must still be that process's, found or not
	 * (an exit during the search frees what it read). */
	if (res != PDICT_ABSENT &&
	    (process__still_alive(r, p) != 1 || dict_pointer(r, p->addr, &again) || again != pd))
		res = PDICT_GONE;
	return res;
}

/* A busy process's garbage collection moves the {Key, Value} tuples under a search, and may
 * move the dictionary: a failed try of a live process is tried again, from the pointer read
 * anew (one CI run in several lost a busy gen_server's name to one such read). */
enum pdict_result procdict__initial_call(const struct process_reader *r,
					 const struct process_view *p, char *buf, size_t len)
{
	const struct target_value *o = &r->off[XP_OFF_P_DICTIONARY];
	enum pdict_result res = PDICT_READ_FAILED;
	uint64_t pd;
	int try;

	if (len)
		buf[0] = '\0';
	if (!r->have_atoms || !o->present || o->value < 0 || o->value >= 4096)
		return PDICT_NO_OFFSET;
	for (try = 0; try < PDICT_TRIES; try++) {
		int err = 0;

		if (try == 0 && p->ident_copied)
			pd = p->dict; /* copied with the sample */
		else
			err = dict_pointer(r, p->addr, &pd);
		res = err ? PDICT_READ_FAILED : initial_call_at(r, p, pd, buf, len);
		if (res == PDICT_FOUND || res == PDICT_ABSENT || res == PDICT_TOO_LARGE ||
		    process__still_alive(r, p) != 1)
			break;
	}
	if (res != PDICT_FOUND && len)
		buf[0] = '\0';
	return res;
}
