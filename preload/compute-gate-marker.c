/* Markers: events a gate records on the launching stream to measure its device time. The
 * elapsed time from one completed marker to the next is busy time, unless the later one was
 * recorded on an idle stream (a start marker). Events are made once, on first need, in the
 * context current at that launch, and reused. See compute-gate.h. */
#include "compute-gate.h"
#include <gpuslice/log.h>
#include "real.h"

static bool markers_init(struct gs_markers *m)
{
  if (m->nspare || m->count || m->last)
    return true;
  if (!gs__cuda.cuEventCreate || !gs__cuda.cuEventRecord || !gs__cuda.cuEventQuery ||
      !gs__cuda.cuEventElapsedTime || !gs__cuda.cuEventSynchronize)
    return false;
  for (int i = 0; i < GS_MARK_RING + 1; i++) {
    if (gs__cuda.cuEventCreate(&m->spare[i], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
      return false;
    m->nspare++;
  }
  return true;
}

void gs__marker_record(struct gs_markers *m, CUstream s, bool ptsz, bool start)
{
  if (m->broken)
    return;
  if (!markers_init(m)) {
    m->broken = true;
    GS_LOG(GS_LOG_WARN, "compute gate: cannot create CUDA events; device time is not measured");
    return;
  }
  if (m->count == GS_MARK_RING || m->nspare == 0)
    return; /* the newest marker will cover these launches too */
  CUevent ev = m->spare[m->nspare - 1];
  CUresult rc = ptsz && gs__cuda.cuEventRecord_ptsz ? gs__cuda.cuEventRecord_ptsz(ev, s)
                                                    : gs__cuda.cuEventRecord(ev, s);
  if (rc != CUDA_SUCCESS)
    return; /* e.g. a stream of another context: that work goes unmeasured */
  m->nspare--;
  m->ring[(m->head + m->count) % GS_MARK_RING] = (struct gs_marker){ ev, start };
  m->count++;
}

/* The oldest marker has completed: its busy time since the previous one, if any. */
static uint64_t retire(struct gs_markers *m)
{
  struct gs_marker *k = &m->ring[m->head];
  float ms = 0;
  uint64_t ns = 0;
  if (!k->start && m->last && gs__cuda.cuEventElapsedTime(&ms, m->last, k->ev) == CUDA_SUCCESS &&
      ms > 0)
    ns = (uint64_t) ((double) ms * 1e6);
  if (m->last)
    m->spare[m->nspare++] = m->last;
  m->last = k->ev;
  m->head = (m->head + 1) % GS_MARK_RING;
  m->count--;
  return ns;
}

uint64_t gs__marker_collect(struct gs_markers *m, int keep)
{
  uint64_t ns = 0;
  while (m->count) {
    CUevent ev = m->ring[m->head].ev;
    CUresult rc = gs__cuda.cuEventQuery(ev);
    if (rc == CUDA_ERROR_NOT_READY) {
      if (keep < 0 || (int) m->count <= keep)
        break;
      rc = gs__cuda.cuEventSynchronize(ev);
    }
    if (rc != CUDA_SUCCESS) {
      m->ring[m->head].start = true; /* an error: count nothing across it */
    }
    ns += retire(m);
  }
  return ns;
}
