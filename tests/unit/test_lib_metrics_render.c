/* gs_metrics_render: the exact text for a small snapshot (dcgm-exporter's series and labels,
 * the tenant series, the health series), label value escaping, label name sanitizing, and
 * that sanitized names never collide. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <gpuslice.h>
#include <gpuslice/metrics.h>

static struct gs_snap_gpu one_gpu(void)
{
  struct gs_snap_gpu g = {
    .index = 0,
    .fb_total_bytes = 80ull << 30,
    .fb_used_bytes = (3ull << 30) + 123,
    .fb_free_bytes = (77ull << 30) - 123,
    .util_pct = 42,
    .mem_util_pct = 21,
    .power_mw = 61250,
    .temp_c = 35,
    .sm_clock_mhz = 1980,
    .mem_clock_mhz = 2619,
  };
  strcpy(g.uuid, "GPU-11111111-2222-3333-4444-555555555555");
  strcpy(g.pci_bus_id, "00000000:3B:00.0");
  strcpy(g.device, "nvidia0");
  strcpy(g.model, "NVIDIA H100 80GB HBM3");
  return g;
}

static struct gs_snap_tenant tenant(const char *name, int nlabels, const char *kv[][2])
{
  struct gs_snap_tenant t = { .gpu = 0, .vram_limit_bytes = UINT64_MAX };
  snprintf(t.name, sizeof(t.name), "%s", name);
  t.nlabels = nlabels;
  for (int i = 0; i < nlabels; i++) {
    snprintf(t.labels[i].key, sizeof(t.labels[i].key), "%s", kv[i][0]);
    snprintf(t.labels[i].value, sizeof(t.labels[i].value), "%s", kv[i][1]);
  }
  return t;
}

static struct gs_snapshot snapshot(struct gs_snap_gpu *g, int ngpus, struct gs_snap_tenant *t,
                                   int ntenants)
{
  struct gs_snapshot s = { .ngpus = ngpus, .gpus = g, .ntenants = ntenants, .tenants = t };
  strcpy(s.hostname, "node1");
  strcpy(s.driver_version, "550.54.15");
  return s;
}

static char *render(const struct gs_snapshot *s, const struct gs_metrics_health *h)
{
  char *out = NULL;
  size_t len = 0;
  gs_error_t err = NULL;
  assert_int_equal(gs_metrics_render(s, h, &out, &len, &err), 0);
  assert_null(err);
  assert_int_equal(len, strlen(out));
  return out;
}

/* The sample lines of out that start with prefix, joined with '\n'. */
static char *lines_starting(const char *out, const char *prefix)
{
  char *res = calloc(1, strlen(out) + 1);
  for (const char *p = out; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t) (nl - p + 1) : strlen(p);
    if (strncmp(p, prefix, strlen(prefix)) == 0)
      strncat(res, p, n);
    p += n;
  }
  return res;
}

#define GPU_LABELS                                                                               \
  "gpu=\"0\",UUID=\"GPU-11111111-2222-3333-4444-555555555555\",pci_bus_id=\"00000000:3B:00.0\"," \
  "device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node1\","                   \
  "DCGM_FI_DRIVER_VERSION=\"550.54.15\""

static const char expected_gpu_section[] =
  "# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).\n"
  "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
  "DCGM_FI_DEV_SM_CLOCK{" GPU_LABELS "} 1980\n"
  "# HELP DCGM_FI_DEV_MEM_CLOCK Memory clock frequency (in MHz).\n"
  "# TYPE DCGM_FI_DEV_MEM_CLOCK gauge\n"
  "DCGM_FI_DEV_MEM_CLOCK{" GPU_LABELS "} 2619\n"
  "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
  "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
  "DCGM_FI_DEV_GPU_TEMP{" GPU_LABELS "} 35\n"
  "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
  "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
  "DCGM_FI_DEV_POWER_USAGE{" GPU_LABELS "} 61.25\n"
  "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
  "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
  "DCGM_FI_DEV_GPU_UTIL{" GPU_LABELS "} 42\n"
  "# HELP DCGM_FI_DEV_MEM_COPY_UTIL Memory utilization (in %).\n"
  "# TYPE DCGM_FI_DEV_MEM_COPY_UTIL gauge\n"
  "DCGM_FI_DEV_MEM_COPY_UTIL{" GPU_LABELS "} 21\n"
  "# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).\n"
  "# TYPE DCGM_FI_DEV_FB_FREE gauge\n"
  "DCGM_FI_DEV_FB_FREE{" GPU_LABELS "} 78847\n"
  "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n"
  "# TYPE DCGM_FI_DEV_FB_USED gauge\n"
  "DCGM_FI_DEV_FB_USED{" GPU_LABELS "} 3072\n";

static void test_gpu_series_match_dcgm_exporter_names_labels_and_units(void **state)
{
  (void) state;
  struct gs_snap_gpu g = one_gpu();
  struct gs_snapshot s = snapshot(&g, 1, NULL, 0);
  char *out = render(&s, NULL);
  assert_memory_equal(out, expected_gpu_section, sizeof(expected_gpu_section) - 1);
  free(out);
}

/* A GPU that gives every reading of dcgm-exporter's default set. */
static struct gs_snap_gpu full_gpu(void)
{
  struct gs_snap_gpu g = one_gpu();
  g.have = ~0u;
  g.fb_used_bytes = 3ull << 30;
  g.fb_reserved_bytes = (509ull << 20) + 7;
  g.fb_free_bytes = g.fb_total_bytes - g.fb_used_bytes - g.fb_reserved_bytes;
  g.mem_temp_c = 39;
  g.energy_mj = 123456789012ull;
  g.pcie_replays = 3;
  g.enc_util_pct = 0;
  g.dec_util_pct = 7;
  g.xid_last = 79;
  g.nvlink_kib = 4096;
  g.remapped_corr = 2;
  g.remapped_unc = 1;
  g.remap_failure = 0;
  g.prof_gr_active = 0.5;
  g.prof_tensor_active = 0.125;
  g.prof_dram_active = 0.25;
  g.prof_pcie_tx_bps = 1048576;
  g.prof_pcie_rx_bps = 0;
  return g;
}

static const char expected_full_lines[] =
  "DCGM_FI_DEV_MEMORY_TEMP{" GPU_LABELS "} 39\n"
  "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{" GPU_LABELS "} 123456789012\n"
  "DCGM_FI_DEV_PCIE_REPLAY_COUNTER{" GPU_LABELS "} 3\n"
  "DCGM_FI_DEV_ENC_UTIL{" GPU_LABELS "} 0\n"
  "DCGM_FI_DEV_DEC_UTIL{" GPU_LABELS "} 7\n"
  "DCGM_FI_DEV_XID_ERRORS{" GPU_LABELS
  ",err_code=\"79\",err_msg=\"GPU has fallen off the bus\"} 79\n"
  "DCGM_FI_DEV_FB_FREE{" GPU_LABELS "} 78338\n"
  "DCGM_FI_DEV_FB_USED{" GPU_LABELS "} 3072\n"
  "DCGM_FI_DEV_FB_RESERVED{" GPU_LABELS "} 509\n"
  "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{" GPU_LABELS "} 4096\n"
  "DCGM_FI_DEV_VGPU_LICENSE_STATUS{" GPU_LABELS "} 0\n"
  "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{" GPU_LABELS "} 1\n"
  "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{" GPU_LABELS "} 2\n"
  "DCGM_FI_DEV_ROW_REMAP_FAILURE{" GPU_LABELS "} 0\n"
  "DCGM_FI_PROF_GR_ENGINE_ACTIVE{" GPU_LABELS "} 0.5\n"
  "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{" GPU_LABELS "} 0.125\n"
  "DCGM_FI_PROF_DRAM_ACTIVE{" GPU_LABELS "} 0.25\n"
  "DCGM_FI_PROF_PCIE_TX_BYTES{" GPU_LABELS "} 1048576\n"
  "DCGM_FI_PROF_PCIE_RX_BYTES{" GPU_LABELS "} 0\n";

/* The lines of out for the series in expected_full_lines, in the renderer's order. */
static char *new_field_lines(const char *out)
{
  static const char *names[] = { "DCGM_FI_DEV_MEMORY_TEMP{",
                                 "DCGM_FI_DEV_TOTAL_ENERGY",
                                 "DCGM_FI_DEV_PCIE_REPLAY",
                                 "DCGM_FI_DEV_ENC_UTIL{",
                                 "DCGM_FI_DEV_DEC_UTIL{",
                                 "DCGM_FI_DEV_XID_ERRORS{",
                                 "DCGM_FI_DEV_FB_",
                                 "DCGM_FI_DEV_NVLINK",
                                 "DCGM_FI_DEV_VGPU",
                                 "DCGM_FI_DEV_UNCORRECTABLE",
                                 "DCGM_FI_DEV_CORRECTABLE",
                                 "DCGM_FI_DEV_ROW_REMAP",
                                 "DCGM_FI_PROF_" };
  char *res = calloc(1, strlen(out) + 1);
  for (const char *p = out; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t) (nl - p + 1) : strlen(p);
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
      if (strncmp(p, names[k], strlen(names[k])) == 0) {
        strncat(res, p, n);
        break;
      }
    p += n;
  }
  return res;
}

static void test_full_field_set_has_dcgm_values_units_and_xid_labels(void **state)
{
  (void) state;
  struct gs_snap_gpu g = full_gpu();
  struct gs_snapshot s = snapshot(&g, 1, NULL, 0);
  char *out = render(&s, NULL);
  char *got = new_field_lines(out);
  assert_string_equal(got, expected_full_lines);
  assert_non_null(strstr(out,
                         "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.\n"
                         "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n"));
  assert_non_null(strstr(out, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"));
  assert_non_null(
    strstr(out,
           "# HELP DCGM_FI_PROF_PCIE_RX_BYTES The rate of data received over the PCIe bus - "
           "including both protocol headers and data payloads - in bytes per second.\n"));
  free(got);
  free(out);
}

/* A GPU without a reading has no sample for it; a reading no GPU has has no family at all. */
static void test_readings_a_gpu_lacks_have_no_sample_and_no_family(void **state)
{
  (void) state;
  struct gs_snap_gpu g[2] = { full_gpu(), one_gpu() };
  g[1].index = 1;
  g[0].have &= ~(uint32_t) GS_SNAP_HAVE_PROF_GR;
  struct gs_snapshot s = snapshot(g, 2, NULL, 0);
  char *out = render(&s, NULL);
  assert_null(strstr(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"));
  char *temp = lines_starting(out, "DCGM_FI_DEV_MEMORY_TEMP{");
  assert_non_null(strstr(temp, "gpu=\"0\""));
  assert_null(strstr(temp, "gpu=\"1\""));
  char *util = lines_starting(out, "DCGM_FI_DEV_GPU_UTIL{");
  assert_non_null(strstr(util, "gpu=\"1\"")); /* the first seven stay for every GPU */
  free(temp);
  free(util);
  free(out);
}

static void test_xid_texts_are_nvidias_names_and_unknown_otherwise(void **state)
{
  (void) state;
  assert_string_equal(gs_xid_text(0), "No Error");
  assert_string_equal(gs_xid_text(48), "Double Bit ECC Error");
  assert_string_equal(gs_xid_text(79), "GPU has fallen off the bus");
  assert_string_equal(gs_xid_text(1u << 20), "Unknown Error");
}

#define T_LABELS                                                                  \
  "tenant=\"alice\",gpu=\"0\",UUID=\"GPU-11111111-2222-3333-4444-555555555555\"," \
  "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node1\""

static void test_tenant_series_exact_text(void **state)
{
  (void) state;
  struct gs_snap_gpu g = one_gpu();
  const char *kv[][2] = { { "team", "vision" } };
  struct gs_snap_tenant t = tenant("alice", 1, kv);
  t.vram_used_bytes = 1u << 30;
  t.vram_limit_bytes = 2u << 30;
  t.compute_share = 0.125;
  t.compute_limit = 0.4;
  t.gpu_ns = 12500000001ull;
  t.throttled_ns = 500000000ull;
  t.vram_over_bytes = 1u << 29;
  t.compute_over = 0.25;
  t.vram_violations = 2;
  t.compute_violations = 1;
  t.idle_seconds = 1800.5;
  struct gs_snapshot s = snapshot(&g, 1, &t, 1);
  char *out = render(&s, NULL);
  char *tenant_part = strstr(out, "# HELP gpuslice_tenant_vram_used_bytes");
  assert_non_null(tenant_part);
  static const char expected[] =
    "# HELP gpuslice_tenant_vram_used_bytes Device memory the tenant holds on this GPU, in "
    "bytes.\n"
    "# TYPE gpuslice_tenant_vram_used_bytes gauge\n"
    "gpuslice_tenant_vram_used_bytes{" T_LABELS ",label_team=\"vision\"} 1073741824\n"
    "# HELP gpuslice_tenant_vram_limit_bytes The tenant's device memory limit on this GPU, in "
    "bytes (absent when unlimited).\n"
    "# TYPE gpuslice_tenant_vram_limit_bytes gauge\n"
    "gpuslice_tenant_vram_limit_bytes{" T_LABELS ",label_team=\"vision\"} 2147483648\n"
    "# HELP gpuslice_tenant_compute_used_ratio Share of this GPU's time the tenant used over the "
    "last sampling window (0 to 1).\n"
    "# TYPE gpuslice_tenant_compute_used_ratio gauge\n"
    "gpuslice_tenant_compute_used_ratio{" T_LABELS ",label_team=\"vision\"} 0.125\n"
    "# HELP gpuslice_tenant_compute_limit_ratio The tenant's compute limit on this GPU as a share "
    "of its time (0 to 1; absent when unlimited).\n"
    "# TYPE gpuslice_tenant_compute_limit_ratio gauge\n"
    "gpuslice_tenant_compute_limit_ratio{" T_LABELS ",label_team=\"vision\"} 0.4\n"
    "# HELP gpuslice_tenant_gpu_seconds_total Device time the tenant's work ran on this GPU, in "
    "seconds.\n"
    "# TYPE gpuslice_tenant_gpu_seconds_total counter\n"
    "gpuslice_tenant_gpu_seconds_total{" T_LABELS ",label_team=\"vision\"} 12.500000001\n"
    "# HELP gpuslice_tenant_throttled_seconds_total Time the tenant waited at its compute "
    "limit on this GPU, in seconds.\n"
    "# TYPE gpuslice_tenant_throttled_seconds_total counter\n"
    "gpuslice_tenant_throttled_seconds_total{" T_LABELS ",label_team=\"vision\"} 0.5\n"
    "# HELP gpuslice_tenant_violation_bytes Device memory NVML counts for the tenant's processes "
    "over its limit on this GPU, in bytes (0 when within it).\n"
    "# TYPE gpuslice_tenant_violation_bytes gauge\n"
    "gpuslice_tenant_violation_bytes{" T_LABELS ",label_team=\"vision\"} 536870912\n"
    "# HELP gpuslice_tenant_violation_compute_ratio Share of this GPU's time NVML counts for the "
    "tenant over its compute limit (0 when within it).\n"
    "# TYPE gpuslice_tenant_violation_compute_ratio gauge\n"
    "gpuslice_tenant_violation_compute_ratio{" T_LABELS ",label_team=\"vision\"} 0.25\n"
    "# HELP gpuslice_tenant_vram_violations_total Device memory violations the daemon found on "
    "this GPU, one per start of an excess.\n"
    "# TYPE gpuslice_tenant_vram_violations_total counter\n"
    "gpuslice_tenant_vram_violations_total{" T_LABELS ",label_team=\"vision\"} 2\n"
    "# HELP gpuslice_tenant_compute_violations_total Compute violations the daemon found on this "
    "GPU, one per start of an excess.\n"
    "# TYPE gpuslice_tenant_compute_violations_total counter\n"
    "gpuslice_tenant_compute_violations_total{" T_LABELS ",label_team=\"vision\"} 1\n"
    "# HELP gpuslice_tenant_idle_seconds Time since the tenant's last GPU activity while it holds "
    "memory, in seconds (0 while active; the tenant's, on each of its GPUs).\n"
    "# TYPE gpuslice_tenant_idle_seconds gauge\n"
    "gpuslice_tenant_idle_seconds{" T_LABELS ",label_team=\"vision\"} 1800.5\n"
    "# HELP gpuslice_tenant_compute_share Deprecated, use gpuslice_tenant_compute_used_ratio (the "
    "same value); removed after gpuslice 0.2.\n"
    "# TYPE gpuslice_tenant_compute_share gauge\n"
    "gpuslice_tenant_compute_share{" T_LABELS ",label_team=\"vision\"} 0.125\n"
    "# HELP gpuslice_tenant_compute_limit Deprecated, use gpuslice_tenant_compute_limit_ratio (the "
    "same value); removed after gpuslice 0.2.\n"
    "# TYPE gpuslice_tenant_compute_limit gauge\n"
    "gpuslice_tenant_compute_limit{" T_LABELS ",label_team=\"vision\"} 0.4\n"
    "# HELP gpuslice_tenant_violation_compute_share Deprecated, use "
    "gpuslice_tenant_violation_compute_ratio (the same value); removed after gpuslice 0.2.\n"
    "# TYPE gpuslice_tenant_violation_compute_share gauge\n"
    "gpuslice_tenant_violation_compute_share{" T_LABELS ",label_team=\"vision\"} 0.25\n";
  assert_string_equal(tenant_part, expected);
  free(out);
}

/* The suspension series: none at all while no tenant was ever suspended (the test above); for
 * a node with one, its rows, and none for the tenants never suspended. */
static void test_suspension_series_only_for_suspended_tenants(void **state)
{
  (void) state;
  struct gs_snap_gpu g = one_gpu();
  struct gs_snap_tenant t[2] = { tenant("sleepy", 0, NULL), tenant("busy", 0, NULL) };
  t[0].run_state = 2; /* GS_RUN_SUSPENDED */
  t[0].suspensions = 2;
  t[0].suspended_bytes = 8ull << 30;
  t[0].suspended_seconds = 90.5;
  t[0].resumes = 1;
  t[0].resume_seconds = 0.25;
  t[0].resume_waits = 3;
  t[0].resume_wait_seconds = 0.75;
  struct gs_snapshot s = snapshot(&g, 1, t, 2);
  char *out = render(&s, NULL);
  static const char *const want[] = {
    "gpuslice_tenant_suspended{tenant=\"sleepy\",gpu=\"0\"",
    "# TYPE gpuslice_tenant_suspended gauge\n",
    "# TYPE gpuslice_tenant_suspended_seconds_total counter\n",
    "# TYPE gpuslice_tenant_resume_seconds gauge\n",
  };
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    assert_non_null(strstr(out, want[i]));
  static const struct {
    const char *series, *value;
  } rows[] = {
    { "gpuslice_tenant_suspended{", "} 1\n" },
    { "gpuslice_tenant_suspended_bytes{", "} 8589934592\n" },
    { "gpuslice_tenant_suspended_seconds_total{", "} 90.5\n" },
    { "gpuslice_tenant_resumes_total{", "} 1\n" },
    { "gpuslice_tenant_resume_seconds{", "} 0.25\n" },
    { "gpuslice_tenant_resume_waits_total{", "} 3\n" },
    { "gpuslice_tenant_resume_wait_seconds_total{", "} 0.75\n" },
  };
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    const char *row = strstr(out, rows[i].series);
    assert_non_null(row);
    assert_non_null(strstr(row, "tenant=\"sleepy\""));
    assert_true(strstr(row, rows[i].value) == strchr(row, '}'));
  }
  /* busy was never suspended: none of its rows is among them (they come before the deprecated
   * names). */
  char *from = strstr(out, "# HELP gpuslice_tenant_suspended "),
       *to = strstr(out, "# HELP gpuslice_tenant_compute_share ");
  assert_true(from && to && from < to);
  *to = '\0';
  assert_null(strstr(from, "tenant=\"busy\""));
  /* Running again, it says 0 and moves nothing; before its first resume, no latency row. */
  t[0].run_state = 0;
  t[0].suspended_bytes = 0;
  t[0].resumes = 0;
  free(out);
  out = render(&s, NULL);
  assert_non_null(strstr(out, "gpuslice_tenant_suspended{tenant=\"sleepy\""));
  assert_null(strstr(out, "gpuslice_tenant_resume_seconds{"));
  assert_non_null(strstr(out, "# TYPE gpuslice_tenant_resume_seconds gauge\n"));
  free(out);
}

static void test_unlimited_tenant_has_no_limit_rows(void **state)
{
  (void) state;
  struct gs_snap_gpu g = one_gpu();
  struct gs_snap_tenant t[2] = { tenant("free", 0, NULL), tenant("capped", 0, NULL) };
  t[1].vram_limit_bytes = 1 << 20;
  t[1].compute_limit = 0.5;
  struct gs_snapshot s = snapshot(&g, 1, t, 2);
  char *out = render(&s, NULL);
  char *vram = lines_starting(out, "gpuslice_tenant_vram_limit_bytes{");
  char *comp = lines_starting(out, "gpuslice_tenant_compute_limit{");
  assert_null(strstr(vram, "tenant=\"free\""));
  assert_non_null(strstr(vram, "tenant=\"capped\""));
  assert_null(strstr(comp, "tenant=\"free\""));
  assert_non_null(strstr(comp, "tenant=\"capped\""));
  /* The used series still has both. */
  char *used = lines_starting(out, "gpuslice_tenant_vram_used_bytes{");
  assert_non_null(strstr(used, "tenant=\"free\""));
  free(vram);
  free(comp);
  free(used);
  free(out);
}

static void test_label_values_are_escaped(void **state)
{
  (void) state;
  struct gs_snap_gpu g = one_gpu();
  const char *kv[][2] = { { "note", "a\"b\\c\nd" } };
  struct gs_snap_tenant t = tenant("x\"y", 1, kv);
  struct gs_snapshot s = snapshot(&g, 1, &t, 1);
  strcpy(g.model, "Model \"Q\"");
  char *out = render(&s, NULL);
  char *used = lines_starting(out, "gpuslice_tenant_vram_used_bytes{");
  assert_string_equal(used,
                      "gpuslice_tenant_vram_used_bytes{tenant=\"x\\\"y\",gpu=\"0\","
                      "UUID=\"GPU-11111111-2222-3333-4444-555555555555\","
                      "modelName=\"Model \\\"Q\\\"\",Hostname=\"node1\","
                      "label_note=\"a\\\"b\\\\c\\nd\"} 0\n");
  assert_non_null(strstr(out, "modelName=\"Model \\\"Q\\\"\""));
  free(used);
  free(out);
}

static void test_invalid_utf8_in_values_becomes_replacement_character(void **state)
{
  (void) state;
  struct gs_snap_gpu g = one_gpu();
  const char *kv[][2] = { { "k", "ok\xc3\xa9|\xff|\xc3|\xed\xa0\x80" } };
  struct gs_snap_tenant t = tenant("t", 1, kv);
  struct gs_snapshot s = snapshot(&g, 1, &t, 1);
  char *out = render(&s, NULL);
  /* é stays; a stray 0xff, a cut sequence and a surrogate each become U+FFFD per byte. */
  assert_non_null(strstr(out,
                         "label_k=\"ok\xc3\xa9|\xef\xbf\xbd|\xef\xbf\xbd|"
                         "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""));
  free(out);
}

static void test_label_keys_are_sanitized(void **state)
{
  (void) state;
  struct gs_snap_gpu g = one_gpu();
  const char *kv[][2] = { { "team.name", "a" },
                          { "9lives", "b" },
                          { "k8s/app-id", "c" },
                          { "", "d" },
                          { "__reserved", "e" } };
  struct gs_snap_tenant t = tenant("t", 5, kv);
  struct gs_snapshot s = snapshot(&g, 1, &t, 1);
  char *out = render(&s, NULL);
  char *used = lines_starting(out, "gpuslice_tenant_vram_used_bytes{");
  assert_non_null(strstr(used,
                         ",label_team_name=\"a\",label_9lives=\"b\",label_k8s_app_id=\"c\","
                         "label_=\"d\",label___reserved=\"e\"}"));
  free(used);
  free(out);
}

/* Every label name in one sample line, checked pairwise for duplicates. */
static void assert_no_duplicate_label_names(const char *line)
{
  char names[64][128];
  int n = 0;
  const char *p = strchr(line, '{') + 1;
  while (*p && *p != '}') {
    const char *eq = strchr(p, '=');
    snprintf(names[n], sizeof(names[n]), "%.*s", (int) (eq - p), p);
    for (int i = 0; i < n; i++)
      assert_string_not_equal(names[i], names[n]);
    n++;
    p = eq + 2; /* past =" */
    while (*p != '"')
      p += *p == '\\' ? 2 : 1;
    p++;
    if (*p == ',')
      p++;
  }
}

static void test_sanitizing_collisions_never_duplicate_label_names(void **state)
{
  (void) state;
  struct gs_snap_gpu g = one_gpu();
  const char *kv[][2] = {
    { "team-a", "1" }, { "team.a", "2" }, { "team_a", "3" }, { "team_a_2", "4" }, { "team a", "5" }
  };
  struct gs_snap_tenant t = tenant("t", 5, kv);
  struct gs_snapshot s = snapshot(&g, 1, &t, 1);
  char *out = render(&s, NULL);
  char *used = lines_starting(out, "gpuslice_tenant_vram_used_bytes{");
  assert_non_null(strstr(used,
                         ",label_team_a=\"1\",label_team_a_2=\"2\",label_team_a_3=\"3\","
                         "label_team_a_2_2=\"4\",label_team_a_4=\"5\"}"));
  assert_no_duplicate_label_names(used);
  free(used);
  free(out);
}

static void test_health_series_and_values(void **state)
{
  (void) state;
  struct gs_snapshot s = snapshot(NULL, 0, NULL, 0);
  struct gs_metrics_health h = { .uptime_s = 12.5,
                                 .samples_total = 12,
                                 .sample_errors_total = 1,
                                 .last_sample_duration_s = 0.000321,
                                 .tenants = 3,
                                 .gpus = 2 };
  char *out = render(&s, &h);
  const char *expect[] = {
    "\ngpuslice_daemon_up 1\n",
    "\ngpuslice_daemon_uptime_seconds 12.5\n",
    "\n# TYPE gpuslice_daemon_samples_total counter\ngpuslice_daemon_samples_total 12\n",
    "\ngpuslice_daemon_sample_errors_total 1\n",
    "\ngpuslice_daemon_last_sample_duration_seconds 0.000321\n",
    "\ngpuslice_daemon_tenants 3\n",
    "\ngpuslice_daemon_gpus 2\n",
  };
  for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++)
    assert_non_null(strstr(out, expect[i]));
  free(out);
}

static void test_without_health_there_are_no_daemon_series(void **state)
{
  (void) state;
  struct gs_snap_gpu g = one_gpu();
  struct gs_snapshot s = snapshot(&g, 1, NULL, 0);
  char *out = render(&s, NULL);
  assert_null(strstr(out, "gpuslice_daemon_"));
  free(out);
}

static void test_empty_hostname_leaves_the_label_out(void **state)
{
  (void) state;
  struct gs_snap_gpu g = one_gpu();
  struct gs_snapshot s = snapshot(&g, 1, NULL, 0);
  s.hostname[0] = '\0';
  char *out = render(&s, NULL);
  assert_null(strstr(out, "Hostname="));
  assert_non_null(strstr(out, "modelName=\"NVIDIA H100 80GB HBM3\",DCGM_FI_DRIVER_VERSION="));
  free(out);
}

static void test_kubernetes_tenant_series_carry_namespace_pod_container(void **state)
{
  (void) state;
  struct gs_snap_gpu g = one_gpu();
  const char *kv[][2] = { { "pod", "p1" }, { "namespace", "ns1" }, { "container", "c1" } };
  struct gs_snap_tenant t[2] = { tenant("k", 3, kv), tenant("plain", 0, NULL) };
  struct gs_snapshot s = snapshot(&g, 1, t, 2);
  char *out = render(&s, NULL);
  assert_non_null(strstr(out,
                         "gpuslice_tenant_vram_used_bytes{tenant=\"k\",gpu=\"0\",UUID=\"GPU-"
                         "11111111-2222-3333-4444-555555555555\",modelName=\"NVIDIA H100 80GB "
                         "HBM3\",Hostname=\"node1\",namespace=\"ns1\",pod=\"p1\",container="
                         "\"c1\",label_pod=\"p1\",label_namespace=\"ns1\",label_container="
                         "\"c1\"} 0\n"));
  /* A tenant that did not come from Kubernetes has none of the three. */
  char *plain = lines_starting(out, "gpuslice_tenant_vram_used_bytes{tenant=\"plain\"");
  assert_non_null(strstr(plain, "Hostname=\"node1\"} 0\n"));
  assert_null(strstr(plain, "namespace="));
  free(plain);
  free(out);
}

static void test_hostname_label_spelling_follows_the_fields(void **state)
{
  (void) state;
  struct gs_snap_gpu g = one_gpu();
  struct gs_snap_tenant t = tenant("t", 0, NULL);
  struct gs_snapshot s = snapshot(&g, 1, &t, 1);
  struct gs_metrics_fields f = *gs_metrics_fields_default();
  f.hostname_lower = true;
  char *out = NULL;
  size_t len = 0;
  gs_error_t err = NULL;
  assert_int_equal(gs_metrics_render_fields(&s, &f, NULL, &out, &len, &err), 0);
  assert_null(strstr(out, "Hostname="));
  assert_non_null(strstr(out, "DCGM_FI_DEV_FB_USED{gpu=\"0\""));
  assert_non_null(strstr(out, "modelName=\"NVIDIA H100 80GB HBM3\",hostname=\"node1\",DCGM_FI"));
  assert_non_null(
    strstr(out,
           "{tenant=\"t\",gpu=\"0\",UUID=\"GPU-11111111-2222-3333-4444-"
           "555555555555\",modelName=\"NVIDIA H100 80GB HBM3\",hostname=\"node1\"} 0\n"));
  free(out);
}

static void test_tenant_on_unknown_gpu_gets_empty_uuid(void **state)
{
  (void) state;
  struct gs_snap_gpu g = one_gpu();
  struct gs_snap_tenant t = tenant("t", 0, NULL);
  t.gpu = 5;
  struct gs_snapshot s = snapshot(&g, 1, &t, 1);
  char *out = render(&s, NULL);
  assert_non_null(
    strstr(out, "{tenant=\"t\",gpu=\"5\",UUID=\"\",modelName=\"\",Hostname=\"node1\"} 0\n"));
  free(out);
}

/* A GPU in MIG mode: its own framebuffer rows stay, and each GPU instance gets rows of its
 * own with dcgm-exporter's GPU_I_PROFILE and GPU_I_ID after modelName; other fields are the
 * GPU's only. */
static void test_mig_instances_get_framebuffer_rows_with_gpu_i_labels(void **state)
{
  (void) state;
  struct gs_snap_gpu g = one_gpu();
  g.nmig = 2;
  strcpy(g.mig[0].profile, "3g.40gb");
  g.mig[0].gi_id = 2;
  g.mig[0].fb_used_bytes = 3ull << 30;
  g.mig[0].fb_free_bytes = 40448ull * 1048576 - (3ull << 30);
  strcpy(g.mig[1].profile, "1g.10gb");
  g.mig[1].gi_id = 7;
  g.mig[1].fb_free_bytes = 9984ull * 1048576;
  struct gs_snapshot s = snapshot(&g, 1, NULL, 0);
  char *out = render(&s, NULL);
  const char *gpu =
    "gpu=\"0\",UUID=\"GPU-11111111-2222-3333-4444-555555555555\",pci_bus_id=\"00000000:3B:00.0\","
    "device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\"";
  char want[2048];
  char *used = lines_starting(out, "DCGM_FI_DEV_FB_USED{");
  snprintf(want, sizeof(want),
           "DCGM_FI_DEV_FB_USED{%s,Hostname=\"node1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 3072\n"
           "DCGM_FI_DEV_FB_USED{%s,GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"2\",Hostname=\"node1\","
           "DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 3072\n"
           "DCGM_FI_DEV_FB_USED{%s,GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"7\",Hostname=\"node1\","
           "DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 0\n",
           gpu, gpu, gpu);
  assert_string_equal(used, want);
  char *free_ = lines_starting(out, "DCGM_FI_DEV_FB_FREE{");
  assert_non_null(strstr(
    free_, "GPU_I_ID=\"2\",Hostname=\"node1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 37376\n"));
  assert_non_null(strstr(
    free_, "GPU_I_ID=\"7\",Hostname=\"node1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 9984\n"));
  char *temp = lines_starting(out, "DCGM_FI_DEV_GPU_TEMP{");
  assert_null(strstr(temp, "GPU_I_ID"));
  assert_null(strstr(out, "gpuslice_gpu_sharing_info")); /* no sharing given: no family */
  free(used);
  free(free_);
  free(temp);
  free(out);
}

static void test_sharing_mode_is_an_info_series_label(void **state)
{
  (void) state;
  struct gs_snap_gpu g[2] = { one_gpu(), one_gpu() };
  g[1].index = 1;
  strcpy(g[0].sharing, "mps");
  strcpy(g[1].sharing, "mig:1g.10gb@0 3g.40gb@4");
  struct gs_snapshot s = snapshot(g, 2, NULL, 0);
  char *out = render(&s, NULL);
  char *info = lines_starting(out, "gpuslice_gpu_sharing_info");
  assert_string_equal(
    info,
    "gpuslice_gpu_sharing_info{gpu=\"0\",UUID=\"GPU-11111111-2222-3333-4444-555555555555\","
    "Hostname=\"node1\",sharing=\"mps\"} 1\n"
    "gpuslice_gpu_sharing_info{gpu=\"1\",UUID=\"GPU-11111111-2222-3333-4444-555555555555\","
    "Hostname=\"node1\",sharing=\"mig:1g.10gb@0 3g.40gb@4\"} 1\n");
  assert_non_null(strstr(out, "# TYPE gpuslice_gpu_sharing_info gauge\n"));
  free(info);
  free(out);
}

static void test_malformed_snapshot_is_an_error(void **state)
{
  (void) state;
  struct gs_snapshot s = snapshot(NULL, 2, NULL, 0);
  char *out = NULL;
  size_t len = 0;
  gs_error_t err = NULL;
  assert_int_equal(gs_metrics_render(&s, NULL, &out, &len, &err), -1);
  assert_int_equal(err->status, EINVAL);
  assert_null(out);
  gs_error_release(&err);
}

static void test_many_rows_render_completely(void **state)
{
  (void) state;
  enum { NG = 8, NT = 256 };
  struct gs_snap_gpu *g = calloc(NG, sizeof(*g));
  struct gs_snap_tenant *t = calloc(NT, sizeof(*t));
  for (int i = 0; i < NG; i++) {
    g[i] = one_gpu();
    g[i].index = i;
  }
  for (int i = 0; i < NT; i++) {
    t[i] = tenant("x", 0, NULL);
    snprintf(t[i].name, sizeof(t[i].name), "tenant-%03d", i);
    t[i].gpu = i % NG;
    t[i].vram_limit_bytes = 1ull << 30;
    t[i].compute_limit = 0.5;
  }
  struct gs_snapshot s = snapshot(g, NG, t, NT);
  char *out = render(&s, NULL);
  size_t lines = 0;
  for (char *p = out; *p; p++)
    lines += *p == '\n';
  /* 8 GPU series (the readings every GPU has) + 11 tenant series and the 3 deprecated names of
   * the 0-1 ones, each with HELP and TYPE. */
  assert_int_equal(lines, 8 * (2 + NG) + 14 * (2 + NT));
  assert_non_null(strstr(out, "tenant=\"tenant-255\",gpu=\"7\""));
  free(out);
  free(g);
  free(t);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_gpu_series_match_dcgm_exporter_names_labels_and_units),
    cmocka_unit_test(test_full_field_set_has_dcgm_values_units_and_xid_labels),
    cmocka_unit_test(test_readings_a_gpu_lacks_have_no_sample_and_no_family),
    cmocka_unit_test(test_xid_texts_are_nvidias_names_and_unknown_otherwise),
    cmocka_unit_test(test_tenant_series_exact_text),
    cmocka_unit_test(test_suspension_series_only_for_suspended_tenants),
    cmocka_unit_test(test_unlimited_tenant_has_no_limit_rows),
    cmocka_unit_test(test_label_values_are_escaped),
    cmocka_unit_test(test_invalid_utf8_in_values_becomes_replacement_character),
    cmocka_unit_test(test_label_keys_are_sanitized),
    cmocka_unit_test(test_sanitizing_collisions_never_duplicate_label_names),
    cmocka_unit_test(test_health_series_and_values),
    cmocka_unit_test(test_without_health_there_are_no_daemon_series),
    cmocka_unit_test(test_empty_hostname_leaves_the_label_out),
    cmocka_unit_test(test_kubernetes_tenant_series_carry_namespace_pod_container),
    cmocka_unit_test(test_hostname_label_spelling_follows_the_fields),
    cmocka_unit_test(test_tenant_on_unknown_gpu_gets_empty_uuid),
    cmocka_unit_test(test_mig_instances_get_framebuffer_rows_with_gpu_i_labels),
    cmocka_unit_test(test_sharing_mode_is_an_info_series_label),
    cmocka_unit_test(test_malformed_snapshot_is_an_error),
    cmocka_unit_test(test_many_rows_render_completely),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
