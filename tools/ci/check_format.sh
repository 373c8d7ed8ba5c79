#!/usr/bin/env bash
# Fails when clang-format (clang-format-14, or $CLANG_FORMAT) would change any hand-written C++ or
# CUDA file under the repository's .clang-format, listing the files. Fix with
#   clang-format-14 -i FILE...
# Generated code lives in build trees and is not checked.
set -euo pipefail
cd "$(dirname "$0")/../.."
clang_format=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$clang_format" >/dev/null; then
  echo "check_format: $clang_format not found (apt-get install -y clang-format-14)" >&2
  exit 2
fi

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard \
                         '*.h' '*.hpp' '*.cpp' '*.cc' '*.cu' '*.cuh')
else
  mapfile -t files < <(find . -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' \
                         -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' \) \
                         -not -path './build*' -not -path './.git/*' | sed 's|^\./||' | sort)
fi
existing=()
for f in "${files[@]}"; do [ -f "$f" ] && existing+=("$f"); done

# One clang-format process for all files; each difference is reported as
# "FILE:LINE:COL: error: code should be clang-formatted".
rc=0
log=$("$clang_format" --style=file --dry-run --Werror "${existing[@]}" 2>&1 >/dev/null) || rc=$?
mapfile -t bad < <(printf '%s\n' "$log" | sed -nE 's/^(.+):[0-9]+:[0-9]+: error: .*/\1/p' | sort -u)
if [ ${#bad[@]} -gt 0 ]; then
  echo "check_format: ${#bad[@]} of ${#existing[@]} file(s) differ from $clang_format's format:"
  printf '  %s\n' "${bad[@]}"
  echo "fix: $clang_format -i ${bad[*]:0:3}$([ ${#bad[@]} -gt 3 ] && echo ' ...')"
  exit 1
fi
if [ "$rc" -ne 0 ]; then  # failed without naming a file (bad .clang-format, unreadable file)
  printf '%s\n' "$log" >&2
  exit "$rc"
fi
echo "check_format: ${#existing[@]} files match $clang_format's format"
