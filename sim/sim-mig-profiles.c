/* The GPU instance profiles of the simulated MIG-capable models: the figures of
 * data/mig/mig_gi_profiles.csv (NVIDIA's MIG user guide and `nvidia-smi mig -lgip`/`-lgipp`
 * outputs), transcribed so that the simulator does not depend on gpuslice's own reading of
 * that file. tests/integration/test_sim_nvml_mig.py checks the two against each other.
 *
 * Memory is the table's GiB in MiB. Where the table has "?" (sizes no source showed), the
 * simulator takes mem slices x the model's one-slice size, the estimate docs/mig.md gives. */
#include "sim-mig.h"

#include <string.h>

#define P1 NVML_GPU_INSTANCE_PROFILE_1_SLICE
#define P1ME NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1
#define P1M2 NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2
#define P2 NVML_GPU_INSTANCE_PROFILE_2_SLICE
#define P3 NVML_GPU_INSTANCE_PROFILE_3_SLICE
#define P4 NVML_GPU_INSTANCE_PROFILE_4_SLICE
#define P7 NVML_GPU_INSTANCE_PROFILE_7_SLICE

#define S_0TO6 0x7f /* 0|1|2|3|4|5|6 */
#define S_EVEN 0x55 /* 0|2|4|6 */
#define S_024 0x15  /* 0|2|4 */
#define S_04 0x11   /* 0|4 */
#define S_0 0x01    /* 0 */

// clang-format off
static const struct gpusim_gi_profile profiles[] = {
  /* model        nvml  id  name          c  m  max starts  MiB     SMs dec jpeg ofa */
  { "a100-40gb",  P1,   19, "1g.5gb",     1, 1, 7, S_0TO6,  4864,   14, 0, 0, 0 },
  { "a100-40gb",  P1ME, 20, "1g.5gb+me",  1, 1, 1, S_0TO6,  4864,   14, 1, 1, 1 },
  { "a100-40gb",  P1M2, 15, "1g.10gb",    1, 2, 4, S_EVEN,  9856,   14, 1, 0, 0 },
  { "a100-40gb",  P2,   14, "2g.10gb",    2, 2, 3, S_024,   9856,   28, 1, 0, 0 },
  { "a100-40gb",  P3,    9, "3g.20gb",    3, 4, 2, S_04,    19968,  42, 2, 0, 0 },
  { "a100-40gb",  P4,    5, "4g.20gb",    4, 4, 1, S_0,     19968,  56, 2, 0, 0 },
  { "a100-40gb",  P7,    0, "7g.40gb",    7, 8, 1, S_0,     40192,  98, 5, 1, 1 },
  { "a100-80gb",  P1,   19, "1g.10gb",    1, 1, 7, S_0TO6,  9728,   14, 0, 0, 0 },
  { "a100-80gb",  P1ME, 20, "1g.10gb+me", 1, 1, 1, S_0TO6,  9728,   14, 1, 1, 1 },
  { "a100-80gb",  P1M2, 15, "1g.20gb",    1, 2, 4, S_EVEN,  19456,  14, 1, 0, 0 },
  { "a100-80gb",  P2,   14, "2g.20gb",    2, 2, 3, S_024,   19968,  28, 1, 0, 0 },
  { "a100-80gb",  P3,    9, "3g.40gb",    3, 4, 2, S_04,    40448,  42, 2, 0, 0 },
  { "a100-80gb",  P4,    5, "4g.40gb",    4, 4, 1, S_0,     40448,  56, 2, 0, 0 },
  { "a100-80gb",  P7,    0, "7g.80gb",    7, 8, 1, S_0,     81152,  98, 5, 1, 1 },
  { "h100-80gb",  P1,   19, "1g.10gb",    1, 1, 7, S_0TO6,  9984,   16, 1, 1, 0 },
  { "h100-80gb",  P1ME, 20, "1g.10gb+me", 1, 1, 1, S_0TO6,  9984,   16, 1, 1, 1 },
  { "h100-80gb",  P1M2, 15, "1g.20gb",    1, 2, 4, S_EVEN,  20096,  26, 1, 1, 0 },
  { "h100-80gb",  P2,   14, "2g.20gb",    2, 2, 3, S_024,   20096,  32, 2, 2, 0 },
  { "h100-80gb",  P3,    9, "3g.40gb",    3, 4, 2, S_04,    40448,  60, 3, 3, 0 },
  { "h100-80gb",  P4,    5, "4g.40gb",    4, 4, 1, S_0,     40448,  64, 4, 4, 0 },
  { "h100-80gb",  P7,    0, "7g.80gb",    7, 8, 1, S_0,     81152, 132, 7, 7, 1 },
  { "h200-141gb", P1,   19, "1g.18gb",    1, 1, 7, S_0TO6,  16384,  16, 1, 1, 0 },
  { "h200-141gb", P1ME, 20, "1g.18gb+me", 1, 1, 1, S_0TO6,  16384,  16, 1, 1, 1 },
  { "h200-141gb", P1M2, 15, "1g.35gb",    1, 2, 4, S_EVEN,  32768,  26, 1, 1, 0 },
  { "h200-141gb", P2,   14, "2g.35gb",    2, 2, 3, S_024,   32768,  32, 2, 2, 0 },
  { "h200-141gb", P3,    9, "3g.71gb",    3, 4, 2, S_04,    65536,  60, 3, 3, 0 },
  { "h200-141gb", P4,    5, "4g.71gb",    4, 4, 1, S_0,     65536,  64, 4, 4, 0 },
  { "h200-141gb", P7,    0, "7g.141gb",   7, 8, 1, S_0,    131072, 132, 7, 7, 1 },
};
// clang-format on
#define NPROFILES (sizeof(profiles) / sizeof(profiles[0]))

const struct gpusim_gi_profile *gpusim_mig_profiles(int model, size_t *n)
{
  const char *key = gpusim_models[model].key;
  size_t first = NPROFILES, count = 0;
  for (size_t i = 0; i < NPROFILES; i++)
    if (strcmp(profiles[i].model, key) == 0) {
      if (first == NPROFILES)
        first = i;
      count++;
    }
  *n = count;
  return count ? &profiles[first] : NULL;
}

bool gpusim_mig_capable(int model)
{
  size_t n;
  return gpusim_mig_profiles(model, &n) != NULL;
}

const struct gpusim_gi_profile *gpusim_mig_profile_by_enum(int model, unsigned nvml)
{
  size_t n;
  const struct gpusim_gi_profile *p = gpusim_mig_profiles(model, &n);
  for (size_t i = 0; i < n; i++)
    if (p[i].nvml == nvml)
      return &p[i];
  return NULL;
}

const struct gpusim_gi_profile *gpusim_mig_profile_by_id(int model, unsigned id)
{
  size_t n;
  const struct gpusim_gi_profile *p = gpusim_mig_profiles(model, &n);
  for (size_t i = 0; i < n; i++)
    if (p[i].id == id)
      return &p[i];
  return NULL;
}

unsigned gpusim_ci_slices(unsigned ci_profile)
{
  static const unsigned slices[NVML_COMPUTE_INSTANCE_PROFILE_COUNT] = { 1, 2, 3, 4, 7, 8, 6, 1 };
  return ci_profile < NVML_COMPUTE_INSTANCE_PROFILE_COUNT ? slices[ci_profile] : 0;
}

/* A GPU instance offers the compute instance sizes that divide it as the A100 and H100 do:
 * 1, 2 and 3 slices in a 3g, 1, 2 and 4 in a 4g, every one up to 4 and 7 in a 7g. The 8, 6
 * and REV1 compute profiles belong to other parts. */
bool gpusim_ci_offered(unsigned gi_compute, unsigned ci_profile)
{
  unsigned s = gpusim_ci_slices(ci_profile);
  if (ci_profile > NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE || s > gi_compute)
    return false;
  return !(s == 3 && gi_compute == 4);
}
