#!/usr/bin/env python3
"""How many lines a clang-format style would change in the tree (to choose .clang-format).

  python3 tools/ci/format_churn.py                      # this repository's .clang-format
  python3 tools/ci/format_churn.py --root /work/main    # ... applied to another checkout
  python3 tools/ci/format_churn.py '{BasedOnStyle: Google, ColumnLimit: 100}' --top 10

Prints the lines removed and added by reformatting every tracked C++/CUDA file, the files
touched, and the lines still over 100 columns afterwards (raw strings clang-format cannot break).
Changes nothing on disk.
"""
import argparse
import difflib
import os
import subprocess

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
parser.add_argument("style", nargs="?", default="file:" + os.path.normpath(os.path.join(
    here, ".clang-format")), help="clang-format --style value (default: this repository's file)")
parser.add_argument("--root", default=here, help="the tree to measure")
parser.add_argument("--top", type=int, default=0, help="list the N files with most changes")
parser.add_argument("--clang-format", default="clang-format-14")
args = parser.parse_args()

files = subprocess.run(["git", "-C", args.root, "ls-files", "*.h", "*.hpp", "*.cpp", "*.cc", "*.cu",
                        "*.cuh"], capture_output=True, text=True, check=True).stdout.split()
removed = added = over = 0
per_file = {}
for f in files:
    path = os.path.join(args.root, f)
    with open(path) as fh:
        before = fh.read().splitlines()
    after = subprocess.run([args.clang_format, f"--style={args.style}", path],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    r = a = 0
    for line in difflib.unified_diff(before, after, lineterm="", n=0):
        if line.startswith(("---", "+++", "@@")):
            continue
        r += line.startswith("-")
        a += line.startswith("+")
    over += sum(len(line) > 100 for line in after)
    if r or a:
        per_file[f] = r + a
    removed, added = removed + r, added + a
print(f"{removed} lines removed, {added} added, {len(per_file)} of {len(files)} files touched, "
      f"{over} lines over 100 columns afterwards")
for f, n in sorted(per_file.items(), key=lambda kv: -kv[1])[:args.top]:
    print(f"  {n:5d} {f}")
