/* Stream capture and graphs. A graph here is a list of kernel nodes (a duration and a name)
 * in capture order; instantiating copies the list, and launching replays it onto a stream
 * as ordinary launches, one after another. That is the visible behaviour of a linear captured
 * graph, which is what the workloads that matter here produce.
 *
 * While a stream captures, kernel launches (and graph launches) on it append nodes instead
 * of running; event records and waits add nothing; memory copies, sets and stream-ordered
 * allocation on it fail with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, as does capture on the
 * legacy stream. */
#include "cuda-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODE_NAME 64

struct CUgraphNode_st {
  struct CUgraph_st *graph;
  uint64_t dur_ns;
  char name[NODE_NAME];
};

struct CUgraph_st {
  struct gsc_obj obj;
  struct CUgraphNode_st **nodes;
  size_t n, cap;
};

struct exec_node {
  uint64_t dur_ns;
  char name[NODE_NAME];
};

struct CUgraphExec_st {
  struct gsc_obj obj;
  struct exec_node *nodes;
  size_t n;
};

/* ---- graphs ---- */

static struct CUgraph_st *graph_new(void)
{
  struct CUgraph_st *g = calloc(1, sizeof(*g));
  if (g)
    gsc_obj_add(&g->obj, GSC_GRAPH);
  return g;
}

static void graph_free(void *p)
{
  struct CUgraph_st *g = p;
  GSC_FOREACH(o, GSC_STREAM)
  {
    struct CUstream_st *s = (struct CUstream_st *) o;
    if (s->capture == g)
      s->capture = NULL;
  }
  for (size_t i = 0; i < g->n; i++)
    free(g->nodes[i]);
  free(g->nodes);
  gsc_obj_free(&g->obj);
}

static void exec_free(void *p)
{
  struct CUgraphExec_st *x = p;
  free(x->nodes);
  gsc_obj_free(&x->obj);
}

void gsc_graph_free_all(void)
{
  GSC_FOREACH(o, GSC_GRAPH)
  graph_free((struct CUgraph_st *) o);
  GSC_FOREACH(o, GSC_GRAPH_EXEC)
  exec_free((struct CUgraphExec_st *) o);
}

CUresult gsc_graph_add_kernel(struct CUgraph_st *g, uint64_t dur_ns, const char *name)
{
  if (g->n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 16;
    struct CUgraphNode_st **nodes = realloc(g->nodes, cap * sizeof(*nodes));
    if (!nodes)
      return CUDA_ERROR_OUT_OF_MEMORY;
    g->nodes = nodes;
    g->cap = cap;
  }
  struct CUgraphNode_st *node = calloc(1, sizeof(*node));
  if (!node)
    return CUDA_ERROR_OUT_OF_MEMORY;
  node->graph = g;
  node->dur_ns = dur_ns;
  snprintf(node->name, sizeof(node->name), "%s", name);
  g->nodes[g->n++] = node;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
  GSC_CHECK_INIT();
  if (!phGraph || flags)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_LOCKED;
  *phGraph = graph_new();
  return *phGraph ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

GSC_API CUresult cuGraphDestroy(CUgraph hGraph)
{
  return gsc_obj_destroy(hGraph, GSC_GRAPH, graph_free, CUDA_ERROR_INVALID_VALUE);
}

GSC_API CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
  GSC_ENTER_OUT(numNodes);
  struct CUgraph_st *g = gsc_obj_find(hGraph, GSC_GRAPH);
  if (!g)
    return CUDA_ERROR_INVALID_VALUE;
  if (!nodes) {
    *numNodes = g->n;
    return CUDA_SUCCESS;
  }
  size_t room = *numNodes;
  for (size_t i = 0; i < room; i++)
    nodes[i] = i < g->n ? g->nodes[i] : NULL;
  *numNodes = room < g->n ? room : g->n;
  return CUDA_SUCCESS;
}

/* ---- executable graphs ---- */

static CUresult instantiate(CUgraphExec *phGraphExec, CUgraph hGraph)
{
  GSC_ENTER_OUT(phGraphExec);
  struct CUgraph_st *g = gsc_obj_find(hGraph, GSC_GRAPH);
  if (!g)
    return CUDA_ERROR_INVALID_VALUE;
  struct CUgraphExec_st *x = calloc(1, sizeof(*x));
  if (!x || (g->n && !(x->nodes = calloc(g->n, sizeof(*x->nodes))))) {
    free(x);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < g->n; i++) {
    x->nodes[i].dur_ns = g->nodes[i]->dur_ns;
    memcpy(x->nodes[i].name, g->nodes[i]->name, NODE_NAME);
  }
  x->n = g->n;
  gsc_obj_add(&x->obj, GSC_GRAPH_EXEC);
  *phGraphExec = x;
  return CUDA_SUCCESS;
}

#define INSTANTIATE_FLAGS                                                                 \
  (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD | \
   CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)

GSC_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                             unsigned long long flags)
{
  if (flags & ~(unsigned long long) INSTANTIATE_FLAGS)
    return CUDA_ERROR_INVALID_VALUE;
  return instantiate(phGraphExec, hGraph);
}

/* The 10.0 and 11.0 ABI: an error node and a log, neither of which ever has anything to say. */
GSC_API CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                       CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
  if (phErrorNode)
    *phErrorNode = NULL;
  if (logBuffer && bufferSize)
    logBuffer[0] = '\0';
  return instantiate(phGraphExec, hGraph);
}

GSC_API CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                    CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
  return cuGraphInstantiate_v2(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

GSC_API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
  return gsc_obj_destroy(hGraphExec, GSC_GRAPH_EXEC, exec_free, CUDA_ERROR_INVALID_VALUE);
}

/* Takes a copy of the nodes so the replay runs without the lock (launches may block). */
static CUresult launch_snapshot(CUgraphExec hGraphExec, CUstream h, bool per_thread,
                                struct CUstream_st **s, struct exec_node **nodes, size_t *n)
{
  GSC_LOCKED;
  struct CUgraphExec_st *x = gsc_obj_find(hGraphExec, GSC_GRAPH_EXEC);
  if (!x)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_TRY(gsc_stream_get(h, per_thread, s));
  *n = x->n;
  *nodes = x->n ? malloc(x->n * sizeof(**nodes)) : NULL;
  if (x->n && !*nodes)
    return CUDA_ERROR_OUT_OF_MEMORY;
  if (x->n)
    memcpy(*nodes, x->nodes, x->n * sizeof(**nodes));
  return CUDA_SUCCESS;
}

static CUresult graph_launch(CUgraphExec hGraphExec, CUstream h, bool per_thread)
{
  struct CUstream_st *s;
  struct exec_node *nodes;
  size_t n;
  GSC_CHECK_INIT();
  GSC_TRY(launch_snapshot(hGraphExec, h, per_thread, &s, &nodes, &n));
  CUresult r = CUDA_SUCCESS;
  for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++)
    r = gsc_launch(s, nodes[i].dur_ns, nodes[i].name);
  free(nodes);
  return r;
}

GSC_API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
  return graph_launch(hGraphExec, hStream, false);
}

GSC_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
  return graph_launch(hGraphExec, hStream, true);
}

/* ---- capture ---- */

static CUresult begin_capture(CUstream h, CUstreamCaptureMode mode, bool per_thread)
{
  struct CUstream_st *s;
  GSC_CHECK_INIT();
  if ((unsigned) mode > CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_LOCKED;
  GSC_TRY(gsc_stream_get(h, per_thread, &s));
  if (s->legacy)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (s->capture)
    return CUDA_ERROR_ILLEGAL_STATE;
  if (!(s->capture = graph_new()))
    return CUDA_ERROR_OUT_OF_MEMORY;
  s->capture_id = ++gsc.next_id;
  s->capture_mode = mode;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
  return begin_capture(hStream, mode, false);
}

GSC_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
  return begin_capture(hStream, mode, true);
}

/* The 10.0 ABI had no mode; it behaved as global capture. */
GSC_API CUresult cuStreamBeginCapture(CUstream hStream)
{
  return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, false);
}

GSC_API CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
  return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, true);
}

static CUresult end_capture(CUstream h, CUgraph *phGraph, bool per_thread)
{
  struct CUstream_st *s;
  GSC_ENTER_OUT(phGraph);
  GSC_TRY(gsc_stream_get(h, per_thread, &s));
  if (!s->capture)
    return CUDA_ERROR_ILLEGAL_STATE;
  *phGraph = s->capture;
  s->capture = NULL;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
  return end_capture(hStream, phGraph, false);
}

GSC_API CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
  return end_capture(hStream, phGraph, true);
}

/* Every capture query: status, and optionally id, graph and (always empty) dependencies. */
struct capture_info {
  CUstreamCaptureStatus *status;
  cuuint64_t *id;
  CUgraph *graph;
  const CUgraphNode **deps;
  const CUgraphEdgeData **edges;
  size_t *ndeps;
};

static CUresult capture_info(CUstream h, bool per_thread, struct capture_info q)
{
  struct CUstream_st *s;
  GSC_CHECK_INIT();
  if (!q.status)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_LOCKED;
  GSC_TRY(gsc_stream_get(h, per_thread, &s));
  *q.status = s->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  if (q.id && s->capture)
    *q.id = s->capture_id;
  if (q.graph)
    *q.graph = s->capture;
  if (q.deps)
    *q.deps = NULL;
  if (q.edges)
    *q.edges = NULL;
  if (q.ndeps)
    *q.ndeps = 0;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
  return capture_info(hStream, false, (struct capture_info){ .status = captureStatus });
}

GSC_API CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
  return capture_info(hStream, true, (struct capture_info){ .status = captureStatus });
}

GSC_API CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                        cuuint64_t *id_out)
{
  return capture_info(hStream, false,
                      (struct capture_info){ .status = captureStatus_out, .id = id_out });
}

GSC_API CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream,
                                             CUstreamCaptureStatus *captureStatus_out,
                                             cuuint64_t *id_out)
{
  return capture_info(hStream, true,
                      (struct capture_info){ .status = captureStatus_out, .id = id_out });
}

GSC_API CUresult cuStreamGetCaptureInfo_v2(CUstream hStream,
                                           CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out,
                                           size_t *numDependencies_out)
{
  return capture_info(hStream, false,
                      (struct capture_info){ captureStatus_out, id_out, graph_out, dependencies_out,
                                             NULL, numDependencies_out });
}

GSC_API CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream,
                                                CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out, CUgraph *graph_out,
                                                const CUgraphNode **dependencies_out,
                                                size_t *numDependencies_out)
{
  return capture_info(hStream, true,
                      (struct capture_info){ captureStatus_out, id_out, graph_out, dependencies_out,
                                             NULL, numDependencies_out });
}

GSC_API CUresult cuStreamGetCaptureInfo_v3(CUstream hStream,
                                           CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out,
                                           const CUgraphEdgeData **edgeData_out,
                                           size_t *numDependencies_out)
{
  return capture_info(hStream, false,
                      (struct capture_info){ captureStatus_out, id_out, graph_out, dependencies_out,
                                             edgeData_out, numDependencies_out });
}

GSC_API CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream,
                                                CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out, CUgraph *graph_out,
                                                const CUgraphNode **dependencies_out,
                                                const CUgraphEdgeData **edgeData_out,
                                                size_t *numDependencies_out)
{
  return capture_info(hStream, true,
                      (struct capture_info){ captureStatus_out, id_out, graph_out, dependencies_out,
                                             edgeData_out, numDependencies_out });
}
