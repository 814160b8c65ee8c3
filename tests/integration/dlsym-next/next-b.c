/* Second of two libraries that define the same symbol; see next-a.c. */
int gs_test_which(void);
int gs_test_which(void)
{
  return 2;
}
