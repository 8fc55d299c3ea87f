/* What a sampled frame is, for blame and sched: which module holds a native frame (beam.smp, a
 * system library, a NIF library), whether a frame marks garbage collection, and what a whole
 * sample was doing (Erlang code, emulator native code, a NIF, GC, no process). A frame's module
 * is the one the sampler found its code in (agg__frame_module); a name the user gives is looked
 * up in the symbol tables of the files the VM has mapped, opened once each. Does not own: naming
 * frames (unwind.c), sampling. */
#ifndef XP_CLASSIFY_H
#define XP_CLASSIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "aggregate.h"
#include "sampler.h"
#include "target.h"

enum sample_class {
	CLASS_ERLANG = 0, /* JIT-compiled Erlang code */
	CLASS_EMULATOR,	  /* the runtime's own code: BIFs, JIT fragments, runtime C code */
	CLASS_NIF,	  /* code in a NIF library (or a driver's .so) */
	CLASS_GC,	  /* garbage collection of the process */
	CLASS_IDLE,	  /* scheduler time without a process: spinning, aux work, scheduling */
	CLASS_COUNT
};

struct classify;

int classify__new(struct target *t, const struct agg *a, struct classify **out);
void classify__free(struct classify *c);

/* The module of a native frame ("beam.smp", "libc.so.6", "xp_nif.so", "[vdso]"), or NULL when
 * unknown: the file the sampler found its code in. */
const char *classify__module(struct classify *c, uint32_t frame);
/* The module defining a symbol of that name (beam.smp, then each library the VM has mapped, the
 * maps re-read at most once a second), or NULL: can a native frame of that name ever appear? */
const char *classify__find_symbol(struct classify *c, const char *name);
/* A frame that means GC, named on this VM: global::garbage_collect (every OTP), and on OTP 25/27
 * erts_garbage_collect*, erts_gc_after_bif_call* (hidden on 28+). */
bool classify__is_gc_name(const char *name);
/* The index in rec->frames of the NIF's entry function: the outermost native frame in a library
 * that is neither beam.smp nor a system library (libc, libstdc++, ld.so, vDSO). -1 when none. */
int classify__nif_frame(struct classify *c, const struct sample_record *rec);
/* The index of the innermost Erlang function frame (not a JIT fragment) below index `below`,
 * or -1. */
int classify__erlang_caller(const struct agg *a, const struct sample_record *rec, uint32_t below);
/* What the sample was doing; *nif gets classify__nif_frame's answer. */
enum sample_class classify__sample(struct classify *c, const struct sample_record *rec, int *nif);
const char *classify__class_name(enum sample_class k);

#endif /* XP_CLASSIFY_H */
