gs_unit_test(test_sim_cuda SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_cuda.c LIBS gpusim_cuda ${CMAKE_DL_LIBS})
target_include_directories(test_sim_cuda PRIVATE ${PROJECT_SOURCE_DIR}/abi)
