/* First of two libraries that define the same symbol: asks dlsym(RTLD_NEXT) for it, which
 * must find the one in next-b.c, the library loaded after this one. */
#include <dlfcn.h>

int gs_test_which(void);
int gs_test_which(void)
{
  return 1;
}

void *gs_test_next_from_a(void);
void *gs_test_next_from_a(void)
{
  void *next = dlsym(RTLD_NEXT, "gs_test_which");
  /* Keeps the call from becoming a tail jump, which would make main the caller dlsym sees. */
  __asm__ volatile("" : : "r"(next) : "memory");
  return next;
}
