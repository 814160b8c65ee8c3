# Unit tests for the plan library's readers (plan/input*.c, gs-plan-io.h).
gs_unit_test(test_plan_input SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_plan_input.c LIBS gpuslice_plan)
