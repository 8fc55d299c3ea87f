/* The anonymous read-write memory of a process, from /proc/PID/smaps: what the VM's allocators
 * (carriers), malloc, thread stacks and NIFs live in. Does not own: the maps list (proc.h). */
#ifndef XP_SMAPS_H
#define XP_SMAPS_H

#include <stdint.h>
#include <sys/types.h>

struct smaps_anon {
	uint64_t size;	   /* bytes mapped: private rw mappings with no file ([heap] included) */
	uint64_t rss;	   /* bytes of them resident */
	uint64_t anon;	   /* bytes of them that are anonymous pages (Anonymous:) */
	uint64_t mappings; /* how many mappings */
};

/* How often a listing torn by the process mapping memory as it is read is read again. */
#define SMAPS_TRIES 16

/* 0, or -ENOENT (no such process), -EACCES, -EPROTO (a line it cannot parse), -EAGAIN (torn
 * by the process mapping memory as it was read, each of SMAPS_TRIES times). */
int smaps__anon_rw(pid_t pid, struct smaps_anon *out);

#endif /* XP_SMAPS_H */
