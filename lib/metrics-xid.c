/* The text dcgm-exporter puts in the err_msg label of DCGM_FI_DEV_XID_ERRORS: NVIDIA's name
 * for each XID, as its XID catalogue (docs.nvidia.com/deploy/xid-errors) gives it. This table
 * holds the XIDs that data-centre GPUs report in practice; any other code is "Unknown Error",
 * the exporter's own text for a code it has no name for (it knows more codes than this table:
 * the err_code label carries the number either way). */
#include <gpuslice/metrics.h>

#include <stddef.h>

static const struct {
  unsigned code;
  const char *text;
} xid_texts[] = {
  { 0, "No Error" },
  { 13, "Graphics Engine Exception" },
  { 31, "GPU memory page fault" },
  { 32, "Invalid or corrupted push buffer stream" },
  { 38, "Driver firmware error" },
  { 43, "GPU stopped processing" },
  { 45,
    "Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda" },
  { 48, "Double Bit ECC Error" },
  { 61, "Internal micro-controller breakpoint/warning" },
  { 62, "Internal micro-controller halt" },
  { 63, "ECC page retirement or row remapping recording event" },
  { 64, "ECC page retirement or row remapper recording failure" },
  { 68, "NVDEC0 Exception" },
  { 69, "Graphics Engine class error" },
  { 74, "NVLINK Error" },
  { 79, "GPU has fallen off the bus" },
  { 92, "High single-bit ECC error rate" },
  { 94, "Contained ECC error" },
  { 95, "Uncontained ECC error" },
  { 119, "GSP RPC Timeout" },
  { 120, "GSP Error" },
  { 121, "C2C Link Error" },
  { 140, "Unrecovered ECC Error" },
  { 143, "GPU Initialization Failure" },
  { 144, "NVLINK: Saw Error" },
  { 145, "NVLINK: RLW Error" },
  { 149, "NVLINK: NETIR Error" },
  { 154, "GPU Recovery Action Changed" },
};

const char *gs_xid_text(uint64_t xid)
{
  for (size_t i = 0; i < sizeof(xid_texts) / sizeof(xid_texts[0]); i++)
    if (xid_texts[i].code == xid)
      return xid_texts[i].text;
  return "Unknown Error";
}
