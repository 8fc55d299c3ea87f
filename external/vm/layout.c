/* OTP-version knowledge: per-version rows of ERTS offsets and names. See layout.h.
 *
 * How the rows were made: `tools/layout-probe/run SUITE` unpacks Debian's `erlang` source package
 * for that suite (with Debian's patches), runs `erts/configure --enable-jit`, compiles an
 * offsetof() probe with the emulator's own flags against that tree's headers, and prints one row.
 * The rows below are its output for bookworm (25.2.3), trixie (27.3.4.1) and forky (29.1.1;
 * sid's 29.1.2 source was not on the mirror, and its live VM agreed with every value). The agent's
 * calibration and the sampler's checks confirm them at run time (`extrospect info` says which). A
 * row matches an erts major.minor series: patch releases of one OTP minor share the layout.
 * The memory fields (P_OLD_*, P_MBUF_SZ, P_OFF_HEAP_OVERHEAD, P_BIN_*, P_REDS; `extrospect heap`)
 * were added in November 2026 by a probe run on bookworm 25.2.3, trixie 27.3.4.1 (+deb13u3)
 * and forky 29.1.1; every other offset the probe printed was unchanged. The agent calibrates
 * them (c_src/calib/calib_probe.c: P_REDS; c_src/calib/calib_memory.c: the old heap and vheap
 * words) except P_MBUF_SZ; the sampler's memory_fields check tests them on a known process, and
 * test/e2e/heap_test.sh compares what they give with process_info on each release.
 * The run-queue fields (ESD_RUN_QUEUE, RQ_*; record --trigger runq) were added in November 2026
 * by a probe run on bookworm 25.2.3 (+deb12u4), trixie 27.3.4.1 (+deb13u3) and forky 29.1.1
 * (every other offset it printed was unchanged); the sampler checks them on every read
 * (external/src/cmd/record/trig_runq.c: the queue's ix and its pointer back to its scheduler's
 * data) and test/e2e/runq_test.sh compares the length read with the VM's own count.
 * P_DICTIONARY (Process.dictionary, `ProcDict *dictionary` four words before u.initial in
 * B/erl_process.h 25.2.3:1063, 27.3.4.1:1087, 29.1.1:1110; no USE_VM_PROBES in Debian's builds)
 * was added in November 2026 from those trees; test/e2e/names_test.sh compares the
 * '$initial_call' read through it with process_info(P, dictionary) on each release. */
#include <stdio.h>
#include <string.h>

#include "layout.h"
#include "provenance.h"

/* ErtsPTabReadOnlyData (B/erl_ptab.h 25:102-120, 27:122-140, 29:124-142) starts at r.o = 192.
 * The pix_* rows are 27+'s (25 packs them as Uint32 and never needs them: XP_PID_HIGH_PIX);
 * invalid_element and element_size differ, so they are per row (offsetof on each tree). */
#define ROW_COMMON                                                                                 \
	.flavor = XP_FLAVOR_JIT, .arch = "x86_64", .ptab_tab = 192, .ptab_max = 208,               \
	.ptab_pix_mask = 216, .ptab_pix_cl_mask = 224, .ptab_pix_cli_mask = 232,                   \
	.ptab_pix_cl_shift = 240, .ptab_pix_cli_shift = 244, .ranges = RANGES_25_29

/* The module ranges table, the same in the three trees: Range and struct ranges at B/beam_ranges.c
 * 25.2.3:31-62, 27.3.4.1:31-62, 29.1.1:33-64 (pointers and Sint/erts_atomic_t words, no padding);
 * ERTS_NUM_CODE_IX 3 at B/code_ix.h 25:65, 27:70, 29:72. */
#define RANGES_25_29                                                                               \
	{                                                                                          \
		.code_ix_count = 3, .size = 32, .modules = 0, .n = 8, .allocated = 16, .mid = 24,  \
		.range_size = 16, .range_start = 0, .range_end = 8,                                \
	}

/* The allocators (struct xp_alloc_layout), printed by tools/layout-probe/probe.c's print_alloc on
 * bookworm 25.2.3, trixie 27.3.4.1 (+deb13u3) and forky 29.1.1 in November 2026: the three trees
 * gave the same values (ErtsAllocatorInfo_t B/erl_alloc.h 25:136, 27:136, 29:136;
 * ErtsAllocatorThrSpec_t 25:157; Allctr_t B/erl_alloc_util.h 25:648-807; CarriersStats_t
 * 25:528-535; AOFF_Carrier_t B/erl_ao_firstfit_alloc.c 25:107; ErtsAlcCPoolData_t
 * B/erl_alloc_util.h 25:474-492). ERTS_ALC_A_MAX + 1 = 13 types:
 * invalid, sys, temp, sl, std, ll, eheap, ets, fix, literal, binary, driver, test. */
#define ALLOC_25_29                                                                                \
	{                                                                                          \
		.n_types = 13, .a_min = 1, .a_count = 12, .strat_aoff = 4, .info_size = 24,        \
		.info_alloc_util = 0, .info_enabled = 4, .info_thr_spec = 8, .info_extra = 16,     \
		.tspec_size = 24, .tspec_n = 12, .tspec_allctr = 16, .allctr_size = 2400,          \
		.allctr_name_prefix = 120, .allctr_alloc_no = 128, .allctr_strat = 132,            \
		.allctr_ix = 136, .allctr_mbc_first = 336, .allctr_sbc_first = 352,                \
		.allctr_pool_blocks_size = 456, .allctr_pool_no_blocks = 552,                      \
		.allctr_pool_carriers_size = 648, .allctr_pool_no_carriers = 656,                  \
		.allctr_mbcs = 1744, .allctr_sbcs = 1088, .cs_carriers = 0, .cs_blocks = 80,       \
		.bs_size = 48, .crr_mseg = 0, .crr_sys = 1, .crr_chdr = 0, .crr_next = 8,          \
		.crr_allctr = 24, .aoff_crr_largest = 368, .allctr_cpool_sentinel = 392,           \
		.cpd_next = 16, .cpd_orig_allctr = 32, .cpd_max_size = 48,                         \
	}

/* Process, ErtsSchedulerData, RegProc, Atom and IndexTable offsets: erl_process.h, erl_ptab.h,
 * register.h, atom.h and index.h of each tree. */
static const struct xp_layout rows[] = {
    {
	.erts_series = "13.1",
	.otp_release = "25",
	.checked_on = "OTP 25.2.3, erts 13.1.5, Debian bookworm",
	ROW_COMMON,
	/* beamasm_update_gdb_info prepends (J/beam_jit_metadata.cpp 25:225); 25 has no
	 * beamasm_delete_gdb_info (27:245 unlinks and frees on purge). */
	.jit_list_append_only = true,
	.ptab_invalid_element = 248,
	.ptab_element_size = 272,
	.off =
	    {
		[XP_OFF_P_ID] = 0,
		[XP_OFF_P_HTOP] = 80,
		[XP_OFF_P_STOP] = 88,
		[XP_OFF_P_FRAME_POINTER] = 96,
		[XP_OFF_P_HEAP] = 128,
		[XP_OFF_P_HEND] = 136,
		[XP_OFF_P_HEAP_SZ] = 152,
		[XP_OFF_P_ABANDONED_HEAP] = 144,
		[XP_OFF_P_I] = 256,
		[XP_OFF_P_CURRENT] = 472,
		[XP_OFF_P_INITIAL] = 448,
		[XP_OFF_P_REG] = 48,
		[XP_OFF_P_STATE] = 640,
		[XP_OFF_P_SCHEDULER_DATA] = 760,
		[XP_OFF_P_FCALLS] = 104,
		/* 25's sig_qs.len (@392) is not the message-queue length. */
		[XP_OFF_P_MSG_LEN] = XP_ABSENT,
		[XP_OFF_ESD_REGISTERS] = 0,
		[XP_OFF_ESD_CURRENT_PROCESS] = 168,
		[XP_OFF_ESD_TYPE] = 176,
		[XP_OFF_ESD_NO] = 184,
		[XP_OFF_ESD_DIRTY_NO] = 192,
		[XP_OFF_ESD_STRIDE] = 41728,
		[XP_OFF_REGPROC_NAME] = 32,
		[XP_OFF_ATOM_LEN] = 24,
		[XP_OFF_ATOM_NAME] = 32,
		[XP_OFF_ITAB_ENTRIES] = 116,
		[XP_OFF_ITAB_SEG_TABLE] = 120,
		[XP_OFF_REGS_X_REG_ARRAY] = 128,
		[XP_OFF_P_OLD_HEAP] = 520,
		[XP_OFF_P_OLD_HTOP] = 512,
		[XP_OFF_P_OLD_HEND] = 504,
		[XP_OFF_P_MBUF_SZ] = 584,
		[XP_OFF_P_OFF_HEAP_OVERHEAD] = 544,
		[XP_OFF_P_BIN_OLD_VHEAP] = 616,
		[XP_OFF_P_BIN_VHEAP_SZ] = 600,
		[XP_OFF_P_REDS] = 280,
		[XP_OFF_P_DICTIONARY] = 416,
		[XP_OFF_P_SIZEOF] = 776,
		[XP_OFF_ESD_RUN_QUEUE] = 232,
		[XP_OFF_RQ_IX] = 0,
		[XP_OFF_RQ_SCHEDULER] = 144,
		[XP_OFF_RQ_LEN] = 208,
		[XP_OFF_RQ_PROCS_LEN] = 240,
		[XP_OFF_RQ_INFO_SIZE] = 12,
		[XP_OFF_RQ_STRIDE] = 448,
	    },
	.alloc = ALLOC_25_29,
	.fcalls_bytes = 8,
	.atom_name_mode = XP_ATOM_NAME_POINTER,
	.pid_format = XP_PID_HIGH_PIX,
	.pid_num_bits = 15,
	.thread_fmt = {"%u_scheduler", "%u_dirty_cpu_scheduler", "%u_dirty_io_scheduler"},
	.trace_words_return = 2,
	.trace_words_return_to = 0,
	.trace_words_time = 1,
	.fragment_push_words = 0, /* no fragment pushes (X/instr_bs.cpp 25) */
    },
    {
	.erts_series = "15.2",
	.otp_release = "27",
	.checked_on = "OTP 27.3.4.1, erts 15.2.7, Debian trixie",
	ROW_COMMON,
	.ptab_invalid_element = 272,
	.ptab_element_size = 296,
	.off =
	    {
		[XP_OFF_P_ID] = 0,
		[XP_OFF_P_HTOP] = 80,
		[XP_OFF_P_STOP] = 88,
		[XP_OFF_P_FRAME_POINTER] = 96,
		[XP_OFF_P_HEAP] = 192,
		[XP_OFF_P_HEND] = 200,
		[XP_OFF_P_HEAP_SZ] = 216,
		[XP_OFF_P_ABANDONED_HEAP] = 208,
		[XP_OFF_P_I] = 248,
		[XP_OFF_P_CURRENT] = 464,
		[XP_OFF_P_INITIAL] = 440,
		[XP_OFF_P_REG] = 32,
		[XP_OFF_P_STATE] = 624,
		[XP_OFF_P_SCHEDULER_DATA] = 744,
		[XP_OFF_P_FCALLS] = 120,
		[XP_OFF_P_MSG_LEN] = 336,
		[XP_OFF_ESD_REGISTERS] = 0,
		[XP_OFF_ESD_CURRENT_PROCESS] = 168,
		[XP_OFF_ESD_TYPE] = 176,
		[XP_OFF_ESD_NO] = 184,
		[XP_OFF_ESD_DIRTY_NO] = 192,
		[XP_OFF_ESD_STRIDE] = 41792,
		[XP_OFF_REGPROC_NAME] = 32,
		[XP_OFF_ATOM_LEN] = 24,
		[XP_OFF_ATOM_NAME] = 32,
		[XP_OFF_ITAB_ENTRIES] = 116,
		[XP_OFF_ITAB_SEG_TABLE] = 120,
		[XP_OFF_REGS_X_REG_ARRAY] = 64,
		[XP_OFF_P_OLD_HEAP] = 512,
		[XP_OFF_P_OLD_HTOP] = 504,
		[XP_OFF_P_OLD_HEND] = 496,
		[XP_OFF_P_MBUF_SZ] = 568,
		[XP_OFF_P_OFF_HEAP_OVERHEAD] = 528,
		[XP_OFF_P_BIN_OLD_VHEAP] = 600,
		[XP_OFF_P_BIN_VHEAP_SZ] = 584,
		[XP_OFF_P_REDS] = 272,
		[XP_OFF_P_DICTIONARY] = 408,
		[XP_OFF_P_SIZEOF] = 760,
		[XP_OFF_ESD_RUN_QUEUE] = 232,
		[XP_OFF_RQ_IX] = 0,
		[XP_OFF_RQ_SCHEDULER] = 144,
		[XP_OFF_RQ_LEN] = 208,
		[XP_OFF_RQ_PROCS_LEN] = 240,
		[XP_OFF_RQ_INFO_SIZE] = 12,
		[XP_OFF_RQ_STRIDE] = 448,
	    },
	.alloc = ALLOC_25_29,
	.fcalls_bytes = 4,
	.atom_name_mode = XP_ATOM_NAME_POINTER,
	.pid_format = XP_PID_PIXDATA,
	.pid_num_bits = 28,
	.thread_fmt = {"erts_sched_%u", "erts_dcpus_%u", "erts_dios_%u"},
	.trace_words_return = 3,
	.trace_words_return_to = 1,
	.trace_words_time = 3,	  /* call_trace_return */
	.fragment_push_words = 2, /* X/instr_bs.cpp 27:1200-1201 */
    },
    {
	.erts_series = "17.1",
	.otp_release = "29",
	.checked_on = "OTP 29.1.2, erts 17.1.1, Debian sid",
	ROW_COMMON,
	.ptab_invalid_element = 272,
	.ptab_element_size = 296,
	.off =
	    {
		[XP_OFF_P_ID] = 0,
		[XP_OFF_P_HTOP] = 80,
		[XP_OFF_P_STOP] = 88,
		[XP_OFF_P_FRAME_POINTER] = 96,
		[XP_OFF_P_HEAP] = 192,
		[XP_OFF_P_HEND] = 200,
		[XP_OFF_P_HEAP_SZ] = 216,
		[XP_OFF_P_ABANDONED_HEAP] = 208,
		[XP_OFF_P_I] = 248,
		[XP_OFF_P_CURRENT] = 464,
		[XP_OFF_P_INITIAL] = 440,
		[XP_OFF_P_REG] = 32,
		[XP_OFF_P_STATE] = 624,
		[XP_OFF_P_SCHEDULER_DATA] = 744,
		[XP_OFF_P_FCALLS] = 120,
		[XP_OFF_P_MSG_LEN] = 336,
		[XP_OFF_ESD_REGISTERS] = 0,
		[XP_OFF_ESD_CURRENT_PROCESS] = 168,
		[XP_OFF_ESD_TYPE] = 176,
		[XP_OFF_ESD_NO] = 184,
		[XP_OFF_ESD_DIRTY_NO] = 192,
		[XP_OFF_ESD_STRIDE] = 41792,
		[XP_OFF_REGPROC_NAME] = 32,
		[XP_OFF_ATOM_LEN] = 24,
		[XP_OFF_ATOM_NAME] = 32,
		[XP_OFF_ITAB_ENTRIES] = 116,
		[XP_OFF_ITAB_SEG_TABLE] = 120,
		[XP_OFF_REGS_X_REG_ARRAY] = 64,
		[XP_OFF_P_OLD_HEAP] = 512,
		[XP_OFF_P_OLD_HTOP] = 504,
		[XP_OFF_P_OLD_HEND] = 496,
		[XP_OFF_P_MBUF_SZ] = 568,
		[XP_OFF_P_OFF_HEAP_OVERHEAD] = 528,
		[XP_OFF_P_BIN_OLD_VHEAP] = 600,
		[XP_OFF_P_BIN_VHEAP_SZ] = 584,
		[XP_OFF_P_REDS] = 272,
		[XP_OFF_P_DICTIONARY] = 408,
		[XP_OFF_P_SIZEOF] = 768,
		/* 28+ reordered ErtsRunQueue (the process queues first, ix after them). */
		[XP_OFF_ESD_RUN_QUEUE] = 232,
		[XP_OFF_RQ_IX] = 168,
		[XP_OFF_RQ_SCHEDULER] = 224,
		[XP_OFF_RQ_LEN] = 164,
		[XP_OFF_RQ_PROCS_LEN] = 48,
		[XP_OFF_RQ_INFO_SIZE] = 12,
		[XP_OFF_RQ_STRIDE] = 384,
	    },
	.alloc = ALLOC_25_29,
	.fcalls_bytes = 4,
	.atom_name_mode = XP_ATOM_NAME_BITSTRING,
	.pid_format = XP_PID_PIXDATA,
	.pid_num_bits = 28,
	.thread_fmt = {"erts_sched_%u", "erts_dcpus_%u", "erts_dios_%u"},
	.trace_words_return = 3,
	.trace_words_return_to = 1,
	.trace_words_time = 3,
	.fragment_push_words = 2, /* X/instr_bs.cpp 29:791-792 */
    },
};

static const char *const off_names[XP_OFF_COUNT] = {
    [XP_OFF_P_ID] = "p_id",
    [XP_OFF_P_HTOP] = "p_htop",
    [XP_OFF_P_STOP] = "p_stop",
    [XP_OFF_P_FRAME_POINTER] = "p_frame_pointer",
    [XP_OFF_P_HEAP] = "p_heap",
    [XP_OFF_P_HEND] = "p_hend",
    [XP_OFF_P_HEAP_SZ] = "p_heap_sz",
    [XP_OFF_P_I] = "p_i",
    [XP_OFF_P_CURRENT] = "p_current",
    [XP_OFF_P_INITIAL] = "p_initial",
    [XP_OFF_P_REG] = "p_reg",
    [XP_OFF_P_STATE] = "p_state",
    [XP_OFF_P_SCHEDULER_DATA] = "p_scheduler_data",
    [XP_OFF_P_FCALLS] = "p_fcalls",
    [XP_OFF_P_MSG_LEN] = "p_msg_len",
    [XP_OFF_ESD_REGISTERS] = "esd_registers",
    [XP_OFF_ESD_CURRENT_PROCESS] = "esd_current_process",
    [XP_OFF_ESD_TYPE] = "esd_type",
    [XP_OFF_ESD_NO] = "esd_no",
    [XP_OFF_ESD_DIRTY_NO] = "esd_dirty_no",
    [XP_OFF_ESD_STRIDE] = "esd_stride",
    [XP_OFF_REGPROC_NAME] = "regproc_name",
    [XP_OFF_ATOM_LEN] = "atom_len",
    [XP_OFF_ATOM_NAME] = "atom_name",
    [XP_OFF_ITAB_ENTRIES] = "itab_entries",
    [XP_OFF_ITAB_SEG_TABLE] = "itab_seg_table",
    [XP_OFF_REGS_X_REG_ARRAY] = "regs_x_reg_array",
    [XP_OFF_P_SIZEOF] = "p_sizeof",
    [XP_OFF_P_ABANDONED_HEAP] = "p_abandoned_heap",
    [XP_OFF_P_OLD_HEAP] = "p_old_heap",
    [XP_OFF_P_OLD_HTOP] = "p_old_htop",
    [XP_OFF_P_OLD_HEND] = "p_old_hend",
    [XP_OFF_P_MBUF_SZ] = "p_mbuf_sz",
    [XP_OFF_P_OFF_HEAP_OVERHEAD] = "p_off_heap_overhead",
    [XP_OFF_P_BIN_OLD_VHEAP] = "p_bin_old_vheap",
    [XP_OFF_P_BIN_VHEAP_SZ] = "p_bin_vheap_sz",
    [XP_OFF_P_REDS] = "p_reds",
    [XP_OFF_P_DICTIONARY] = "p_dictionary",
    [XP_OFF_ESD_RUN_QUEUE] = "esd_run_queue",
    [XP_OFF_RQ_IX] = "rq_ix",
    [XP_OFF_RQ_SCHEDULER] = "rq_scheduler",
    [XP_OFF_RQ_LEN] = "rq_len",
    [XP_OFF_RQ_PROCS_LEN] = "rq_procs_len",
    [XP_OFF_RQ_INFO_SIZE] = "rq_info_size",
    [XP_OFF_RQ_STRIDE] = "rq_stride",
};

static const char *const addr_names[XP_ADDR_COUNT] = {
    [XP_ADDR_SCHED_DATA] = "scheduler_data",
    [XP_ADDR_DIRTY_CPU_SCHED_DATA] = "dirty_cpu_scheduler_data",
    [XP_ADDR_DIRTY_IO_SCHED_DATA] = "dirty_io_scheduler_data",
    [XP_ADDR_ATOM_TABLE] = "atom_table",
    [XP_ADDR_JIT_DESCRIPTOR] = "jit_descriptor",
    [XP_ADDR_NORMAL_EXIT] = "normal_exit",
    [XP_ADDR_PROCESS_TABLE] = "process_table",
    [XP_ADDR_PROBE_PROCESS] = "probe_process",
    [XP_ADDR_ALLCTRS_INFO] = "allctrs_info",
    [XP_ADDR_ACTIVE_CODE_IX] = "active_code_ix",
    [XP_ADDR_CODE_RANGES] = "code_ranges",
};

const struct xp_layout *layout__find(const char *erts_version, uint32_t flavor, const char *arch)
{
	size_t i;

	if (!erts_version || !arch)
		return NULL;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct xp_layout *r = &rows[i];

		size_t n = strlen(r->erts_series);

		/* "17.1" matches erts 17.1 and 17.1.x, never 17.10. */
		if (r->flavor == flavor && strcmp(r->arch, arch) == 0 &&
		    strncmp(erts_version, r->erts_series, n) == 0 &&
		    (erts_version[n] == '\0' || erts_version[n] == '.'))
			return r;
	}
	return NULL;
}

const struct xp_layout *layout__rows(unsigned *count)
{
	*count = sizeof(rows) / sizeof(rows[0]);
	return rows;
}

const char *layout__off_name(enum xp_off_id id)
{
	return (unsigned)id < XP_OFF_COUNT && off_names[id] ? off_names[id] : "unknown";
}

const char *layout__addr_name(enum xp_addr_id id)
{
	return (unsigned)id < XP_ADDR_COUNT && addr_names[id] ? addr_names[id] : "unknown";
}

/* Match "PREFIX%uSUFFIX" where the suffix may be cut by the 15-character comm limit. */
static int match_fmt(const char *fmt, const char *comm, uint32_t *number)
{
	const char *pct = strstr(fmt, "%u");
	size_t pre = (size_t)(pct - fmt), digits = 0;
	const char *suffix = pct + 2, *rest;
	unsigned long n = 0;

	if (strncmp(comm, fmt, pre) != 0)
		return -1;
	rest = comm + pre;
	while (rest[digits] >= '0' && rest[digits] <= '9' && digits < 6) {
		n = n * 10 + (unsigned long)(rest[digits] - '0');
		digits++;
	}
	if (digits == 0 || n == 0)
		return -1;
	rest += digits;
	/* The kernel keeps 15 characters: accept a suffix truncated exactly there. */
	if (strcmp(rest, suffix) != 0 &&
	    !(strlen(comm) == 15 && strncmp(suffix, rest, strlen(rest)) == 0 && *rest))
		return -1;
	*number = (uint32_t)n;
	return 0;
}

int layout__parse_thread_name(const struct xp_layout *row, const char *comm, uint32_t *type,
			      uint32_t *number)
{
	size_t i, t, nrows = row ? 1 : sizeof(rows) / sizeof(rows[0]);

	for (i = 0; i < nrows; i++) {
		const struct xp_layout *r = row ? row : &rows[i];

		for (t = 0; t < 3; t++) {
			if (match_fmt(r->thread_fmt[t], comm, number) == 0) {
				*type = (uint32_t)t;
				return 0;
			}
		}
	}
	return -1;
}

void layout__values(const struct xp_layout *row, struct target_value *off)
{
	for (int i = 0; row && i < XP_OFF_COUNT; i++) {
		if (row->off[i] != XP_ABSENT)
			off[i] = (struct target_value){
			    .value = row->off[i], .source = TSRC_TABLE, .present = true};
	}
}
