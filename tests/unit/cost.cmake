# Unit tests for the cost model (lib/cost.c).
gs_unit_test(test_lib_cost SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_cost.c LIBS gpuslice_core m)
