gs_unit_test(test_lib_ptrmap SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_ptrmap.c ${PROJECT_SOURCE_DIR}/lib/ptrmap.c
  LIBS Threads::Threads)
target_include_directories(test_lib_ptrmap PRIVATE ${PROJECT_SOURCE_DIR}/lib)
