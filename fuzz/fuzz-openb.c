/* libFuzzer target for the openb trace reader (gpuslice pack's input): the first byte picks
 * the node or the pod reader, the rest is the file. A file is read whole or refused whole. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/trace-openb.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  gs_error_t err = NULL;
  if (size < 1)
    return 0;
  FILE *f = fmemopen((void *) (uintptr_t) (data + 1), size - 1, "r");
  if (!f)
    return 0;
  if (data[0] & 1) {
    struct gs_openb_pods pods = { 0 };
    if (gs_openb_read_pods(f, "fuzz.csv", &pods, &err) == 0)
      gs_openb_pods_release(&pods);
  } else {
    struct gs_openb_nodes nodes = { 0 };
    if (gs_openb_read_nodes(f, "fuzz.csv", &nodes, &err) == 0)
      gs_openb_nodes_release(&nodes);
  }
  if (err && strchr(err->msg, '\n'))
    abort(); /* errors are one line: the CLI prints them as they are */
  gs_error_release(&err);
  fclose(f);
  return 0;
}
