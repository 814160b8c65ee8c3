# What the real-GPU checks share (sourced by check_*.sh): the PASS/FAIL table, giving up when
# the check cannot run here, and building the two binaries a check needs when they are
# missing. The sourcing script sets CHECK (its name, for messages), ROOT and BUILD first.

ROWS=()
FAILED=0

# record STATUS CHECK DETAIL: one row of the table, echoed to stderr as it happens.
record() {
  ROWS+=("$(printf '%-4s  %-62s  %s' "$1" "$2" "$3")")
  [ "$1" = FAIL ] && FAILED=1
  printf '%-4s  %s: %s\n' "$1" "$2" "$3" >&2
}

cannot_run() {
  echo "$CHECK: cannot run here: $*" >&2
  exit 2
}

# ensure_build LOG: builds gpuslice and libgpuslice.so in $BUILD when either is missing.
ensure_build() {
  [ -x "$BUILD/bin/gpuslice" ] && [ -e "$BUILD/lib/libgpuslice.so" ] && return
  echo "$CHECK: building gpuslice and libgpuslice.so in $BUILD" >&2
  { cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGS_BUILD_TESTS=OFF &&
    timeout 240 cmake --build "$BUILD" --target gpuslice gpuslice_preload; } >"$1" 2>&1 ||
    cannot_run "the build failed (last lines below; or carry a built build/ over):
$(tail -n 15 "$1")"
}

# finish WHAT: prints the table and the verdict line, and exits 1 when a check failed.
finish() {
  printf '\n%-4s  %-62s  %s\n' RESULT CHECK DETAIL
  printf '%s\n' "${ROWS[@]}"
  if [ "$FAILED" -ne 0 ]; then
    echo "$CHECK: FAIL ($1)"
    exit 1
  fi
  echo "$CHECK: PASS ($1)"
}
