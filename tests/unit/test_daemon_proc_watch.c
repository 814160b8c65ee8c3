/* Unit tests for the daemon's watched processes (daemon/proc-watch.c): a process's end is
 * noticed through its pidfd, a zombie counting as ended as /proc has it; a pid that names
 * another process is never taken for the watched one; without pidfds (a budget of none) the same
 * answers come from /proc, and at EMFILE a process counts as running until /proc can tell;
 * pruning drops only the ended. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/resource.h>

#include <gpuslice/proc.h>

#include "daemon.h"
#include "fork-holder.h"

static char take_nothing(void *arg)
{
  (void) arg;
  return '1';
}

/* The children started, killed by the teardown whatever a test left, so that a failed test
 * leaves no process holding the test's output open. */
static pid_t children[16];
static int nchildren;

static pid_t child(void)
{
  pid_t pid = gs_test_fork_holder(take_nothing, NULL);
  if (nchildren < 16)
    children[nchildren++] = pid;
  return pid;
}

static int kill_children(void **state)
{
  (void) state;
  for (int i = 0; i < nchildren; i++)
    if (kill(children[i], SIGKILL) == 0)
      waitpid(children[i], NULL, 0);
  nchildren = 0;
  return 0;
}

/* Kills pid and waits until it is a zombie, without reaping it. */
static void make_zombie(pid_t pid)
{
  siginfo_t si;
  kill(pid, SIGKILL);
  assert_int_equal(waitid(P_PID, (id_t) pid, &si, WEXITED | WNOWAIT), 0);
}

static void test_an_exit_is_noticed_through_the_pidfd_zombie_included(void **state)
{
  (void) state;
  pid_t pid = child();
  struct watched_proc w;
  int held = proc_watch_held();
  assert_true(proc_watch_open(&w, pid, gs_proc_start_time(pid)));
  assert_true(w.pidfd >= 0);
  assert_int_equal(proc_watch_held(), held + 1);
  assert_true(proc_watch_alive(&w));
  make_zombie(pid);
  assert_false(gs_proc_alive(pid, w.start_time));
  assert_false(proc_watch_alive(&w));
  waitpid(pid, NULL, 0);
  assert_false(proc_watch_alive(&w));
  proc_watch_close(&w);
  assert_int_equal(w.pidfd, -1);
  assert_int_equal(proc_watch_held(), held);
}

static void test_a_pid_that_names_another_process_is_never_taken_for_it(void **state)
{
  (void) state;
  pid_t pid = child();
  struct watched_proc w;
  int held = proc_watch_held();
  /* Another start time: the process of that pid now is not the one asked for. */
  assert_false(proc_watch_open(&w, pid, gs_proc_start_time(pid) + 1));
  assert_int_equal(w.pidfd, -1);
  assert_int_equal(proc_watch_held(), held);
  gs_test_kill_holder(pid);
  /* Gone altogether. */
  assert_false(proc_watch_open(&w, pid, 1));
  assert_false(proc_watch_open(&w, 0, 1));
}

/* Lowers the soft open files limit to the next free descriptor, so that pidfd_open fails with
 * EMFILE; returns the limit to restore. */
static struct rlimit no_more_fds(void)
{
  struct rlimit old, low;
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
  int next = dup(0);
  assert_true(next >= 0);
  close(next);
  low = (struct rlimit){ .rlim_cur = (rlim_t) next, .rlim_max = old.rlim_max };
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
  return old;
}

/* At EMFILE neither a pidfd nor /proc can be had: the process counts as running until /proc can
 * tell, and from then on /proc answers. */
static void test_on_emfile_a_process_counts_as_running_until_proc_can_tell(void **state)
{
  (void) state;
  pid_t pid = child();
  struct watched_proc w;
  uint64_t start = gs_proc_start_time(pid);
  struct rlimit old = no_more_fds();
  bool opened = proc_watch_open(&w, pid, start);
  bool alive = proc_watch_alive(&w);
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
  assert_true(opened && alive);
  assert_int_equal(w.pidfd, -1);
  assert_true(proc_watch_alive(&w));
  make_zombie(pid);
  assert_false(proc_watch_alive(&w));
  waitpid(pid, NULL, 0);
  proc_watch_close(&w);
}

static void test_prune_drops_only_the_ended_and_keeps_the_order(void **state)
{
  (void) state;
  pid_t pids[4];
  struct watched_proc v[4];
  int held = proc_watch_held();
  for (int i = 0; i < 4; i++) {
    pids[i] = child();
    if (i == 3) {
      /* One without a pidfd, to mix both ways in one prune. */
      uint64_t start = gs_proc_start_time(pids[i]);
      struct rlimit old = no_more_fds();
      bool ok = proc_watch_open(&v[i], pids[i], start);
      assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
      assert_true(ok);
      assert_int_equal(v[i].pidfd, -1);
    } else {
      assert_true(proc_watch_open(&v[i], pids[i], gs_proc_start_time(pids[i])));
    }
  }
  assert_int_equal(proc_watch_prune(v, 4), 4);
  gs_test_kill_holder(pids[1]);
  gs_test_kill_holder(pids[3]);
  assert_int_equal(proc_watch_prune(v, 4), 2);
  assert_int_equal(v[0].pid, pids[0]);
  assert_int_equal(v[1].pid, pids[2]);
  assert_int_equal(proc_watch_held(), held + 2);
  gs_test_kill_holder(pids[0]);
  gs_test_kill_holder(pids[2]);
  assert_int_equal(proc_watch_prune(v, 2), 0);
  assert_int_equal(proc_watch_held(), held);
}

/* The set the sampler asks (proc-watch-set.c): an end is known after the next collect, for the
 * process that ended alone; a pidfd closed and its number given to another process's starts
 * out running; a process outside the set is asked at once. */
static void test_the_set_learns_each_end_at_the_next_collect(void **state)
{
  (void) state;
  pid_t a = child(), b = child(), c = child();
  struct watched_proc wa, wb, wc;
  assert_true(proc_watch_open(&wa, a, gs_proc_start_time(a)));
  assert_true(proc_watch_open(&wb, b, gs_proc_start_time(b)));
  assert_true(proc_watch_open(&wc, c, gs_proc_start_time(c)));
  assert_true(proc_watch_subscribe(&wa));
  assert_true(proc_watch_subscribe(&wb));
  proc_watch_collect();
  assert_true(proc_watch_running(&wa) && proc_watch_running(&wb) && proc_watch_running(&wc));
  make_zombie(a);
  make_zombie(c);
  assert_true(proc_watch_running(&wa));  /* not collected yet */
  assert_false(proc_watch_running(&wc)); /* outside the set: asked now */
  proc_watch_collect();
  assert_false(proc_watch_running(&wa));
  assert_true(proc_watch_running(&wb));
  proc_watch_collect(); /* reported once, kept */
  assert_false(proc_watch_running(&wa));
  int fd = wa.pidfd;
  proc_watch_close(&wa);
  assert_false(wa.subscribed);
  pid_t d = child();
  struct watched_proc wd;
  assert_true(proc_watch_open(&wd, d, gs_proc_start_time(d)));
  assert_int_equal(wd.pidfd, fd); /* the lowest free number again */
  assert_true(proc_watch_subscribe(&wd));
  proc_watch_collect();
  assert_true(proc_watch_running(&wd));
  proc_watch_close(&wb);
  proc_watch_close(&wc);
  proc_watch_close(&wd);
}

/* In a child, since a lowered hard limit cannot be raised again: at 1024 open files the
 * budget is none, and every process is watched through /proc, with the same answers. */
static void test_at_1024_open_files_processes_are_watched_through_proc(void **state)
{
  (void) state;
  pid_t pid = fork();
  if (pid == 0) {
    struct rlimit rl = { 1024, 1024 };
    struct watched_proc w;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
      _exit(10);
    proc_watch_init();
    if (proc_watch_budget() != 0)
      _exit(11);
    if (!proc_watch_open(&w, getppid(), gs_proc_start_time(getppid())) || w.pidfd != -1)
      _exit(12);
    _exit(proc_watch_alive(&w) ? 0 : 13);
  }
  int status = -1;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_init_raises_the_soft_limit_to_the_hard_one(void **state)
{
  (void) state;
  struct rlimit rl, low;
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
  low =
    (struct rlimit){ .rlim_cur = rl.rlim_max < 512 ? rl.rlim_max : 512, .rlim_max = rl.rlim_max };
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
  proc_watch_init();
  struct rlimit now;
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &now), 0);
  assert_true(now.rlim_cur == rl.rlim_max);
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_teardown(test_init_raises_the_soft_limit_to_the_hard_one, kill_children),
    cmocka_unit_test_teardown(test_an_exit_is_noticed_through_the_pidfd_zombie_included,
                              kill_children),
    cmocka_unit_test_teardown(test_a_pid_that_names_another_process_is_never_taken_for_it,
                              kill_children),
    cmocka_unit_test_teardown(test_on_emfile_a_process_counts_as_running_until_proc_can_tell,
                              kill_children),
    cmocka_unit_test_teardown(test_prune_drops_only_the_ended_and_keeps_the_order, kill_children),
    cmocka_unit_test_teardown(test_the_set_learns_each_end_at_the_next_collect, kill_children),
    cmocka_unit_test_teardown(test_at_1024_open_files_processes_are_watched_through_proc,
                              kill_children),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
