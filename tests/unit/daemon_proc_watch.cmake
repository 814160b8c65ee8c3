gs_unit_test(test_daemon_proc_watch SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_proc_watch.c LIBS gpuslice_daemon)
