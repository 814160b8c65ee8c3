# Unit tests for the declarative option tables (lib/opt.c, lib/opt-config.c, lib/opt-render.c).
gs_unit_test(test_lib_opt SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_opt.c LIBS gpuslice_core)
