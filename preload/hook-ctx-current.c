/* Hooks on the calls that change a thread's current context. The interposer caches, per
 * thread, the GPU of the current context and that GPU's compute gate, so that a launch or an
 * allocation need not ask the driver; every call that can change the current context forgets
 * them (gs__ctx_changed), after the driver has answered. Making a context current has no
 * other effect here. */
#include "hooks.h"

GS_HOOK CUresult cuCtxSetCurrent(CUcontext ctx)
{
  GS_REAL_OR_FAIL(cuCtxSetCurrent);
  CUresult rc = gs__cuda.cuCtxSetCurrent(ctx);
  gs__ctx_changed();
  return rc;
}

GS_HOOK CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
  GS_REAL_OR_FAIL(cuCtxPushCurrent_v2);
  CUresult rc = gs__cuda.cuCtxPushCurrent_v2(ctx);
  gs__ctx_changed();
  return rc;
}

GS_HOOK CUresult cuCtxPushCurrent(CUcontext ctx)
{
  GS_REAL_OR_FAIL(cuCtxPushCurrent);
  CUresult rc = gs__cuda.cuCtxPushCurrent(ctx);
  gs__ctx_changed();
  return rc;
}

GS_HOOK CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
  GS_REAL_OR_FAIL(cuCtxPopCurrent_v2);
  CUresult rc = gs__cuda.cuCtxPopCurrent_v2(pctx);
  gs__ctx_changed();
  return rc;
}

GS_HOOK CUresult cuCtxPopCurrent(CUcontext *pctx)
{
  GS_REAL_OR_FAIL(cuCtxPopCurrent);
  CUresult rc = gs__cuda.cuCtxPopCurrent(pctx);
  gs__ctx_changed();
  return rc;
}
