/* What extrospect needs beyond its user's own rights, said when it is needed (SECURITY.md
 * "Privileges"): the kernel.perf_event_paranoid level and the one setcap line that grants this
 * executable all it can use. Does not own: trying the operations (perf.c, kcapture.c, mem.c). */
#ifndef XP_PRIVILEGE_H
#define XP_PRIVILEGE_H

#include <stddef.h>

/* The file capabilities extrospect can use: CAP_PERFMON (kernel samples, perf_event_paranoid 3),
 * CAP_BPF (the in-kernel capture, with CAP_PERFMON), CAP_SYS_PTRACE (another user's VM). */
#define PRIVILEGE_CAPS "cap_perfmon,cap_bpf,cap_sys_ptrace+ep"

/* kernel.perf_event_paranoid, or -100 when it cannot be read. */
int privilege__paranoid(void);

/* "setcap cap_perfmon,cap_bpf,cap_sys_ptrace+ep /path/of/this/extrospect" (its real path). */
void privilege__setcap_line(char *buf, size_t len);

#endif /* XP_PRIVILEGE_H */
