# Unit tests for the sharing planner (lib/plan-*.c).
gs_unit_test(test_lib_plan SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_plan.c LIBS gpuslice_core)
