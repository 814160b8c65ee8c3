/* Process identity from /proc; see gs-proc.h. */
#include <gpuslice/proc.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads the state (field 3), parent (field 4) and start time (field 22) of /proc/<pid>/stat.
 * 0, or -1 if gone. */
static int read_stat_all(pid_t pid, char *state, pid_t *ppid, uint64_t *start)
{
  char path[64], buf[1024];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  /* The command name may hold spaces and parentheses; fields resume after the last ')'. */
  char *p = strrchr(buf, ')');
  if (!p || p[1] != ' ' || !p[2])
    return -1;
  *state = p[2];
  p += 2;
  *ppid = (pid_t) strtol(p + 1, NULL, 10);
  for (int field = 3; field < 22; field++) {
    p = strchr(p, ' ');
    if (!p)
      return -1;
    p++;
  }
  *start = strtoull(p, NULL, 10);
  return 0;
}

static int read_stat(pid_t pid, char *state, uint64_t *start)
{
  pid_t ppid;
  return read_stat_all(pid, state, &ppid, start);
}

int gs_proc_parent(pid_t pid, pid_t *ppid, uint64_t *start_time)
{
  char state;
  if (read_stat_all(pid, &state, ppid, start_time) < 0 || state == 'Z' || state == 'X')
    return -1;
  return 0;
}

uint64_t gs_proc_start_time(pid_t pid)
{
  char state;
  uint64_t start;
  return read_stat(pid, &state, &start) == 0 ? start : 0;
}

bool gs_proc_alive(pid_t pid, uint64_t start_time)
{
  char state;
  uint64_t start;
  if (read_stat(pid, &state, &start) < 0)
    return false;
  return start == start_time && state != 'Z' && state != 'X';
}
