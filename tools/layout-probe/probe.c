/* offsetof() probe: compiled against one configured OTP tree's own erts headers (see ./run), it
 * prints one row of external/vm/layout.c for that tree, every value measured by the compiler.
 * Does not own: fetching or configuring the tree, thread names and pre-27 trace-frame sizes (not in
 * headers: ./run extracts them from erl_process.c / beam_common.c and passes them as -D macros). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "sys.h"
#include "erl_vm.h"
#include "global.h"
#include "erl_process.h"
#include "erl_ptab.h"
#include "register.h"
#include "atom.h"
#include "index.h"
#define GET_ERL_ALLOC_UTIL_IMPL
#include "erl_alloc_util.h"

#include <stddef.h>
#include <stdio.h>

/* Set by ./run from the tree it configured. */
#if !defined(XP_ERTS_SERIES) || !defined(XP_OTP_RELEASE) || !defined(XP_CHECKED_ON)
#error "XP_ERTS_SERIES, XP_OTP_RELEASE and XP_CHECKED_ON must be defined (use ./run)"
#endif
#if !defined(XP_FMT_NORMAL) || !defined(XP_FMT_DIRTY_CPU) || !defined(XP_FMT_DIRTY_IO)
#error "XP_FMT_* (scheduler thread-name formats from erl_process.c) must be defined (use ./run)"
#endif

/* The row must describe the shipped flavour: JIT, no dynamic trace, no lock counting. */
#ifndef BEAMASM
#error "not a JIT (BEAMASM) build"
#endif
#if defined(USE_VM_PROBES) || defined(ERTS_ENABLE_LOCK_COUNT) || defined(DEBUG)
#error "probe must see the default build (no VM probes, no lock counting, not debug)"
#endif
#if !defined(__x86_64__)
#error "rows are for x86_64"
#endif

/* 27+ names trace-frame sizes in erl_vm.h; older trees hard-code them (./run passes them in). */
#ifdef BEAM_RETURN_TRACE_FRAME_SZ
#define XP_TW_RETURN	BEAM_RETURN_TRACE_FRAME_SZ
#define XP_TW_RETURN_TO BEAM_RETURN_TO_TRACE_FRAME_SZ
#define XP_TW_TIME	BEAM_RETURN_CALL_ACC_TRACE_FRAME_SZ
#define XP_TW_SRC	"erl_vm.h BEAM_*_TRACE_FRAME_SZ"
#define XP_TW_TIME_NOTE " /* call_trace_return */"
#elif defined(XP_TW_RETURN_LIT) && defined(XP_TW_RETURN_TO_LIT) && defined(XP_TW_TIME_LIT)
#define XP_TW_RETURN	XP_TW_RETURN_LIT
#define XP_TW_RETURN_TO XP_TW_RETURN_TO_LIT
#define XP_TW_TIME	XP_TW_TIME_LIT
#define XP_TW_SRC	"beam_common.c stack-scanner literals (no macros in this tree)"
#define XP_TW_TIME_NOTE " /* return_time_trace */"
#else
#error "trace-frame sizes: no BEAM_*_TRACE_FRAME_SZ and no XP_TW_*_LIT from ./run"
#endif

#define OFF(name, type, member) printf("\t\t\t\t[XP_OFF_" name "] = %zu,\n", offsetof(type, member))
#define SZ(name, expr)		printf("\t\t\t\t[XP_OFF_" name "] = %zu,\n", (size_t)(expr))

static void print_process(void)
{
	OFF("P_ID", Process, common.id);
	OFF("P_HTOP", Process, htop);
	OFF("P_STOP", Process, stop);
	OFF("P_FRAME_POINTER", Process, frame_pointer);
	OFF("P_HEAP", Process, heap);
	OFF("P_HEND", Process, hend);
	OFF("P_HEAP_SZ", Process, heap_sz);
	OFF("P_ABANDONED_HEAP", Process, abandoned_heap);
	OFF("P_I", Process, i);
	OFF("P_CURRENT", Process, current);
	OFF("P_INITIAL", Process, u.initial);
	OFF("P_REG", Process, common.u.alive.reg);
	OFF("P_STATE", Process, state);
	OFF("P_SCHEDULER_DATA", Process, scheduler_data);
	OFF("P_FCALLS", Process, fcalls);
	OFF("P_OLD_HEAP", Process, old_heap);
	OFF("P_OLD_HTOP", Process, old_htop);
	OFF("P_OLD_HEND", Process, old_hend);
	OFF("P_MBUF_SZ", Process, mbuf_sz);
	OFF("P_OFF_HEAP_OVERHEAD", Process, off_heap.overhead);
	OFF("P_BIN_OLD_VHEAP", Process, bin_old_vheap);
	OFF("P_BIN_VHEAP_SZ", Process, bin_vheap_sz);
	OFF("P_REDS", Process, reds);
#ifdef XP_HAVE_MQ_LEN
	OFF("P_MSG_LEN", Process, sig_qs.mq_len);
#else
	/* No field holds the queue length before 27 (erl_message.h: sig_qs.len "NOT message queue
	 * length"; sig_inq.len counts only the outer queue). */
	printf("\t\t\t\t/* no message-queue length field: sig_qs.len @%zu is NOT it, "
	       "sig_inq.len @%zu is the outer queue only */\n",
	       offsetof(Process, sig_qs.len), offsetof(Process, sig_inq.len));
	printf("\t\t\t\t[XP_OFF_P_MSG_LEN] = XP_ABSENT,\n");
#endif
}

static void print_others(void)
{
	OFF("ESD_REGISTERS", ErtsSchedulerData, registers);
	OFF("ESD_CURRENT_PROCESS", ErtsSchedulerData, current_process);
	OFF("ESD_TYPE", ErtsSchedulerData, type);
	OFF("ESD_NO", ErtsSchedulerData, no);
	OFF("ESD_DIRTY_NO", ErtsSchedulerData, dirty_no);
	SZ("ESD_STRIDE", sizeof(ErtsAlignedSchedulerData));
	OFF("REGPROC_NAME", RegProc, name);
	OFF("ATOM_LEN", Atom, len);
#ifdef XP_ATOM_BIN
	OFF("ATOM_NAME", Atom, u.bin);
#else
	OFF("ATOM_NAME", Atom, name);
#endif
	OFF("ITAB_ENTRIES", IndexTable, entries);
	OFF("ITAB_SEG_TABLE", IndexTable, seg_table);
	OFF("REGS_X_REG_ARRAY", ErtsSchedulerRegisters, x_reg_array);
	SZ("P_SIZEOF", sizeof(Process));
	/* The run queues (record --trigger runq). */
	OFF("ESD_RUN_QUEUE", ErtsSchedulerData, run_queue);
	OFF("RQ_IX", ErtsRunQueue, ix);
	OFF("RQ_SCHEDULER", ErtsRunQueue, scheduler);
	OFF("RQ_LEN", ErtsRunQueue, len);
	OFF("RQ_PROCS_LEN", ErtsRunQueue, procs.prio_info[0].len);
	SZ("RQ_INFO_SIZE", sizeof(ErtsRunQueueInfo));
	SZ("RQ_STRIDE", sizeof(ErtsAlignedRunQueue));
	printf("\t\t\t\t/* ERTS_NO_PROC_PRIO_LEVELS = %d */\n", (int)ERTS_NO_PROC_PRIO_LEVELS);
}

/* erl_ao_firstfit_alloc.c keeps AOFF_Carrier_t in the .c file (25:107, 27 and 29 the same): its
 * first fields, mirrored here. aoff_largest_fblk_in_mbc returns rbt_node.hdr.bhdr. */
struct xp_aoff_carrier {
	Carrier_t crr;
	AOFF_RBTree_t rbt_node;
};

#define AOFF_(name, type, member) printf("\t\t\t." name " = %zu,\n", offsetof(type, member))
#define ASZ(name, expr)		  printf("\t\t\t." name " = %zu,\n", (size_t)(expr))

/* `extrospect alloc`: erts_allctrs_info[], erts_allctr_thr_spec[] (erl_alloc.h), Allctr_t and
 * its statistics (erl_alloc_util.h), the AOFF carrier's largest free block. */
static void print_alloc(void)
{
	printf("\t\t.alloc =\n\t\t\t{\n");
	ASZ("n_types", ERTS_ALC_A_MAX + 1);
	ASZ("a_min", ERTS_ALC_A_MIN);
	ASZ("a_count", ERTS_ALC_A_COUNT);
	ASZ("strat_aoff", ERTS_ALC_S_FIRSTFIT);
	ASZ("info_size", sizeof(ErtsAllocatorInfo_t));
	AOFF_("info_alloc_util", ErtsAllocatorInfo_t, alloc_util);
	AOFF_("info_enabled", ErtsAllocatorInfo_t, enabled);
	AOFF_("info_thr_spec", ErtsAllocatorInfo_t, thr_spec);
	AOFF_("info_extra", ErtsAllocatorInfo_t, extra);
	ASZ("tspec_size", sizeof(ErtsAllocatorThrSpec_t));
	AOFF_("tspec_n", ErtsAllocatorThrSpec_t, size);
	AOFF_("tspec_allctr", ErtsAllocatorThrSpec_t, allctr);
	ASZ("allctr_size", sizeof(Allctr_t));
	AOFF_("allctr_name_prefix", Allctr_t, name_prefix);
	AOFF_("allctr_alloc_no", Allctr_t, alloc_no);
	AOFF_("allctr_strat", Allctr_t, alloc_strat);
	AOFF_("allctr_ix", Allctr_t, ix);
	AOFF_("allctr_mbc_first", Allctr_t, mbc_list.first);
	AOFF_("allctr_sbc_first", Allctr_t, sbc_list.first);
	AOFF_("allctr_pool_blocks_size", Allctr_t, cpool.stat.blocks_size);
	AOFF_("allctr_pool_no_blocks", Allctr_t, cpool.stat.no_blocks);
	AOFF_("allctr_pool_carriers_size", Allctr_t, cpool.stat.carriers_size);
	AOFF_("allctr_pool_no_carriers", Allctr_t, cpool.stat.no_carriers);
	AOFF_("allctr_mbcs", Allctr_t, mbcs);
	AOFF_("allctr_sbcs", Allctr_t, sbcs);
	AOFF_("cs_carriers", CarriersStats_t, carriers);
	AOFF_("cs_blocks", CarriersStats_t, blocks);
	ASZ("bs_size", sizeof(BlockStats_t));
	ASZ("crr_mseg", ERTS_CRR_ALLOC_MSEG);
	ASZ("crr_sys", ERTS_CRR_ALLOC_SYS);
	AOFF_("crr_chdr", Carrier_t, chdr);
	AOFF_("crr_next", Carrier_t, next);
	AOFF_("crr_allctr", Carrier_t, allctr);
	AOFF_("aoff_crr_largest", struct xp_aoff_carrier, rbt_node.hdr.bhdr);
	AOFF_("allctr_cpool_sentinel", Allctr_t, cpool.sentinel);
	AOFF_("cpd_next", ErtsAlcCPoolData_t, next);
	AOFF_("cpd_orig_allctr", ErtsAlcCPoolData_t, orig_allctr);
	AOFF_("cpd_max_size", ErtsAlcCPoolData_t, max_size);
	printf("\t\t\t},\n");
}

int main(void)
{
	Process *p = NULL;

	printf("\t/* Generated by tools/layout-probe/run from %s. */\n", XP_TREE);
	printf("\t{\n");
	printf("\t\t.erts_series = \"%s\",\n", XP_ERTS_SERIES);
	printf("\t\t.otp_release = \"%s\",\n", XP_OTP_RELEASE);
	printf("\t\t.checked_on = \"%s\",\n", XP_CHECKED_ON);
	printf(
	    "\t\t.flavor = XP_FLAVOR_JIT, .arch = \"x86_64\", .ptab_tab = %zu, .ptab_max = %zu,\n",
	    offsetof(ErtsPTab, r.o.tab), offsetof(ErtsPTab, r.o.max));
	printf("\t\t.ptab_invalid_element = %zu, .ptab_element_size = %zu,\n",
	       offsetof(ErtsPTab, r.o.invalid_element), offsetof(ErtsPTab, r.o.element_size));
	printf("\t\t.off =\n\t\t\t{\n");
	print_process();
	print_others();
	printf("\t\t\t},\n");
	print_alloc();
	printf("\t\t.fcalls_bytes = %zu,\n", sizeof(p->fcalls));
#ifdef XP_ATOM_BIN
	printf("\t\t.atom_name_mode = XP_ATOM_NAME_BITSTRING,\n");
#else
	printf("\t\t.atom_name_mode = XP_ATOM_NAME_POINTER,\n");
#endif
	printf("\t\t.thread_fmt = {\"%s\", \"%s\", \"%s\"},\n", XP_FMT_NORMAL, XP_FMT_DIRTY_CPU,
	       XP_FMT_DIRTY_IO);
	printf("\t\t/* trace-frame words: %s */\n", XP_TW_SRC);
	printf("\t\t.trace_words_return = %d,\n", (int)(XP_TW_RETURN));
	printf("\t\t.trace_words_return_to = %d,\n", (int)(XP_TW_RETURN_TO));
	printf("\t\t.trace_words_time = %d,%s\n", (int)(XP_TW_TIME), XP_TW_TIME_NOTE);
	printf("\t},\n");
	return 0;
}
