/* Parsing the quantities users type, such as `--vram 20GiB` or `--vram 25%`. */
#ifndef GS_QUANTITY_H
#define GS_QUANTITY_H

#include <stdint.h>

#include <gpuslice/error.h>

/* Parses a memory size into bytes:
 *   - a plain number of bytes: "1048576";
 *   - a number with a decimal unit K, M, G, T (powers of 1000) or a binary unit Ki, Mi, Gi,
 *     Ti (powers of 1024), optionally followed by "B" and in either case: "512MiB", "1.5G";
 *   - a percentage of device_total, from 1% to 100%, decimals allowed: "25%", "12.5%".
 * Fractions of a byte round down; a plain byte count must be whole. The result must be
 * at least one byte. Returns 0, or -1 with an error naming the bad token (status 0). */
int gs_parse_size(const char *s, uint64_t device_total, uint64_t *out, gs_error_t *err);

/* Parses a tenant's memory limit, as `gpuslice run --vram` and the Slurm plugin's --gpu-vram
 * take it: a size in bytes (*bytes, *ppm 0), or a percentage ("25%") kept as millionths of the
 * GPU until a process knows the device's size (*ppm, *bytes 0). Bytes are at most INT64_MAX,
 * since the API carries a limit as a signed 64-bit JSON integer. Returns 0, or -1 with an
 * error naming the bad value (status 0). */
int gs_parse_vram_limit(const char *s, uint64_t *bytes, uint64_t *ppm, gs_error_t *err);

#endif
