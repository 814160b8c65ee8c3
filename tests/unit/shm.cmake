gs_unit_test(test_lib_shm SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_shm.c LIBS gpuslice_core)
