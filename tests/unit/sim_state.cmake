gs_unit_test(test_sim_state SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_state.c LIBS gpusim_state)
