gs_unit_test(test_daemon_idle SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_idle.c LIBS gpuslice_daemon)
target_include_directories(test_daemon_idle PRIVATE ${PROJECT_SOURCE_DIR}/abi)
