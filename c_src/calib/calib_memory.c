/* The memory fields `extrospect heap` reads, from a parked "memory probe" process whose
 * process_info(P, garbage_collection_info) Erlang passes in: an old generation (old_hend,
 * old_htop, old_heap: the three adjacent words whose differences are its size and use, in that
 * order in OTP 25-29, B/erl_process.h), the binary vheap (bin_vheap_sz, bin_old_vheap_sz,
 * bin_old_vheap: three adjacent words equal to its limits and old count) and off_heap.overhead
 * (the word equal to the young count, after a pointer: off_heap.first). mbuf_sz is left to the
 * table: a parked process has no fragments, and 0 is everywhere. Does not own: the memory
 * probe (extrospect_agent.erl), reading the struct (mem__self_read, vm/mem.h). */
#include <errno.h>
#include <string.h>

#include "agent.h"
#include "calib_self.h"
#include "mem.h"

static void find_old(struct calib *c, const uint64_t *w, size_t nw, const uint64_t *gc)
{
	static const char note[] =
	    "old_hend, old_htop, old_heap: the memory probe's old generation";
	int k_hit = CALIB_NOT_FOUND;
	size_t k;

	if (!gc[GC_OLD_BLOCK]) {
		calib__fail(c, XP_OFF_P_OLD_HEAP, XP_WHY_NOT_FOUND,
			    "the memory probe had no old heap");
		return;
	}
	for (k = 0; k + 2 < nw; k++) {
		uint64_t e = w[k], t = w[k + 1], h = w[k + 2];

		if (h && !((e | t | h) & 7) && h <= t && t <= e &&
		    (e - h) / 8 == gc[GC_OLD_BLOCK] && (t - h) / 8 == gc[GC_OLD_USED])
			calib__hit(&k_hit, (int)k);
	}
	calib__record(c, XP_OFF_P_OLD_HEND, k_hit, k_hit * 8, note);
	calib__record(c, XP_OFF_P_OLD_HTOP, k_hit, k_hit * 8 + 8, note);
	calib__record(c, XP_OFF_P_OLD_HEAP, k_hit, k_hit * 8 + 16, note);
}

static void find_vheap(struct calib *c, const uint64_t *w, size_t nw, const uint64_t *gc)
{
	static const char note[] =
	    "bin_vheap_sz, bin_old_vheap_sz, bin_old_vheap: the probe's limits "
	    "and old binaries";
	int k_hit = CALIB_NOT_FOUND, k_young = CALIB_NOT_FOUND;
	size_t k;

	for (k = 0; gc[GC_OLD_VHEAP] && k + 2 < nw; k++) {
		if (w[k] == gc[GC_VHEAP_BLOCK] && w[k + 1] == gc[GC_OLD_VHEAP_BLOCK] &&
		    w[k + 2] == gc[GC_OLD_VHEAP])
			calib__hit(&k_hit, (int)k);
	}
	calib__record(c, XP_OFF_P_BIN_VHEAP_SZ, k_hit, k_hit * 8, note);
	calib__record(c, XP_OFF_P_BIN_OLD_VHEAP, k_hit, k_hit * 8 + 16, note);
	/* off_heap = {first, overhead}: first points at a ProcBin, on the heap, 8-aligned. */
	for (k = 1; gc[GC_VHEAP] && k < nw; k++) {
		if (w[k] == gc[GC_VHEAP] && w[k - 1] && !(w[k - 1] & 7))
			calib__hit(&k_young, (int)k);
	}
	calib__record(c, XP_OFF_P_OFF_HEAP_OVERHEAD, k_young, k_young * 8,
		      "the word equal to the probe's young binaries, after off_heap.first");
}

int calib__memory(struct agent *a, uint64_t proc, uint64_t pid, const uint64_t gc[GC_COUNT])
{
	uint64_t *w = enif_alloc(PROC_SCAN_BYTES);
	size_t nw;
	int32_t id_off;
	int err = 0;

	if (!w)
		return -ENOMEM;
	nw = mem__self_read_prefix(proc, w, calib__scan_bytes(a->row), 256) / 8;
	enif_mutex_lock(a->lock);
	id_off = calib__off(&a->calib, a->row, XP_OFF_P_ID);
	if (!nw)
		err = -EFAULT;
	else if (id_off < 0 || (size_t)id_off / 8 >= nw || w[id_off / 8] != pid)
		err = -ESRCH; /* not the memory probe's struct */
	if (!err) {
		find_old(&a->calib, w, nw, gc);
		find_vheap(&a->calib, w, nw, gc);
		calib__fail(&a->calib, XP_OFF_P_MBUF_SZ, XP_WHY_UNCHECKABLE,
			    "a parked process has no heap fragments: its 0 is no evidence");
	}
	enif_mutex_unlock(a->lock);
	enif_free(w);
	return err;
}
