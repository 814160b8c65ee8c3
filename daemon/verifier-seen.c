/* The processes the verifier has seen NVML report, each watched (proc-watch.c) so that it is
 * known again at the next sample without reading /proc, and never confused with a process that
 * takes its pid later, with the tenant the verifier found it belongs to. Kept sorted by pid
 * between samples; a sample's new processes are appended and sorted in at its end, when those
 * NVML no longer reports are dropped. How a tenant is found is verifier.c's. */
#include "daemon.h"

#include <stdlib.h>

#include <gpuslice/proc.h>

static int seen_cmp(const void *a, const void *b)
{
  pid_t x = ((const struct verify_seen *) a)->w.pid, y = ((const struct verify_seen *) b)->w.pid;
  return (x > y) - (x < y);
}

/* The index of pid's entry, or -1. */
static int seen_index(const struct daemon *d, pid_t pid)
{
  struct verify_seen key = { .w.pid = pid };
  const struct verify_seen *s = d->nseen_sorted
    ? bsearch(&key, d->vseen, (size_t) d->nseen_sorted, sizeof(key), seen_cmp)
    : NULL;
  if (s)
    return (int) (s - d->vseen);
  for (int i = d->nseen_sorted; i < d->nseen; i++)
    if (d->vseen[i].w.pid == pid)
      return i;
  return -1;
}

const struct verify_seen *verify_seen_find(const struct daemon *d, pid_t pid)
{
  int i = seen_index(d, pid);
  return i >= 0 ? &d->vseen[i] : NULL;
}

static struct verify_seen *seen_add(struct daemon *d, pid_t pid)
{
  if (d->nseen == d->seen_cap) {
    d->seen_cap = d->seen_cap ? 2 * d->seen_cap : 64;
    d->vseen = xrealloc(d->vseen, (size_t) d->seen_cap * sizeof(*d->vseen));
  }
  struct verify_seen *s = &d->vseen[d->nseen++];
  *s = (struct verify_seen){ .w = { .pid = pid, .pidfd = -1 } };
  return s;
}

/* Watches whatever process pid is now: its start time read, then the pidfd opened and the start
 * time checked again (proc_watch_open), so that a match means the pidfd is that process. */
static bool watch_now(struct watched_proc *w, pid_t pid)
{
  uint64_t start = gs_proc_start_time(pid);
  if (!start || !proc_watch_open(w, pid, start))
    return false;
  proc_watch_subscribe(w); /* asked at every sample */
  return true;
}

struct verify_seen *verify_seen_get(struct daemon *d, pid_t pid)
{
  int i = seen_index(d, pid);
  struct verify_seen *s = i >= 0 ? &d->vseen[i] : NULL;
  if (s && proc_watch_running(&s->w)) {
    s->sample = d->vsample;
    return s;
  }
  if (s)
    proc_watch_close(&s->w); /* that process has ended: pid is another's, or none's */
  else
    s = seen_add(d, pid);
  s->tenant = VERIFY_UNKNOWN;
  s->sample = d->vsample;
  if (!watch_now(&s->w, pid)) {
    s->w = (struct watched_proc){ .pid = pid, .pidfd = -1 }; /* start time 0: never alive */
    return NULL;
  }
  return s;
}

void verify_seen_forget_verdicts(struct daemon *d)
{
  for (int i = 0; i < d->nseen; i++)
    d->vseen[i].tenant = VERIFY_UNKNOWN;
}

void verify_seen_sweep(struct daemon *d)
{
  bool appended = d->nseen > d->nseen_sorted;
  int n = 0;
  for (int i = 0; i < d->nseen; i++) {
    if (d->vseen[i].sample == d->vsample)
      d->vseen[n++] = d->vseen[i];
    else
      proc_watch_close(&d->vseen[i].w);
  }
  d->nseen = n;
  if (appended) /* dropping entries keeps the order */
    qsort(d->vseen, (size_t) n, sizeof(*d->vseen), seen_cmp);
  d->nseen_sorted = n;
}

void verify_seen_release(struct daemon *d)
{
  for (int i = 0; i < d->nseen; i++)
    proc_watch_close(&d->vseen[i].w);
  free(d->vseen);
  d->vseen = NULL;
  d->nseen = d->nseen_sorted = d->seen_cap = 0;
}
