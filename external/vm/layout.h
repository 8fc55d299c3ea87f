/* OTP-version knowledge: the ONLY place ERTS offsets, sizes, tags and thread names live.
 * Both the sampler and the agent (which compiles this file too) ask it for the row that matches
 * an erts version + flavour + arch; there is no "latest" fallback for an unknown version.
 * Does not own: discovering or verifying values at run time (agent calibration, sampler checks). */
#ifndef XP_LAYOUT_H
#define XP_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "extrospect_abi.h"

#define XP_ABSENT (-1)

/* Term tags and table geometry, the same in OTP 25..29 (B/erl_term.h, B/index.h, B/atom.h). */
#define XP_TAG_IMMED2_MASK  0x3fu /* atoms: (term & mask) == XP_TAG_ATOM */
#define XP_TAG_ATOM	    0x0bu
#define XP_ATOM_INDEX_SHIFT 6
#define XP_INDEX_PAGE_SHIFT 10 /* IndexTable pages hold 1024 slots */
#define XP_ATOM_MAX_BYTES   (255 * 4)
#define XP_TAG_IMMED1_MASK  0xfu /* internal pids: (term & mask) == XP_TAG_PID */
#define XP_TAG_PID	    0x3u
#define XP_PID_DATA_SHIFT   4
#define XP_CP_MASK	    0x3u  /* return addresses have the low two bits clear */
#define XP_BITS_HDR_MASK    0x3fu /* OTP 28+ atom text bitstrings (B/erl_bits.h 29) */
#define XP_BITS_HDR_HEAP    0x20u /* heap bits: size in bits @8, text @16 */
#define XP_BITS_HDR_SUB	    0x24u /* sub bits: base_flags @8, start @16, end @24 (bits) */

/* The section of beam.smp that holds the pointers to the three scheduler data arrays
 * (erts_aligned_scheduler_data, ..._dirty_cpu_..., ..._dirty_io_..., declared
 * ERTS_WRITE_UNLIKELY: B/erl_process.c, B/sys.h `__attribute__((section("ERTS_LOW_WRITE")))`),
 * the same in OTP 25, 27 and 29; 0x538 bytes in OTP 29.1.2's beam.smp. Read whole when no
 * larger than XP_ESD_SECTION_MAX. */
#define XP_ESD_SECTION	   "ERTS_LOW_WRITE"
#define XP_ESD_SECTION_MAX 8192u

/* Process.state flags, ERTS_PSFLG_BIT(n) = 1 << (6 + n), the same in OTP 25, 27 and 29
 * (B/erl_process.h 25:1207-1299, 27:1233-1326, 29:1246-1339); erts_process_state2status
 * (B/erl_process.c 25:9162, 27:9205, 29:9305) turns them into process_info(P, status). The low
 * six bits hold three 2-bit priorities (normal = 2 in each). */
#define XP_PSFLG_PRIO_MASK	   0x3fu
#define XP_PSFLG_PRIO_NORMAL	   0x2au
#define XP_PSFLG_FREE		   0x400u
#define XP_PSFLG_EXITING	   0x800u
#define XP_PSFLG_ACTIVE		   0x2000u
#define XP_PSFLG_RUNNING	   0x8000u
#define XP_PSFLG_SUSPENDED	   0x10000u
#define XP_PSFLG_GC		   0x20000u
#define XP_PSFLG_ACTIVE_SYS	   0x100000u
#define XP_PSFLG_RUNNING_SYS	   0x200000u
#define XP_PSFLG_DIRTY_ACTIVE_SYS  0x10000000u
#define XP_PSFLG_DIRTY_RUNNING	   0x20000000u
#define XP_PSFLG_DIRTY_RUNNING_SYS 0x40000000u
/* ProcDict (B/erl_process_dict.h 25:25, 27:27, 29:29, the same in each): four unsigned ints
 * (sizeMask, usedSlots, arraySize, splitPosition), Uint numElements, then Eterm data[arraySize];
 * each slot is NIL, a boxed {Key, Value} or a list of them (B/erl_process_dict.c pd_hash_put). */
#define XP_PDICT_ARRAY_SIZE   8
#define XP_PDICT_NUM_ELEMENTS 16
#define XP_PDICT_DATA	      24
/* Terms (B/erl_term.h 25-29): NIL, the primary tags of lists and boxes, tuple headers, smalls. */
#define XP_TERM_NIL	    0x3bu
#define XP_TAG_PRIMARY_MASK 0x3u
#define XP_TAG_LIST	    0x1u
#define XP_TAG_BOXED	    0x2u
#define XP_TUPLE_HDR(n)	    ((uint64_t)(n) << 6) /* make_arityval: header tag 0 */
#define XP_TAG_SMALL	    0xfu		 /* (term & XP_TAG_IMMED1_MASK) */
#define XP_PTAB_MAX_SIZE    (1u << 27) /* ERTS_PTAB_MAX_SIZE (B/erl_ptab.h), a power of 2 */

/* How a pid term holds <0.NUM.SER> (B/erl_ptab.h, B/erl_term.h). */
enum xp_pid_format {
	XP_PID_HIGH_PIX = 0, /* 25: high 32 bits = table index; low 32 >> 4 = data, NUM 15 bits */
	XP_PID_PIXDATA,	     /* 27+: term >> 4 = "pixdata", unscrambled with the ErtsPTab's pix_*
			      * fields into data; NUM 28 bits */
};

enum xp_atom_name_mode {
	XP_ATOM_NAME_POINTER = 0, /* Atom.name is a byte * (OTP <= 27) */
	XP_ATOM_NAME_BITSTRING,	  /* Atom.u.bin is a literal bitstring term (OTP 28+) */
};

/* The allocators (`extrospect alloc`, external/vm/alloc.c): erts_allctrs_info[] and
 * erts_allctr_thr_spec[] (B/erl_alloc.h), each Allctr_t's statistics (B/erl_alloc_util.h), the
 * AOFF carrier's largest free block (B/erl_ao_firstfit_alloc.c). Offsets in bytes. */
struct xp_alloc_layout {
	int32_t n_types;    /* ERTS_ALC_A_MAX + 1: entries of erts_allctrs_info[] */
	int32_t a_min;	    /* ERTS_ALC_A_MIN: blocks[] index = alloc_no - a_min */
	int32_t a_count;    /* ERTS_ALC_A_COUNT: entries of CarriersStats_t.blocks[] */
	int32_t strat_aoff; /* ERTS_ALC_S_FIRSTFIT: the AOFF strategies (aoff, aoffcbf, ...) */
	int32_t info_size, info_alloc_util, info_enabled, info_thr_spec, info_extra;
	int32_t tspec_size, tspec_n, tspec_allctr; /* ErtsAllocatorThrSpec_t: size, allctr[] */
	int32_t allctr_size, allctr_name_prefix, allctr_alloc_no, allctr_strat, allctr_ix;
	int32_t allctr_mbc_first, allctr_sbc_first; /* mbc_list.first, sbc_list.first */
	/* cpool.stat: blocks_size[a_count], no_blocks[a_count], carriers_size, no_carriers */
	int32_t allctr_pool_blocks_size, allctr_pool_no_blocks, allctr_pool_carriers_size,
	    allctr_pool_no_carriers;
	int32_t allctr_mbcs, allctr_sbcs; /* CarriersStats_t */
	int32_t cs_carriers, cs_blocks;	  /* carriers[mseg, sys]: {no, size}; blocks[a_count] */
	int32_t bs_size;		  /* sizeof(BlockStats_t): curr {no, size} first */
	int32_t crr_mseg, crr_sys;	  /* ERTS_CRR_ALLOC_MSEG, _SYS: carriers[] indexes */
	int32_t crr_chdr, crr_next, crr_allctr; /* Carrier_t */
	int32_t aoff_crr_largest; /* AOFF_Carrier_t.rbt_node.hdr.bhdr: largest free block */
	/* Allctr_t.cpool.sentinel: the carrier pool's list head (an ErtsAlcCPoolData_t); each
	 * pooled carrier's ErtsAlcCPoolData_t: next, orig_allctr (its creator) and max_size (its
	 * largest free block). */
	int32_t allctr_cpool_sentinel, cpd_next, cpd_orig_allctr, cpd_max_size;
};

/* The module ranges table (B/beam_ranges.c): `static struct ranges r[ERTS_NUM_CODE_IX]`, each
 * {Range *modules; Sint n; Sint allocated; erts_atomic_t mid}, the one indexed by
 * the_active_code_index (erts_atomic32_t, B/code_ix.c) being the live one; a Range is
 * {ErtsCodePtr start; erts_atomic_t end}, end == start once purged, sorted by start. */
struct xp_ranges_layout {
	int32_t code_ix_count;			    /* ERTS_NUM_CODE_IX */
	int32_t size, modules, n, allocated, mid;   /* struct ranges */
	int32_t range_size, range_start, range_end; /* Range */
};

struct xp_layout {
	const char *erts_series; /* erts major.minor this row matches, e.g. "13.1" */
	const char *otp_release; /* "25" */
	const char *checked_on;	 /* the exact build the row was checked against */
	uint32_t flavor;	 /* enum xp_flavor */
	const char *arch;	 /* "x86_64" */
	int32_t off[XP_OFF_COUNT];
	struct xp_alloc_layout alloc;
	struct xp_ranges_layout ranges;
	int32_t fcalls_bytes; /* width of Process.fcalls */
	enum xp_atom_name_mode atom_name_mode;
	int32_t ptab_tab; /* ErtsPTab.r.o.tab */
	int32_t ptab_max; /* ErtsPTab.r.o.max */
	/* ErtsPTab.r.o.pix_mask, pix_cl_mask, pix_cli_mask (Uint), pix_cl_shift, pix_cli_shift
	 * (Uint32): how 27+ scramble the table index into the pid term. */
	int32_t ptab_pix_mask, ptab_pix_cl_mask, ptab_pix_cli_mask, ptab_pix_cl_shift,
	    ptab_pix_cli_shift;
	/* ErtsPTab.r.o.invalid_element (the marker of a reserved slot) and r.o.element_size
	 * (sizeof(Process) for erts_proc): pstack's validation and OTP 28+ scan of the table. */
	int32_t ptab_invalid_element, ptab_element_size;
	enum xp_pid_format pid_format;
	uint32_t pid_num_bits; /* bits of NUM in <0.NUM.SER> */
	/* Thread names are erts_snprintf'd into 16 bytes: printf formats with one %u. */
	const char *thread_fmt[3]; /* indexed by enum xp_sched_type */
	/* Extra words after a trace-frame CP (otp-internals.md §1.4). */
	int32_t trace_words_return, trace_words_return_to, trace_words_time;
	/* Words of its own (no code addresses) a shared fragment pushes on the Erlang stack above
	 * its return address while it runs: bs_get_utf8_shared saves its match context and bit
	 * offset (otp-internals.md §2.3). */
	int32_t fragment_push_words;
	/* The GDB JIT list only grows at its head: entries are never unlinked, even for purged
	 * code, so a reader may read only what is new (jitmap__extend). */
	bool jit_list_append_only;
};

/* The row for this version, or NULL when none matches (the caller must fail closed). */
const struct xp_layout *layout__find(const char *erts_version, uint32_t flavor, const char *arch);
/* The offsets row has, into off (XP_OFF_COUNT of them) as the table's: present, source
 * TSRC_TABLE. Those the row lacks are left as they were. */
struct target_value;
void layout__values(const struct xp_layout *row, struct target_value *off);

/* The rows, for listing ("extrospect info --layouts") and tests. */
const struct xp_layout *layout__rows(unsigned *count);

/* Short stable names for offsets and addresses, as used in JSON and logs ("p_htop"). */
const char *layout__off_name(enum xp_off_id id);
const char *layout__addr_name(enum xp_addr_id id);

/* Parse a thread name ("3_scheduler", "erts_dcpus_2") into type and 1-based number, for the given
 * row. With row == NULL, every known naming is tried. Returns 0 on a match, -1 otherwise. */
int layout__parse_thread_name(const struct xp_layout *row, const char *comm, uint32_t *type,
			      uint32_t *number);

#endif /* XP_LAYOUT_H */
