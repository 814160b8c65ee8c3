/* The replay's arrival order on its own, for a replay that places the pods elsewhere (the
 * Kubernetes replay, integrations/k8s/scheduler/cmd/gpuslice-k8s-replay): the order
 * gs_place_replay uses (place-replay.c), so the scheduler's Go test can check that a replay
 * of this order through gs_place_decide gives gs_place_replay's figures. */
#include <errno.h>

#include "place-internal.h"

int gs_place_replay_arrivals(const struct gs_place_request *pods, size_t n, int64_t capacity,
                             double inflate, uint64_t seed, size_t **order, size_t *n_order,
                             gs_error_t *err)
{
  if (!(inflate > 0))
    return gs_make_error(err, 0, "inflate %g is not > 0", inflate);
  if (n == 0)
    return gs_make_error(err, 0, "no pods to replay");
  int64_t target = (int64_t) (inflate * (double) capacity);
  size_t *a = gs__place_arrivals(pods, n, target, seed, n_order);
  if (!a)
    return gs_make_error(err, ENOMEM, "replay arrivals");
  *order = a;
  return 0;
}
