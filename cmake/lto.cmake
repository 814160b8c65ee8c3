# Link-time optimization for code on the interposer's hot paths (launch, alloc/free): the
# interposer and the guest build of the core it links. Its hooks call into the core (the
# ledger's charge, the pointer map) once per allocation; across files only the link can
# inline them. Where the toolchain cannot (CheckIPOSupported), the build goes on without it.
include(CheckIPOSupported)
check_ipo_supported(RESULT GS_IPO_SUPPORTED OUTPUT GS_IPO_WHY LANGUAGES C)
if(NOT GS_IPO_SUPPORTED)
  message(STATUS "gpuslice: no link-time optimization for the interposer: ${GS_IPO_WHY}")
endif()

# Objects keep their machine code too (fat): tests/integration/test_cli_run.py reads what the
# interposer's own objects would export.
function(gs_guest_lto target)
  if(GS_IPO_SUPPORTED)
    set_property(TARGET ${target} PROPERTY INTERPROCEDURAL_OPTIMIZATION TRUE)
    if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${target} PRIVATE -ffat-lto-objects)
    endif()
  endif()
endfunction()
