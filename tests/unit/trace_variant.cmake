# Unit tests for trace variants (lib/trace-variant.c) and the replay with departures
# (lib/place-churn.c).
foreach(t trace_variant place_churn)
  gs_unit_test(test_lib_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_${t}.c LIBS gpuslice_core)
endforeach()
