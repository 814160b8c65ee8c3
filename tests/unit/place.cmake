# Unit tests for placement (lib/place-*.c) and the openb trace reader (lib/trace-openb.c).
foreach(t place place_fgd trace_openb)
  gs_unit_test(test_lib_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_${t}.c LIBS gpuslice_core)
endforeach()
