/* The process dictionary read from outside: proc_lib's '$initial_call' (what observer and recon
 * show for a gen_server instead of proc_lib:init_p/5), through Process.dictionary -> ProcDict ->
 * its slots of {Key, Value} tuples. Every read bounded and checked; a failure has its reason.
 * Does not own: the Process struct itself (process.c), how names are shown (names.c). */
#ifndef XP_PROCDICT_H
#define XP_PROCDICT_H

#include <stddef.h>
#include <stdint.h>

struct process_reader;
struct process_view;

#define PDICT_MAX_SLOTS 1024 /* a larger dictionary is not searched (PDICT_TOO_LARGE) */
#define PDICT_MAX_CHAIN 16   /* {Key, Value} tuples sharing one slot */
#define PDICT_TRIES	3    /* reads of a live process whose dictionary moved under one */

enum pdict_result {
	PDICT_FOUND = 0,
	PDICT_ABSENT,	   /* no dictionary, or no '$initial_call' in it: not a fault */
	PDICT_NO_OFFSET,   /* this VM's layout lacks Process.dictionary, or no atom reader */
	PDICT_READ_FAILED, /* a read of the dictionary or a term failed */
	PDICT_BAD_HEADER,  /* ProcDict sizes implausible (freed or reused memory) */
	PDICT_TOO_LARGE,   /* more than PDICT_MAX_SLOTS slots */
	PDICT_BAD_TERM,	   /* a slot or the value is not the term the VM writes there */
	PDICT_GONE,	   /* the process exited, or its dictionary moved, before it was read */
	PDICT_RESULT_COUNT
};

/* The '$initial_call' {M, F, A} of the process p (its address and pid; its ProcDict * from the
 * sample's copy when p->ident_copied) as "m:f/a" (atoms quoted as Erlang prints them) in buf; buf
 * is "" unless PDICT_FOUND. Found only if, after the search, the process still has p's pid and
 * that dictionary: freed memory is never reported as a name. */
enum pdict_result procdict__initial_call(const struct process_reader *r,
					 const struct process_view *p, char *buf, size_t len);
/* "found", "absent", "no_offset", "read_failed", ... for counters. */
const char *procdict__result_name(enum pdict_result res);

#endif /* XP_PROCDICT_H */
