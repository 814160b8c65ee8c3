/* Unit tests for lib/ledger.c, the tenant ledger: limits hold under a cross-process race,
 * dead processes' memory goes back, and bad files give clear errors; and for
 * lib/ledger-read.c, its reading and writing from outside the tenant (the daemon). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpuslice/tenant-ledger.h>
#include <gpuslice/limits.h>
#include <gpuslice/proc.h>
#include "fork-holder.h"
#include "temp-dir.h"

#define MIB (1024ULL * 1024ULL)

static const char *const dir = gs_test_dir;

static struct gs_ledger *new_tenant(const char *name, uint64_t limit)
{
  struct gs_ledger_spec spec = { .name = name, .labels = "team=a" };
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    spec.limit_bytes[g] = GS_LIMIT_NONE;
  spec.limit_bytes[0] = limit;
  struct gs_ledger *l = NULL;
  gs_error_t err = NULL;
  if (gs_ledger_create(dir, &spec, &l, &err) < 0) {
    fprintf(stderr, "%s\n", err->msg);
    gs_error_release(&err);
  }
  return l;
}

static void test_reserve_stops_exactly_at_the_limit(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("exact", 1000);
  assert_non_null(l);
  struct gs_ledger_proc *p = gs_ledger_claim(l, getpid(), gs_proc_start_time(getpid()));
  assert_non_null(p);
  assert_int_equal(gs_ledger_reserve(l, p, 0, 600), 0);
  assert_int_equal(gs_ledger_reserve(l, p, 0, 401), -1);
  assert_int_equal(gs_ledger_reserve(l, p, 0, 400), 0);
  assert_int_equal(gs_ledger_reserve(l, p, 0, 1), -1);
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 1000);
  gs_ledger_release(l, p, 0, 600);
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 400);
  assert_int_equal(atomic_load(&l->gpu[0].peak_bytes), 1000);
  assert_int_equal(gs_ledger_reserve(l, p, 1, 1ULL << 50), 0); /* no limit on gpu 1 */
  gs_ledger_unclaim(l, p);
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 0);
  gs_ledger_detach(l);
}

/* A process that carries a lower limit (another system's variable) reserves against it, over
 * the tenant's whole use; a cap above the limit, or none, leaves the limit as it is. */
static void test_reserve_within_a_cap_lowers_and_never_raises(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("within", 1000);
  assert_non_null(l);
  struct gs_ledger_proc *p = gs_ledger_claim(l, getpid(), gs_proc_start_time(getpid()));
  assert_non_null(p);
  assert_int_equal(gs_ledger_reserve(l, p, 0, 300), 0);
  assert_int_equal(gs_ledger_reserve_within(l, p, 0, 201, 500), -1);
  assert_int_equal(gs_ledger_reserve_within(l, p, 0, 200, 500), 0);
  assert_int_equal(gs_ledger_reserve_within(l, p, 0, 1, 500), -1);
  assert_int_equal(gs_ledger_reserve_within(l, p, 0, 501, 5000), -1);
  assert_int_equal(gs_ledger_reserve_within(l, p, 0, 500, GS_LIMIT_NONE), 0);
  assert_int_equal(gs_ledger_reserve_within(l, p, 0, 1, GS_LIMIT_NONE), -1);
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 1000);
  /* No limit of the tenant's own on gpu 1: the cap is the limit. */
  assert_int_equal(gs_ledger_reserve_within(l, p, 1, 64, 64), 0);
  assert_int_equal(gs_ledger_reserve_within(l, p, 1, 1, 64), -1);
  gs_ledger_unclaim(l, p);
  gs_ledger_detach(l);
}

/* The quota race that lets HAMi-core's tenants through: 16 processes ask for 100 MiB each
 * against 1000 MiB, many times over. Never more than 10 may hold memory at once. */
static void test_sixteen_processes_never_exceed_the_quota(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("race", 1000 * MIB);
  assert_non_null(l);
  for (int trial = 0; trial < 50; trial++) {
    int res[2], hold[2];
    assert_int_equal(pipe(res), 0);
    assert_int_equal(pipe(hold), 0);
    for (int i = 0; i < 16; i++) {
      if (fork() == 0) {
        close(hold[1]);
        struct gs_ledger_proc *p = gs_ledger_claim(l, getpid(), gs_proc_start_time(getpid()));
        char ok = p && gs_ledger_reserve(l, p, 0, 100 * MIB) == 0 ? '1' : '0';
        if (write(res[1], &ok, 1) != 1)
          _exit(3);
        if (read(hold[0], &ok, 1) < 0) /* returns when the parent closes the pipe */
          _exit(4);
        _exit(0); /* no unclaim: the memory must come back through reaping */
      }
    }
    close(res[1]);
    close(hold[0]);
    int won = 0;
    char c;
    for (int i = 0; i < 16 && read(res[0], &c, 1) == 1; i++)
      won += c == '1';
    assert_int_equal(won, 10);
    assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 1000 * MIB);
    close(hold[1]);
    close(res[0]);
    while (wait(NULL) > 0)
      ;
    assert_int_equal(gs_ledger_reap(l), 16);
    assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 0);
  }
  gs_ledger_detach(l);
}

/* The holder's share: a slot and 700 MiB of the tenant's GPU 0. */
static char claim_700_mib(void *ledger)
{
  struct gs_ledger *l = ledger;
  struct gs_ledger_proc *p = gs_ledger_claim(l, getpid(), gs_proc_start_time(getpid()));
  return p && gs_ledger_reserve(l, p, 0, 700 * MIB) == 0 ? '1' : '0';
}

static void test_killed_process_memory_returns_to_the_tenant(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("kill", 1000 * MIB);
  pid_t pid = gs_test_fork_holder(claim_700_mib, l);
  assert_int_equal(gs_ledger_reap(l), 0);
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 700 * MIB);
  gs_test_kill_holder(pid);
  assert_int_equal(gs_ledger_reap(l), 1);
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 0);
  gs_ledger_detach(l);
}

/* exec keeps the pid and the start time: the new image's claim must drop the old image's slot. */
static void test_reclaim_by_the_same_process_drops_its_old_slot(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("exec", 1000);
  uint64_t start = gs_proc_start_time(getpid());
  struct gs_ledger_proc *p = gs_ledger_claim(l, getpid(), start);
  assert_int_equal(gs_ledger_reserve(l, p, 0, 900), 0);
  struct gs_ledger_proc *q = gs_ledger_claim(l, getpid(), start);
  assert_non_null(q);
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 0);
  gs_ledger_unclaim(l, q);
  gs_ledger_detach(l);
}

static void test_percent_limit_resolves_against_the_device(void **state)
{
  (void) state;
  struct gs_ledger_spec spec = { .name = "pct" };
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    spec.limit_bytes[g] = GS_LIMIT_NONE;
  spec.limit_ppm[0] = 250000; /* 25% */
  struct gs_ledger *l = NULL;
  gs_error_t err = NULL;
  assert_int_equal(gs_ledger_create(dir, &spec, &l, &err), 0);
  assert_int_equal(gs_ledger_limit(l, 0, 80 * 1024 * MIB), 20 * 1024 * MIB);
  assert_int_equal(gs_ledger_limit(l, 1, 80 * 1024 * MIB), GS_LIMIT_NONE);
  gs_ledger_detach(l);
}

static void test_live_tenant_name_cannot_be_taken_twice(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("twice", 1);
  assert_non_null(l);
  struct gs_ledger_spec spec = { .name = "twice" };
  struct gs_ledger *l2 = NULL;
  gs_error_t err = NULL;
  assert_int_equal(gs_ledger_create(dir, &spec, &l2, &err), -1);
  assert_non_null(strstr(err->msg, "already running"));
  gs_error_release(&err);
  spec.name = "bad/name";
  assert_int_equal(gs_ledger_create(dir, &spec, &l2, &err), -1);
  assert_non_null(strstr(err->msg, "bad/name"));
  gs_error_release(&err);
  gs_ledger_detach(l);
}

static void write_file(const char *path, const void *data, size_t len)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, data, len), (ssize_t) len);
  close(fd);
}

static void test_foreign_or_corrupt_files_give_clear_errors(void **state)
{
  (void) state;
  char path[256];
  struct gs_ledger *l = NULL;
  gs_error_t err = NULL;
  snprintf(path, sizeof(path), "%s/tenants/short", dir);
  write_file(path, "garbage", 7);
  assert_int_equal(gs_ledger_attach(dir, "short", &l, &err), -1);
  assert_non_null(strstr(err->msg, "size"));
  gs_error_release(&err);

  struct gs_ledger *good = new_tenant("future", 1);
  good->version = GS_LEDGER_VERSION + 1;
  assert_int_equal(gs_ledger_attach(dir, "future", &l, &err), -1);
  assert_non_null(strstr(err->msg, "version"));
  gs_error_release(&err);
  good->magic = 42;
  assert_int_equal(gs_ledger_attach(dir, "future", &l, &err), -1);
  assert_non_null(strstr(err->msg, "not a gpuslice tenant ledger"));
  gs_error_release(&err);
  gs_ledger_detach(good);

  struct stat st;
  snprintf(path, sizeof(path), "%s/tenants/future", dir);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
}

static void test_read_copy_gives_what_the_tenant_wrote(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("copied", 1000);
  assert_non_null(l);
  struct gs_ledger_proc *p = gs_ledger_claim(l, getpid(), gs_proc_start_time(getpid()));
  assert_int_equal(gs_ledger_reserve(l, p, 0, 600), 0);
  atomic_store(&l->gpu[3].gpu_ns, 12345);
  atomic_store(&l->compute.slice_ms, 7);
  struct gs_ledger_copy c;
  gs_error_t err = NULL;
  assert_int_equal(gs_ledger_read_copy(dir, "copied", geteuid(), &c, &err), 0);
  assert_string_equal(c.name, "copied");
  assert_string_equal(c.labels, "team=a");
  assert_int_equal(c.owner_uid, geteuid());
  assert_int_equal(c.owner_pid, getpid());
  assert_int_equal(c.created_unix_ns, l->created_unix_ns);
  assert_int_equal(c.gpu[0].limit_bytes, 1000);
  assert_int_equal(c.gpu[0].used_bytes, 600);
  assert_int_equal(c.gpu[0].peak_bytes, 600);
  assert_int_equal(c.gpu[1].limit_bytes, GS_LIMIT_NONE);
  assert_int_equal(c.gpu[3].gpu_ns, 12345);
  assert_int_equal(c.compute.slice_ms, 7);
  gs_ledger_unclaim(l, p);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "copied", NULL);
}

static void test_read_copy_refuses_a_ledger_of_another_user(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("theirs", 1);
  struct gs_ledger_copy c;
  gs_error_t err = NULL;
  assert_int_equal(gs_ledger_read_copy(dir, "theirs", geteuid() + 1, &c, &err), -1);
  assert_non_null(strstr(err->msg, "belongs to uid"));
  gs_error_release(&err);
  assert_int_equal(gs_ledger_read_copy(dir, "theirs", (uid_t) -1, &c, &err), 0);
  assert_int_equal(gs_ledger_read_copy(dir, "../theirs", (uid_t) -1, &c, &err), -1);
  assert_non_null(strstr(err->msg, "bad tenant name"));
  gs_error_release(&err);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "theirs", NULL);
}

/* The tenant owns its file and may break it at will: the reader gets an error, never a crash. */
static void test_read_copy_of_a_broken_ledger_fails_cleanly(void **state)
{
  (void) state;
  static const struct {
    const char *name;
    int how; /* 0: truncate, 1: foreign magic, 2: newer version, 3: a FIFO in its place */
    const char *want;
  } cases[] = {
    { "cut", 0, "too short for a tenant ledger" },
    { "alien", 1, "is not a gpuslice tenant ledger" },
    { "newer", 2, "version" },
    { "fifo", 3, "is not a regular file" },
  };
  char path[256];
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct gs_ledger *l = new_tenant(cases[i].name, 1);
    assert_non_null(l);
    snprintf(path, sizeof(path), "%s/tenants/%s", dir, cases[i].name);
    if (cases[i].how == 1)
      l->magic = 42;
    if (cases[i].how == 2)
      l->version = GS_LEDGER_VERSION + 1;
    gs_ledger_detach(l);
    if (cases[i].how == 0)
      assert_int_equal(truncate(path, 100), 0);
    if (cases[i].how == 3)
      assert_true(unlink(path) == 0 && mkfifo(path, 0600) == 0);
    struct gs_ledger_copy c;
    gs_error_t err = NULL;
    assert_int_equal(gs_ledger_read_copy(dir, cases[i].name, (uid_t) -1, &c, &err), -1);
    assert_non_null(strstr(err->msg, cases[i].want));
    gs_error_release(&err);
    unlink(path);
  }
}

static void test_read_fd_sees_changes_through_one_descriptor(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("kept", 1000);
  gs_error_t err = NULL;
  int fd = gs_ledger_read_open(dir, "kept", &err);
  assert_true(fd >= 0);
  struct gs_ledger_copy c;
  assert_int_equal(gs_ledger_read_fd(fd, "kept", geteuid(), &c, &err), 0);
  assert_int_equal(c.gpu[0].used_bytes, 0);
  atomic_store(&l->gpu[0].used_bytes, 77);
  assert_int_equal(gs_ledger_read_fd(fd, "kept", geteuid(), &c, &err), 0);
  assert_int_equal(c.gpu[0].used_bytes, 77);
  close(fd);
  assert_int_equal(gs_ledger_read_open(dir, "absent", &err), -1);
  assert_non_null(strstr(err->msg, "absent"));
  gs_error_release(&err);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "kept", NULL);
}

/* The sampler's readings (gs_ledger_read_kept_procs, gs_ledger_read_procs_in with the head's
 * count) give what the checked ones give, with fewer system calls. */
static void test_kept_readings_give_what_the_checked_ones_give(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("kept-again", 1000);
  gs_error_t err = NULL;
  int fd = gs_ledger_read_open(dir, "kept-again", &err);
  assert_true(fd >= 0);
  struct gs_ledger_copy c, k;
  assert_int_equal(gs_ledger_read_fd(fd, "kept-again", geteuid(), &c, &err), 0);
  assert_int_equal(c.slots_used, 0);
  uint64_t start = gs_proc_start_time(getpid());
  struct gs_ledger_proc *p = gs_ledger_claim(l, getpid(), start);
  assert_non_null(gs_ledger_claim_thread(l, p));
  atomic_store(&l->gpu[0].used_bytes, 88);
  assert_int_equal(gs_ledger_read_fd(fd, "kept-again", geteuid(), &c, &err), 0);
  struct gs_ledger_pid kp[4];
  assert_int_equal(gs_ledger_read_kept_procs(fd, "kept-again", 0, true, &k, kp, 4, &err), 1);
  assert_int_equal(kp[0].pid, getpid());
  assert_int_equal(k.gpu[0].used_bytes, 88);
  assert_int_equal(k.created_unix_ns, c.created_unix_ns);
  assert_int_equal(k.slots_used, 2);
  assert_int_equal(c.slots_used, 2);
  assert_int_equal(k.owner_uid, (uid_t) -1);
  assert_int_equal(c.owner_uid, geteuid());
  struct gs_ledger_pid a[4], b[4];
  assert_int_equal(gs_ledger_read_procs_in(fd, k.slots_used, a, 4, &err), 1);
  assert_int_equal(gs_ledger_read_procs(fd, b, 4, &err), 1);
  assert_int_equal(a[0].pid, getpid());
  assert_int_equal(b[0].pid, getpid());
  assert_int_equal(gs_ledger_read_procs_in(fd, 0, a, 4, &err), 0); /* only the slots it is told */
  gs_ledger_unclaim(l, p);
  close(fd);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "kept-again", NULL);
}

/* The sampler's one read of the head with the slots it last had: whatever count it asks for
 * (none, fewer than the tenant uses, as many, more), it gives the head of a checked reading
 * and every live slot's process, and no thread slot's. */
static void test_the_head_and_its_slots_read_together_whatever_count_is_asked(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("together", 1000);
  gs_error_t err = NULL;
  int fd = gs_ledger_read_open(dir, "together", &err);
  assert_true(fd >= 0);
  struct gs_ledger_proc *p = gs_ledger_claim(l, getpid(), gs_proc_start_time(getpid()));
  assert_non_null(gs_ledger_claim_thread(l, p));
  struct gs_ledger_proc *q = gs_ledger_claim(l, getppid(), gs_proc_start_time(getppid()));
  assert_non_null(q);
  atomic_store(&l->gpu[1].used_bytes, 99);
  struct gs_ledger_copy c;
  assert_int_equal(gs_ledger_read_fd(fd, "together", geteuid(), &c, &err), 0);
  assert_int_equal(c.slots_used, 3);
  const uint32_t wants[] = { 0, 1, 2, 3, 8 };
  for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
    struct gs_ledger_copy k;
    struct gs_ledger_pid v[8];
    memset(v, 0, sizeof(v));
    assert_int_equal(gs_ledger_read_kept_procs(fd, "together", wants[i], true, &k, v, 8, &err), 2);
    assert_int_equal(v[0].pid, getpid());
    assert_int_equal(v[1].pid, getppid());
    assert_int_equal(v[1].start_time, gs_proc_start_time(getppid()));
    assert_int_equal(k.slots_used, 3);
    assert_int_equal(k.gpu[1].used_bytes, 99);
    assert_int_equal(k.created_unix_ns, c.created_unix_ns);
    assert_memory_equal(&k.resume, &c.resume, sizeof(k.resume));
    assert_int_equal(gs_ledger_read_kept_procs(fd, "together", wants[i], false, &k, v, 1, &err), 1);
    assert_int_equal(k.gpu[1].used_bytes, 99); /* without the resume block: zero */
    assert_int_equal(k.resume.requests + k.resume.waits + k.resume.wait_ns_total, 0);
  }
  gs_ledger_unclaim(l, q);
  gs_ledger_unclaim(l, p);
  gs_ledger_detach(l);
  /* A ledger the tenant cut short of its resume block is refused, by name. */
  char path[4096];
  snprintf(path, sizeof(path), "%s/tenants/together", dir);
  assert_int_equal(truncate(path, (off_t) offsetof(struct gs_ledger, proc) + 512), 0);
  struct gs_ledger_copy k;
  struct gs_ledger_pid v[8];
  assert_int_equal(gs_ledger_read_kept_procs(fd, "together", 3, true, &k, v, 8, &err), -1);
  assert_non_null(strstr(err->msg, "'together' is too short"));
  gs_error_release(&err);
  /* Without it, the head and the slots the file still has read. */
  assert_int_equal(gs_ledger_read_kept_procs(fd, "together", 3, false, &k, v, 8, &err), 0);
  assert_int_equal(gs_ledger_read_kept_procs(fd, "together", 0, false, &k, v, 8, &err), 0);
  assert_int_equal(truncate(path, 100), 0);
  assert_int_equal(gs_ledger_read_kept_procs(fd, "together", 3, false, &k, v, 8, &err), -1);
  assert_non_null(strstr(err->msg, "'together' is too short"));
  gs_error_release(&err);
  close(fd);
  gs_ledger_remove(dir, "together", NULL);
}

/* The resume block (version 3) reads back, alone and with the rest; a version-2 ledger, of a
 * tenant an older gpuslice started, still reads, without it. */
/* A pid no process has, with a start time no process had: a dead process's identity. */
#define DEAD_PID (getpid() + 100000)
#define DEAD_START 5

/* What a thread does to its own slot: writes it, alone. */
static void thread_moves(struct gs_ledger *l, struct gs_ledger_proc *t, int64_t bytes)
{
  atomic_fetch_add(&t->used[0], (uint64_t) bytes);
  atomic_fetch_add(&l->gpu[0].used_bytes, (uint64_t) bytes);
}

/* One thread allocated 200 MiB, another freed 100 MiB of it: one thread slot is below zero.
 * The dead process's slots go back together, as one sum, and a live process's stay. */
static void test_a_dead_process_gives_back_its_thread_slots_with_its_own(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("threads", 1000 * MIB);
  struct gs_ledger_proc *dead = gs_ledger_claim(l, DEAD_PID, DEAD_START);
  assert_int_equal(gs_ledger_reserve(l, dead, 0, 300 * MIB), 0);
  struct gs_ledger_proc *t1 = gs_ledger_claim_thread(l, dead),
                        *t2 = gs_ledger_claim_thread(l, dead);
  assert_non_null(t1);
  assert_non_null(t2);
  assert_int_equal(atomic_load(&t1->state), GS_SLOT_THREAD);
  assert_int_equal(t1->pid, DEAD_PID);
  assert_int_equal(t1->start_time, DEAD_START);
  thread_moves(l, t1, (int64_t) (200 * MIB));
  thread_moves(l, t2, -(int64_t) (100 * MIB));
  uint64_t start = gs_proc_start_time(getpid());
  struct gs_ledger_proc *alive = gs_ledger_claim(l, getpid(), start);
  struct gs_ledger_proc *alive_t = gs_ledger_claim_thread(l, alive);
  thread_moves(l, alive_t, (int64_t) (50 * MIB));
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 450 * MIB);
  assert_int_equal(gs_ledger_reap(l), 1);
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 50 * MIB);
  assert_int_equal(atomic_load(&dead->state), GS_SLOT_FREE);
  assert_int_equal(atomic_load(&t1->state), GS_SLOT_FREE);
  assert_int_equal(atomic_load(&t2->state), GS_SLOT_FREE);
  assert_int_equal(atomic_load(&t2->used[0]), 0);
  assert_int_equal(atomic_load(&alive_t->state), GS_SLOT_THREAD);
  /* The process's own end gives back its thread slots too (they stay its own until it is
   * dead: see the next test). */
  gs_ledger_unclaim(l, alive);
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 0);
  assert_int_equal(atomic_load(&alive->state), GS_SLOT_EXITED);
  assert_int_equal(atomic_load(&alive_t->state), GS_SLOT_THREAD);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "threads", NULL);
}

static char take_nothing(void *arg)
{
  (void) arg;
  return '1';
}

/* A process that exits normally gives back what its slots hold at its exit, but its other
 * threads may still run a moment and write them: the slots are not another process's until it
 * is dead, and then what those threads moved goes back too. */
static void test_an_exiting_process_keeps_its_slots_until_it_is_dead(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("exiting", 1000 * MIB);
  pid_t pid = gs_test_fork_holder(take_nothing, NULL);
  struct gs_ledger_proc *p = gs_ledger_claim(l, pid, gs_proc_start_time(pid));
  struct gs_ledger_proc *t = gs_ledger_claim_thread(l, p);
  assert_int_equal(gs_ledger_reserve(l, p, 0, 300 * MIB), 0);
  thread_moves(l, t, (int64_t) (100 * MIB));
  gs_ledger_unclaim(l, p); /* its exit */
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 0);
  assert_int_equal(atomic_load(&p->state), GS_SLOT_EXITED);
  assert_int_equal(atomic_load(&t->state), GS_SLOT_THREAD);
  /* Another process's claims take other slots. */
  uint64_t start = gs_proc_start_time(getpid());
  struct gs_ledger_proc *q = gs_ledger_claim(l, getpid(), start);
  struct gs_ledger_proc *qt = gs_ledger_claim_thread(l, q);
  assert_true(q != p && q != t && qt != p && qt != t);
  /* A last thread allocates 50 MiB on its slot, another frees 20 MiB through the process's
   * (given back at the exit already: the tenant's usage is too low by 20 for now). */
  thread_moves(l, t, (int64_t) (50 * MIB));
  thread_moves(l, p, -(int64_t) (20 * MIB));
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 30 * MIB);
  assert_int_equal(gs_ledger_reap(l), 0); /* not dead yet */
  assert_int_equal(atomic_load(&p->state), GS_SLOT_EXITED);
  gs_test_kill_holder(pid);
  assert_int_equal(gs_ledger_reap(l), 1);
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 0);
  assert_int_equal(atomic_load(&p->state), GS_SLOT_FREE);
  assert_int_equal(atomic_load(&t->state), GS_SLOT_FREE);
  gs_ledger_unclaim(l, q);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "exiting", NULL);
}

/* The slot of a process that exited and is dead is free again at the next claim, with no
 * reaper: processes that come and go one after another keep using the first slot. */
static void test_a_claim_frees_the_slots_of_dead_exited_processes(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("come-and-go", 1000 * MIB);
  struct gs_ledger_proc *first = NULL;
  for (int i = 0; i < 3; i++) {
    pid_t pid = gs_test_fork_holder(take_nothing, NULL);
    struct gs_ledger_proc *p = gs_ledger_claim(l, pid, gs_proc_start_time(pid));
    assert_non_null(p);
    if (!first)
      first = p;
    assert_ptr_equal(p, first);
    assert_int_equal(gs_ledger_reserve(l, p, 0, 100 * MIB), 0);
    gs_ledger_unclaim(l, p);
    gs_test_kill_holder(pid);
  }
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 0);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "come-and-go", NULL);
}

/* A thread slot left without its process's slot (the process ended while a thread was still
 * claiming) goes back once the process is dead, and not before. */
static void test_an_orphan_thread_slot_goes_back_once_its_process_is_dead(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("orphans", 1000 * MIB);
  uint64_t start = gs_proc_start_time(getpid());
  struct gs_ledger_proc *dead = gs_ledger_claim(l, DEAD_PID, DEAD_START);
  struct gs_ledger_proc *alive = gs_ledger_claim(l, getpid(), start);
  struct gs_ledger_proc *dead_t = gs_ledger_claim_thread(l, dead);
  struct gs_ledger_proc *alive_t = gs_ledger_claim_thread(l, alive);
  thread_moves(l, dead_t, (int64_t) (70 * MIB));
  thread_moves(l, alive_t, (int64_t) (30 * MIB));
  atomic_store(&dead->state, GS_SLOT_FREE); /* their processes' own slots are gone */
  atomic_store(&alive->state, GS_SLOT_FREE);
  assert_int_equal(gs_ledger_reap(l), 1);
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 30 * MIB);
  assert_int_equal(atomic_load(&dead_t->state), GS_SLOT_FREE);
  assert_int_equal(atomic_load(&alive_t->state), GS_SLOT_THREAD);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "orphans", NULL);
}

/* exec: the new image's claim drops the old image's thread slots, with or without its slot. */
static void test_reclaim_by_the_same_process_drops_its_old_thread_slots(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("exec-threads", 1000 * MIB);
  uint64_t start = gs_proc_start_time(getpid());
  struct gs_ledger_proc *p = gs_ledger_claim(l, getpid(), start);
  struct gs_ledger_proc *t = gs_ledger_claim_thread(l, p);
  thread_moves(l, t, (int64_t) (300 * MIB));
  struct gs_ledger_proc *q = gs_ledger_claim(l, getpid(), start);
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 0);
  assert_int_equal(atomic_load(&t->state), GS_SLOT_FREE);
  t = gs_ledger_claim_thread(l, q);
  thread_moves(l, t, (int64_t) (200 * MIB));
  atomic_store(&q->state, GS_SLOT_FREE); /* an image that ended without its slot */
  struct gs_ledger_proc *r = gs_ledger_claim(l, getpid(), start);
  assert_non_null(r);
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 0);
  assert_int_equal(atomic_load(&t->state), GS_SLOT_FREE);
  gs_ledger_unclaim(l, r);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "exec-threads", NULL);
}

/* Thread slots take at most the first half of the table: the rest stays for processes. */
static void test_thread_slots_leave_half_the_slots_to_processes(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("crowded", 1000);
  struct gs_ledger_proc *p = gs_ledger_claim(l, getpid(), gs_proc_start_time(getpid()));
  int threads = 0;
  while (gs_ledger_claim_thread(l, p))
    threads++;
  assert_int_equal(threads, GS_LEDGER_THREAD_SLOTS - 1); /* p itself is one of the first */
  for (int i = 0; i < GS_LEDGER_MAX_PROCS - GS_LEDGER_THREAD_SLOTS; i++) {
    struct gs_ledger_proc *q = gs_ledger_claim(l, getpid() + 200000 + i, 7);
    assert_non_null(q);
    assert_true(q - l->proc >= GS_LEDGER_THREAD_SLOTS);
  }
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "crowded", NULL);
}

/* A reader outside the tenant sees a process once, however many thread slots it holds. */
static void test_read_procs_lists_a_process_once_with_its_thread_slots(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("listed", 1000);
  gs_error_t err = NULL;
  struct gs_ledger_proc *p = gs_ledger_claim(l, getpid(), gs_proc_start_time(getpid()));
  assert_non_null(gs_ledger_claim_thread(l, p));
  assert_non_null(gs_ledger_claim_thread(l, p));
  int fd = gs_ledger_read_open(dir, "listed", &err);
  struct gs_ledger_pid out[4];
  assert_int_equal(gs_ledger_read_procs(fd, out, 4, &err), 1);
  assert_int_equal(out[0].pid, getpid());
  close(fd);
  gs_ledger_unclaim(l, p);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "listed", NULL);
}

static void test_read_copy_takes_the_resume_block_and_version_2_ledgers(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("resumed", 1000);
  gs_error_t err = NULL;
  gs_ledger_resume_ask(l);
  gs_ledger_resume_ask(l);
  gs_ledger_resume_waited(l, 300);
  gs_ledger_resume_waited(l, 200);
  struct gs_ledger_copy c;
  assert_int_equal(gs_ledger_read_copy(dir, "resumed", geteuid(), &c, &err), 0);
  assert_int_equal(c.version, GS_LEDGER_VERSION);
  assert_int_equal(c.resume.requests, 2);
  assert_int_equal(c.resume.waits, 2);
  assert_int_equal(c.resume.wait_ns_total, 500);
  assert_int_equal(c.resume.last_wait_ns, 200);
  int fd = gs_ledger_read_open(dir, "resumed", &err);
  struct gs_ledger_resume_copy r;
  assert_int_equal(gs_ledger_read_resume(fd, &r), 0);
  assert_int_equal(r.requests, 2);
  /* As an older gpuslice made it: version 2, no resume block. */
  l->version = 2;
  l->size = GS_LEDGER_V2_SIZE;
  char path[256];
  snprintf(path, sizeof(path), "%s/tenants/resumed", dir);
  gs_ledger_detach(l);
  assert_int_equal(truncate(path, GS_LEDGER_V2_SIZE), 0);
  assert_int_equal(gs_ledger_read_fd(fd, "resumed", geteuid(), &c, &err), 0);
  assert_int_equal(c.version, 2);
  assert_int_equal(c.resume.requests, 0);
  assert_string_equal(c.name, "resumed");
  assert_int_equal(gs_ledger_read_resume(fd, &r), -1);
  /* A ledger of this version cut to version 2's size is no ledger. */
  close(fd);
  fd = open(path, O_RDWR);
  uint32_t header[2] = { GS_LEDGER_VERSION, (uint32_t) sizeof(struct gs_ledger) };
  assert_int_equal(pwrite(fd, header, sizeof(header), 8), (ssize_t) sizeof(header));
  assert_int_equal(gs_ledger_read_fd(fd, "resumed", geteuid(), &c, &err), -1);
  assert_non_null(strstr(err->msg, "too short"));
  gs_error_release(&err);
  /* Version 3, as the gpuslice before thread slots made it, at its full size: read. */
  assert_int_equal(ftruncate(fd, (off_t) sizeof(struct gs_ledger)), 0);
  header[0] = GS_LEDGER_V3;
  assert_int_equal(pwrite(fd, header, sizeof(header), 8), (ssize_t) sizeof(header));
  assert_int_equal(gs_ledger_read_fd(fd, "resumed", geteuid(), &c, &err), 0);
  assert_int_equal(c.version, GS_LEDGER_V3);
  close(fd);
  gs_ledger_remove(dir, "resumed", NULL);
}

static void test_read_procs_lists_the_live_slots(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("slots", 1000);
  gs_error_t err = NULL;
  uint64_t start = gs_proc_start_time(getpid());
  struct gs_ledger_proc *mine = gs_ledger_claim(l, getpid(), start);
  struct gs_ledger_proc *gone = gs_ledger_claim(l, getpid() + 100000, 5);
  assert_non_null(mine);
  assert_non_null(gone);
  gs_ledger_unclaim(l, gone);
  int fd = gs_ledger_read_open(dir, "slots", &err);
  assert_true(fd >= 0);
  struct gs_ledger_pid out[4];
  assert_int_equal(gs_ledger_read_procs(fd, out, 4, &err), 1);
  assert_int_equal(out[0].pid, getpid());
  assert_int_equal(out[0].start_time, start);
  assert_int_equal(gs_ledger_read_procs(fd, out, 0, &err), 0);
  close(fd);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "slots", NULL);
}

/* A reader reads only the slots ever claimed: slots_used counts them; a live slot past the
 * count is not seen, and a ledger that keeps no count (one made before the field) is read whole. */
static void test_read_procs_reads_only_the_slots_ever_claimed(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("counted", 1000);
  gs_error_t err = NULL;
  struct gs_ledger_pid out[4];
  assert_int_equal(atomic_load(&l->slots_used), GS_SLOTS_KNOWN);
  int fd = gs_ledger_read_open(dir, "counted", &err);
  assert_true(fd >= 0);
  assert_int_equal(gs_ledger_read_procs(fd, out, 4, &err), 0);
  uint64_t start = gs_proc_start_time(getpid());
  assert_non_null(gs_ledger_claim(l, getpid(), start));
  struct gs_ledger_proc *second = gs_ledger_claim(l, getpid() + 100000, 5);
  assert_non_null(second);
  assert_int_equal(atomic_load(&l->slots_used), GS_SLOTS_KNOWN | 2);
  gs_ledger_unclaim(l, second); /* freed: the count stays, the slot is no longer live */
  assert_int_equal(atomic_load(&l->slots_used), GS_SLOTS_KNOWN | 2);
  assert_int_equal(gs_ledger_read_procs(fd, out, 4, &err), 1);
  /* A live slot past the count is not read; with no count kept, it is. */
  l->proc[500].pid = getpid();
  l->proc[500].start_time = start;
  atomic_store(&l->proc[500].state, GS_SLOT_LIVE);
  assert_int_equal(gs_ledger_read_procs(fd, out, 4, &err), 1);
  atomic_store(&l->slots_used, 0);
  assert_int_equal(gs_ledger_read_procs(fd, out, 4, &err), 2);
  close(fd);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "counted", NULL);
}

static void test_proc_parent_reads_the_parent_and_start_time(void **state)
{
  (void) state;
  pid_t ppid = 0;
  uint64_t start = 0;
  assert_int_equal(gs_proc_parent(getpid(), &ppid, &start), 0);
  assert_int_equal(ppid, getppid());
  assert_int_equal(start, gs_proc_start_time(getpid()));
  assert_int_equal(gs_proc_parent(-1, &ppid, &start), -1);
}

/* The daemon's limits, mirrored for processes that read the ledger's own fields. */
static void test_write_limits_reaches_the_same_instance_only(void **state)
{
  (void) state;
  struct gs_ledger_spec spec = { .name = "mirror", .compute_ppm = 100000 };
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    spec.limit_bytes[g] = GS_LIMIT_NONE;
  spec.limit_ppm[0] = 500000;
  struct gs_ledger *l = NULL;
  gs_error_t err = NULL;
  assert_int_equal(gs_ledger_create(dir, &spec, &l, &err), 0);
  struct gs_limits lim;
  memset(&lim, 0, sizeof(lim));
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    atomic_init(&lim.limit_bytes[g], g == 0 ? 4096 : GS_LIMIT_NONE);
  atomic_init(&lim.compute.limit_ppm, 250000);
  atomic_init(&lim.compute.policy, GS_COMPUTE_CAP);
  atomic_init(&lim.compute.priority, GS_PRIO_HIGH);
  assert_int_equal(
    gs_ledger_write_limits(dir, "mirror", geteuid(), l->created_unix_ns + 1, &lim, &err), -1);
  assert_non_null(strstr(err->msg, "another instance"));
  gs_error_release(&err);
  assert_int_equal(atomic_load(&l->gpu[0].limit_ppm), 500000);
  assert_int_equal(
    gs_ledger_write_limits(dir, "mirror", geteuid() + 1, l->created_unix_ns, &lim, &err), -1);
  gs_error_release(&err);
  assert_int_equal(gs_ledger_write_limits(dir, "mirror", geteuid(), l->created_unix_ns, &lim, &err),
                   0);
  assert_int_equal(atomic_load(&l->gpu[0].limit_ppm), 0);
  assert_int_equal(atomic_load(&l->gpu[0].limit_bytes), 4096);
  assert_int_equal(atomic_load(&l->gpu[1].limit_bytes), GS_LIMIT_NONE);
  assert_int_equal(gs_ledger_compute_limit_ppm(l), 250000);
  assert_int_equal(gs_ledger_compute_policy(l), GS_COMPUTE_CAP);
  assert_int_equal(gs_ledger_priority(l), GS_PRIO_HIGH);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "mirror", NULL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_reserve_stops_exactly_at_the_limit),
    cmocka_unit_test(test_reserve_within_a_cap_lowers_and_never_raises),
    cmocka_unit_test(test_read_procs_lists_the_live_slots),
    cmocka_unit_test(test_read_procs_reads_only_the_slots_ever_claimed),
    cmocka_unit_test(test_proc_parent_reads_the_parent_and_start_time),
    cmocka_unit_test(test_sixteen_processes_never_exceed_the_quota),
    cmocka_unit_test(test_killed_process_memory_returns_to_the_tenant),
    cmocka_unit_test(test_reclaim_by_the_same_process_drops_its_old_slot),
    cmocka_unit_test(test_a_dead_process_gives_back_its_thread_slots_with_its_own),
    cmocka_unit_test(test_an_orphan_thread_slot_goes_back_once_its_process_is_dead),
    cmocka_unit_test(test_an_exiting_process_keeps_its_slots_until_it_is_dead),
    cmocka_unit_test(test_a_claim_frees_the_slots_of_dead_exited_processes),
    cmocka_unit_test(test_reclaim_by_the_same_process_drops_its_old_thread_slots),
    cmocka_unit_test(test_read_procs_lists_a_process_once_with_its_thread_slots),
    cmocka_unit_test(test_thread_slots_leave_half_the_slots_to_processes),
    cmocka_unit_test(test_percent_limit_resolves_against_the_device),
    cmocka_unit_test(test_live_tenant_name_cannot_be_taken_twice),
    cmocka_unit_test(test_foreign_or_corrupt_files_give_clear_errors),
    cmocka_unit_test(test_read_copy_gives_what_the_tenant_wrote),
    cmocka_unit_test(test_read_copy_refuses_a_ledger_of_another_user),
    cmocka_unit_test(test_read_copy_of_a_broken_ledger_fails_cleanly),
    cmocka_unit_test(test_read_fd_sees_changes_through_one_descriptor),
    cmocka_unit_test(test_kept_readings_give_what_the_checked_ones_give),
    cmocka_unit_test(test_the_head_and_its_slots_read_together_whatever_count_is_asked),
    cmocka_unit_test(test_write_limits_reaches_the_same_instance_only),
    cmocka_unit_test(test_read_copy_takes_the_resume_block_and_version_2_ledgers),
  };
  return cmocka_run_group_tests(tests, gs_test_dir_setup, gs_test_dir_teardown);
}
