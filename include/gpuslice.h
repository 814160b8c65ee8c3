/* The one public header of gpuslice's core library (gpuslice_core). The edges (cli/,
 * preload/, and later daemon/ and integrations/) include this and nothing else from lib/.
 *
 * Each part lives in its own header beside its .c file; this file only gathers them. */
#ifndef GPUSLICE_H
#define GPUSLICE_H

#include <gpuslice/error.h>
#include <gpuslice/log.h>
#include <gpuslice/quantity.h>
#include <gpuslice/paths.h>
#include <gpuslice/driver.h>
#include <gpuslice/env.h>
#include <gpuslice/xalloc.h>
#include <gpuslice/proc.h>
#include <gpuslice/ptrmap.h>
#include <gpuslice/tenant-ledger.h>

#endif
