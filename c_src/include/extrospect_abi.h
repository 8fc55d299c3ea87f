/* The contract between the extrospect agent (NIF, inside the VM) and the sampler (outside).
 * The agent fills one struct xp_agent_block in its own memory, exported as the dynamic symbol
 * XP_AGENT_SYMBOL; the sampler finds it through the NIF's .dynsym and /proc/PID/maps and reads it
 * with process_vm_readv. Fixed-width fields only, no pointers to follow on the agent's side.
 * Owns: field meanings and numbering. Does not own: ERTS offsets (external/vm/layout.c). */
#ifndef EXTROSPECT_ABI_H
#define EXTROSPECT_ABI_H

#include <stdint.h>

#define XP_AGENT_SYMBOL "extrospect_agent_block"
#define XP_AGENT_MAGIC	0x3154474150585845ULL /* "EXXPAGT1" little-endian */
#define XP_ABI_VERSION	1u

/* Every ERTS offset or size the agent may publish. The same ids index the sampler's built-in
 * per-version table (layout.c), so a value can be compared source against source. Append only. */
enum xp_off_id {
	XP_OFF_P_ID = 0,	    /* Process.common.id (pid Eterm) */
	XP_OFF_P_HTOP,		    /* Process.htop */
	XP_OFF_P_STOP,		    /* Process.stop */
	XP_OFF_P_FRAME_POINTER,	    /* Process.frame_pointer */
	XP_OFF_P_HEAP,		    /* Process.heap */
	XP_OFF_P_HEND,		    /* Process.hend */
	XP_OFF_P_HEAP_SZ,	    /* Process.heap_sz (words) */
	XP_OFF_P_I,		    /* Process.i (resume PC when not running) */
	XP_OFF_P_CURRENT,	    /* Process.current (ErtsCodeMFA *) */
	XP_OFF_P_INITIAL,	    /* Process.u.initial (ErtsCodeMFA, 3 words) */
	XP_OFF_P_REG,		    /* Process.common.u.alive.reg (RegProc *) */
	XP_OFF_P_STATE,		    /* Process.state (atomic32) */
	XP_OFF_P_SCHEDULER_DATA,    /* Process.scheduler_data */
	XP_OFF_P_FCALLS,	    /* Process.fcalls */
	XP_OFF_P_MSG_LEN,	    /* message-queue length word (see otp-internals.md §4) */
	XP_OFF_ESD_REGISTERS,	    /* ErtsSchedulerData.registers */
	XP_OFF_ESD_CURRENT_PROCESS, /* ErtsSchedulerData.current_process */
	XP_OFF_ESD_TYPE,	    /* ErtsSchedulerData.type (0 normal, 1 dirty cpu, 2 dirty io) */
	XP_OFF_ESD_NO,		    /* ErtsSchedulerData.no */
	XP_OFF_ESD_DIRTY_NO,	    /* ErtsSchedulerData.dirty_no */
	XP_OFF_ESD_STRIDE,	    /* sizeof(ErtsAlignedSchedulerData) */
	XP_OFF_REGPROC_NAME,	    /* RegProc.name (atom) */
	XP_OFF_ATOM_LEN,	    /* Atom.len (s16, UTF-8 bytes) */
	XP_OFF_ATOM_NAME,	    /* Atom.name (byte *) or Atom.u.bin (Eterm, OTP 28+) */
	XP_OFF_ITAB_ENTRIES,	    /* IndexTable.entries (int) */
	XP_OFF_ITAB_SEG_TABLE,	    /* IndexTable.seg_table (IndexSlot ***) */
	XP_OFF_REGS_X_REG_ARRAY, /* ErtsSchedulerRegisters.x_reg_array (JIT rbx = registers + this)
				  */
	XP_OFF_P_SIZEOF,	 /* sizeof(Process) */
	/* Process.abandoned_heap: non-NULL while a delayed garbage collection runs the process on
	 * a heap fragment, when hend - heap != heap_sz (B/erl_gc.c delay_garbage_collection).
	 * Appended after the ABI 1 set: an older agent's block leaves it to the table. */
	XP_OFF_P_ABANDONED_HEAP,
	/* Memory of a process, for `extrospect heap` (appended; B/erl_process.h struct process). */
	XP_OFF_P_OLD_HEAP,	    /* Process.old_heap (old generation start, NULL when none) */
	XP_OFF_P_OLD_HTOP,	    /* Process.old_htop */
	XP_OFF_P_OLD_HEND,	    /* Process.old_hend */
	XP_OFF_P_MBUF_SZ,	    /* Process.mbuf_sz (words in heap and message fragments) */
	XP_OFF_P_OFF_HEAP_OVERHEAD, /* Process.off_heap.overhead (young vheap, words) */
	XP_OFF_P_BIN_OLD_VHEAP,	    /* Process.bin_old_vheap (old vheap, words) */
	XP_OFF_P_BIN_VHEAP_SZ,	    /* Process.bin_vheap_sz (vheap GC limit, words) */
	XP_OFF_P_REDS,		    /* Process.reds (reductions up to its last schedule-out) */
	/* Process.dictionary (ProcDict *, NULL when empty): proc_lib's '$initial_call' (appended).
	 */
	XP_OFF_P_DICTIONARY,
	/* The run queues, for record --trigger runq (appended; B/erl_process.h ErtsRunQueue_,
	 * ErtsSchedulerData_.run_queue). */
	XP_OFF_ESD_RUN_QUEUE, /* ErtsSchedulerData.run_queue (ErtsRunQueue *) */
	XP_OFF_RQ_IX,	      /* ErtsRunQueue.ix (int: the scheduler's number - 1) */
	XP_OFF_RQ_SCHEDULER,  /* ErtsRunQueue.scheduler (back to its ErtsSchedulerData) */
	XP_OFF_RQ_LEN,	      /* ErtsRunQueue.len (atomic32: processes and ports queued) */
	XP_OFF_RQ_PROCS_LEN,  /* ErtsRunQueue.procs.prio_info[0].len (max priority) */
	XP_OFF_RQ_INFO_SIZE,  /* sizeof(ErtsRunQueueInfo): prio_info[]'s stride */
	XP_OFF_RQ_STRIDE,     /* sizeof(ErtsAlignedRunQueue) */
	XP_OFF_COUNT
};
#define XP_OFF_SLOTS 64 /* room in the block; XP_OFF_COUNT <= XP_OFF_SLOTS */

/* struct xp_value.flags */
#define XP_VAL_PRESENT	  0x1u /* value is meaningful */
#define XP_VAL_VERIFIED	  0x2u /* confirmed by a structural check at run time */
#define XP_VAL_FROM_TABLE 0x4u /* taken from the built-in per-version table, not discovered */
#define XP_VAL_MISMATCH	  0x8u /* discovered value disagrees with the built-in table */
/* struct xp_addr.flags of an address the agent publishes none of (value 0): bits 8..15 say why,
 * an enum xp_reason (0 from agents older than this field). */
#define XP_VAL_REASON_SHIFT 8

struct xp_value {
	int64_t value;
	uint32_t flags;
	uint32_t reason; /* enum xp_reason: why not verified (0 when verified) */
};

/* Why a value is not verified. Kept short: the agent logs the long form. */
enum xp_reason {
	XP_WHY_NONE = 0,
	XP_WHY_NOT_FOUND,    /* the scan found no candidate */
	XP_WHY_AMBIGUOUS,    /* the scan found several candidates */
	XP_WHY_UNCHECKABLE,  /* no structural test exists for it in this configuration */
	XP_WHY_CHECK_FAILED, /* a candidate was found but its check failed */
	XP_WHY_UNSUPPORTED,  /* not applicable to this VM (e.g. emulator flavour) */
	XP_WHY_TIME_BUDGET,  /* gave up to stay within the scheduler time budget */
};

/* Key addresses. */
enum xp_addr_id {
	XP_ADDR_SCHED_DATA = 0,	      /* erts_aligned_scheduler_data array base (normal) */
	XP_ADDR_DIRTY_CPU_SCHED_DATA, /* erts_aligned_dirty_cpu_scheduler_data array base */
	XP_ADDR_DIRTY_IO_SCHED_DATA,  /* erts_aligned_dirty_io_scheduler_data array base */
	XP_ADDR_ATOM_TABLE,	      /* erts_atom_table (IndexTable) */
	XP_ADDR_JIT_DESCRIPTOR,	      /* __jit_debug_descriptor */
	XP_ADDR_NORMAL_EXIT,	      /* the code address beam_normal_exit holds */
	XP_ADDR_PROCESS_TABLE,	      /* erts_proc (ErtsPTab), 0 when unknown */
	XP_ADDR_PROBE_PROCESS, /* Process * of a long-lived agent process, for cross-checks */
	/* erts_allctrs_info[] (B/erl_alloc.c): the allocators, for `extrospect alloc`. Appended:
	 * an older agent's block has n_addrs without it, and the sampler looks elsewhere. */
	XP_ADDR_ALLCTRS_INFO,
	/* the_active_code_index (erts_atomic32_t, 0..2; B/code_ix.c) and the module ranges table
	 * `static struct ranges r[ERTS_NUM_CODE_IX]` (B/beam_ranges.c), for `info`'s check of the
	 * JIT map (c_src/calib/calib_codeix.c). Appended. */
	XP_ADDR_ACTIVE_CODE_IX,
	XP_ADDR_CODE_RANGES,
	XP_ADDR_COUNT
};
#define XP_ADDR_SLOTS 32

/* struct xp_addr.source: how the agent obtained it */
enum xp_source {
	XP_SRC_NONE = 0,
	XP_SRC_DYNSYM,	/* dlsym of an exported symbol (OTP <= 27) */
	XP_SRC_SCAN,	/* structural scan of beam.smp's data sections */
	XP_SRC_RUNTIME, /* observed from running code (a Process field, the calling process's stack)
			 */
	XP_SRC_TABLE,	/* built-in per-version table */
};

struct xp_addr {
	uint64_t value;
	uint32_t source; /* enum xp_source */
	uint32_t flags;	 /* XP_VAL_* */
};

enum xp_sched_type { XP_SCHED_NORMAL = 0, XP_SCHED_DIRTY_CPU = 1, XP_SCHED_DIRTY_IO = 2 };

struct xp_sched {
	uint32_t type;	 /* enum xp_sched_type */
	uint32_t number; /* 1-based, per type */
	int32_t tid;	 /* OS thread id, 0 when unknown */
	uint32_t flags;	 /* XP_VAL_VERIFIED when esdp was confirmed by running on that scheduler */
	uint64_t esdp;	 /* ErtsSchedulerData *, 0 when unknown */
};
#define XP_MAX_SCHED 1024

/* Spy threads (c_src/spy.c). A spy is an agent thread that loops: load rsp from its slot's
 * target, block in a futex wait (arguments in registers, the timespec in the slot, never on the
 * stack), restore its own rsp. A perf context-switch event on its tid with PERF_SAMPLE_STACK_USER
 * then copies the memory at target at every loop, timestamped by the kernel. While retargeted it
 * touches no memory below rsp and every signal is blocked, so target may be any value.
 *
 * The slots live in the agent's memory at spy.slots_addr; the sampler reads them and writes ONLY
 * the first XP_SPY_WRITABLE bytes of a slot it leased (process_vm_writev), after checking the
 * region version, the slot's address against the published array, its tid and generation. */
#define XP_SPY_REGION_VERSION 1u
#define XP_SPY_MAX	      16
/* ns: shorter requests are raised to this. A loop costs ~30 us of CPU (futex wake-up and perf
 * copy, measured on a virtual machine): a spy never takes much more than a quarter of a core. */
#define XP_SPY_MIN_INTERVAL 100000ull
#define XP_SPY_MAX_INTERVAL 1000000000ull /* ns: longer requests are lowered to this */
#define XP_SPY_LEASE_NS	    1000000000ull /* a lease not renewed for this long is revoked */

enum xp_spy_state {
	XP_SPY_STARTING = 0,
	XP_SPY_PARKED,	   /* target 0: sleeps on its own stack, polls the slot every 100 ms */
	XP_SPY_RETARGETED, /* loops at target every interval_ns */
	XP_SPY_STOPPED,	   /* its thread has exited (stop_spies, unload) */
};

struct xp_spy_slot {
	/* Written by the sampler that leased the spy (in one process_vm_writev, target last). */
	uint64_t interval_ns; /* requested loop interval; clamped to [MIN, MAX]_INTERVAL */
	uint64_t lease;	      /* renewal counter: any change renews the lease */
	uint64_t owner;	      /* the leasing sampler's OS pid (informative) */
	uint64_t target;      /* the address the spy loads as rsp; 0 parks it */
	/* Written by the agent only. */
	uint64_t generation; /* bumped whenever the agent parks the spy itself (lease revoked) */
	uint64_t lease_expiry_ns; /* agent CLOCK_MONOTONIC when the lease runs out; 0 when parked */
	uint32_t state;		  /* enum xp_spy_state */
	int32_t tid;		  /* the spy's OS thread id */
	uint64_t loops;		  /* loops made at a target since start */
	uint64_t sleep_ts[2];	  /* the futex timeout (struct timespec), read by the kernel */
	uint64_t reserved[6];
};
#define XP_SPY_WRITABLE 32 /* bytes of a slot the sampler may write: interval_ns .. target */

struct xp_spy_desc {
	int32_t tid;	/* 0: slot unused */
	uint32_t index; /* its position in the slot array */
	uint64_t slot;	/* the slot's address: slots_addr + index * slot_size */
};

struct xp_spy_region {
	uint32_t version;      /* 0: no spy threads; XP_SPY_REGION_VERSION */
	uint32_t nslots;       /* spies running (descs valid), <= XP_SPY_MAX */
	uint64_t slots_addr;   /* the slot array */
	uint32_t slot_size;    /* sizeof(struct xp_spy_slot) */
	uint32_t policy;       /* 0 SCHED_IDLE, 1 SCHED_OTHER at nice 19, 2 as the VM's threads */
	uint64_t lease_ns;     /* XP_SPY_LEASE_NS as built */
	uint64_t min_interval; /* XP_SPY_MIN_INTERVAL as built */
	struct xp_spy_desc desc[XP_SPY_MAX];
	uint64_t reserved[127 - 5 - 2 * XP_SPY_MAX]; /* the v0 region's 1016 bytes */
};
_Static_assert(sizeof(struct xp_spy_slot) == 128, "spy slot size is part of the ABI");
_Static_assert(sizeof(struct xp_spy_region) == 127 * 8, "spy region keeps its reserved size");

/* The event tracer (c_src/tracer.c), appended to the block by ABI 1.1 (XP_ABI_MINOR 1): an
 * erl_tracer NIF (extrospect_nif:enabled/3, trace/5) that the VM calls for each event of the
 * processes the agent traces. Each call writes one fixed-size record into a ring in the agent's
 * memory; the sampler copies the rings with process_vm_readv and never writes them. A producer
 * reserves an index with an atomic add on its ring's head, stores seq 0, the fields, then
 * seq = (uint32_t)(index + 1); a ring is overwritten when the sampler is late: a record whose
 * seq is not its index + 1, or whose index is below head - records once copied, is a drop,
 * counted by the reader. Each OS thread that emits takes a ring of its own (tid in the ring
 * header) while there are free rings; later threads share the last ring.
 *
 * Tracing is started and stopped from outside through the control slot, as spies are leased:
 * the sampler writes the first XP_TRACER_WRITABLE bytes (want, lease, owner, sample_n) with
 * process_vm_writev; an agent thread (xp_tracer) polls the slot every 100 ms, asks the agent's
 * events process to set or clear the trace flags, and stops tracing when the lease counter has
 * not moved for lease_ns; from then on enabled/3 discards every event and removes the tracer
 * from each process it is asked about. An old block (size without this region) has none. */
#define XP_ABI_MINOR		 1u
#define XP_TRACER_REGION_VERSION 1u
#define XP_TRACER_LEASE_NS	 1000000000ull
#define XP_TRACER_MAX_RINGS	 128

/* struct xp_tracer_ctl.want / flags_on: the trace flags asked for / in force. */
#define XP_EVF_PROCS   (1u << 0) /* spawn, exit */
#define XP_EVF_SEND    (1u << 1) /* send (with the receiver) */
#define XP_EVF_RUNNING (1u << 2) /* in, out (scheduling) */
#define XP_EVF_GC      (1u << 3) /* gc_{minor,major}_{start,end} */

enum xp_ev_kind {
	XP_EV_NONE = 0,
	XP_EV_SPAWN, /* pid: parent, extra: the child's pid */
	XP_EV_EXIT,  /* pid: the exiting process, arg: enum xp_exit_class */
	XP_EV_SEND,  /* pid: sender, extra: receiver's pid (a name resolved), 0 unknown */
	XP_EV_IN,    /* pid scheduled in (arg 1: in_exiting) */
	XP_EV_OUT,   /* pid scheduled out; arg: enum xp_out_how */
	XP_EV_GC_MINOR_START,
	XP_EV_GC_MINOR_END,
	XP_EV_GC_MAJOR_START,
	XP_EV_GC_MAJOR_END,
	XP_EV_KIND_COUNT
};

/* XP_EV_OUT.arg: the process's state word at the schedule-out (read through the calibrated
 * Process.state offset): still active (preempted, yielding: it goes back to a run queue), or
 * waiting (in receive), or exiting, or unknown (no verified offsets). */
enum xp_out_how { XP_OUT_WAITING = 0, XP_OUT_RUNNABLE = 1, XP_OUT_EXITING = 2, XP_OUT_UNKNOWN = 3 };

enum xp_exit_class {
	XP_EXIT_NORMAL = 0,
	XP_EXIT_SHUTDOWN, /* shutdown or {shutdown, _} */
	XP_EXIT_KILLED,
	XP_EXIT_NOPROC, /* noproc, noconnection */
	XP_EXIT_ERROR,	/* any other reason */
	XP_EXIT_CLASS_COUNT
};

struct xp_ev {
	uint64_t ts_ns; /* CLOCK_MONOTONIC of the producing thread */
	uint64_t pid;	/* the tracee's pid term (local pids are immediates) */
	uint64_t extra;
	uint32_t seq; /* (uint32_t)(index + 1) once whole; 0 while written */
	uint16_t kind;
	uint16_t arg;
};
_Static_assert(sizeof(struct xp_ev) == 32, "event record size is part of the ABI");

struct xp_ev_ring {
	uint64_t head;	 /* next index to reserve (records ever reserved) */
	int32_t tid;	 /* the OS thread that owns it; 0 free; shared ring: the first */
	uint32_t shared; /* 1: the last ring, shared by threads beyond the others */
	uint64_t reserved[6];
	/* followed by ring_records struct xp_ev */
};
_Static_assert(sizeof(struct xp_ev_ring) == 64, "ring header size is part of the ABI");

enum xp_tracer_state {
	XP_TRACER_OFF = 0,
	XP_TRACER_STARTING, /* asked the events process to set the flags */
	XP_TRACER_ON,
	XP_TRACER_STOPPING,
	XP_TRACER_REFUSED, /* reason says why */
};

enum xp_tracer_why {
	XP_TRACER_WHY_NONE = 0,
	XP_TRACER_WHY_OTHER_TRACER, /* OTP < 27: another tracer is set (dbg, recon_trace...) */
	XP_TRACER_WHY_TRACE_FAILED, /* erlang:trace/3 or trace:process/4 failed */
	XP_TRACER_WHY_NO_PROCESS,   /* the agent's events process is not running */
	XP_TRACER_WHY_LEASE,	    /* stopped: the lease ran out */
};

struct xp_tracer_ctl {
	/* Written by the leasing sampler (one process_vm_writev, want last). */
	uint64_t lease;	   /* renewal counter: any change renews */
	uint64_t owner;	   /* the sampler's OS pid (informative) */
	uint64_t sample_n; /* trace one process in sample_n (by pid hash); 0 or 1: every one */
	uint64_t want;	   /* XP_EVF_*; 0 stops */
	/* Written by the agent only. */
	uint64_t session;	  /* bumped at every start */
	uint64_t lease_expiry_ns; /* agent CLOCK_MONOTONIC; 0 when off */
	uint32_t state;		  /* enum xp_tracer_state */
	uint32_t reason;	  /* enum xp_tracer_why */
	uint64_t flags_on;	  /* XP_EVF_* in force */
	uint64_t started_ns, stopped_ns;
	uint64_t sample_on; /* the sample_n in force */
	uint64_t caps;	    /* XP_TRACER_CAP_*, set at each start */
	uint64_t reserved[4];
};
/* A schedule-out's record says runnable or waiting (Process.id and .state verified). */
#define XP_TRACER_CAP_RUNQ (1u << 0)
#define XP_TRACER_WRITABLE 32 /* bytes of the control slot the sampler may write */
_Static_assert(sizeof(struct xp_tracer_ctl) == 128, "tracer control size is part of the ABI");

struct xp_tracer_region {
	uint32_t version;      /* 0: no event tracer; XP_TRACER_REGION_VERSION */
	uint32_t nrings;       /* <= XP_TRACER_MAX_RINGS */
	uint64_t rings_addr;   /* ring i at rings_addr + i * ring_bytes */
	uint64_t ring_bytes;   /* 64 + ring_records * 32 */
	uint32_t ring_records; /* a power of two */
	uint32_t record_size;  /* sizeof(struct xp_ev) */
	uint64_t ctl_addr;     /* struct xp_tracer_ctl */
	uint32_t ctl_size;
	int32_t watcher_tid; /* the xp_tracer thread */
	uint64_t lease_ns;
	uint64_t reserved[8];
};

enum xp_flavor { XP_FLAVOR_UNKNOWN = 0, XP_FLAVOR_JIT = 1, XP_FLAVOR_EMU = 2 };
enum xp_frame_layout { XP_LAYOUT_RA = 0, XP_LAYOUT_FP = 1, XP_LAYOUT_UNKNOWN = 255 };

/* Bits of xp_agent_block.checks_run / checks_passed: the load-time checks of otp-internals.md
 * "Design implications". */
#define XP_CHECK_PID_WORD	(1u << 0) /* *(proc + id) == self pid */
#define XP_CHECK_HTOP_STOP	(1u << 1) /* htop == env->hp, stop - hp_end in {3,6} words */
#define XP_CHECK_HEAP_QUAD	(1u << 2) /* heap <= htop <= stop < hend, hend-heap == heap_sz*8 */
#define XP_CHECK_NORMAL_EXIT	(1u << 3) /* last word below hend == normal_exit */
#define XP_CHECK_ESD_BACKPTR	(1u << 4) /* esdp->current_process == proc, esdp->no in range */
#define XP_CHECK_ATOM_ROUNDTRIP (1u << 5) /* atom text through the atom table */
#define XP_CHECK_JIT_CALLER	(1u << 6) /* caller RA resolves through the JIT map */
#define XP_CHECK_DYNSYM_AGREE	(1u << 7) /* scanned addresses agree with .dynsym (OTP <= 27) */

struct xp_agent_block {
	uint64_t magic;	      /* XP_AGENT_MAGIC; written last, cleared first */
	uint32_t abi_version; /* XP_ABI_VERSION */
	uint32_t size;	      /* sizeof(struct xp_agent_block) as built */
	uint64_t seq;	      /* odd while the agent rewrites the block; readers retry */
	uint64_t generation;  /* bumped by every publication (load, upgrade, recalibration) */
	int32_t os_pid;
	uint32_t word_size;
	char otp_release[16];	  /* "25" */
	char erts_version[32];	  /* "13.1.5" */
	char system_version[192]; /* erlang:system_info(system_version), truncated */
	uint32_t flavor;	  /* enum xp_flavor */
	uint32_t frame_layout;	  /* enum xp_frame_layout */
	uint32_t checks_run;	  /* XP_CHECK_* */
	uint32_t checks_passed;	  /* XP_CHECK_* */
	uint64_t probe_pid;	  /* pid Eterm of the process at XP_ADDR_PROBE_PROCESS */
	uint64_t probe_atom;	  /* atom Eterm whose text is probe_atom_text */
	char probe_atom_text[32];
	uint32_t n_offsets; /* valid entries in offsets[] (XP_OFF_COUNT of the writer) */
	uint32_t n_addrs;   /* valid entries in addrs[] */
	struct xp_value offsets[XP_OFF_SLOTS];
	struct xp_addr addrs[XP_ADDR_SLOTS];
	uint32_t n_normal; /* schedulers configured, per type */
	uint32_t n_dirty_cpu;
	uint32_t n_dirty_io;
	uint32_t n_sched; /* valid entries in sched[] */
	struct xp_sched sched[XP_MAX_SCHED];
	struct xp_spy_region spy;
	/* ABI 1.1: agents before it publish a smaller size, and readers zero what it lacks. */
	struct xp_tracer_region tracer;
};

#endif /* EXTROSPECT_ABI_H */
