/* The placement core, compiled from the repository's own source (see place.go). */
#include "../../../../lib/place-victims.c"
