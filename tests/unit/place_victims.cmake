# Unit tests for preemption on a caller's own cluster (lib/place-victims.c).
gs_unit_test(test_lib_place_victims SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_place_victims.c
             LIBS gpuslice_core)
