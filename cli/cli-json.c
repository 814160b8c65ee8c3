/* json_print_compact (see cli-json.h). */
#include "cli-json.h"

#include <stdio.h>
#include <stdlib.h>

void json_print_compact(json_t *j)
{
  char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
  if (s)
    puts(s);
  free(s);
  json_decref(j);
}
