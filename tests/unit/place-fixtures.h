/* Small placement clusters for the unit tests: a cluster that must build, and a one-pod
 * request of the given CPU, GPU count and GPU share (1 GiB of memory, any GPU model).
 * Include after cmocka.h and <gpuslice/place.h>. */
#ifndef GS_TEST_PLACE_FIXTURES_H
#define GS_TEST_PLACE_FIXTURES_H

static inline gs_place_cluster_t *make(const struct gs_place_node_spec *n, size_t k)
{
  gs_error_t err = NULL;
  gs_place_cluster_t *c = gs_place_cluster_new(n, k, &err);
  assert_non_null(c);
  return c;
}

static inline struct gs_place_request req(int64_t cpu, int num, int milli)
{
  return (struct gs_place_request){ .name = "p",
                                    .cpu_milli = cpu,
                                    .mem_mib = 1024,
                                    .num_gpu = num,
                                    .gpu_milli = milli,
                                    .model_mask = GS_PLACE_ANY_MODEL };
}

#endif
