/* A BEAM VM attached from outside, by OS pid: its beam.smp image, versions, the layout row or agent
 * that describes it, its key addresses, schedulers and JIT map, and the cross-checks run on them.
 * Owns: the attach sequence and classifying failures. Does not own: the offsets themselves
 * (layout.c), the agent block format (agent.c), rendering (info.c). */
#ifndef XP_TARGET_H
#define XP_TARGET_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent.h"
#include "codeix.h"
#include "atom.h"
#include "elfsym.h"
#include "jitmap.h"
#include "layout.h"
#include "mem.h"
#include "proc.h"
#include "provenance.h"
#include "readers.h"

struct target_sched {
	uint32_t type, number; /* enum xp_sched_type, 1-based */
	pid_t tid;
	char comm[16];
	uint64_t esdp;	   /* 0 when unknown */
	bool esdp_checked; /* its type/no fields were read back and matched */
	bool from_stride;  /* esdp computed as array base + (number - 1) * stride */
};

enum check_result { CHECK_PASS = 0, CHECK_FAIL, CHECK_SKIP };

struct target_check {
	const char *name;
	enum check_result result;
	char detail[192];
};

#define TARGET_MAX_CHECKS 24

/* What target__attach returns besides 0 (main maps them to exit codes). */
#define TARGET_ENOPROC	    (-1001) /* no such process */
#define TARGET_ENOTBEAM	    (-1002) /* the process is not a BEAM VM */
#define TARGET_EPERM	    (-1003) /* not allowed to read it */
#define TARGET_EUNSUPPORTED (-1004) /* no built-in layout and no agent */
#define TARGET_EGONE	    (-1005) /* it exited while we attached */

struct target_opts {
	bool no_builtin_layout; /* pretend no row matches (tests of the fail-closed path) */
	bool no_agent;		/* ignore the agent even when present */
};

struct target {
	pid_t pid;
	struct proc_maps *maps;
	struct mem *mem;
	char exe[PATH_MAX];	      /* beam.smp as the target sees it */
	char exe_host[PATH_MAX + 32]; /* and as we open it: /proc/PID/root/... */
	struct elf_image *beam;
	uint64_t bias;
	char otp_release[16], otp_version[32], erts_version[32];
	enum target_src version_source;
	uint32_t flavor;       /* enum xp_flavor */
	uint32_t frame_layout; /* enum xp_frame_layout */
	enum target_src flavor_source, frame_layout_source;
	const struct xp_layout *layout; /* NULL when no row matches */
	struct agent_info *agent;	/* status AGENT_OK when usable */
	struct target_value off[XP_OFF_COUNT];
	struct target_value addr[XP_ADDR_COUNT];
	struct jitmap *jit;
	int jit_err; /* why jit is NULL */
	struct target_sched *sched;
	size_t nsched;
	uint32_t nsched_by_type[3];
	struct target_codeix codeix; /* target__check_codeix (info only) */
	struct target_check checks[TARGET_MAX_CHECKS];
	size_t nchecks;
	char err[1024]; /* the one-line explanation of a failed attach */
};

/* Attach read-only. On failure returns one of TARGET_E* (or -ENOMEM) with t->err explaining, and
 * the target is still freed by target__free. */
int target__attach(pid_t pid, const struct target_opts *opts, struct target **out);
bool target__has_agent(const struct target *t);
/* Bring t->jit up to date with the VM's list (jitmap__update: only the new entries on a row whose
 * list only grows, else a whole walk; a broken walk keeps the map). 0, -ENOENT without a
 * descriptor, or jitmap__update's error. t->jit may be extended in place or replaced. */
int target__refresh_jit(struct target *t);
/* An atom reader for this VM: offsets and name mode from the layout, the table address when
 * known (0 otherwise, for a scan). 0, or -ENOENT when the atom layout is unknown. */
int target__atom_reader(const struct target *t, struct atom_reader *r);
void target__free(struct target *t);

/* discover.c: key addresses, flavour, frame layout and the JIT map, from the agent, .dynsym or a
 * scan (before the layout row is chosen); then what needs offsets (after): the atom table scan,
 * the scheduler threads and their data. */
int target__discover(struct target *t);
int target__discover_with_layout(struct target *t);
/* A normal scheduler whose ErtsSchedulerData was not found at attach (OTP 28+ without the agent
 * exports no symbol for it): learn it from the process it runs, exactly known in JIT code (r13),
 * through Process.scheduler_data, kept only if its type and number read back as this scheduler's.
 * true when s->esdp is now checked. */
bool target__learn_esdp(struct target *t, struct target_sched *s, uint64_t process);
/* OTP 28+ without the agent: once a normal scheduler's data is known, find the dirty schedulers'
 * arrays past the normal one (a bounded scan), each scheduler's type and number read back. True
 * when every dirty scheduler's data was set. */
bool target__learn_dirty(struct target *t, const struct target_sched *normal);
/* checks.c: cross-checks of what was found, recorded in t->checks. */
void target__run_checks(struct target *t);
void target__add_check(struct target *t, const char *name, enum check_result r, const char *fmt,
		       ...) __attribute__((format(printf, 4, 5)));

#endif /* XP_TARGET_H */
