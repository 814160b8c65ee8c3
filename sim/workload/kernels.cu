// Source of the PTX in kernels-ptx.c, kept for reference and not built (CI has no CUDA
// toolkit). Regenerate with: nvcc -arch=sm_75 -ptx kernels.cu, then set .version 8.0.
extern "C" __global__ void sim_busy(unsigned long long us)
{
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < us * 1000ULL);
}

extern "C" __global__ void sim_touch(unsigned char *ptr, unsigned long long n)
{
  unsigned long long i = blockIdx.x * (unsigned long long) blockDim.x + threadIdx.x;
  unsigned long long stride = (unsigned long long) gridDim.x * blockDim.x;
  for (; i < n; i += stride)
    ptr[i] = (unsigned char) i;
}
