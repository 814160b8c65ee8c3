/* Unit tests for the daemon's authority over limits: lib/limits.c (the limits file and the
 * daemon's writes to it) and the precedence it takes in lib/ledger.c
 * (gs_ledger_set_authority), plus the daemon's default paths (lib/daemon-paths.c). The
 * authority is process-wide, so each test drops it again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gpuslice/daemon-paths.h>
#include <gpuslice/tenant-ledger.h>
#include <gpuslice/limits.h>
#include <gpuslice/proc.h>
#include "temp-dir.h"

#define MIB (1024ULL * 1024ULL)

static const char *const dir = gs_test_dir;

static int drop_authority(void **state)
{
  (void) state;
  gs_ledger_set_authority(NULL, NULL);
  return 0;
}

static struct gs_ledger *new_tenant(const char *name, uint64_t limit)
{
  struct gs_ledger_spec spec = { .name = name, .compute_ppm = 500000 };
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    spec.limit_bytes[g] = GS_LIMIT_NONE;
  spec.limit_bytes[0] = limit;
  struct gs_ledger *l = NULL;
  gs_error_t err = NULL;
  assert_int_equal(gs_ledger_create(dir, &spec, &l, &err), 0);
  return l;
}

/* The daemon's limits file for the tenant of l, read-write, with limit on GPU 0. */
static struct gs_limits *daemon_limits(const struct gs_ledger *l, uint64_t limit)
{
  struct gs_limits init, *lim = NULL;
  gs_error_t err = NULL;
  memset(&init, 0, sizeof(init));
  snprintf(init.name, sizeof(init.name), "%s", l->name);
  init.uid = (uint32_t) geteuid();
  init.ledger_created_unix_ns = l->created_unix_ns;
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    atomic_init(&init.limit_bytes[g], g == 0 ? limit : GS_LIMIT_NONE);
  atomic_init(&init.compute.limit_ppm, 250000);
  atomic_init(&init.compute.policy, GS_COMPUTE_CAP);
  atomic_init(&init.compute.priority, GS_PRIO_HIGH);
  assert_int_equal(gs_limits_create(dir, &init, getegid(), &lim, &err), 0);
  return lim;
}

static void test_limits_file_is_0640_and_reads_back(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("readback", 1024 * MIB);
  struct gs_limits *rw = daemon_limits(l, 512 * MIB), *ro = NULL;
  gs_error_t err = NULL;
  char path[256];
  struct stat st;
  snprintf(path, sizeof(path), "%s/limits/readback", dir);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0640);
  assert_int_equal(gs_limits_open(dir, "readback", false, &ro, &err), 0);
  assert_int_equal(atomic_load(&ro->limit_bytes[0]), 512 * MIB);
  assert_true(gs_limits_match(ro, l, geteuid()));
  assert_false(gs_limits_match(ro, l, geteuid() + 1));
  /* A change in place is seen through every mapping at once. */
  atomic_store(&rw->limit_bytes[0], 2048 * MIB);
  assert_int_equal(atomic_load(&ro->limit_bytes[0]), 2048 * MIB);
  gs_limits_close(ro);
  gs_limits_close(rw);
  assert_int_equal(gs_limits_remove(dir, "readback", &err), 0);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "readback", NULL);
}

static void test_limits_file_that_others_may_write_is_refused(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("loose", 1024 * MIB);
  struct gs_limits *rw = daemon_limits(l, 512 * MIB), *ro = NULL;
  gs_error_t err = NULL;
  char path[256];
  snprintf(path, sizeof(path), "%s/limits/loose", dir);
  assert_int_equal(chmod(path, 0666), 0);
  assert_int_equal(gs_limits_open(dir, "loose", false, &ro, &err), -1);
  assert_non_null(strstr(err->msg, "may be written by others"));
  gs_error_release(&err);
  assert_int_equal(gs_limits_find(dir, l, &ro), 0);
  gs_limits_close(rw);
  gs_limits_remove(dir, "loose", NULL);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "loose", NULL);
}

static void test_bad_limits_files_are_refused(void **state)
{
  (void) state;
  static const struct {
    const char *name;
    size_t size;
    const char *want;
  } cases[] = {
    { "short", 16, "is not a limits file of this version" },
    { "zeros", sizeof(struct gs_limits), "is not a gpuslice limits file" },
  };
  char path[256];
  mkdir(dir, 0755);
  snprintf(path, sizeof(path), "%s/limits", dir);
  mkdir(path, 0755);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct gs_limits *lim = NULL;
    gs_error_t err = NULL;
    snprintf(path, sizeof(path), "%s/limits/%s", dir, cases[i].name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t) cases[i].size), 0);
    close(fd);
    assert_int_equal(gs_limits_open(dir, cases[i].name, false, &lim, &err), -1);
    assert_non_null(strstr(err->msg, cases[i].want));
    gs_error_release(&err);
    unlink(path);
  }
}

static void test_authority_overrides_the_ledger_on_the_reserve_path(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("bound", 1024 * MIB);
  struct gs_limits *rw = daemon_limits(l, 512 * MIB), *ro = NULL;
  assert_int_equal(gs_limits_find(dir, l, &ro), 1);
  gs_ledger_set_authority(l, ro);
  struct gs_ledger_proc *p = gs_ledger_claim(l, getpid(), gs_proc_start_time(getpid()));
  assert_non_null(p);
  assert_int_equal(gs_ledger_limit(l, 0, 0), 512 * MIB);
  assert_int_equal(gs_ledger_reserve(l, p, 0, 600 * MIB), -1);
  /* The tenant writes a higher limit into its own ledger: nothing changes. */
  atomic_store(&l->gpu[0].limit_bytes, GS_LIMIT_NONE - 1);
  assert_int_equal(gs_ledger_reserve(l, p, 0, 600 * MIB), -1);
  assert_int_equal(gs_ledger_reserve(l, p, 0, 500 * MIB), 0);
  /* The daemon raises it in place: the next reservation sees it, with no rebinding. */
  atomic_store(&rw->limit_bytes[0], 2048 * MIB);
  assert_int_equal(gs_ledger_reserve(l, p, 0, 600 * MIB), 0);
  /* ...and lowers it below use: further reservations fail, nothing is taken back. */
  atomic_store(&rw->limit_bytes[0], 256 * MIB);
  assert_int_equal(gs_ledger_reserve(l, p, 0, 1), -1);
  assert_int_equal(atomic_load(&l->gpu[0].used_bytes), 1100 * MIB);
  gs_ledger_unclaim(l, p);
  gs_ledger_set_authority(NULL, NULL);
  gs_limits_close(ro);
  gs_limits_close(rw);
  gs_limits_remove(dir, "bound", NULL);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "bound", NULL);
}

static void test_compute_limits_come_from_the_authority(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("compute", 1024 * MIB);
  assert_int_equal(gs_ledger_compute_limit_ppm(l), 500000);
  assert_int_equal(gs_ledger_compute_policy(l), GS_COMPUTE_SHARE);
  assert_int_equal(gs_ledger_priority(l), GS_PRIO_NORMAL);
  struct gs_limits *rw = daemon_limits(l, 512 * MIB);
  gs_ledger_set_authority(l, rw);
  assert_int_equal(gs_ledger_compute_limit_ppm(l), 250000);
  assert_int_equal(gs_ledger_compute_policy(l), GS_COMPUTE_CAP);
  assert_int_equal(gs_ledger_priority(l), GS_PRIO_HIGH);
  atomic_store(&l->compute.limit_ppm, 1000000);
  assert_int_equal(gs_ledger_compute_limit_ppm(l), 250000);
  gs_ledger_set_authority(NULL, NULL);
  assert_int_equal(gs_ledger_compute_limit_ppm(l), 1000000);
  gs_limits_close(rw);
  gs_limits_remove(dir, "compute", NULL);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "compute", NULL);
}

static void test_limits_of_another_instance_are_not_found(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("instance", 1024 * MIB);
  struct gs_limits *rw = daemon_limits(l, 512 * MIB), *ro = NULL;
  rw->ledger_created_unix_ns += 1; /* left by an earlier tenant of the same name */
  assert_int_equal(gs_limits_find(dir, l, &ro), 0);
  gs_limits_close(rw);
  gs_limits_remove(dir, "instance", NULL);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "instance", NULL);
}

/* Removes what a test made for the tenant name: its limits file (closing rw) and its ledger. */
static void end_tenant(const char *name, struct gs_ledger *l, struct gs_limits *rw)
{
  gs_limits_close(rw);
  gs_limits_remove(dir, name, NULL);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, name, NULL);
}

static void test_limit_resolve_turns_a_share_into_bytes(void **state)
{
  (void) state;
  static const struct {
    uint64_t bytes;
    uint32_t ppm;
    uint64_t total, want;
  } cases[] = {
    { 512 * MIB, 0, 80 * 1024 * MIB, 512 * MIB },    /* bytes as given */
    { GS_LIMIT_NONE, 0, 0, GS_LIMIT_NONE },          /* no limit stays none */
    { 0, 250000, 80 * 1024 * MIB, 20 * 1024 * MIB }, /* 25% of 80 GiB */
    { 0, 250000, 0, GS_LIMIT_NONE },                 /* device size unknown */
    { 0, 1000000, UINT64_MAX - 1, UINT64_MAX - 1 },  /* no overflow on the way */
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    assert_int_equal(gs_limit_resolve(cases[i].bytes, cases[i].ppm, cases[i].total), cases[i].want);
}

/* What the daemon writes when it registers a tenant: who it is, from the ledger's copy, and
 * the limits it is given; the file it makes is found by that tenant's interposer. */
static void test_limits_init_from_a_ledger_copy_names_the_tenant(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("fromcopy", 1024 * MIB);
  struct gs_ledger_copy c;
  struct gs_limits init, *rw = NULL, *ro = NULL;
  gs_error_t err = NULL;
  assert_int_equal(gs_ledger_read_copy(dir, "fromcopy", geteuid(), &c, &err), 0);
  gs_limits_init(&init, &c, dir, NULL);
  assert_string_equal(init.name, "fromcopy");
  assert_string_equal(init.ledger_dir, dir);
  assert_int_equal(init.uid, geteuid());
  assert_int_equal(init.owner_pid, getpid());
  assert_true(init.registered_unix_ns > 0);
  assert_int_equal(atomic_load(&init.limit_bytes[0]), GS_LIMIT_NONE);
  assert_int_equal(atomic_load(&init.compute.limit_ppm), 500000); /* the ledger's */
  gs_limits_set_vram(&init, 0, 0, 500000, 8 * 1024 * MIB);
  gs_limits_set_vram(&init, 1, 3 * MIB, 0, 0);
  assert_int_equal(atomic_load(&init.limit_ppm[0]), 500000);
  assert_int_equal(atomic_load(&init.limit_bytes[0]), 4 * 1024 * MIB);
  assert_int_equal(atomic_load(&init.limit_bytes[1]), 3 * MIB);
  assert_int_equal(gs_limits_create(dir, &init, getegid(), &rw, &err), 0);
  assert_int_equal(gs_limits_find(dir, l, &ro), 1);
  assert_int_equal(atomic_load(&ro->limit_bytes[0]), 4 * 1024 * MIB);
  gs_limits_close(ro);
  end_tenant("fromcopy", l, rw);
}

static void test_limits_changes_touch_only_what_is_given(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("changes", 1024 * MIB);
  struct gs_limits *rw = daemon_limits(l, 512 * MIB);
  uint64_t gen = atomic_load(&rw->generation);
  uint32_t policy = GS_COMPUTE_SHARE, slice = 5;
  gs_limits_set_compute(rw, NULL, &policy, NULL, &slice);
  gs_limits_changed(rw);
  assert_int_equal(atomic_load(&rw->compute.limit_ppm), 250000);
  assert_int_equal(atomic_load(&rw->compute.policy), GS_COMPUTE_SHARE);
  assert_int_equal(atomic_load(&rw->compute.priority), GS_PRIO_HIGH);
  assert_int_equal(atomic_load(&rw->compute.slice_ms), 5);
  assert_int_equal(atomic_load(&rw->generation), gen + 1);
  end_tenant("changes", l, rw);
}

/* The compute ceiling: what an admin set, the owner may lower but not raise (issue #12). */
static void test_compute_ceiling_refuses_every_raise_and_takes_the_rest(void **state)
{
  (void) state;
  const uint32_t none = GS_CEILING_NONE;
  enum {
    PPM = GS_COMPUTE_FIELD_PPM,
    POL = GS_COMPUTE_FIELD_POLICY,
    PRI = GS_COMPUTE_FIELD_PRIORITY
  };
  static const struct {
    const char *what;
    struct gs_compute_limits ceiling, want;
    unsigned has, refused;
  } cases[] = {
    { "share above", { 200000, none, none, 0 }, { 600000, 0, 0, 0 }, PPM, PPM },
    { "share lifted", { 200000, none, none, 0 }, { 0, 0, 0, 0 }, PPM, PPM },
    { "share lowered", { 200000, none, none, 0 }, { 100000, 0, 0, 0 }, PPM, 0 },
    { "share back up to it", { 200000, none, none, 0 }, { 200000, 0, 0, 0 }, PPM, 0 },
    { "no share ceiling", { none, none, none, 0 }, { 0, 0, 0, 0 }, PPM, 0 },
    { "cap to share", { none, GS_COMPUTE_CAP, none, 0 }, { 0, GS_COMPUTE_SHARE, 0, 0 }, POL, POL },
    { "cap kept", { none, GS_COMPUTE_CAP, none, 0 }, { 0, GS_COMPUTE_CAP, 0, 0 }, POL, 0 },
    { "share to cap", { none, none, none, 0 }, { 0, GS_COMPUTE_CAP, 0, 0 }, POL, 0 },
    { "low to normal", { none, none, GS_PRIO_LOW, 0 }, { 0, 0, GS_PRIO_NORMAL, 0 }, PRI, PRI },
    { "normal to high", { none, none, GS_PRIO_NORMAL, 0 }, { 0, 0, GS_PRIO_HIGH, 0 }, PRI, PRI },
    { "normal to low", { none, none, GS_PRIO_NORMAL, 0 }, { 0, 0, GS_PRIO_LOW, 0 }, PRI, 0 },
    { "high ceiling", { none, none, none, 0 }, { 0, 0, GS_PRIO_HIGH, 0 }, PRI, 0 },
    /* Only the fields given count: a stale value elsewhere refuses nothing. */
    { "not given", { 200000, GS_COMPUTE_CAP, GS_PRIO_LOW, 0 }, { 0, 0, 0, 0 }, 0, 0 },
    { "first raise named",
      { 200000, GS_COMPUTE_CAP, GS_PRIO_LOW, 0 },
      { 100000, GS_COMPUTE_SHARE, GS_PRIO_HIGH, 0 },
      PPM | POL | PRI,
      POL },
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    unsigned got = gs_compute_above_ceiling(&cases[i].ceiling, &cases[i].want, cases[i].has);
    if (got != cases[i].refused)
      fail_msg("%s: got %u, want %u", cases[i].what, got, cases[i].refused);
  }
}

static void test_compute_ceiling_is_the_limits_as_an_admin_left_them(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("cceiling", 1024 * MIB);
  struct gs_limits *rw = daemon_limits(l, 512 * MIB);
  struct gs_ledger_copy copy;
  struct gs_limits init;
  gs_error_t err = NULL;
  assert_int_equal(gs_ledger_read_copy(dir, "cceiling", (uid_t) -1, &copy, &err), 0);
  gs_limits_init(&init, &copy, dir, NULL);
  assert_int_equal(atomic_load(&init.ceiling_compute_ppm), GS_CEILING_NONE);
  assert_int_equal(atomic_load(&init.ceiling_policy), GS_CEILING_NONE);
  assert_int_equal(atomic_load(&init.ceiling_priority), GS_CEILING_NONE);
  gs_limits_set_compute_ceiling(rw); /* 25%, cap, high */
  assert_int_equal(atomic_load(&rw->ceiling_compute_ppm), 250000);
  assert_int_equal(atomic_load(&rw->ceiling_policy), GS_COMPUTE_CAP);
  assert_int_equal(atomic_load(&rw->ceiling_priority), GS_CEILING_NONE);
  uint32_t ppm = 0, policy = GS_COMPUTE_SHARE, prio = GS_PRIO_LOW;
  gs_limits_set_compute(rw, &ppm, &policy, &prio, NULL);
  gs_limits_set_compute_ceiling(rw); /* none, share, low */
  assert_int_equal(atomic_load(&rw->ceiling_compute_ppm), GS_CEILING_NONE);
  assert_int_equal(atomic_load(&rw->ceiling_policy), GS_CEILING_NONE);
  assert_int_equal(atomic_load(&rw->ceiling_priority), GS_PRIO_LOW);
  end_tenant("cceiling", l, rw);
}

/* Makes the limits file of name look as a daemon of that version wrote it (size bytes). */
static void make_version(const char *name, uint32_t version, uint32_t size)
{
  char path[256];
  uint32_t header[2] = { version, size };
  snprintf(path, sizeof(path), "%s/limits/%s", dir, name);
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, size), 0);
  assert_int_equal(pwrite(fd, header, sizeof(header), 8), (ssize_t) sizeof(header));
  close(fd);
}

static void make_version_2(const char *name)
{
  make_version(name, 2, GS_LIMITS_V2_SIZE);
}

static void test_version_2_limits_file_is_upgraded_in_place_with_a_compute_ceiling(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("oldfile", 1024 * MIB);
  struct gs_limits *rw = daemon_limits(l, 512 * MIB), *lim = NULL;
  gs_error_t err = NULL;
  char path[256];
  struct stat before, after;
  gs_limits_close(rw);
  make_version_2("oldfile");
  snprintf(path, sizeof(path), "%s/limits/oldfile", dir);
  assert_int_equal(stat(path, &before), 0);
  assert_int_equal(gs_limits_open(dir, "oldfile", false, &lim, &err), -1);
  assert_non_null(strstr(err->msg, "of this version"));
  gs_error_release(&err);
  assert_int_equal(gs_limits_upgrade(dir, "oldfile", &err), 1);
  assert_int_equal(stat(path, &after), 0);
  assert_int_equal(before.st_ino, after.st_ino); /* processes that mapped it keep it */
  assert_int_equal(gs_limits_open(dir, "oldfile", true, &rw, &err), 0);
  assert_int_equal(atomic_load(&rw->limit_bytes[0]), 512 * MIB);
  assert_int_equal(atomic_load(&rw->ceiling_compute_ppm), 250000);
  assert_int_equal(atomic_load(&rw->ceiling_policy), GS_COMPUTE_CAP);
  assert_int_equal(atomic_load(&rw->ceiling_priority), GS_CEILING_NONE);
  /* A file of this version is left as it is. */
  assert_int_equal(gs_limits_upgrade(dir, "oldfile", &err), 0);
  assert_int_equal(gs_limits_upgrade(dir, "missing", &err), 0);
  end_tenant("oldfile", l, rw);
}

/* A version-3 file keeps its compute ceiling (an admin may have lifted it: none stays none)
 * and gains a tenant that runs and was never suspended. */
static void test_version_3_limits_file_is_upgraded_in_place_running(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("v3file", 1024 * MIB);
  struct gs_limits *rw = daemon_limits(l, 512 * MIB);
  gs_error_t err = NULL;
  atomic_store(&rw->ceiling_compute_ppm, GS_CEILING_NONE);
  gs_limits_close(rw);
  make_version("v3file", 3, GS_LIMITS_V3_SIZE);
  assert_int_equal(gs_limits_open(dir, "v3file", false, &rw, &err), -1);
  gs_error_release(&err);
  assert_int_equal(gs_limits_upgrade(dir, "v3file", &err), 1);
  assert_int_equal(gs_limits_open(dir, "v3file", true, &rw, &err), 0);
  assert_int_equal(rw->version, GS_LIMITS_VERSION);
  assert_int_equal(atomic_load(&rw->limit_bytes[0]), 512 * MIB);
  assert_int_equal(atomic_load(&rw->ceiling_compute_ppm), GS_CEILING_NONE);
  assert_int_equal(atomic_load(&rw->run_state), GS_RUN_RUNNING);
  assert_int_equal(rw->suspended_unix_ns, 0);
  assert_int_equal(atomic_load(&rw->suspended_bytes[0]), 0);
  /* A size that is no version's is left alone. */
  gs_limits_close(rw);
  make_version("v3file", 3, GS_LIMITS_V3_SIZE + 8);
  assert_int_equal(gs_limits_upgrade(dir, "v3file", &err), 0);
  gs_limits_remove(dir, "v3file", NULL);
  gs_ledger_detach(l);
  gs_ledger_remove(dir, "v3file", NULL);
}

struct waiter {
  const struct gs_limits *lim;
  uint32_t seen;
};

static void *wait_for_change(void *arg)
{
  struct waiter *w = arg;
  gs_limits_wait_run_state(w->lim, w->seen, 20ULL * 1000000000ULL);
  return NULL;
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* The run state moves the generation and wakes a process waiting on its read-only mapping at
 * once, long before the wait's own timeout. */
static void test_run_state_change_wakes_the_tenants_waiters(void **state)
{
  (void) state;
  struct gs_ledger *l = new_tenant("runstate", 1024 * MIB);
  struct gs_limits *rw = daemon_limits(l, 512 * MIB), *ro = NULL;
  gs_error_t err = NULL;
  assert_int_equal(gs_limits_open(dir, "runstate", false, &ro, &err), 0);
  gs_limits_set_run_state(rw, GS_RUN_SUSPENDED);
  uint64_t gen = atomic_load(&ro->generation);
  struct waiter w = { ro, GS_RUN_SUSPENDED };
  pthread_t t;
  double t0 = now_s();
  assert_int_equal(pthread_create(&t, NULL, wait_for_change, &w), 0);
  usleep(100000);
  gs_limits_set_run_state(rw, GS_RUN_RUNNING);
  pthread_join(t, NULL);
  assert_true(now_s() - t0 < 10.0);
  assert_int_equal(atomic_load(&ro->run_state), GS_RUN_RUNNING);
  assert_true(atomic_load(&ro->generation) > gen);
  /* A state other than the one seen returns at once. */
  t0 = now_s();
  gs_limits_wait_run_state(ro, GS_RUN_SUSPENDED, 20ULL * 1000000000ULL);
  assert_true(now_s() - t0 < 10.0);
  assert_string_equal(gs_run_state_name(GS_RUN_RUNNING), "running");
  assert_string_equal(gs_run_state_name(GS_RUN_SUSPENDING), "suspending");
  assert_string_equal(gs_run_state_name(GS_RUN_SUSPENDED), "suspended");
  assert_string_equal(gs_run_state_name(GS_RUN_RESUMING), "resuming");
  assert_string_equal(gs_run_state_name(42), "unknown");
  gs_limits_close(ro);
  end_tenant("runstate", l, rw);
}

static void test_daemon_paths_follow_the_environment(void **state)
{
  (void) state;
  setenv("GPUSLICE_SOCKET", "/x/s.sock", 1);
  setenv("GPUSLICE_LEDGER_DB", "/x/l.db", 1);
  setenv("GPUSLICE_METRICS_LISTEN", "0.0.0.0:1", 1);
  assert_string_equal(gs_daemon_socket_path(), "/x/s.sock");
  assert_string_equal(gs_daemon_listen_socket_path(), "/x/s.sock");
  assert_string_equal(gs_daemon_ledger_path(), "/x/l.db");
  assert_string_equal(gs_daemon_metrics_listen(), "0.0.0.0:1");
  unsetenv("GPUSLICE_SOCKET");
  unsetenv("GPUSLICE_LEDGER_DB");
  unsetenv("GPUSLICE_METRICS_LISTEN");
  setenv("GPUSLICE_STATE_DIR", "/st", 1);
  assert_string_equal(gs_daemon_listen_socket_path(), "/st/gpuslice.sock");
  assert_string_equal(gs_daemon_metrics_listen(), "127.0.0.1:9400");
  setenv("XDG_STATE_HOME", "/xdg", 1);
  assert_string_equal(gs_daemon_ledger_path(),
                      geteuid() == 0 ? "/var/lib/gpuslice/ledger.db" : "/xdg/gpuslice/ledger.db");
  unsetenv("GPUSLICE_STATE_DIR");
  unsetenv("XDG_STATE_HOME");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_teardown(test_limits_file_is_0640_and_reads_back, drop_authority),
    cmocka_unit_test_teardown(test_limits_file_that_others_may_write_is_refused, drop_authority),
    cmocka_unit_test_teardown(test_bad_limits_files_are_refused, drop_authority),
    cmocka_unit_test_teardown(test_authority_overrides_the_ledger_on_the_reserve_path,
                              drop_authority),
    cmocka_unit_test_teardown(test_compute_limits_come_from_the_authority, drop_authority),
    cmocka_unit_test_teardown(test_limits_of_another_instance_are_not_found, drop_authority),
    cmocka_unit_test(test_limit_resolve_turns_a_share_into_bytes),
    cmocka_unit_test_teardown(test_limits_init_from_a_ledger_copy_names_the_tenant, drop_authority),
    cmocka_unit_test_teardown(test_limits_changes_touch_only_what_is_given, drop_authority),
    cmocka_unit_test(test_compute_ceiling_refuses_every_raise_and_takes_the_rest),
    cmocka_unit_test_teardown(test_compute_ceiling_is_the_limits_as_an_admin_left_them,
                              drop_authority),
    cmocka_unit_test_teardown(
      test_version_2_limits_file_is_upgraded_in_place_with_a_compute_ceiling, drop_authority),
    cmocka_unit_test_teardown(test_version_3_limits_file_is_upgraded_in_place_running,
                              drop_authority),
    cmocka_unit_test_teardown(test_run_state_change_wakes_the_tenants_waiters, drop_authority),
    cmocka_unit_test(test_daemon_paths_follow_the_environment),
  };
  return cmocka_run_group_tests(tests, gs_test_dir_setup, NULL);
}
