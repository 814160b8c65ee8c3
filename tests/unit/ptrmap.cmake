gs_unit_test(test_lib_ptrmap SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_ptrmap.c LIBS gpuslice_core)
