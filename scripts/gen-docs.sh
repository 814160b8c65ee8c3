#!/bin/sh
# Rewrites the documentation made from the option tables: the generated blocks of
# docs/cli.md and docs/configuration.md, the whole man page docs/gpuslice.1, and the daemon's
# commented sample configuration packaging/gpuslice.conf.sample.
# Usage: scripts/gen-docs.sh [BUILD_DIR]   (default build; needs build/bin/gpuslice)
# tests/integration/test_cli_docs.py (and test_daemon_start.py for the sample) fail when the
# committed files differ from this output.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
gpuslice=${1:-$root/build}/bin/gpuslice
for md in docs/cli.md docs/configuration.md; do
  "$gpuslice" __docs md <"$root/$md" >"$root/$md.tmp"
  mv "$root/$md.tmp" "$root/$md"
done
"$gpuslice" __docs man >"$root/docs/gpuslice.1"
"$gpuslice" daemon --print-config >"$root/packaging/gpuslice.conf.sample"
