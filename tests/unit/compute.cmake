gs_unit_test(test_lib_compute SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_compute.c LIBS gpuslice_core)
