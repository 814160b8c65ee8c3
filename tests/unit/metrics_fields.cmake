gs_unit_test(test_lib_metrics_fields SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_metrics_fields.c LIBS gpuslice_core)
target_compile_definitions(test_lib_metrics_fields PRIVATE
  GS_DCGM_COUNTERS="${PROJECT_SOURCE_DIR}/data/dcgm-exporter/default-counters.csv")
