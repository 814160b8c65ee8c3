gs_unit_test(test_daemon_verify SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_verify.c LIBS gpuslice_daemon)
