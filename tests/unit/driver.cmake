# The driver seam (lib/driver.c). It links the core alone; the simulator it checks specs with
# is the built one, loaded at run time from GS_TEST_LIBDIR/sim, so it must be built first.
gs_unit_test(test_lib_driver SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_driver.c LIBS gpuslice_core ${CMAKE_DL_LIBS})
target_compile_definitions(test_lib_driver PRIVATE GS_TEST_LIBDIR="${CMAKE_BINARY_DIR}/lib")
add_dependencies(test_lib_driver gpusim_cuda gpusim_nvml)
