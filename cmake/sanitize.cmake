# GS_SANITIZE builds every target with ASan and UBSan, except code that is loaded into
# processes we do not start ourselves (the interposer): ASan must come first in a
# process's link order, which a preloaded library cannot promise. Those targets call
# gs_sanitize_guest() and get UBSan alone, whose runtime has no such constraint.
set(GS_SAN_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
set(GS_UBSAN_FLAGS -fsanitize=undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)

function(gs_sanitize target)
  if(GS_SANITIZE)
    target_compile_options(${target} PRIVATE ${GS_SAN_FLAGS})
    target_link_options(${target} PRIVATE ${GS_SAN_FLAGS})
  endif()
endfunction()

function(gs_sanitize_guest target)
  if(GS_SANITIZE)
    target_compile_options(${target} PRIVATE ${GS_UBSAN_FLAGS})
    target_link_options(${target} PRIVATE ${GS_UBSAN_FLAGS})
  endif()
endfunction()
