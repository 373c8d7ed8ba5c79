#!/usr/bin/env bash
# Fails when a hand-written source file is longer than the project's budget (800 lines; override
# with TG_MAX_LINES), listing each such file with its length. Sources: C++, CUDA, Python, CMake,
# shell and the JSON op specs. Data files (data/, tests/data/, *.csv) and docs are not sources.
set -euo pipefail
cd "$(dirname "$0")/../.."
max=${TG_MAX_LINES:-800}

# Tracked files when this is a git checkout (what a commit holds; build trees are ignored),
# otherwise every file outside build*/ and .git/.
list_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard
  else
    find . -type f -not -path './build*' -not -path './.git/*' | sed 's|^\./||'
  fi
}

over=()
while IFS= read -r f; do
  case "$f" in
    data/* | tests/data/* | *.csv) continue ;;
    *.h | *.hpp | *.cpp | *.cc | *.cu | *.cuh | *.py | *.sh | *.cmake | *.cmake.in | \
      CMakeLists.txt | */CMakeLists.txt | ops/specs/*.json | .ci/run) ;;
    *) continue ;;
  esac
  [ -f "$f" ] || continue  # deleted in the work tree but still in the index
  n=$(wc -l <"$f")
  if [ "$n" -gt "$max" ]; then over+=("$n $f"); fi
done < <(list_files)

if [ ${#over[@]} -gt 0 ]; then
  echo "check_sizes: ${#over[@]} hand-written source file(s) over $max lines:"
  printf '  %s\n' "${over[@]}" | sort -rn
  exit 1
fi
echo "check_sizes: every hand-written source file is at most $max lines"
