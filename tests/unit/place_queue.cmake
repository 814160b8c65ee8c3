# Unit tests for the scheduler on top of placement (lib/place-queue.c, place-preempt.c,
# place-gang.c) and gs_place_release.
gs_unit_test(test_lib_place_queue SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_place_queue.c
             LIBS gpuslice_core)
