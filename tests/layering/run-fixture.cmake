# cmake -DFIXTURE=<dir> -DWORK=<dir> -DGENERATOR=<generator> -P run-fixture.cmake
#
# Shows that cmake/check-layering.cmake can fail: configures the fixture project once per
# case and checks that the clean one passes and that every other one stops the configure
# naming the product target and the chain that reaches the simulator. One build directory
# serves every case, so the compiler is looked for only once.
cmake_minimum_required(VERSION 3.20)
set(cases
  clean -
  direct "gpuslice links the simulator target gpusim_state \\(gpuslice -> gpusim_state\\)"
  cross_directory "gpuslice links the simulator target gpusim_state \\(gpuslice -> gpusim_state\\)"
  alias "gpuslice links the simulator target gpusim_state \\(gpuslice -> gpusim_state\\)"
  through_product "core links the simulator target gpusim_state \\(core -> gpusim_state\\)"
  through_helper "gpuslice links the simulator target gpusim_state \\(gpuslice -> helper -> gpusim_state\\)"
  by_directory "gpuslice links the simulator target fakecuda \\(gpuslice -> fakecuda\\)")

set(failures "")
while(cases)
  list(POP_FRONT cases case expect)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${FIXTURE} -B ${WORK} -G ${GENERATOR} -DCASE=${case}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  # CMake wraps long error lines: join them back before matching.
  string(REGEX REPLACE "\n +" " " err "${err}")
  if(expect STREQUAL "-")
    if(NOT rc EQUAL 0)
      string(APPEND failures "\n${case}: expected a clean configure, got:\n${err}")
    endif()
  elseif(rc EQUAL 0)
    string(APPEND failures "\n${case}: the check passed; expected: ${expect}")
  elseif(NOT err MATCHES "gpuslice layering broken:" OR NOT err MATCHES "product_links_sim: ${expect}")
    string(APPEND failures "\n${case}: expected: ${expect}\ngot:\n${err}")
  elseif(err MATCHES "test_sim")
    string(APPEND failures "\n${case}: a test target was reported:\n${err}")
  endif()
endwhile()
if(failures)
  message(FATAL_ERROR "layering check:${failures}")
endif()
