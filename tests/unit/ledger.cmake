gs_unit_test(test_lib_ledger SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_ledger.c LIBS gpuslice_core)
