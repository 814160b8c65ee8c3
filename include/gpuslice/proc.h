/* Naming processes so that pid reuse cannot confuse accounting: a process is the pair
 * (pid, start time), the start time read from /proc/<pid>/stat. Depends on libc alone. */
#ifndef GS_PROC_H
#define GS_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Start time of a process in clock ticks after boot, or 0 if it is gone. */
uint64_t gs_proc_start_time(pid_t pid);

/* True when (pid, start_time) names a process that is still running. A zombie is not
 * running: it has already lost its address space, and with it its GPU contexts. */
bool gs_proc_alive(pid_t pid, uint64_t start_time);
/* The parent and start time of a running process, from one read of /proc/<pid>/stat.
 * 0, or -1 when it is gone or a zombie. */
int gs_proc_parent(pid_t pid, pid_t *ppid, uint64_t *start_time);

#endif
