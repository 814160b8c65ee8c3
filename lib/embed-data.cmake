# Turns a data file into a C source defining `const char VAR[]` (NUL-terminated) and
# `const size_t VAR_len`, so the built-in tables need no file at run time.
# Run as: cmake -DIN=file.csv -DOUT=file.c -DVAR=name -P embed-data.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n  "
       bytes "${bytes}")
file(WRITE "${OUT}.tmp"
  "/* Generated from ${IN} by lib/embed-data.cmake; do not edit. */\n"
  "#include <stddef.h>\n\n"
  "#include \"csv-read.h\"\n\n"
  "const char ${VAR}[] = {\n  ${bytes}0x00\n};\n"
  "const size_t ${VAR}_len = ${len};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
