/* The pidfds the sampler asks about at every sample (tenants' owners, the processes the
 * verifier has seen NVML report) in one epoll set: it learns which have ended with one
 * epoll_wait per sample, whatever their number, instead of a poll of each pidfd (at 1,024
 * tenants those polls were a fifth of the daemon's CPU). Each pidfd is
 * registered one-shot: its end is reported once and kept here until the pidfd is closed. A
 * process not in the set (no pidfd, or epoll refused it) is asked as before (proc_watch_alive).
 * The marks are as fresh as the last proc_watch_collect: a process that ends after it is found
 * at the next one. */
#include "daemon.h"

#include <stdlib.h>
#include <sys/epoll.h>

static int ep = -1; /* the set; -1 until the first subscription, or when refused */
static bool *ended; /* by pidfd: reported ended since subscribed */
static int ended_cap;

static bool mark_room(int fd)
{
  if (fd < ended_cap)
    return true;
  int cap = ended_cap ? ended_cap : 256;
  while (cap <= fd)
    cap *= 2;
  bool *v = realloc(ended, (size_t) cap * sizeof(*v));
  if (!v)
    return false;
  for (int i = ended_cap; i < cap; i++)
    v[i] = false;
  ended = v;
  ended_cap = cap;
  return true;
}

bool proc_watch_subscribe(struct watched_proc *w)
{
  if (w->pidfd < 0 || w->subscribed || !mark_room(w->pidfd))
    return w->subscribed;
  if (ep < 0 && (ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
    return false;
  struct epoll_event e = { .events = EPOLLIN | EPOLLONESHOT, .data.fd = w->pidfd };
  ended[w->pidfd] = false;
  w->subscribed = epoll_ctl(ep, EPOLL_CTL_ADD, w->pidfd, &e) == 0;
  return w->subscribed;
}

/* Before the pidfd is closed: a registration outlives a close while a forked child still
 * holds the descriptor, and would then report another pidfd of the same number. */
void proc_watch_unsubscribe(struct watched_proc *w)
{
  if (!w->subscribed)
    return;
  epoll_ctl(ep, EPOLL_CTL_DEL, w->pidfd, NULL);
  ended[w->pidfd] = false;
  w->subscribed = false;
}

void proc_watch_collect(void)
{
  struct epoll_event ev[64];
  int n;
  if (ep < 0)
    return;
  do {
    n = epoll_wait(ep, ev, 64, 0);
    for (int i = 0; i < n; i++)
      if (ev[i].data.fd >= 0 && ev[i].data.fd < ended_cap)
        ended[ev[i].data.fd] = true;
  } while (n == 64);
}

bool proc_watch_running(const struct watched_proc *w)
{
  return w->subscribed ? !ended[w->pidfd] : proc_watch_alive(w);
}
