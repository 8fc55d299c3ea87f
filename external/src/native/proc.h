/* /proc views of a target process: memory maps, threads and their names, the executable and the
 * root directory through which its files are read (chroots, containers).
 * Does not own: ELF parsing (elfsym.h) or memory reads (mem.h). */
#ifndef XP_PROC_H
#define XP_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROC_PERM_R	 0x1u
#define PROC_PERM_W	 0x2u
#define PROC_PERM_X	 0x4u
#define PROC_PERM_SHARED 0x8u

struct proc_map {
	uint64_t start, end, offset, inode;
	uint32_t perms;	  /* PROC_PERM_* */
	bool deleted;	  /* the path ended in " (deleted)" (stripped from path) */
	const char *path; /* "" for anonymous; "[heap]" and friends kept as is */
};

struct proc_maps {
	struct proc_map *v;
	size_t n;
	char *strings; /* owns every path */
};

/* Parse the text of a /proc/PID/maps file. Malformed lines are an error (-EPROTO). */
int proc_maps__parse(const char *text, size_t len, struct proc_maps **out);
/* Read and parse /proc/PID/maps: 0, -ENOENT (no such process), -EACCES, -EPROTO. A listing
 * torn by the process mapping memory between two reads is read again (proc.c MAPS_TRIES). */
int proc_maps__load(pid_t pid, struct proc_maps **out);
const struct proc_map *proc_maps__find(const struct proc_maps *maps, uint64_t addr);
void proc_maps__free(struct proc_maps *maps);

struct proc_task {
	pid_t tid;
	char comm[16];
};

/* Threads of pid, sorted by tid. Threads that exit while listing are skipped. */
int proc__tasks(pid_t pid, struct proc_task **out, size_t *n);

/* The target's view of a path, reachable from here: "/proc/PID/root" + path. */
int proc__root_path(pid_t pid, const char *path, char *out, size_t len);

/* A path from the target's maps, made reachable from here. The kernel prints map paths relative
 * to the reader's root when it can (a chroot below ours), else relative to the target's mount
 * namespace: try the path as is and under /proc/PID/root, and keep the regular file whose inode
 * matches. 0, or -ENOENT when neither is the mapped file (the caller may use /proc/PID/exe). */
int proc__resolve_path(pid_t pid, const char *path, uint64_t inode, char *out, size_t len);

/* The tid, in our pid namespace, of the thread of pid that its own namespace calls vm_tid (what
 * the agent publishes: gettid() inside a container). When the VM shares our pid namespace, the
 * same number, unchecked (the caller checks the thread). 0, or -ENOENT when vm_tid <= 0 or, in
 * another namespace, no thread of pid has that tid. */
int proc__host_tid(pid_t pid, int32_t vm_tid, pid_t *host);

/* pid as its own (innermost) pid namespace numbers it: pid itself when it shares ours. 0, or
 * -ENOENT when /proc/PID/status cannot be read. */
int proc__ns_pid(pid_t pid, pid_t *ns_pid);

/* Does /proc/PID exist? 0, -ENOENT, or -EACCES. */
int proc__exists(pid_t pid);
/* The identity (device and inode) of the program pid runs: it changes when the process execs
 * another one under the same pid. 0, or -ENOENT (gone), -EACCES... */
int proc__exe_id(pid_t pid, uint64_t *id);

/* Read a small /proc file into buf (NUL-terminated, trailing newline stripped). */
int proc__read_file(const char *path, char *buf, size_t len);

#endif /* XP_PROC_H */
