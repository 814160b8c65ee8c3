/* Prints which definition dlsym finds, from where: a program whose answers must not change
 * when the interposer, which exports its own dlsym, is preloaded. */
#include <dlfcn.h>
#include <stdio.h>

void *gs_test_next_from_a(void);

int main(void)
{
  int (*next)(void) = (int (*)(void)) gs_test_next_from_a();
  int (*dflt)(void) = (int (*)(void)) dlsym(RTLD_DEFAULT, "gs_test_which");
  void *mm = dlsym(RTLD_NEXT, "mmap");
  printf("next_from_a=%d default=%d next_mmap=%s\n", next ? next() : 0, dflt ? dflt() : 0,
         mm ? "found" : "missing");
  return 0;
}
