/* The one public header of gpuslice's core library (gpuslice_core). The edges (cli/,
 * preload/, and later daemon/ and integrations/) include this and nothing else from lib/.
 *
 * Each part lives in its own header beside its .c file; this file only gathers them. */
#ifndef GPUSLICE_H
#define GPUSLICE_H

#include "gs-error.h"
#include "gs-log.h"
#include "gs-quantity.h"
#include "gs-paths.h"
#include "gs-driver.h"
#include "gs-env.h"
#include "gs-xalloc.h"
#include "gs-proc.h"
#include "gs-ptrmap.h"
#include "gs-ledger.h"

#endif
