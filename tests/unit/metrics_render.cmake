gs_unit_test(test_lib_metrics_render SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_metrics_render.c LIBS gpuslice_core)
