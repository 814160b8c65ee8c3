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

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_create_then_open_share_one_file),
    cmocka_unit_test(test_exclusive_create_of_an_existing_file_says_eexist),
    cmocka_unit_test(test_bad_files_are_refused_with_what_is_wrong),
    cmocka_unit_test(test_wait_sees_a_creator_finish),
  };
  return cmocka_run_group_tests(tests, gs_test_dir_setup, gs_test_dir_teardown);
}
