# Unit tests for the node-by-node API (lib/place-node.c) that the Kubernetes scheduler plugin
# calls from Filter and Score.
gs_unit_test(test_lib_place_node SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_place_node.c
             LIBS gpuslice_core)
