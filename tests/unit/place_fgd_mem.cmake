# Unit tests for the fgd-mem placement policy (lib/place-policy-fgd-mem.c).
gs_unit_test(test_lib_place_fgd_mem SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_place_fgd_mem.c
             LIBS gpuslice_core)
