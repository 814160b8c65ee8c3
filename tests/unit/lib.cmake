# Unit tests for the core library (lib/) and the simulator's model catalogue.
foreach(t error log quantity paths peer_limits)
  gs_unit_test(test_lib_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_${t}.c LIBS gpuslice_core)
endforeach()
gs_unit_test(test_sim_models SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_models.c LIBS gpusim_state)
