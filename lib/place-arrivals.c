/* The replay's arrival order on its own, for a replay that places the pods elsewhere (the
 * Kubernetes replay, integrations/k8s/scheduler/cmd/gpuslice-k8s-replay). The same steps
 * as place-replay.c's arrivals(): sort by name, shuffle with the seed, then draw with
 * replacement up to inflate x capacity. The scheduler's Go test checks that the two agree
 * (a replay of this order through gs_place_decide gives gs_place_replay's figures). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "place-internal.h"

static uint64_t next(uint64_t *s)
{
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

struct named {
  const char *name;
  size_t index;
};

static int by_name(const void *a, const void *b)
{
  const struct named *x = a, *y = b;
  int d = strcmp(x->name, y->name);
  return d ? d : (x->index > y->index) - (x->index < y->index);
}

static int64_t gpu_of(const struct gs_place_request *r)
{
  return (int64_t) r->num_gpu * r->gpu_milli;
}

static size_t *sorted(const struct gs_place_request *pods, size_t n)
{
  size_t *a = malloc(n * sizeof(*a));
  struct named *t = malloc(n * sizeof(*t));
  if (!a || !t) {
    free(a);
    free(t);
    return NULL;
  }
  for (size_t i = 0; i < n; i++)
    t[i] = (struct named){ pods[i].name ? pods[i].name : "", i };
  qsort(t, n, sizeof(*t), by_name);
  for (size_t i = 0; i < n; i++)
    a[i] = t[i].index;
  free(t);
  return a;
}

int gs_place_replay_arrivals(const struct gs_place_request *pods, size_t n, int64_t capacity,
                             double inflate, uint64_t seed, size_t **order, size_t *n_order,
                             gs_error_t *err)
{
  if (!(inflate > 0))
    return gs_make_error(err, 0, "inflate %g is not > 0", inflate);
  if (n == 0)
    return gs_make_error(err, 0, "no pods to replay");
  int64_t target = (int64_t) (inflate * (double) capacity);
  size_t *a = sorted(pods, n), cap = n * 2 + 16, len = n;
  if (a) {
    size_t *p = realloc(a, cap * sizeof(*a));
    if (!p)
      free(a);
    a = p;
  }
  if (!a)
    return gs_make_error(err, ENOMEM, "replay arrivals");
  uint64_t s = seed;
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = (size_t) (next(&s) % (i + 1)), t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
  int64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (sum + gpu_of(&pods[a[i]]) > target) {
      *order = a;
      *n_order = i;
      return 0;
    }
    sum += gpu_of(&pods[a[i]]);
  }
  for (;;) {
    size_t k = (size_t) (next(&s) % n);
    if (sum + gpu_of(&pods[k]) > target)
      break;
    sum += gpu_of(&pods[k]);
    if (len == cap) {
      size_t *p = realloc(a, (cap *= 2) * sizeof(*a));
      if (!p) {
        free(a);
        return gs_make_error(err, ENOMEM, "replay arrivals");
      }
      a = p;
    }
    a[len++] = k;
  }
  *order = a;
  *n_order = len;
  return 0;
}
