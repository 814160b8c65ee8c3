# Warnings are errors everywhere. Each flag here has paid for itself in one of the anchor projects.
add_compile_options(
  -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wformat-security
  -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith -Wcast-qual
  -Wwrite-strings -Wvla -Wundef -Wnull-dereference -Wdouble-promotion
  -fno-common -D_FORTIFY_SOURCE=2 -D_GNU_SOURCE)
