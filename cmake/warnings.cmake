# Warnings are errors everywhere. Each flag here has paid for itself in one of the anchor projects.
# C only: the one assembly file (preload/dlsym-trampoline.S) gets none of them.
add_compile_options(
  "$<$<COMPILE_LANGUAGE:C>:-Wall;-Wextra;-Werror;-Wshadow;-Wformat=2;-Wformat-security>"
  "$<$<COMPILE_LANGUAGE:C>:-Wstrict-prototypes;-Wmissing-prototypes;-Wpointer-arith;-Wcast-qual>"
  "$<$<COMPILE_LANGUAGE:C>:-Wwrite-strings;-Wvla;-Wundef;-Wnull-dereference;-Wdouble-promotion>"
  "$<$<COMPILE_LANGUAGE:C>:-fno-common;-D_FORTIFY_SOURCE=2;-D_GNU_SOURCE>")
