/* Unit tests for lib/shm.c, the one mapper of shared files: creating, opening, waiting for a
 * creator, and refusing files whose size, header or mode is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <gpuslice/fs.h>

#include "shm.h"
#include "temp-dir.h"

struct thing {
  struct gs__shm_header h;
  uint64_t value;
};

static const struct gs__shm_layout thing_shm = { "test thing", 0x474e494854534554ULL, 3,
                                                 sizeof(struct thing) };

static const char *const dir = gs_test_dir;

static void path_of(char *buf, size_t len, const char *name)
{
  snprintf(buf, len, "%s/%s", dir, name);
}

static void write_header(struct thing *t)
{
  t->h.version = thing_shm.version;
  t->h.size = sizeof(*t);
  __atomic_store_n(&t->h.magic, thing_shm.magic, __ATOMIC_RELEASE);
}

static void test_create_then_open_share_one_file(void **state)
{
  (void) state;
  char path[128];
  struct thing *a = NULL, *b = NULL;
  bool created = false;
  gs_error_t err = NULL;
  path_of(path, sizeof(path), "shared");
  int flags = GS__SHM_CREATE | GS__SHM_WRITE;
  assert_int_equal(gs__shm_open(path, &thing_shm, flags, (void **) &a, &created, &err), 0);
  assert_true(created);
  assert_int_equal(a->value, 0); /* a new file is zeroed */
  write_header(a);
  assert_int_equal(gs__shm_open(path, &thing_shm, flags, (void **) &b, &created, &err), 0);
  assert_false(created);
  a->value = 99;
  assert_int_equal(b->value, 99);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  assert_int_equal(st.st_size, sizeof(struct thing));
  gs__shm_close(a, &thing_shm);
  gs__shm_close(b, &thing_shm);
}

static void test_exclusive_create_of_an_existing_file_says_eexist(void **state)
{
  (void) state;
  char path[128];
  struct thing *a = NULL, *b = NULL;
  gs_error_t err = NULL;
  path_of(path, sizeof(path), "excl");
  int flags = GS__SHM_CREATE | GS__SHM_EXCL | GS__SHM_WRITE;
  assert_int_equal(gs__shm_open(path, &thing_shm, flags, (void **) &a, NULL, &err), 0);
  write_header(a);
  assert_int_equal(gs__shm_open(path, &thing_shm, flags, (void **) &b, NULL, &err), -1);
  assert_int_equal(err->status, EEXIST);
  assert_non_null(strstr(err->msg, "test thing"));
  gs_error_release(&err);
  gs__shm_close(a, &thing_shm);
}

static void test_bad_files_are_refused_with_what_is_wrong(void **state)
{
  (void) state;
  static const struct {
    const char *name;
    size_t size;
    uint64_t magic;
    uint32_t version, mode;
    int flags;
    const char *want;
  } cases[] = {
    { "missing", 0, 0, 0, 0, 0, "open test thing" },
    { "short", 8, 0, 0, 0600, 0, "is not a test thing of this version (size 8, want 24)" },
    { "foreign", sizeof(struct thing), 42, 3, 0600, 0, "is not a gpuslice test thing" },
    { "newer", sizeof(struct thing), 0x474e494854534554ULL, 4, 0600, 0, "test thing version 4" },
    { "loose", sizeof(struct thing), 0x474e494854534554ULL, 3, 0666, GS__SHM_PRIVATE,
      "may be written by others" },
  };
  char path[128];
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    path_of(path, sizeof(path), cases[i].name);
    if (cases[i].mode) {
      struct thing t = { { cases[i].magic, cases[i].version, sizeof(struct thing) }, 0 };
      FILE *f = fopen(path, "w");
      assert_non_null(f);
      assert_int_equal(fwrite(&t, 1, cases[i].size, f), cases[i].size);
      fclose(f);
      assert_int_equal(chmod(path, cases[i].mode), 0);
    }
    struct thing *m = NULL;
    gs_error_t err = NULL;
    assert_int_equal(gs__shm_open(path, &thing_shm, cases[i].flags, (void **) &m, NULL, &err), -1);
    assert_non_null(strstr(err->msg, cases[i].want));
    assert_null(m);
    gs_error_release(&err);
  }
}

/* Another process creates the file, and sizes it and writes its header a little later: a
 * waiting opener sees the finished file, an impatient one an empty file. */
static void test_wait_sees_a_creator_finish(void **state)
{
  (void) state;
  char path[128];
  struct thing *m = NULL;
  gs_error_t err = NULL;
  path_of(path, sizeof(path), "slow");
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fclose(f);
  assert_int_equal(gs__shm_open(path, &thing_shm, GS__SHM_WRITE, (void **) &m, NULL, &err), -1);
  assert_non_null(strstr(err->msg, "size 0"));
  gs_error_release(&err);
  pid_t pid = fork();
  if (pid == 0) {
    const struct timespec pause = { 0, 50000000 };
    nanosleep(&pause, NULL);
    struct thing t = { { thing_shm.magic, thing_shm.version, sizeof(struct thing) }, 7 };
    FILE *w = fopen(path, "w");
    _exit(w && fwrite(&t, sizeof(t), 1, w) == 1 && fclose(w) == 0 ? 0 : 1);
  }
  int rc = gs__shm_open(path, &thing_shm, GS__SHM_WRITE | GS__SHM_WAIT, (void **) &m, NULL, &err);
  int status = -1;
  waitpid(pid, &status, 0);
  assert_int_equal(status, 0);
  assert_int_equal(rc, 0);
  assert_int_equal(m->value, 7);
  gs__shm_close(m, &thing_shm);
}

/* A ledger given its path back is a link to /proc/<pid>/fd/<n>: that link is followed, to a
 * regular file only; every other link is refused as O_NOFOLLOW refuses it. */
static void test_only_a_link_to_a_proc_fd_of_a_regular_file_is_followed(void **state)
{
  (void) state;
  char path[128], link[128], target[64];
  struct thing *t = NULL;
  gs_error_t err = NULL;
  path_of(path, sizeof(path), "held");
  path_of(link, sizeof(link), "link");
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, sizeof(struct thing)), 0);
  struct thing init = { .value = 7 };
  write_header(&init);
  assert_int_equal(pwrite(fd, &init, sizeof(init), 0), (ssize_t) sizeof(init));
  assert_int_equal(unlink(path), 0); /* removed: only the descriptor holds it */
  snprintf(target, sizeof(target), "/proc/%d/fd/%d", (int) getpid(), fd);
  assert_true(gs_is_proc_fd_path(target));
  assert_int_equal(symlink(target, link), 0);
  assert_int_equal(gs__shm_open(link, &thing_shm, GS__SHM_WRITE, (void **) &t, NULL, &err), -1);
  assert_int_equal(err->status, ELOOP); /* without the flag, no link at all */
  gs_error_release(&err);
  int flags = GS__SHM_WRITE | GS__SHM_PROC_LINK;
  assert_int_equal(gs__shm_open(link, &thing_shm, flags, (void **) &t, NULL, &err), 0);
  assert_int_equal(t->value, 7);
  gs__shm_close(t, &thing_shm);
  close(fd);

  const char *bad[] = { "/etc/passwd",   "/proc/self/fd/0", "/proc/1/fd/",
                        "/proc/1/fdx/2", "/proc/1/fd/2/..", "proc/1/fd/2" };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    assert_false(gs_is_proc_fd_path(bad[i])); /* "self" too: it would name the opener */
  /* Another link, or one to a descriptor that is no regular file (a pipe), fails with ELOOP. */
  int p[2];
  assert_int_equal(pipe(p), 0);
  snprintf(target, sizeof(target), "/proc/%d/fd/%d", (int) getpid(), p[0]);
  for (int i = 0; i < 2; i++) {
    unlink(link);
    assert_int_equal(symlink(i == 0 ? "/etc/passwd" : target, link), 0);
    errno = 0;
    assert_int_equal(gs_open_nofollow_but_proc_fd(link, O_RDONLY | O_NONBLOCK), -1);
    assert_int_equal(errno, ELOOP);
  }
  close(p[0]);
  close(p[1]);
  unlink(link);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_create_then_open_share_one_file),
    cmocka_unit_test(test_exclusive_create_of_an_existing_file_says_eexist),
    cmocka_unit_test(test_bad_files_are_refused_with_what_is_wrong),
    cmocka_unit_test(test_wait_sees_a_creator_finish),
    cmocka_unit_test(test_only_a_link_to_a_proc_fd_of_a_regular_file_is_followed),
  };
  return cmocka_run_group_tests(tests, gs_test_dir_setup, gs_test_dir_teardown);
}
