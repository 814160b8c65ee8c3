/* Unit tests for the daemon's sampling of a tenant's ledger (daemon/tenant-read.c): each
 * reading gives the head and the live slots' processes, including slots claimed since the last
 * reading; the resume block (the tenant's resume waits) is read while the tenant is not running
 * and for 10 readings after, else at every 10th, so a wait counted late still shows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <unistd.h>

#include <gpuslice/limits.h>
#include <gpuslice/proc.h>
#include <gpuslice/tenant-ledger.h>

#include "daemon.h"
#include "temp-dir.h"

struct fixture {
  struct gs_ledger *l;
  struct gs_limits lim;
  struct tenant t;
  struct gs_ledger_pid v[GS_LEDGER_MAX_PROCS];
  struct ledger_procs procs;
};

static int setup(void **state)
{
  static struct fixture f;
  memset(&f, 0, sizeof(f));
  struct gs_ledger_spec spec = { .name = "sampled", .labels = "" };
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    spec.limit_bytes[g] = GS_LIMIT_NONE;
  gs_error_t err = NULL;
  if (gs_ledger_create(gs_test_dir, &spec, &f.l, &err) < 0)
    return -1;
  snprintf(f.t.name, sizeof(f.t.name), "sampled");
  snprintf(f.t.ledger_dir, sizeof(f.t.ledger_dir), "%s", gs_test_dir);
  f.t.uid = geteuid();
  f.t.ledger_fd = -1;
  f.t.limits = &f.lim;
  atomic_store(&f.lim.run_state, GS_RUN_RUNNING);
  f.procs = (struct ledger_procs){ f.v, 0 };
  *state = &f;
  return 0;
}

static int teardown(void **state)
{
  struct fixture *f = *state;
  close(f->t.ledger_fd);
  gs_ledger_detach(f->l);
  gs_ledger_remove(gs_test_dir, "sampled", NULL);
  return 0;
}

static uint64_t reread_waits(struct fixture *f)
{
  struct gs_ledger_copy c;
  assert_int_equal(tenant_reread(&f->t, &c, &f->procs), 0);
  return f->t.sus.asked.waits;
}

static void test_each_reading_names_the_live_slots_claimed_since_the_last(void **state)
{
  struct fixture *f = *state;
  struct gs_ledger_copy c;
  assert_int_equal(tenant_reread(&f->t, &c, &f->procs), 0);
  assert_int_equal(f->procs.n, 0);
  struct gs_ledger_proc *p = gs_ledger_claim(f->l, getpid(), gs_proc_start_time(getpid()));
  assert_non_null(p);
  assert_int_equal(tenant_reread(&f->t, &c, &f->procs), 0); /* read past the last count */
  assert_int_equal(f->procs.n, 1);
  assert_int_equal(f->v[0].pid, getpid());
  struct gs_ledger_proc *q = gs_ledger_claim(f->l, getppid(), gs_proc_start_time(getppid()));
  assert_non_null(q);
  assert_int_equal(tenant_reread(&f->t, &c, &f->procs), 0);
  assert_int_equal(f->procs.n, 2);
  assert_int_equal(f->v[1].pid, getppid());
  assert_int_equal(tenant_reread(&f->t, &c, &f->procs), 0); /* both in the one read now */
  assert_int_equal(f->procs.n, 2);
  assert_int_equal(f->t.slots_used, 2);
  gs_ledger_unclaim(f->l, q);
  gs_ledger_unclaim(f->l, p);
}

static void test_resume_waits_show_at_once_after_a_suspension_else_within_ten(void **state)
{
  struct fixture *f = *state;
  assert_int_equal(reread_waits(f), 0); /* the first reading, checked, takes everything */
  /* Running: a wait counted now shows within 10 readings, not at the next. */
  gs_ledger_resume_waited(f->l, 1000);
  int seen_at = 0;
  for (int i = 1; i <= 10 && !seen_at; i++)
    seen_at = reread_waits(f) == 1 ? i : 0;
  assert_true(seen_at > 1 && seen_at <= 10);
  /* Suspended: read at every reading, and for 10 after it runs again. */
  atomic_store(&f->lim.run_state, GS_RUN_SUSPENDED);
  gs_ledger_resume_waited(f->l, 1000);
  assert_int_equal(reread_waits(f), 2);
  atomic_store(&f->lim.run_state, GS_RUN_RUNNING);
  for (uint64_t i = 3; i < 13; i++) {
    gs_ledger_resume_waited(f->l, 1000);
    assert_int_equal(reread_waits(f), i);
  }
  gs_ledger_resume_waited(f->l, 1000); /* the 11th: back to every 10th */
  assert_int_equal(reread_waits(f), 12);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_each_reading_names_the_live_slots_claimed_since_the_last,
                                    setup, teardown),
    cmocka_unit_test_setup_teardown(
      test_resume_waits_show_at_once_after_a_suspension_else_within_ten, setup, teardown),
  };
  return cmocka_run_group_tests(tests, gs_test_dir_setup, gs_test_dir_teardown);
}
