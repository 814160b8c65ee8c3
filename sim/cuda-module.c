/* Modules, libraries and functions. There is no code to run, so any image is accepted and
 * any function name exists; what a function keeps is its name, which decides how long it
 * runs (see cuda-launch.c). Modules belong to a context; libraries (cuLibrary*) do not, and
 * hand out one function per context for each kernel, as the real driver does. Asking twice
 * for the same name gives the same handle. Modules have no globals: cuModuleGetGlobal says
 * CUDA_ERROR_NOT_FOUND. */
#include "cuda-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct CUmod_st {
  struct gsc_obj obj;
  struct CUctx_st *ctx;
};

struct CUlib_st {
  struct gsc_obj obj;
};

struct CUkern_st {
  struct gsc_obj obj;
  struct CUlib_st *lib;
  char name[1024];
};

static CUresult name_check(const char *name)
{
  if (!name || !*name || strlen(name) >= sizeof(((struct CUfunc_st *) 0)->name))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

static void func_free(void *p)
{
  struct CUfunc_st *f = p;
  gsc_obj_free(&f->obj);
}

static struct CUfunc_st *func_new(struct CUctx_st *c, struct CUmod_st *m, struct CUkern_st *k,
                                  const char *name)
{
  struct CUfunc_st *f = calloc(1, sizeof(*f));
  if (!f)
    return NULL;
  f->ctx = c;
  f->mod = m;
  f->kern = k;
  f->max_dyn_shared = 49152;
  f->carveout = -1;
  snprintf(f->name, sizeof(f->name), "%s", name);
  gsc_obj_add(&f->obj, GSC_FUNC);
  return f;
}

/* ---- modules ---- */

static CUresult module_new(CUmodule *module)
{
  struct CUctx_st *c;
  GSC_TRY(gsc_ctx_current(&c));
  struct CUmod_st *m = calloc(1, sizeof(*m));
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  m->ctx = c;
  GSC_LOCKED;
  gsc_obj_add(&m->obj, GSC_MODULE);
  *module = m;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
  GSC_CHECK_INIT();
  if (!module || !image)
    return CUDA_ERROR_INVALID_VALUE;
  return module_new(module);
}

GSC_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
  if (numOptions && (!options || !optionValues))
    return CUDA_ERROR_INVALID_VALUE;
  return cuModuleLoadData(module, image);
}

GSC_API CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
  GSC_CHECK_INIT();
  if (!module || !fname)
    return CUDA_ERROR_INVALID_VALUE;
  if (access(fname, R_OK) != 0)
    return CUDA_ERROR_FILE_NOT_FOUND;
  return module_new(module);
}

static void module_free(void *p)
{
  struct CUmod_st *m = p;
  GSC_FOREACH(o, GSC_FUNC)
  if (((struct CUfunc_st *) o)->mod == m)
    func_free((struct CUfunc_st *) o);
  gsc_obj_free(&m->obj);
}

void gsc_module_ctx_gone(struct CUctx_st *c)
{
  gsc_obj_free_owned(GSC_MODULE, offsetof(struct CUmod_st, ctx), c, module_free);
  gsc_obj_free_owned(GSC_FUNC, offsetof(struct CUfunc_st, ctx), c, func_free);
}

GSC_API CUresult cuModuleUnload(CUmodule hmod)
{
  return gsc_obj_destroy(hmod, GSC_MODULE, module_free, CUDA_ERROR_INVALID_HANDLE);
}

GSC_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
  GSC_ENTER_OUT(hfunc);
  GSC_TRY(name_check(name));
  struct CUmod_st *m = gsc_obj_find(hmod, GSC_MODULE);
  if (!m)
    return CUDA_ERROR_INVALID_HANDLE;
  GSC_FOREACH(o, GSC_FUNC)
  {
    struct CUfunc_st *f = (struct CUfunc_st *) o;
    if (f->mod == m && strcmp(f->name, name) == 0) {
      *hfunc = f;
      return CUDA_SUCCESS;
    }
  }
  struct CUfunc_st *f = func_new(m->ctx, m, NULL, name);
  if (!f)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *hfunc = f;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                      const char *name)
{
  (void) dptr;
  (void) bytes;
  GSC_CHECK_INIT();
  GSC_TRY(name_check(name));
  GSC_LOCKED;
  return gsc_obj_find(hmod, GSC_MODULE) ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_INVALID_HANDLE;
}

/* ---- libraries and kernels ---- */

GSC_API CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                   void **jitOptionsValues, unsigned int numJitOptions,
                                   CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                   unsigned int numLibraryOptions)
{
  GSC_CHECK_INIT();
  if (!library || !code || (numJitOptions && (!jitOptions || !jitOptionsValues)) ||
      (numLibraryOptions && (!libraryOptions || !libraryOptionValues)))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUlib_st *l = calloc(1, sizeof(*l));
  if (!l)
    return CUDA_ERROR_OUT_OF_MEMORY;
  GSC_LOCKED;
  gsc_obj_add(&l->obj, GSC_LIBRARY);
  *library = l;
  return CUDA_SUCCESS;
}

static void kernel_free(struct CUkern_st *k)
{
  GSC_FOREACH(o, GSC_FUNC)
  if (((struct CUfunc_st *) o)->kern == k)
    func_free((struct CUfunc_st *) o);
  gsc_obj_free(&k->obj);
}

static void library_free(void *p)
{
  struct CUlib_st *l = p;
  GSC_FOREACH(o, GSC_KERNEL)
  if (((struct CUkern_st *) o)->lib == l)
    kernel_free((struct CUkern_st *) o);
  gsc_obj_free(&l->obj);
}

void gsc_library_free_all(void)
{
  GSC_FOREACH(o, GSC_LIBRARY)
  library_free((struct CUlib_st *) o);
}

GSC_API CUresult cuLibraryUnload(CUlibrary library)
{
  return gsc_obj_destroy(library, GSC_LIBRARY, library_free, CUDA_ERROR_INVALID_HANDLE);
}

GSC_API CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
  GSC_ENTER_OUT(pKernel);
  GSC_TRY(name_check(name));
  struct CUlib_st *l = gsc_obj_find(library, GSC_LIBRARY);
  if (!l)
    return CUDA_ERROR_INVALID_HANDLE;
  GSC_FOREACH(o, GSC_KERNEL)
  {
    struct CUkern_st *k = (struct CUkern_st *) o;
    if (k->lib == l && strcmp(k->name, name) == 0) {
      *pKernel = k;
      return CUDA_SUCCESS;
    }
  }
  struct CUkern_st *k = calloc(1, sizeof(*k));
  if (!k)
    return CUDA_ERROR_OUT_OF_MEMORY;
  k->lib = l;
  snprintf(k->name, sizeof(k->name), "%s", name);
  gsc_obj_add(&k->obj, GSC_KERNEL);
  *pKernel = k;
  return CUDA_SUCCESS;
}

/* The kernel's function in the current context, made on first use. Under gsc_lock. */
static CUresult kernel_function(struct CUkern_st *k, struct CUfunc_st **out)
{
  struct CUctx_st *c;
  GSC_TRY(gsc_ctx_current(&c));
  GSC_FOREACH(o, GSC_FUNC)
  {
    struct CUfunc_st *f = (struct CUfunc_st *) o;
    if (f->kern == k && f->ctx == c) {
      *out = f;
      return CUDA_SUCCESS;
    }
  }
  *out = func_new(c, NULL, k, k->name);
  return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

GSC_API CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
  GSC_ENTER_OUT(pFunc);
  struct CUkern_st *k = gsc_obj_find(kernel, GSC_KERNEL);
  if (!k)
    return CUDA_ERROR_INVALID_HANDLE;
  struct CUfunc_st *f;
  GSC_TRY(kernel_function(k, &f));
  *pFunc = f;
  return CUDA_SUCCESS;
}

CUresult gsc_func_get(CUfunction f, struct CUfunc_st **out)
{
  GSC_ENTER();
  if ((*out = gsc_obj_find(f, GSC_FUNC)))
    return CUDA_SUCCESS;
  struct CUkern_st *k = gsc_obj_find(f, GSC_KERNEL);
  if (!k)
    return CUDA_ERROR_INVALID_HANDLE;
  return kernel_function(k, out);
}

/* ---- function attributes ---- */

GSC_API CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
  struct CUfunc_st *f;
  if (!pi || (unsigned) attrib >= CU_FUNC_ATTRIBUTE_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_TRY(gsc_func_get(hfunc, &f));
  const struct gpusim_model *m = gsc_model(f->ctx->dev);
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION:
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = m->cc_major * 10 + m->cc_minor; break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = f->max_dyn_shared; break;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = f->carveout; break;
  default: *pi = 0; break;
  }
  return CUDA_SUCCESS;
}

GSC_API CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
  struct CUfunc_st *f;
  GSC_TRY(gsc_func_get(hfunc, &f));
  int optin = 0;
  GSC_TRY(cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                               f->ctx->dev));
  if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && value >= 0 && value <= optin)
    f->max_dyn_shared = value;
  else if (attrib == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT && value >= -1 &&
           value <= 100)
    f->carveout = value;
  else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
  struct CUfunc_st *f;
  GSC_TRY(gsc_func_get(hfunc, &f));
  if ((unsigned) config > CU_FUNC_CACHE_PREFER_EQUAL)
    return CUDA_ERROR_INVALID_VALUE;
  f->cache = config;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
  struct CUfunc_st *f;
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_TRY(gsc_func_get(hfunc, &f));
  *name = f->name;
  return CUDA_SUCCESS;
}
