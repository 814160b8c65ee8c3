#!/bin/sh
# Formats every C source of the tree with the repository's .clang-format (abi/ excepted:
# abi/.clang-format turns it off). tests/layering/test_format.py fails on anything this
# would change.
set -eu
cd "$(dirname "$0")/.."
find lib include plan cli daemon preload sim tests bench fuzz integrations \( -name '*.c' -o -name '*.h' \) -type f \
  -not -path '*/build*' -print0 | xargs -0 clang-format -i
