#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang, ASan and UBSan, then fuzzes each for a
# short fixed time starting from its committed corpus (new inputs go to a scratch directory; the
# corpus in the tree is not changed). Any crash, sanitizer report, leak, timeout or harness check
# fails the script; the failing input is left in <build>/fuzz-artifacts/.
# Usage: tools/ci/fuzz_short.sh [seconds per target, default 25] [build dir, default build-fuzz]
# TG_FUZZ_SEED: libFuzzer's random seed. 0 (the default here) draws a new seed and fuzzes for the
# given time: the exploratory runs that look for new corner cases. A fixed seed (CI sets 1) runs
# instead a fixed number of inputs per target (the seconds argument is then ignored; TG_FUZZ_RUNS
# scales the counts), with address-space randomisation off and no corpus reload, the two things
# that made the mutations differ between runs: every run, here or in CI, tries the same inputs
# in the same order, so a CI failure replays locally and a pass does not depend on luck or on
# the machine's speed. TG_FUZZ_JOBS: how many targets fuzz at once (default: the core count).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-25}
build=${2:-build-fuzz}
# A tree already configured with the fuzzers (CI's ASan+UBSan build, see .ci/run) is reused as it
# is; otherwise one is configured: -O1 with line tables keeps file and line in reports and costs
# less than -O2 -g.
if ! grep -q "^TG_BUILD_FUZZERS:BOOL=ON" "$build/CMakeCache.txt" 2>/dev/null; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
        -DTG_SANITIZE=address,undefined -DTG_BUILD_FUZZERS=ON -DTG_WITH_CUDA=OFF -DTG_WITH_BLAS=OFF \
        -DTG_BUILD_EXAMPLES=OFF >/dev/null
fi
targets=(load csv opgen_spec op)
cmake --build "$build" --target "${targets[@]/#/fuzz_}"
# allocator_may_return_null: a hostile size past any address space must come back as tapegrad's
# "out of memory" error, not as an ASan abort. TG_ALLOCATOR=exact is the default of this build.
export ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
mkdir -p "$build/fuzz-artifacts"
declare -A max_len=([load]=4096 [csv]=2048 [opgen_spec]=16384 [op]=1024)
# About 10 s each on one core of the CI machine (ASan+UBSan, -O1).
declare -A runs=([load]=40000 [csv]=250000 [opgen_spec]=70000 [op]=40000)
seed=${TG_FUZZ_SEED:-0}
scale=${TG_FUZZ_RUNS:-1}
no_aslr=()
if [ "$seed" != 0 ] && setarch -R true 2>/dev/null; then no_aslr=(setarch -R); fi
# One target: its summary lines, or its log's tail on failure, go to $build/fuzz-artifacts/$t.out.
fuzz_one() {
  local t=$1 scratch status=0
  local -a dict=() budget=()
  scratch=$(mktemp -d)
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  local out="$build/fuzz-artifacts/$t.out" log="$build/fuzz-artifacts/$t.log"
  if [ "$seed" = 0 ]; then
    budget=(-max_total_time="$seconds")
    echo "fuzz_short: $t for ${seconds}s" >"$out"
  else
    budget=(-runs="$(( ${runs[$t]} * scale ))" -reload=0)
    echo "fuzz_short: $t, $(( ${runs[$t]} * scale )) inputs from seed $seed" >"$out"
  fi
  "${no_aslr[@]}" "$build/tests/fuzz/fuzz_$t" "$scratch" "tests/fuzz/corpus/$t" "${dict[@]}" \
    -seed="$seed" "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -max_len="${max_len[$t]}" \
    -artifact_prefix="$build/fuzz-artifacts/$t-" -print_final_stats=1 >"$log" 2>&1 || status=$?
  grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|SUMMARY)" "$log" >>"$out" || true
  rm -rf "$scratch"
  if [ "$status" -ne 0 ]; then
    tail -n 40 "$log" >>"$out"
    echo "fuzz_short: $t FAILED (exit $status); log and input in $build/fuzz-artifacts/" >>"$out"
  fi
  return "$status"
}

# Each fuzzer runs on one core: TG_FUZZ_JOBS of them at a time (default: the core count). With
# a fixed seed each still tries the same inputs in the same order, whatever runs beside it.
jobs=${TG_FUZZ_JOBS:-$(nproc)}
failed=0
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
  batch=("${targets[@]:i:jobs}")
  pids=()
  for t in "${batch[@]}"; do
    fuzz_one "$t" &
    pids+=($!)
  done
  for k in "${!batch[@]}"; do
    status=0
    wait "${pids[$k]}" || status=$?
    cat "$build/fuzz-artifacts/${batch[$k]}.out"
    if [ "$status" -ne 0 ]; then failed=1; fi
  done
done
if [ "$failed" -ne 0 ]; then
  echo "fuzz_short: FAILED" >&2
  exit 1
fi
echo "fuzz_short: all targets passed"
