/* The capture file: what `extrospect capture` saved of a live run so that its samples can be
 * resolved again offline (replay.c) through the sampler's own code. Owns the in-memory model,
 * writing it and parsing it back. Does not own: recording (capture.c), replaying (replay.c).
 *
 * Format, version 1 (gzip-compressed; a plain file reads too):
 *   "XPCAPT\r\n" (8 bytes), u32 version, then records: u8 tag, u32 length, payload.
 *   All integers little-endian; str = u16 length + bytes (no NUL).
 *   TARGET  u32 pid, frame_layout, flavor, has_layout; str erts_version, otp_release;
 *           u32 noff, then per offset {i64 value, u8 source, present, verified}; the same for
 *           addresses; the sampler options u8 include_idle, only_erlang, lines, all_threads and
 *           str name, erlang_pid (empty: none). First, exactly once.
 *   SCHED   u32 type, number, tid; u64 esdp; u8 esdp_checked, from_stride; str comm.
 *   POOL    u64 addr, bytes: memory read outside the samples kept (setup, the JIT map's GDB
 *           symfiles, samples left out), served when a sample's own reads do not hold a read.
 *   NAME    u64 pc; u8 activation; i32 rc; bytes: a native frame's name (unwinder__name_frame).
 *   MODULE  u64 pc; u8 present; bytes: the module of a pc (unwinder__module).
 *   SAMPLE  u64 ip, time; u32 pid, tid, cpu; u8 regs_valid; u32 nregs; u64 regs[nregs];
 *           bytes: the perf stack copy, trimmed to what the Erlang stack took from it.
 *           Starts a sample; the records below until the next SAMPLE are its own.
 *   KCAP    u32 tid; u64 time, ip, sp, cp; u8 flags (1 from_scheduler, 2 sched_none,
 *           4 state_known); u64 stack_addr;
 *           u32 span_len (0: none), span; u32 stack_len, u8 has_stack, stack;
 *           u32 state (the Process's state word), present only with flag 4.
 *   UNWIND  u32 stop, nframes; u64 jit_pc, jit_sp, jit_bp, jit_r13; u8 bp_valid, r13_valid;
 *           nframes x {u64 pc, u8 activation}.
 *   READ    u64 addr; u32 len; i32 rc; bytes (len of them when rc is 0): in the order made.
 *   EXPECT  bytes: the sample's stack as live resolved it (capfile__line).
 * Every length is bounded by CAPFILE_MAX_*; anything else is -EPROTO. */
#ifndef XP_CAPFILE_H
#define XP_CAPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "kcapture.h"
#include "perf.h"
#include "sampler.h"
#include "target.h"
#include "unwind.h"

#define CAPFILE_VERSION	    1u
#define CAPFILE_MAX_BYTES   (512u << 20) /* decompressed file */
#define CAPFILE_MAX_RECORD  (64u << 20)	 /* one record: a JIT symfile can be large */
#define CAPFILE_MAX_SAMPLES 100000u
#define CAPFILE_MAX_READS   4096u /* one sample's */
#define CAPFILE_MAX_SCHEDS  1024u
#define CAPFILE_MAX_LINE    65536u

struct cap_read {
	uint64_t addr;
	uint32_t len;
	int32_t rc;
	uint8_t *data; /* len bytes when rc is 0, else NULL */
	bool used;     /* replay: served once already */
};

struct cap_sample {
	struct perf_sample ps; /* ps.stack points into stack */
	uint8_t *stack;
	bool has_kcap;
	struct kcap_rec k; /* k.span, k.stack point into span, kstack */
	uint8_t *span, *kstack;
	struct unwind_result *ur; /* NULL: not unwound (a JIT sample) */
	struct cap_read *reads;
	size_t nreads, reads_cap;
	char *expect; /* NULL: live kept no stack for it */
};

struct cap_name {
	uint64_t pc;
	bool activation;
	int32_t rc;
	char *name;
};

struct capfile {
	/* the target facts the sampler uses */
	uint32_t pid, frame_layout, flavor;
	bool has_layout;
	char erts_version[32], otp_release[16];
	struct target_value off[XP_OFF_COUNT];
	struct target_value addr[XP_ADDR_COUNT];
	struct target_sched *sched;
	size_t nsched;
	/* the options live ran with */
	bool include_idle, only_erlang, lines, all_threads;
	char name[256], erlang_pid[32];
	struct cap_read *pool; /* POOL: sorted by addr once parsed */
	size_t npool, pool_cap;
	struct cap_name *names, *modules; /* modules: name NULL when the pc is in none */
	size_t nnames, names_cap, nmodules, modules_cap;
	struct cap_sample *samples;
	size_t nsamples, samples_cap;
};

/* The target facts and options, from a live target (capture.c). */
void capfile__set_target(struct capfile *f, const struct target *t, const struct sampler_opts *o);
/* Append; the data is copied. 0 or -ENOMEM. */
int capfile__add_read(struct cap_read **v, size_t *n, size_t *cap, uint64_t addr, const void *data,
		      uint32_t len, int32_t rc);
int capfile__add_name(struct cap_name **v, size_t *n, size_t *cap, uint64_t pc, bool activation,
		      int32_t rc, const char *name);
/* Write f to path (gzip). 0 or -errno. */
int capfile__write(const struct capfile *f, const char *path);
/* Parse the file at path; untrusted: every length is checked. 0, -errno, or -EPROTO. */
int capfile__load(const char *path, struct capfile *f);
/* The same on the file's bytes once decompressed (the fuzz target's entry). */
int capfile__parse(const uint8_t *p, size_t n, struct capfile *f);
void capfile__free_sample(struct cap_sample *s);
void capfile__free(struct capfile *f);
/* A kept sample's stack as one line, "group;frame;...;leaf", names escaped as in the
 * collapsed report. 0, or -ENOSPC when it does not fit in buf. */
int capfile__line(const struct agg *a, uint32_t group, const uint32_t *frames, uint32_t n,
		  char *buf, size_t len);

#endif /* XP_CAPFILE_H */
