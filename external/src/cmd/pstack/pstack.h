/* The parts of `extrospect pstack` and what they share: the scheduler snapshot (pstack_sched.c),
 * the process-table listing (pstack_procs.c), the command with its header (pstack.c) and the
 * frames all three use (pstack_frames.c, which calls none of the others).
 * Does not own: sampling (sampler.c), stack walking (erlang_stack.c), the process table (ptab.c).
 */
#ifndef XP_PSTACK_H
#define XP_PSTACK_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "aggregate.h"
#include "cli.h"
#include "erlang_stack.h"
#include "json.h"
#include "process.h"
#include "ptab.h"
#include "target.h"

#define PSTACK_MAX_FRAMES  (ESTACK_MAX_FRAMES + 160)
#define PSTACK_STACK_BYTES (1u << 20) /* deeper process stacks are walked from the top */
#define PSTACK_WHO_BYTES   (2 * XP_ATOM_MAX_BYTES + 64)

/* A stack, innermost frame first: aggregate frame ids (name and kind) with the pc or return
 * address each came from (0 when a sample did not keep it). */
struct pstack_frames {
	uint32_t id[PSTACK_MAX_FRAMES];
	uint64_t addr[PSTACK_MAX_FRAMES];
	uint32_t n;
};

/* One scheduler as the snapshot found it. */
struct pstack_sched {
	const struct target_sched *sched;
	char thread_state;	     /* /proc/PID/task/TID/stat state letter, '?' when unreadable */
	bool sampled;		     /* a sample was kept within the window */
	uint64_t process;	     /* Process * running on it, 0 when none */
	char pid[32];		     /* "<0.85.0>", "" when none */
	char name[PSTACK_WHO_BYTES]; /* registered name, or initial call, or "" */
	const char *stack;	     /* "sampled", or an estack end name, or why there is none */
	struct pstack_frames frames;
};

struct pstack_fslot;
struct pstack_fjson;

struct pstack_ctx {
	const struct cli_opts *o;
	struct target *t;
	volatile sig_atomic_t *stop;
	struct agg *agg; /* frame and group names */
	struct process_reader pr;
	struct estack_cfg ecfg;
	uint64_t *words;	  /* PSTACK_STACK_BYTES of scratch for one process stack */
	struct estack_result *er; /* one process's walk (large: allocated once) */
	struct pstack_sched *scheds;
	size_t nscheds;
	double sched_ms;	     /* how long the snapshot took */
	bool have_ptab;		     /* --all: the process table was found */
	struct pstack_fslot *fcache; /* frame ids by JIT range (pstack__frame_cache), or NULL */
	struct pstack_fjson *fjson;  /* frames' JSON by frame id (pstack__frame_cache), or NULL */
	struct ptab ptab;
};

/* The snapshot of every scheduler into c->scheds. 0 or a negative errno with err set. */
int pstack__schedulers(struct pstack_ctx *c, char *err, size_t errlen);
void pstack__print_schedulers(const struct pstack_ctx *c, FILE *f);
void pstack__json_schedulers(const struct pstack_ctx *c, struct json *j);

/* --all: every process in the table, streamed to f (text) or j (JSON, when not NULL). */
int pstack__processes(struct pstack_ctx *c, FILE *f, struct json *j, char *err, size_t errlen);

/* The Erlang stack of a process that is not running: its current function (from p->i) then
 * the return addresses from stop to hend. Returns how the walk ended. */
enum estack_end pstack__process_stack(struct pstack_ctx *c, const struct process_snap *s,
				      struct pstack_frames *out);
/* The same in two steps, for stacks read many at once: how many bytes from stop to read of a
 * stack in [heap, hend) (false: the bounds are not a stack), and the walk of those bytes once
 * read into words. */
bool pstack__stack_span(uint64_t stop, uint64_t heap, uint64_t hend, size_t *bytes, bool *complete);
enum estack_end pstack__walk_words(struct pstack_ctx *c, const struct process_snap *s,
				   const uint64_t *words, size_t bytes, bool complete,
				   struct pstack_frames *out);
/* Name each JIT range once (c->fcache), and write each frame's JSON once (c->fjson): pstack
 * --all, where a million stacks share a few hundred functions. Only for a JIT map that does not
 * change meanwhile. Freed by pstack__frame_cache_free. */
int pstack__frame_cache(struct pstack_ctx *c);
void pstack__frame_cache_free(struct pstack_ctx *c);
/* The aggregate frame of a JIT range, named as the sampler names it. */
int pstack__jit_frame(struct pstack_ctx *c, const struct jit_range *r, uint32_t *id);
void pstack__json_frames(const struct pstack_ctx *c, const struct pstack_frames *fr,
			 struct json *j);
/* The same, ,"frames":[...], straight into j's buffer (json__room) inside an object written
 * there, once pstack__json_frames_ready says every frame's text is kept (c->fjson). */
bool pstack__json_frames_ready(const struct pstack_ctx *c, const struct pstack_frames *fr);
void pstack__json_frames_direct(const struct pstack_ctx *c, const struct pstack_frames *fr,
				struct json *j);
void pstack__print_frames(const struct pstack_ctx *c, const struct pstack_frames *fr, FILE *f);

/* Text gathered in b (cap bytes, the caller's) and written to f when full and at
 * pstack_text__flush: a million rows without printf's format parsing, a fifth of pstack --all's
 * text CPU. A piece larger than b goes straight to f. */
struct pstack_text {
	FILE *f;
	char *b;
	size_t n, cap;
};
void pstack_text__put(struct pstack_text *t, const char *s, size_t n);
void pstack_text__str(struct pstack_text *t, const char *s);
/* v in decimal, then spaces up to width (printf's %-Nu). */
void pstack_text__uint(struct pstack_text *t, uint64_t v, size_t width);
/* v in decimal, signed (printf's PRId64). */
void pstack_text__int(struct pstack_text *t, int64_t v);
/* v in decimal at d (21 bytes at most), signed: the end. */
char *pstack__int_to(char *d, int64_t v);
void pstack_text__flush(struct pstack_text *t);
/* fr's frames as pstack__print_frames writes them, to t. */
void pstack__text_frames(const struct pstack_ctx *c, const struct pstack_frames *fr,
			 struct pstack_text *t);

#endif /* XP_PSTACK_H */
