#!/usr/bin/env bash
# Installs the Debian packages tapegrad builds with, when they are missing. Idempotent.
set -euo pipefail
# clang-format-14: the format check of .ci/run (tools/ci/check_format.sh); its output differs
# between clang-format versions, so the check names one.
# wamerican: /usr/share/dict/words, the word list examples/makemore trains on.
# libsleef-dev: vectorised exp/log/tanh/erfc for the CPU kernels (backends/cpu/simd), the
# library PyTorch uses; optional in CMake (TG_WITH_SLEEF), scalar loops without it.
# clang-14 + libclang-rt-14-dev: libFuzzer and the sanitizer runtimes of CI's ASan+UBSan build,
# which also builds the fuzzers (tools/ci/fuzz_short.sh); libomp-14-dev: clang's OpenMP runtime,
# for Thrust's OMP device system in that build's CUDA emulation.
packages=(cmake ninja-build g++ nlohmann-json3-dev doctest-dev libbenchmark-dev libopenblas-dev
          clang-format-14 wamerican clang-14 libclang-rt-14-dev libomp-14-dev libsleef-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "setup: dependencies present"
