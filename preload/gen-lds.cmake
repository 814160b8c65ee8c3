# Writes the interposer's version script from its one list of hooks, so that it exports what
# hooks.def lists and nothing else. A name listed twice, or a list with none, stops the build.
# Run as: cmake -DIN=hooks.def -DOUT=libgpuslice.lds -P gen-lds.cmake
file(STRINGS "${IN}" entries REGEX "^GS_(CUDA_HOOK|NVML_HOOK|EXPORT)\\(")
set(names "")
foreach(entry ${entries})
  if(NOT entry MATCHES "^GS_(CUDA_HOOK|NVML_HOOK|EXPORT)\\(([A-Za-z_][A-Za-z0-9_]*)\\)$")
    message(FATAL_ERROR "${IN}: not one entry a line: '${entry}'")
  endif()
  list(APPEND names ${CMAKE_MATCH_2})
endforeach()
list(LENGTH names n)
set(unique ${names})
list(REMOVE_DUPLICATES unique)
list(LENGTH unique n_unique)
if(n EQUAL 0 OR NOT n EQUAL n_unique)
  message(FATAL_ERROR "${IN}: ${n} entries, ${n_unique} different names: each hook once, at least one")
endif()
list(JOIN names ";\n    " globals)
get_filename_component(in_name "${IN}" NAME)
file(WRITE "${OUT}.tmp"
  "/* Generated from preload/${in_name} by preload/gen-lds.cmake; do not edit.\n"
  " * The interposer exports exactly the functions it intercepts, and nothing else, so that it\n"
  " * can never shadow another symbol of the program it is loaded into. */\n"
  "{\n  global:\n    ${globals};\n  local: *;\n};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
