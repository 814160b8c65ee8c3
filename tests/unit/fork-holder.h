/* A child process that takes something (memory, a ledger slot) and holds it until it is
 * killed: for the tests of how a killed process's holdings come back. Include after cmocka.h. */
#ifndef GS_TEST_FORK_HOLDER_H
#define GS_TEST_FORK_HOLDER_H

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* Forks a child that runs take(arg) ('1' when it took its share, '0' when not), tells the
 * parent, and pauses. Returns the child's pid once it has answered, asserting it said '1'. */
static inline pid_t gs_test_fork_holder(char (*take)(void *), void *arg)
{
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  pid_t pid = fork();
  if (pid == 0) {
    char ok = take(arg);
    if (write(ready[1], &ok, 1) != 1)
      _exit(3);
    pause();
    _exit(0);
  }
  char c = 0;
  assert_int_equal(read(ready[0], &c, 1), 1);
  assert_int_equal(c, '1');
  close(ready[0]);
  close(ready[1]);
  return pid;
}

/* Kills the holder with SIGKILL, so that it runs no destructor, and reaps it. */
static inline void gs_test_kill_holder(pid_t pid)
{
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

#endif
