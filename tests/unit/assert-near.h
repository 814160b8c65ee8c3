/* assert_double_equal for cmocka versions whose float assertion works in single precision
 * (Debian's 1.1): fails with both values printed when |a - b| > eps. Include after cmocka.h. */
#ifndef GS_TEST_ASSERT_NEAR_H
#define GS_TEST_ASSERT_NEAR_H

#include <math.h>

static inline void gs_test_near(double a, double b, double eps, const char *file, int line)
{
  if (!(fabs(a - b) <= eps) && !(a == b)) {
    print_error("%.15g != %.15g (within %g)\n", a, b, eps);
    _fail(file, line);
  }
}

#ifndef assert_double_equal
#define assert_double_equal(a, b, eps) gs_test_near((a), (b), (eps), __FILE__, __LINE__)
#endif

#endif
