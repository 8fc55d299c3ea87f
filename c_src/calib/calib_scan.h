/* The dirty-NIF scans of beam.smp's .data/.bss and everything that needs them (calib_scan.c). */
#ifndef XP_CALIB_SCAN_H
#define XP_CALIB_SCAN_H

#include <stdint.h>

#include <erl_nif.h>

#include "agent.h"

struct scan_args {
	uint64_t probe_proc, probe_pid;
	uint64_t probe_mod, probe_fun; /* atoms of the probe's initial call, arity 0 */
	uint64_t reg_name;	       /* the probe's registered name */
	uint64_t nif_atom, uni_atom;   /* 'extrospect_nif' and a non-ASCII atom, made by the NIF */
	char reg_text[32];
	char probe_module[64];	/* module of the probe function */
	char caller_module[64]; /* module of the function that calls calib_self */
	char probe_range[160];	/* "extrospect_agent:probe_loop/0" */
	char caller_range[160];
	uint32_t process_limit;
};

/* Dirty CPU scheduler only: atom table, GDB JIT descriptor and map, normal_exit, the probe's
 * JIT-dependent fields, scheduler arrays, process table, .dynsym cross-checks. 0 or -errno of
 * the step that made everything else impossible (the ELF sections). */
int calib__scan(struct agent *a, const struct scan_args *args);

/* calib_alloc.c: erts_allctrs_info (dlsym, else a scan of se) into c->addr. */
struct selfelf;
void calib__find_allctrs(const struct agent *a, struct calib *c, const struct selfelf *se);

#endif /* XP_CALIB_SCAN_H */
