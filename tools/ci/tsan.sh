#!/usr/bin/env bash
# ThreadSanitizer run of the concurrency test (tests/concurrency): builds the library and that one
# program with -fsanitize=thread (no OpenBLAS: its threads are not instrumented, and its results
# may differ in the last bit between thread counts), then runs it; any TSan report fails.
# Usage: tools/ci/tsan.sh [build-dir] (default build-tsan). Takes a few minutes on 2 cores.
# TG_OPGEN_EXECUTABLE: a tg_opgen already built (CI passes the Release tree's) instead of its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-tsan}
# -O0 with line tables: TSan's reports keep file and line, and the build is cheaper than at -O1
# (the test is small: it runs in seconds either way).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTG_SANITIZE=thread \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1" \
      -DTG_WITH_CUDA=OFF -DTG_WITH_BLAS=OFF -DTG_BUILD_EXAMPLES=OFF -DTG_UNITY_BUILD=ON \
      -DTG_OPGEN_EXECUTABLE="${TG_OPGEN_EXECUTABLE:-}" >/dev/null
cmake --build "$build" --target tg_concurrency_test
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
  "$build/tests/tg_concurrency_test"
