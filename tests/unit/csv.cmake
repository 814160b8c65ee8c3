# Unit tests for the CSV splitter and line reader (lib/csv.c, gs-csv.h).
gs_unit_test(test_lib_csv SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_csv.c LIBS gpuslice_core)
