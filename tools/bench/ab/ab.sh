#!/bin/bash
# Old against new library build in one process (ab_two_builds.cpp says why).
# usage: tools/bench/ab/ab.sh OLD_LIB_DIR NEW_LIB_DIR OP [THREADS] [BLOCKS] [CALLS]
#   *_LIB_DIR: a directory holding libtapegrad.so.0 (copy it out of a build: cp -L
#   build/libtapegrad.so.0 /tmp/old/); OP: one of step_ops.cpp's ops (tiny, cumsum, ...).
# Both libraries must have been built from sources with the same public headers (the step is
# compiled once per library against the checkout's headers).
set -euo pipefail
old=$(realpath "$1"); new=$(realpath "$2"); op=$3
threads=${4:-1}; blocks=${5:-40}; calls=${6:-5}
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
build=${TG_AB_BUILD:-$root/build}   # for the generated headers
out=$(mktemp -d)
for side in old new; do
  dir=${!side}
  g++ -O2 -std=c++20 -shared -fPIC -I "$build/include" -I "$build/generated" \
    "$here/step_ops.cpp" -L "$dir" -l:libtapegrad.so.0 \
    -Wl,--disable-new-dtags,-rpath,"$dir" -o "$out/step_$side.so"
done
g++ -O2 -std=c++20 "$here/ab_two_builds.cpp" -ldl -o "$out/ab_two_builds"
# The library's thread-locals use the initial-exec TLS model; a second copy needs room for them.
GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536 STEP_OP=$op STEP_THREADS=$threads \
  "$out/ab_two_builds" "$blocks" "$calls" "$out/step_old.so" "$out/step_new.so"
rm -rf "$out"
