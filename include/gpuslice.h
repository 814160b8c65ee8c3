/* gpuslice's core library (gpuslice_core): the headers every edge needs, gathered. The
 * public API is the headers in include/gpuslice/, one per part; an edge (cli/, daemon/, preload/,
 * plan/, integrations/) includes this or those, and never a header in lib/, which are lib's
 * own (tests/layering/check_includes.py holds the rule). */
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
