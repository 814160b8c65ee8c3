gs_unit_test(test_daemon_limits SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_limits.c LIBS gpuslice_core)
