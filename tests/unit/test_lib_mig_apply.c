/* Applying MIG layouts (lib/mig-layout.c, lib/mig-apply.c): reading layouts against the
 * built-in table (unknown profiles, layouts that do not fit, malformed items refused), the
 * steps from one layout to another in NVIDIA's order keeping the instances that stay, and a
 * run that fails at any step rolled back to the layout it started from, over a fake backend
 * that keeps a GPU's state the way a driver does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <gpuslice/mig-apply.h>

static struct gs_mig_table *table;

static int setup(void **state)
{
  gs_error_t err = NULL;
  (void) state;
  return gs_mig_table_default(&table, &err);
}

static int teardown(void **state)
{
  (void) state;
  gs_mig_table_free(table);
  return 0;
}

static struct gs_mig_target parse_ok(const char *text)
{
  struct gs_mig_target t;
  gs_error_t err = NULL;
  if (gs_mig_layout_parse(table, "h100-80gb", text, &t, &err) < 0)
    fail_msg("'%s': %s", text, err->msg);
  return t;
}

static void test_layouts_are_read_sorted_and_written_back(void **state)
{
  (void) state;
  char buf[256];
  struct gs_mig_target t = parse_ok("1g.10gb@6, 2g.20gb@4 2g.20gb@0  2g.20gb@2");
  assert_int_equal(t.n, 4);
  assert_false(t.off);
  gs_mig_layout_format(&t, buf, sizeof(buf));
  assert_string_equal(buf, "2g.20gb@0 2g.20gb@2 2g.20gb@4 1g.10gb@6");
  t = parse_ok("off");
  assert_true(t.off);
  gs_mig_layout_format(&t, buf, sizeof(buf));
  assert_string_equal(buf, "off");
  t = parse_ok("  ");
  assert_false(t.off);
  assert_int_equal(t.n, 0);
}

static void test_bad_layouts_say_what_is_wrong(void **state)
{
  (void) state;
  static const struct {
    const char *text, *says;
  } cases[] = {
    { "1g.5gb@0", "no MIG profile '1g.5gb'" },
    { "1g.10gb", "want PROFILE@START" },
    { "1g.10gb@x", "want PROFILE@START" },
    { "1g.10gb@10", "want PROFILE@START" },
    { "3g.40gb@2", "3g.40gb may not start at memory position 2" },
    { "3g.40gb@0 2g.20gb@2", "overlaps" },
    { "4g.40gb@0 3g.40gb@4 1g.10gb@6", "overlaps" },
    { "1g.10gb+me@0 1g.10gb+me@1", "2 instances of 1g.10gb+me, at most 1" },
    { "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 1g.10gb@4 1g.10gb@5 1g.10gb@6 1g.10gb@7",
      "more than 7" },
    { "off 1g.10gb@0", "want PROFILE@START" },
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct gs_mig_target t;
    gs_error_t err = NULL;
    if (gs_mig_layout_parse(table, "h100-80gb", cases[i].text, &t, &err) == 0)
      fail_msg("'%s' was taken", cases[i].text);
    if (!strstr(err->msg, cases[i].says))
      fail_msg("'%s': '%s' does not say '%s'", cases[i].text, err->msg, cases[i].says);
    assert_null(strchr(err->msg, '\n'));
    gs_error_release(&err);
  }
}

/* ---- a GPU the way a driver keeps it ---- */

struct fake {
  struct gs_mig_gpu g;
  int calls, fail_at; /* the fail_at-th step fails (1-based), 0: none */
  int fail_from;      /* every step from this one fails: a rollback that cannot finish */
  char log[64][80];
};

static struct gs_mig_live *fake_at(struct fake *f, int start)
{
  for (int i = 0; i < f->g.n; i++)
    if (f->g.inst[i].start == start)
      return &f->g.inst[i];
  return NULL;
}

static int fake_change(struct fake *f, const struct gs_mig_step *s, gs_error_t *err)
{
  struct gs_mig_live *in = fake_at(f, s->start);
  switch (s->kind) {
  case GS_MIG_MODE_ON: f->g.mode = true; return 0;
  case GS_MIG_MODE_OFF:
    if (f->g.n)
      return gs_make_error(err, 0, "In use");
    f->g.mode = false;
    return 0;
  case GS_MIG_CREATE_GI:
    if (!f->g.mode || in)
      return gs_make_error(err, 0, "Insufficient Resources");
    in = &f->g.inst[f->g.n++];
    memset(in, 0, sizeof(*in));
    snprintf(in->profile, sizeof(in->profile), "%s", s->profile);
    in->start = s->start;
    return 0;
  case GS_MIG_CREATE_CI:
    if (!in)
      return gs_make_error(err, 0, "no GPU instance");
    for (int c = 0; c < s->nci; c++)
      in->ci_slices[in->nci++] = s->ci_slices[c];
    return 0;
  case GS_MIG_DESTROY_CI:
    if (!in)
      return gs_make_error(err, 0, "no GPU instance");
    in->nci = 0;
    return 0;
  case GS_MIG_DESTROY_GI:
    if (!in || in->nci)
      return gs_make_error(err, 0, "In use");
    *in = f->g.inst[--f->g.n];
    return 0;
  }
  return -1;
}

static int cmp_start(const void *a, const void *b)
{
  return ((const struct gs_mig_live *) a)->start - ((const struct gs_mig_live *) b)->start;
}

static int fake_step(void *ctx, const struct gs_mig_step *s, gs_error_t *err)
{
  struct fake *f = ctx;
  int n = ++f->calls;
  gs_mig_step_text(s, f->log[(n - 1) % 64], sizeof(f->log[0]));
  if (n == f->fail_at || (f->fail_from && n >= f->fail_from))
    return gs_make_error(err, 0, "Unknown Error");
  int r = fake_change(f, s, err);
  qsort(f->g.inst, (size_t) f->g.n, sizeof(f->g.inst[0]), cmp_start);
  return r;
}

static int fake_read(void *ctx, struct gs_mig_gpu *g, gs_error_t *err)
{
  (void) err;
  *g = ((struct fake *) ctx)->g;
  return 0;
}

/* A GPU holding `layout` (each instance with one full compute instance), or MIG off. */
static void fake_init(struct fake *f, const char *layout)
{
  struct gs_mig_target t = parse_ok(layout);
  memset(f, 0, sizeof(*f));
  f->g.capable = true;
  f->g.mode = !t.off;
  for (int i = 0; i < t.n; i++) {
    struct gs_mig_live *in = &f->g.inst[f->g.n++];
    snprintf(in->profile, sizeof(in->profile), "%s", t.inst[i].p->name);
    in->start = t.inst[i].start;
    in->nci = 1;
    in->ci_slices[0] = t.inst[i].p->compute_slices;
  }
}

static void layout_of(const struct fake *f, char *buf, size_t len)
{
  gs_mig_gpu_layout(&f->g, buf, len);
}

static void plan_for(const struct fake *f, const char *to, struct gs_mig_plan *plan)
{
  struct gs_mig_target t = parse_ok(to);
  gs_mig_plan_steps(&f->g, &t, plan);
}

static void assert_steps(const struct gs_mig_plan *plan, const char *const *want, int n)
{
  char text[128];
  assert_int_equal(plan->n, n);
  for (int i = 0; i < n; i++) {
    gs_mig_step_text(&plan->step[i], text, sizeof(text));
    assert_string_equal(text, want[i]);
  }
}

static void test_from_mig_off_mode_first_then_gpu_instances_then_compute_instances(void **state)
{
  (void) state;
  struct fake f;
  struct gs_mig_plan plan;
  fake_init(&f, "off");
  plan_for(&f, "2g.20gb@0 2g.20gb@2 2g.20gb@4 1g.10gb@6", &plan);
  static const char *const want[] = {
    "turn MIG mode on",
    "create 2g.20gb@0",
    "create 2g.20gb@2",
    "create 2g.20gb@4",
    "create 1g.10gb@6",
    "create the compute instance of 2g.20gb@0",
    "create the compute instance of 2g.20gb@2",
    "create the compute instance of 2g.20gb@4",
    "create the compute instance of 1g.10gb@6",
  };
  assert_steps(&plan, want, 9);
  assert_true(plan.whole_gpu);
  assert_int_equal(plan.step[5].nci, 1);
  assert_int_equal(plan.step[5].ci_slices[0], 2);
}

static void test_a_change_keeps_what_stays_and_destroys_compute_instances_first(void **state)
{
  (void) state;
  struct fake f;
  struct gs_mig_plan plan;
  fake_init(&f, "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4");
  f.g.inst[4].npids = 1;
  f.g.inst[4].pids[0] = 4242;
  f.g.inst[0].npids = 1;
  f.g.inst[0].pids[0] = 1111;
  plan_for(&f, "1g.10gb@0 1g.10gb@1 2g.20gb@2 3g.40gb@4", &plan);
  static const char *const want[] = {
    "destroy the compute instances of 1g.10gb@2",
    "destroy the compute instances of 1g.10gb@3",
    "destroy 1g.10gb@2",
    "destroy 1g.10gb@3",
    "create 2g.20gb@2",
    "create the compute instance of 2g.20gb@2",
  };
  assert_steps(&plan, want, 6);
  assert_false(plan.whole_gpu);
  assert_int_equal(plan.ntaken, 2);
  pid_t pids[8];
  assert_int_equal(gs_mig_plan_pids(&f.g, &plan, pids, 8), 0); /* nobody on 1g@2 or 1g@3 */
  plan_for(&f, "off", &plan);
  assert_true(plan.whole_gpu);
  assert_int_equal(gs_mig_plan_pids(&f.g, &plan, pids, 8), 2);
  char last[64];
  gs_mig_step_text(&plan.step[plan.n - 1], last, sizeof(last));
  assert_string_equal(last, "turn MIG mode off");
  plan_for(&f, "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4", &plan);
  assert_int_equal(plan.n, 0);
}

static void test_a_kept_instance_split_into_compute_instances_gets_one_again(void **state)
{
  (void) state;
  struct fake f;
  struct gs_mig_plan plan;
  fake_init(&f, "3g.40gb@4");
  f.g.inst[0].nci = 3;
  f.g.inst[0].ci_slices[0] = f.g.inst[0].ci_slices[1] = f.g.inst[0].ci_slices[2] = 1;
  plan_for(&f, "3g.40gb@4", &plan);
  static const char *const want[] = { "destroy the compute instances of 3g.40gb@4",
                                      "create the compute instance of 3g.40gb@4" };
  assert_steps(&plan, want, 2);
  assert_int_equal(plan.ntaken, 1);
}

static void test_a_run_applies_every_step(void **state)
{
  (void) state;
  struct fake f;
  struct gs_mig_plan plan;
  struct gs_mig_ops ops = { &f, fake_read, fake_step };
  gs_error_t err = NULL;
  char buf[256];
  fake_init(&f, "3g.40gb@0 3g.40gb@4");
  struct gs_mig_gpu start = f.g;
  plan_for(&f, "2g.20gb@0 2g.20gb@2 2g.20gb@4 1g.10gb@6", &plan);
  assert_int_equal(gs_mig_apply(&ops, &start, &plan, &err), 0);
  layout_of(&f, buf, sizeof(buf));
  assert_string_equal(buf, "2g.20gb@0 2g.20gb@2 2g.20gb@4 1g.10gb@6");
}

/* Whatever step fails, the GPU ends with the layout it started with. */
static void test_a_run_that_fails_at_any_step_rolls_back_to_where_it_started(void **state)
{
  (void) state;
  static const char *const from[] = { "off", "3g.40gb@0 3g.40gb@4",
                                      "1g.10gb@0 2g.20gb@2 3g.40gb@4" };
  static const char *const to[] = { "2g.20gb@0 2g.20gb@2 2g.20gb@4 1g.10gb@6", "off", "7g.80gb@0" };
  for (size_t k = 0; k < sizeof(from) / sizeof(from[0]); k++) {
    struct fake f;
    struct gs_mig_plan plan;
    fake_init(&f, from[k]);
    plan_for(&f, to[k], &plan);
    assert_true(plan.n > 2);
    for (int fail = 1; fail <= plan.n; fail++) {
      struct gs_mig_ops ops = { &f, fake_read, fake_step };
      gs_error_t err = NULL;
      char was[256], is[256];
      fake_init(&f, from[k]);
      struct gs_mig_gpu start = f.g;
      layout_of(&f, was, sizeof(was));
      f.fail_at = fail;
      assert_int_equal(gs_mig_apply(&ops, &start, &plan, &err), -1);
      layout_of(&f, is, sizeof(is));
      if (strcmp(is, was) != 0)
        fail_msg("%s -> %s failing at step %d: left '%s'", from[k], to[k], fail, is);
      for (int i = 0; i < f.g.n; i++)
        assert_int_equal(f.g.inst[i].nci, 1);
      assert_non_null(strstr(err->msg, "rolled back to"));
      assert_non_null(strstr(err->msg, "Unknown Error"));
      gs_error_release(&err);
    }
  }
}

static void test_a_rollback_that_cannot_finish_says_so(void **state)
{
  (void) state;
  struct fake f;
  struct gs_mig_plan plan;
  struct gs_mig_ops ops = { &f, fake_read, fake_step };
  gs_error_t err = NULL;
  fake_init(&f, "3g.40gb@0 3g.40gb@4");
  struct gs_mig_gpu start = f.g;
  plan_for(&f, "7g.80gb@0", &plan);
  f.fail_from = 4; /* the 7g cannot be made, and nothing after it works either */
  assert_int_equal(gs_mig_apply(&ops, &start, &plan, &err), -1);
  assert_non_null(
    strstr(err->msg, "rollback incomplete: the GPU has '3g.40gb@4', it had '3g.40gb@0 3g.40gb@4'"));
  gs_error_release(&err);
}

/* ---- pending requests ---- */

static const struct gs_mig_profile *prof(const char *name)
{
  gs_error_t err = NULL;
  const struct gs_mig_profile *p = gs_mig_profile_find(table, "h100-80gb", name, &err);
  if (!p)
    fail_msg("%s", err->msg);
  return p;
}

static struct gs_mig_pending pending_for(const struct fake *f, const char *const *names, int n)
{
  const struct gs_mig_profile *req[64];
  struct gs_mig_pending out;
  gs_error_t err = NULL;
  for (int i = 0; i < n; i++)
    req[i] = prof(names[i]);
  if (gs_mig_plan_pending(table, "h100-80gb", &f->g, req, n, &out, &err) < 0)
    fail_msg("%s", err->msg);
  return out;
}

static void busy(struct fake *f, int start)
{
  struct gs_mig_live *in = fake_at(f, start);
  assert_non_null(in);
  if (!in)
    return;
  in->npids = 1;
  in->pids[0] = 4242;
}

static void test_pending_fills_the_free_space_around_an_instance_in_use(void **state)
{
  (void) state;
  struct fake f;
  char buf[256];
  fake_init(&f, "1g.10gb@0 1g.10gb@1 3g.40gb@4");
  busy(&f, 4);
  static const char *const four[] = { "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb" };
  struct gs_mig_pending p = pending_for(&f, four, 4);
  gs_mig_layout_format(&p.target, buf, sizeof(buf));
  assert_string_equal(buf, "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4");
  assert_int_equal(p.placed_now, 2);
  assert_int_equal(p.placed, 4);
  assert_int_equal(p.nkept, 3);
  /* Two 3g: only one fits beside the one in use; the idle 1g go for it. */
  static const char *const big[] = { "3g.40gb", "3g.40gb" };
  p = pending_for(&f, big, 2);
  gs_mig_layout_format(&p.target, buf, sizeof(buf));
  assert_string_equal(buf, "3g.40gb@0 3g.40gb@4");
  assert_int_equal(p.placed_now, 0);
  assert_int_equal(p.placed, 1);
  assert_true(p.served[0] && !p.served[1]);
}

static void test_pending_keeps_what_it_can_and_a_busy_gpu_without_mig_stays_so(void **state)
{
  (void) state;
  struct fake f;
  char buf[256];
  fake_init(&f, "2g.20gb@0 2g.20gb@2 2g.20gb@4 1g.10gb@6");
  static const char *const one[] = { "1g.10gb" };
  struct gs_mig_pending p = pending_for(&f, one, 1);
  gs_mig_layout_format(&p.target, buf, sizeof(buf));
  assert_string_equal(buf,
                      "2g.20gb@0 2g.20gb@2 2g.20gb@4 1g.10gb@6"); /* served as it is: no change */
  assert_int_equal(p.placed_now, 1);
  fake_init(&f, "off");
  f.g.npids = 1;
  p = pending_for(&f, one, 1);
  assert_true(p.target.off);
  assert_int_equal(p.placed, 0);
}

static unsigned lcg(unsigned *seed)
{
  *seed = *seed * 1103515245u + 12345u;
  return (*seed >> 16) & 0x7fff;
}

/* Over many GPUs, instances in use and request lists: the proposal is a valid layout, keeps
 * every instance in use where it is, and serves at least as many requests as the layout now. */
static void test_pending_never_destroys_an_instance_in_use_and_serves_at_least_as_many(void **state)
{
  (void) state;
  static const char *const names[] = { "1g.10gb", "1g.20gb", "2g.20gb",
                                       "3g.40gb", "4g.40gb", "7g.80gb" };
  unsigned seed = 20;
  for (int round = 0; round < 300; round++) {
    const struct gs_mig_profile *list[8], *req[12];
    struct gs_mig_layout l;
    struct fake f;
    gs_error_t err = NULL;
    int n = 1 + (int) (lcg(&seed) % 5), nreq = 1 + (int) (lcg(&seed) % 10);
    for (int i = 0; i < n; i++)
      list[i] = prof(names[lcg(&seed) % 6]);
    assert_int_equal(gs_mig_plan_profiles(list, n, &l, &err), 0);
    memset(&f, 0, sizeof(f));
    f.g.capable = f.g.mode = true;
    for (int i = 0; i < l.n && l.inst[i].gpu == 0; i++) {
      struct gs_mig_live *in = &f.g.inst[f.g.n++];
      snprintf(in->profile, sizeof(in->profile), "%s", l.inst[i].p->name);
      in->start = l.inst[i].start;
      in->nci = 1;
      in->ci_slices[0] = l.inst[i].p->compute_slices;
      in->npids = lcg(&seed) % 3 == 0;
    }
    gs_mig_layout_free(&l);
    for (int i = 0; i < nreq; i++)
      req[i] = prof(names[lcg(&seed) % 4]);
    struct gs_mig_pending p;
    assert_int_equal(gs_mig_plan_pending(table, "h100-80gb", &f.g, req, nreq, &p, &err), 0);
    assert_int_equal(gs_mig_gpu_validate(p.target.inst, p.target.n, &err), 0);
    assert_true(p.placed >= p.placed_now);
    for (int i = 0; i < f.g.n; i++) {
      bool kept = false;
      for (int k = 0; k < p.target.n; k++)
        kept |= p.target.inst[k].start == f.g.inst[i].start &&
          strcmp(p.target.inst[k].p->name, f.g.inst[i].profile) == 0;
      if (f.g.inst[i].npids && !kept)
        fail_msg("round %d: %s@%d is in use and was not kept", round, f.g.inst[i].profile,
                 f.g.inst[i].start);
    }
    /* Applying it takes nothing from an instance in use. */
    struct gs_mig_plan plan;
    gs_mig_plan_steps(&f.g, &p.target, &plan);
    pid_t pids[8];
    assert_int_equal(gs_mig_plan_pids(&f.g, &plan, pids, 8), 0);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_layouts_are_read_sorted_and_written_back),
    cmocka_unit_test(test_bad_layouts_say_what_is_wrong),
    cmocka_unit_test(test_from_mig_off_mode_first_then_gpu_instances_then_compute_instances),
    cmocka_unit_test(test_a_change_keeps_what_stays_and_destroys_compute_instances_first),
    cmocka_unit_test(test_a_kept_instance_split_into_compute_instances_gets_one_again),
    cmocka_unit_test(test_a_run_applies_every_step),
    cmocka_unit_test(test_a_run_that_fails_at_any_step_rolls_back_to_where_it_started),
    cmocka_unit_test(test_a_rollback_that_cannot_finish_says_so),
    cmocka_unit_test(test_pending_fills_the_free_space_around_an_instance_in_use),
    cmocka_unit_test(test_pending_keeps_what_it_can_and_a_busy_gpu_without_mig_stays_so),
    cmocka_unit_test(test_pending_never_destroys_an_instance_in_use_and_serves_at_least_as_many),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
