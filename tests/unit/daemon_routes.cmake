gs_unit_test(test_daemon_routes SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_routes.c LIBS gpuslice_daemon)
