/* Calibration steps that run inside NIF calls: the calling process's own struct (calib_self.c),
 * dirty schedulers (calib_dirty.c), the parked probe process (calib_probe.c), the memory probe
 * (calib_memory.c) and the dirty-NIF
 * scans of beam.smp's data (calib_scan.c). All record into agent->calib under agent->lock. */
#ifndef XP_CALIB_SELF_H
#define XP_CALIB_SELF_H

#include <stdint.h>

#include <erl_nif.h>

#include "agent.h"

/* Normal scheduler only. sched_no: erlang:system_info(scheduler_id) of the caller; fun/arity:
 * this NIF's own name and arity (for Process.current). 0, -EAGAIN (retry with a fresh heap),
 * -ESRCH (not on the claimed scheduler), -EFAULT, -ENOMEM. */
int calib__self(struct agent *a, ErlNifEnv *env, const ERL_NIF_TERM argv[], uint32_t sched_no,
		ERL_NIF_TERM fun, unsigned arity);

/* Intersect the ErtsSchedulerData candidate sets with one observed esdp prefix. */
void calib__narrow_esd(struct calib *c, const uint64_t *esd, uint32_t type, uint64_t no,
		       uint64_t dirty_no);

/* Dirty scheduler only. real_proc: the caller's Process* (from a normal NIF call). Finds this
 * dirty scheduler's ErtsSchedulerData; type, dirty_no and tid say where we ran. */
int calib__dirty(struct agent *a, ErlNifEnv *env, uint64_t real_proc, uint32_t *type,
		 uint32_t *dirty_no, int32_t *tid);

/* The comm name of one of our threads ("1_scheduler", "erts_dcpus_2"). 0 or -errno. */
int calib__thread_name(int32_t tid, char *buf, size_t cap);

/* Snapshot the parked probe process (its Process* and pid from Erlang) for stage 0..3, with the
 * message-queue length Erlang expects it to have and its reductions (-1: unknown). */
int calib__probe(struct agent *a, uint64_t proc, uint64_t pid, unsigned stage, int64_t expect,
		 int64_t reds);

/* The memory fields of the parked memory probe (calib_memory.c), from gc, its
 * process_info(P, garbage_collection_info) {old_heap_block_size, old_heap_size, bin_vheap_size,
 * bin_old_vheap_size, bin_vheap_block_size, bin_old_vheap_block_size}. 0, -ESRCH (not its
 * struct), -EFAULT, -ENOMEM. */
enum {
	GC_OLD_BLOCK = 0,
	GC_OLD_USED,
	GC_VHEAP,
	GC_OLD_VHEAP,
	GC_VHEAP_BLOCK,
	GC_OLD_VHEAP_BLOCK,
	GC_COUNT
};
int calib__memory(struct agent *a, uint64_t proc, uint64_t pid, const uint64_t gc[GC_COUNT]);

/* Discover the fields only a parked process shows, from the snapshots in c: i (inside
 * [i_lo, i_hi), the probe function's JIT range), u.initial ({mod, fun, 0}), reg (a RegProc
 * naming reg_name and pointing back), the message-queue length, reductions, state and
 * dictionary (a ProcDict holding only {reg_name, reg_name}). c is the dirty scan's working copy
 * of a->calib. */
void calib__probe_analyze(const struct agent *a, struct calib *c, uint64_t i_lo, uint64_t i_hi,
			  uint64_t mod, uint64_t fun, uint64_t reg_name);

#endif /* XP_CALIB_SELF_H */
