/* An Erlang process read from outside through its Process struct: identity (pid, registered
 * name, initial call) and stack bounds, every field bounds-checked because the process may be
 * running, exiting or mid-GC while we read. Does not own: walking the stack (erlang_stack.c). */
#ifndef XP_PROCESS_H
#define XP_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atom.h"
#include "procdict.h"
#include "provenance.h"

#define PROCESS_MAX_HEAP (1ULL << 34) /* a heap larger than 16 GiB is garbage */

struct process_view {
	uint64_t addr;
	uint64_t pid; /* pid Eterm */
	uint64_t htop, stop, heap, hend, frame_pointer;
	uint64_t abandoned_heap; /* non-zero in a delayed GC: heap/hend are a fragment's */
	uint64_t i; /* c_p->i, where a parked process resumes (0: unknown); read with the rest */
	/* Copied with the bounds when the span holds them (ident_copied): the RegProc *, u.initial
	 * and the ProcDict *, as they were at the sample, so that a process that exited before
	 * its identity was read is still named by its initial call. */
	uint64_t reg, mfa[3], dict;
	bool ident_copied;
	char name[XP_ATOM_MAX_BYTES + 1];	  /* registered name, "" when none */
	char initial[2 * XP_ATOM_MAX_BYTES + 32]; /* "mod:fun/2", "" when unreadable */
	/* proc_lib's '$initial_call' from the process dictionary ("my_server:init/1"), "" when
	 * there is none or it could not be read (pd_result says which). */
	char pd_initial[2 * XP_ATOM_MAX_BYTES + 32];
	enum pdict_result pd_result;
};

/* What turns a pid term into <0.NUM.SER> for this VM. */
struct pid_format {
	enum xp_pid_format format;
	bool known; /* false: the 27+ scrambling parameters could not be read */
	uint32_t num_bits, cl_shift, cli_shift;
	uint64_t pix_mask, cl_mask, cli_mask;
};

struct process_reader {
	struct mem *mem;
	struct pid_format pids;
	const struct target_value *off; /* the XP_OFF_* offsets, e.g. target->off */
	struct atom_reader atoms;
	bool have_atoms;
	bool erlang_names; /* names as Erlang prints them, not in Elixir form (names.h) */
	/* process__read_bounds reads its fields in one copy of [addr + lo, addr + lo + len);
	 * with_ident: the identity fields (reg, u.initial, dictionary) fall inside it too. */
	uint32_t bounds_lo, bounds_len;
	bool with_ident;
};

/* Prepare a reader over memory m, with the XP_OFF_* offsets off (kept, not copied), the pid
 * encoding and an atom reader (NULL: registered names and initial calls are not read).
 * -ENOTSUP when the Process offsets it needs are not known (no layout row and no agent).
 * From an attached target: process__reader (attach/readers.h). */
int process__reader_init(struct process_reader *r, struct mem *m, const struct target_value *off,
			 const struct pid_format *pids, const struct atom_reader *atoms);

/* A whole Process read in one copy, for listing every process (pstack --all): the bounds of
 * process__read_bounds plus what process_info would show. Fields whose offset this VM does not
 * have are left 0 with their have_* flag false. */
struct process_snap {
	struct process_view
	    v;		     /* addr, pid, htop, stop, heap, hend, frame_pointer, abandoned_heap */
	uint64_t heap_sz;    /* words */
	uint64_t i;	     /* resume pc (meaningful when not running) */
	uint64_t reg;	     /* RegProc *, 0 when not registered */
	uint64_t initial[3]; /* u.initial {module, function, arity} */
	uint32_t state;	     /* XP_PSFLG_* */
	int64_t msg_len;
	bool have_state, have_i, have_msg_len, have_reg, have_initial;
	/* heap <= htop <= stop <= hend: false mid-GC or in garbage, and then the heap's used words
	 * and the stack size (htop - heap, hend - stop) are unknown, never shown. */
	bool have_sizes;
	/* Memory (extrospect heap), in words as the VM counts them; see process__snap_memory. */
	uint64_t old_heap, old_htop, old_hend; /* 0 when the process has no old generation */
	uint64_t mbuf_sz;		       /* heap and message fragments */
	uint64_t vheap, old_vheap, vheap_sz;   /* off_heap.overhead, bin_old_vheap, bin_vheap_sz */
	uint64_t reds;
	bool have_old, have_mbuf, have_vheap, have_reds;
};

/* 0, -EINVAL when the bytes are not a plausible live process, or a read error. */
int process__read_snap(const struct process_reader *r, uint64_t addr, struct process_snap *out);
/* The same in two steps, for many processes read at once (mem__read_many): how many bytes of a
 * Process to copy (at most 1024), and the snap of a copy buf of n such bytes made at addr. */
size_t process__snap_len(const struct process_reader *r);
int process__parse_snap(const struct process_reader *r, uint64_t addr, const uint8_t *buf, size_t n,
			struct process_snap *out);
/* What a copy of a Process says of where it is in its life: enough to tell whether it moved
 * between two copies (pstack --all checks a million twice each). 64 bytes. */
struct process_marks {
	uint64_t pid, stop, heap, hend, i, fp, reds;
	uint32_t state;
	bool have_state, have_i, have_reds;
};
/* Those of a copy buf of n bytes made at addr, checked as process__parse_snap checks it (the
 * same return), without filling a snap; and those of a snap. */
int process__parse_marks(const struct process_reader *r, uint64_t addr, const uint8_t *buf,
			 size_t n, struct process_marks *m);
void process__snap_marks(const struct process_snap *s, struct process_marks *m);
/* Where the pid term sits in a Process, to read only the pid of one (events --source uprobes):
 * 0, or -ENOTSUP when this VM's layout lacks it. */
int process__pid_offset(const struct process_reader *r, uint32_t *off);
/* Why the memory fields of a snap are not shown: each have_* false for one of these. */
enum snap_mem_fault {
	SNAP_MEM_OK = 0,
	SNAP_MEM_NO_OFFSET, /* this VM's layout lacks the field (no row, old agent) */
	SNAP_MEM_BAD_OLD,   /* old_heap <= old_htop <= old_hend broken, misaligned or huge */
	SNAP_MEM_BAD_MBUF,  /* mbuf_sz larger than any heap */
	SNAP_MEM_BAD_VHEAP, /* a vheap count larger than 2^44 bytes */
	SNAP_MEM_FAULT_COUNT
};
/* Check the memory fields process__read_snap copied; returns the first fault found (the fields
 * with a fault have their have_* false), SNAP_MEM_OK when all are plausible. */
enum snap_mem_fault process__snap_memory(struct process_snap *s);
const char *process__snap_mem_fault_name(enum snap_mem_fault f);

/* process_info(P, status) of a state word: "running", "waiting", ... */
const char *process__status_name(uint32_t state);
/* Is the process on a scheduler (normal or dirty), so that its stop/i are stale? */
bool process__is_running(uint32_t state);

/* Read the stack bounds and pid of the Process at addr: 0, -EINVAL when the fields are not a
 * plausible process (not a pid, heap bounds inconsistent), or a read error. */
int process__read_bounds(const struct process_reader *r, uint64_t addr, struct process_view *out);
/* The same from a copy of the bounds span [addr + bounds_lo, + bounds_len) made elsewhere (the
 * in-kernel capture). -ENOTSUP when this reader has no span. */
int process__bounds_from_span(const struct process_reader *r, uint64_t addr, const uint8_t *span,
			      struct process_view *p);
/* A span process__bounds_from_span refuses, copied in a collection's last steps on a delayed heap:
 * the stack whole from stop on, in the new heap whose end is not known yet (it ends at
 * normal_exit), heap and hend a freed fragment's. 0 when it is one: a pid, stop 8-aligned and
 * outside [heap, hend), no abandoned heap. Only for a sample whose process's state says it is in
 * a collection. */
int process__bounds_from_span_moved(const struct process_reader *r, uint64_t addr,
				    const uint8_t *span, struct process_view *p);
/* The same read now (no capture). */
int process__read_bounds_moved(const struct process_reader *r, uint64_t addr,
			       struct process_view *p);
/* The VM's heap sizes, in words, ascending: a collection gives a heap one of them
 * (next_heap_size). Fills out with up to max of them (0 after the last); returns how many. */
#define PROCESS_HEAP_SIZES 154 /* at most: B/erl_gc.c MAX_HEAP_SIZES (25:172) */
size_t process__heap_sizes(uint64_t *out, size_t max);
bool process__is_heap_size(uint64_t words);
/* Fill name, initial and pd_initial (after read_bounds), shown as names.h says. Unreadable
 * parts are left empty. */
void process__read_identity(const struct process_reader *r, struct process_view *p);
/* The same from the copy alone, reading nothing of the Process, when the copy (ident_copied)
 * says it had no registered name and no dictionary: its initial call is then all there is to
 * name it by. false, nothing filled: read it with process__read_identity. */
bool process__identity_copied(const struct process_reader *r, struct process_view *p);
/* Does the Process at p->addr still hold p->pid (it has not exited meanwhile)? 1 yes, 0 no (a
 * different pid, or none, is there now), or a read error. */
int process__still_alive(const struct process_reader *r, const struct process_view *p);
/* What a process is, as observer and recon name it: its registered name, else proc_lib's
 * '$initial_call', else its initial call; "" when none was read. */
const char *process__label(const struct process_view *p);

/* "<0.123.0>", or "<pid 0x...>" when this VM's pid encoding is not known. */
void process__pid_text(const struct pid_format *f, uint64_t pid, char *buf, size_t len);
/* The pid's data (SERIAL << num_bits | NUM), or the raw term when the encoding is unknown: an
 * order for listing pids as the VM numbers them. */
uint64_t process__pid_data(const struct pid_format *f, uint64_t pid);
/* Read the pid encoding of a VM: its layout row (NULL: unknown) and, on 27+, the masks of its
 * process table at ptab (0: not known, then f->known is false). */
void process__pid_format_read(struct pid_format *f, const struct xp_layout *row, struct mem *m,
			      uint64_t ptab);
/* Write an atom as Erlang prints it: quoted when it is not a plain lowercase atom. */
void process__atom_quoted(const char *text, char *buf, size_t len);

#endif /* XP_PROCESS_H */
