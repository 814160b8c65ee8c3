gs_unit_test(test_daemon_suspend SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_suspend.c LIBS gpuslice_daemon)
target_include_directories(test_daemon_suspend PRIVATE ${PROJECT_SOURCE_DIR}/abi)
