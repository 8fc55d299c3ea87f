/* The GDB JIT interface of the BEAM JIT (otp-internals.md §3.2): find __jit_debug_descriptor, walk
 * its entry list with bounded, failure-tolerant reads, parse each custom (non-ELF) symfile, and
 * answer "which Erlang function, and which source line, is at this code address". Does not own:
 * reading memory (mem.h), or finding the descriptor by symbol (the caller passes the address, or
 * asks jitmap__scan for one). */
#ifndef XP_JITMAP_H
#define XP_JITMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"

#define JIT_MAX_ENTRIES 200000u	     /* a walk stops here: a cycle or garbage */
#define JIT_MAX_SYMFILE (64u << 20)  /* a symfile larger than this is garbage */
#define JIT_MAX_TOTAL	(512u << 20) /* symfile bytes a walk reads at most: a walk stops here */

struct jit_descriptor {
	uint32_t version; /* 1 */
	uint32_t action;  /* 0 none, 1 register, 2 unregister */
	uint64_t relevant_entry;
	uint64_t first_entry;
};

struct jit_range {
	uint64_t start, end; /* absolute addresses, [start, end) */
	const char *name; /* "mod:fun/2", "global::garbage_collect", "mod:f/1-CodeInfoPrologue" */
	uint32_t module;  /* index into jitmap modules */
	uint32_t generation;	/* position in the list: 0 = newest entry */
	uint32_t lines, nlines; /* its line table, private to jitmap: see jitmap__line */
	/* From the name, once, for the stack walker's per-word tests: a frame a return address
	 * may point into (not a prologue, module header or footer), a shared fragment (global::).
	 */
	bool frame, fragment;
	/* Also from the name, for the sampler's per-sample tests: the scheduler loop
	 * (global::process_main), the code a process exits from (erts_beamasm:normal_exit/0,
	 * erts_beamasm:continue_exit/0), the yield test's fragment (global::i_test_yield_shared,
	 * which a function whose reductions are spent enters with its address in rdx:
	 * otp-internals.md §2.3 row 9b). */
	bool sched_loop, exit_code, yield_test;
};

struct jit_module_info {
	const char *name; /* "lists", "global", or "" for the emulator entry */
	uint64_t base, code_size;
	uint32_t nranges;
	uint64_t entry_addr;	/* the jit_code_entry this came from */
	uint32_t files, nfiles; /* its source file names, private to jitmap */
	bool carried;		/* kept from the map before by jitmap__carry, not walked */
};

struct jitmap_stats {
	uint64_t entries;   /* entries walked */
	uint64_t modules;   /* module entries parsed (header 1) */
	uint64_t emulator;  /* emulator entries (header 0) */
	uint64_t functions; /* ranges that are Erlang functions (not prologues / header / footer) */
	uint64_t ranges;    /* all ranges */
	uint64_t lines;	    /* line_info records kept (jitmap__line) */
	uint64_t bad_entries;  /* entries skipped: unreadable or unparseable */
	uint64_t chain_broken; /* 1 when the walk stopped early: bad link, cycle, too many
				* entries or bytes (JIT_MAX_ENTRIES, JIT_MAX_TOTAL) */
	uint64_t pruned;       /* ranges dropped by jitmap__extend: their module's code memory was
				* reused by a newer module (purged code) */
	uint64_t carried;      /* ranges of purged code kept one walk longer (jitmap__carry) */
	int32_t frame_layout;  /* from the emulator entry, -1 when none */
	uint64_t normal_exit;  /* from the emulator entry, 0 when none */
};

struct jitmap;

/* Read the descriptor's four fields. 0, or a negative errno (-EFAULT...), or -EPROTO when the
 * fields do not look like a GDB JIT descriptor (version != 1, action > 2). */
int jitmap__read_descriptor(struct mem *m, uint64_t addr, struct jit_descriptor *out);
/* The descriptor as jitmap__load read it before walking: what the map holds is at least as new
 * (zero for a map built otherwise). A module registered during the walk changes the descriptor
 * after it, so comparing with this one re-walks. */
const struct jit_descriptor *jitmap__descriptor(const struct jitmap *m);
/* Whether d's newest entry is still the one map read first: the same entry address holding the
 * same symfile address and size, whose code address (the symfile's word at 8) is the same. On
 * 27+ an unregistered entry and its symfile are freed, and the next module's may reuse both
 * addresses, leaving a descriptor equal to the one the map was read at while the new code lies
 * elsewhere (not seen yet: a guard); two small reads tell them apart. False when unreadable. */
bool jitmap__head_current(struct mem *m, const struct jitmap *map, const struct jit_descriptor *d);

/* Walk and parse every entry. Entries that fail to read or parse are skipped and counted; the walk
 * itself fails only when the descriptor is unreadable or the chain is broken at the head. */
int jitmap__load(struct mem *m, uint64_t desc_addr, struct jitmap **out);

/* Read only the entries registered since map was read, for a list that only grows at its head
 * (xp_layout.jit_list_append_only: OTP 25), merge them into map and drop modules whose code a
 * newer module now occupies (stats.pruned). 0; -ESTALE when the list no longer leads to map's
 * newest entry, or a walk broke (map unchanged: walk it whole); -errno. Pointers into map (ranges)
 * are invalid after a successful call. */
int jitmap__extend(struct jitmap *map, struct mem *m, uint64_t desc_addr);
/* Bring *map up to date: jitmap__extend when append_only, else (or when that fails) a whole walk
 * that replaces *map, unless it broke (-EAGAIN: *map kept, as when reading failed). */
int jitmap__update(struct mem *m, uint64_t desc_addr, bool append_only, struct jitmap **map);
/* The modules of old that fresh (a whole walk after it) no longer has, whose code no module of
 * fresh overlaps, copied into fresh as its oldest generation and marked carried, once: a module
 * carried before is not carried again. OTP 27+ frees purged code; a walk in the moment between
 * a purge and the next load would otherwise unname the code of samples taken before it, which
 * are resolved after it (the sampler reads its rings every few ms; seen in CI under ASAN and
 * strace: 5.5 % of a 108-loads-a-second workload's walks unresolved). jitmap__update does it
 * for lists that unlink. Rebuilds fresh's index when it added any; 0 or -ENOMEM (fresh then holds
 * what was copied). Who looks up a sample taken after fresh's walk must not trust a carried
 * module's range (jitmap__module(map, r->module)->carried). */
int jitmap__carry(struct jitmap *fresh, const struct jitmap *old);

/* Parse one symfile blob (the bytes at symfile_addr). Exposed for unit tests on captured bytes:
 * 0 or -EPROTO for malformed or truncated blobs. Adds to map. */
int jitmap__add_symfile(struct jitmap *map, const uint8_t *blob, size_t len, uint64_t entry_addr,
			uint32_t generation);
int jitmap__new(struct jitmap **out);

/* Sort and index after adding; jitmap__load does it itself. Until then lookups find nothing. */
void jitmap__finish(struct jitmap *map);

/* How a range shows as a stack frame: its name without the "-CodeInfoPrologue" suffix (a pc in
 * a function's prologue, its breakpoint area, is that function), and whether it is an Erlang
 * function (false for shared fragments, JIT internals and a module's header/footer code). */
bool jitmap__frame_name(const struct jit_range *r, char *buf, size_t len);
/* The body ("M:F/A") that follows r when r is that function's prologue ("M:F/A-CodeInfoPrologue"),
 * else NULL. */
const struct jit_range *jitmap__prologue_body(const struct jitmap *map, const struct jit_range *r);

/* The newest range containing addr, or NULL. */
const struct jit_range *jitmap__lookup(const struct jitmap *map, uint64_t addr);
/* The source line of addr in range r (a range of map): the last line_info of r starting at or
 * before addr, as ERTS finds a stack trace's {file, line} (beam_ranges.c lookup_loc). For a return
 * address pass ra - 1, as ERTS does, so that the line is the call's. False when unknown: no line
 * table (shared fragments, prologues, header, footer, code compiled without line info), or addr
 * outside r. *file is the name OTP stores, as given to the compiler ("lists.erl", or a path). */
bool jitmap__line(const struct jitmap *map, const struct jit_range *r, uint64_t addr,
		  const char **file, uint32_t *line);
/* The newest range named exactly name ("lists:reverse/2", "global::garbage_collect"), or NULL. */
const struct jit_range *jitmap__find(const struct jitmap *map, const char *name);

/* All ranges, sorted by start (then newest first) once finished; for listing and tests. */
const struct jit_range *jitmap__range(const struct jitmap *map, size_t index);
size_t jitmap__range_count(const struct jitmap *map);

const struct jit_module_info *jitmap__module(const struct jitmap *map, uint32_t index);
size_t jitmap__module_count(const struct jitmap *map);
const struct jitmap_stats *jitmap__stats(const struct jitmap *map);

/* Structural scan for a descriptor in [start, start + len) of the target (beam.smp .data/.bss):
 * every 8-aligned candidate {version 1, action 0..2, relevant, first != 0} whose entry chain parses
 * with at least min_modules module entries. 0 with *addr set, -ENOENT, or -EEXIST when several
 * candidates validate (ambiguous: fail closed). map (may be NULL): on 0, the map the check loaded
 * from *addr (the caller's to free; loading it again was a fifth of an attach on OTP 29), else
 * NULL. */
int jitmap__scan(struct mem *m, uint64_t start, uint64_t len, unsigned min_modules, uint64_t *addr,
		 struct jitmap **map);

void jitmap__free(struct jitmap *map);

#endif /* XP_JITMAP_H */
