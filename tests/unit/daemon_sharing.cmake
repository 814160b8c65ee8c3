gs_unit_test(test_daemon_sharing SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_sharing.c LIBS gpuslice_daemon)
