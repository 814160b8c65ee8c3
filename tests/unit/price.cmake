# Unit tests for price tables and GPU model names (lib/price-table.c, lib/gpu-model.c).
gs_unit_test(test_lib_price SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_price.c LIBS gpuslice_core m)
