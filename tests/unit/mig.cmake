# Unit tests for MIG profile tables and layouts (lib/mig-table.c, lib/mig-plan.c).
gs_unit_test(test_lib_mig SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_mig.c LIBS gpuslice_core m)
# Applying MIG layouts over a fake driver (lib/mig-layout.c, lib/mig-apply.c).
gs_unit_test(test_lib_mig_apply SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lib_mig_apply.c LIBS gpuslice_core m)
