/* Unit tests for the simulator's shared state (sim/sim-state.c): exact cross-process memory
 * accounting, reaping of dead processes, and the one-kernel-at-a-time timeline. Each test
 * runs in a private state directory so that tests never share devices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim-state.h"
#include "fork-holder.h"
#include "temp-dir.h"

#define GIB (1024ULL * 1024ULL * 1024ULL)

static struct gpusim_shared *S;
static char dir[] = "/tmp/gpusim-unit-XXXXXX";

/* Removes the state directory and the one state file in it. */
static int teardown(void **state)
{
  (void) state;
  return gs_test_remove_dir(dir);
}

static int setup(void **state)
{
  (void) state;
  if (!mkdtemp(dir))
    return -1;
  setenv("GPUSIM_STATE_DIR", dir, 1);
  setenv("GPUSLICE_SIM", "h100-80gb,t4", 1);
  const char *err = NULL;
  S = gpusim_state(&err);
  if (!S)
    fprintf(stderr, "%s\n", err);
  return S ? 0 : -1;
}

static void test_state_describes_the_devices_in_gpuslice_sim(void **state)
{
  (void) state;
  assert_int_equal(S->ndev, 2);
  assert_string_equal(gpusim_models[S->dev[0].model].key, "h100-80gb");
  assert_string_equal(gpusim_models[S->dev[1].model].key, "t4");
  assert_int_equal(S->dev[1].total_bytes, 15360ULL * 1024 * 1024);
}

static void test_reserve_past_capacity_fails_and_leaves_usage_unchanged(void **state)
{
  (void) state;
  uint64_t total = S->dev[1].total_bytes;
  assert_int_equal(gpusim_mem_reserve(1, total - 4096), 0);
  assert_int_equal(gpusim_mem_reserve(1, 8192), -1);
  assert_int_equal(atomic_load(&S->dev[1].used_bytes), total - 4096);
  gpusim_mem_release(1, total - 4096);
  assert_int_equal(atomic_load(&S->dev[1].used_bytes), 0);
}

/* Eight children race for 8 GiB each on a 15 GiB device, 8 times over. Every child holds what
 * it got until all have tried, so exactly one may win each round; the device's count returns
 * to zero once the dead children are reaped. */
static void test_concurrent_reservations_never_exceed_capacity(void **state)
{
  (void) state;
  for (int round = 0; round < 8; round++) {
    int pipefd[2], hold[2];
    assert_int_equal(pipe(pipefd), 0);
    assert_int_equal(pipe(hold), 0);
    for (int i = 0; i < 8; i++) {
      if (fork() == 0) {
        close(hold[1]);
        char ok = gpusim_mem_reserve(1, 8 * GIB) == 0 ? '1' : '0';
        if (write(pipefd[1], &ok, 1) != 1)
          _exit(3);
        if (read(hold[0], &ok, 1) < 0) /* returns when the parent closes the pipe */
          _exit(4);
        _exit(0);
      }
    }
    close(pipefd[1]);
    close(hold[0]);
    int won = 0;
    char c;
    for (int i = 0; i < 8 && read(pipefd[0], &c, 1) == 1; i++)
      won += c == '1';
    close(pipefd[0]);
    close(hold[1]);
    while (wait(NULL) > 0)
      ;
    assert_int_equal(won, 1);
    assert_int_equal(gpusim_reap_dead(), 8);
    assert_int_equal(atomic_load(&S->dev[1].used_bytes), 0);
  }
}

/* A process killed with SIGKILL runs no destructor; whoever notices must give its memory back. */
/* The holder's share: 10 GiB of device 0. */
static char reserve_10_gib(void *unused)
{
  (void) unused;
  return gpusim_mem_reserve(0, 10 * GIB) == 0 ? '1' : '0';
}

static void test_memory_of_a_killed_process_is_reaped(void **state)
{
  (void) state;
  pid_t pid = gs_test_fork_holder(reserve_10_gib, NULL);
  assert_int_equal(atomic_load(&S->dev[0].used_bytes), 10 * GIB);
  assert_int_equal(gpusim_reap_dead(), 0); /* alive: nothing to reap */
  gs_test_kill_holder(pid);
  assert_int_equal(gpusim_reap_dead(), 1);
  assert_int_equal(atomic_load(&S->dev[0].used_bytes), 0);
}

static void test_timeline_runs_one_kernel_at_a_time_in_arrival_order(void **state)
{
  (void) state;
  uint64_t now = gpusim_now_ns(), s1, s2, s3;
  uint64_t e1 = gpusim_exec_schedule(0, now, 1000000, &s1);
  uint64_t e2 = gpusim_exec_schedule(0, now, 2000000, &s2);
  uint64_t e3 = gpusim_exec_schedule(0, now + 10000000, 1000000, &s3);
  assert_true(s1 >= now);
  assert_int_equal(e1 - s1, 1000000);
  assert_int_equal(s2, e1); /* queued behind the first */
  assert_int_equal(e2 - s2, 2000000);
  assert_int_equal(s3, now + 10000000); /* not before it was allowed to start */
  assert_int_equal(e3, s3 + 1000000);
  assert_int_equal(gpusim_busy_ns(0, s1, e3, 0), 4000000);
  assert_int_equal(gpusim_busy_ns(0, s1, e3, getpid()), 4000000);
  assert_int_equal(gpusim_busy_ns(0, s1, e3, getpid() + 1), 0);
  assert_int_equal(gpusim_busy_ns(0, s2 + 500000, s2 + 1500000, 0), 1000000);
}

/* Never early: a kernel must not end before its time. How late a loaded machine wakes a
 * process is the scheduler's business, not a test's (timing targets live in benchmarks; the
 * kernel-duration tests hold the simulator to its 5%): the upper bound only catches a sleep
 * that ignores its deadline altogether. */
static void test_sleep_until_never_returns_early(void **state)
{
  (void) state;
  for (int i = 0; i < 20; i++) {
    uint64_t t = gpusim_now_ns() + 300000 * (uint64_t) (i % 4); /* spin-only and sleep-then-spin */
    gpusim_sleep_until(t);
    uint64_t now = gpusim_now_ns();
    assert_true(now >= t);
    assert_true(now - t < 1000000000ULL);
  }
}

static void test_start_time_tells_a_reused_pid_from_the_original(void **state)
{
  (void) state;
  uint64_t start = gpusim_proc_start_time(getpid());
  assert_true(start > 0);
  assert_true(gpusim_proc_alive(getpid(), start));
  assert_false(gpusim_proc_alive(getpid(), start + 1));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_state_describes_the_devices_in_gpuslice_sim),
    cmocka_unit_test(test_reserve_past_capacity_fails_and_leaves_usage_unchanged),
    cmocka_unit_test(test_concurrent_reservations_never_exceed_capacity),
    cmocka_unit_test(test_memory_of_a_killed_process_is_reaped),
    cmocka_unit_test(test_timeline_runs_one_kernel_at_a_time_in_arrival_order),
    cmocka_unit_test(test_sleep_until_never_returns_early),
    cmocka_unit_test(test_start_time_tells_a_reused_pid_from_the_original),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
