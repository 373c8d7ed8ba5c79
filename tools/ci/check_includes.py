#!/usr/bin/env python3
"""Checks tapegrad's include graph: no include cycle, and every include allowed by the layer table.

  python3 tools/ci/check_includes.py [--build-dir BUILD] [--root DIR] [--graph]

Reads the `#include <tapegrad/...>` and `#include "..."` lines of every hand-written C++ and CUDA
file, and, with --build-dir, of the generated files in BUILD/generated/tapegrad/generated (without
it, the generated headers are nodes whose own includes are unknown). A file and its namesakes with
other extensions (foo.h, foo.cpp, foo.cu, foo.cuh) form one unit: foo.cpp including bar.h while
bar.cpp includes foo.h is a cycle. Exits 1 and prints every cycle (each strongly connected group
of units, with one shortest loop through it and the file that makes each step) and every include
the layer table forbids; exits 0 otherwise.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

# The layer table, edited here; docs/ARCHITECTURE_LAYERS.md states it for people (keep the two
# alike). Columns: layer | its files | what it may include besides its own files. Files are path
# prefixes relative to the source root, whole components only ("core" matches core/tensor.h,
# "generated/kernels.h" one file); generated files are named generated/<file>. A file belongs to
# the layer with the longest prefix that matches it. In the last column a layer's name stands for
# its files, "*" for anything, "-" for nothing. A row whose first column is empty continues the row
# above. Files in no layer are not checked (their includes); including them is checked.
LAYERS = """
core          | core                                                   | -
generated-api | generated/tensor.h generated/functions.h               | core
              | generated/kernels.h                                    |
ops           | ops                                                    | core generated-api
backends      | backends                                               | core ops/factories.h
              |                                                        | ops/random_draws.h
              |                                  | generated/tensor.h generated/kernels.h
autograd      | autograd generated/ops.cpp generated/autograd.cpp      | core generated-api ops
              | generated/registry.cpp generated/ops_internal.h        |
nn            | nn                                                     | core generated-api ops
              |                                                        | autograd
testing       | testing                                                | core generated-api ops
              |                                                        | autograd
top           | tapegrad.h tools tests examples                        | *
              | generated/spec_tests.cpp                               |
"""

SOURCE_EXTENSIONS = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def parse_layers(text):
    """[(name, member prefixes, allowed prefixes)], layer names in the last column expanded."""
    rows = []
    for line in text.strip().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, members, allowed = (c.strip() for c in line.split("|"))
        if not name:  # continues the row above
            rows[-1][1].extend(members.split())
            rows[-1][2].extend(allowed.split())
            continue
        rows.append((name, members.split(), [] if allowed == "-" else allowed.split()))
    files = {name: members for name, members, _ in rows}
    return [(name, members, [p for a in allowed for p in files.get(a, [a])])
            for name, members, allowed in rows]


def matches(path, prefix):
    return prefix == "*" or path == prefix or path.startswith(prefix.rstrip("/") + "/")


def layer_of(path, layers):
    best = None
    for name, members, allowed in layers:
        for m in members:
            if matches(path, m) and (best is None or len(m) > len(best[0])):
                best = (m, name, members, allowed)
    return None if best is None else best[1:]


def source_files(root):
    """Hand-written C++/CUDA files relative to root: git's list when root is a checkout."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, text=True, check=True)
        files = out.stdout.split()
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            rel = os.path.relpath(d, root)
            if rel == ".":
                dirs[:] = [x for x in dirs if not (x.startswith("build") or x == ".git")]
            files += [os.path.normpath(os.path.join(rel, n)) for n in names]
    return sorted(f for f in files if f.endswith(SOURCE_EXTENSIONS)
                  and os.path.isfile(os.path.join(root, f)))


def read_includes(path):
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            m = INCLUDE.match(line)
            if m:
                out.append((m.group(1), m.group(2)))
    return out


def build_graph(root, build_dir):
    """{file: [included file]} over the project's own files, generated ones named generated/X."""
    files = {f: os.path.join(root, f) for f in source_files(root)}
    gen_dir = os.path.join(build_dir, "generated", "tapegrad", "generated") if build_dir else None
    if gen_dir and os.path.isdir(gen_dir):
        for n in sorted(os.listdir(gen_dir)):
            if n.endswith(SOURCE_EXTENSIONS):
                files["generated/" + n] = os.path.join(gen_dir, n)
    elif build_dir:
        sys.exit(f"check_includes: {gen_dir} not found (build the tree first)")

    edges = {}
    for name, path in files.items():
        targets = []
        for kind, inc in read_includes(path):
            if kind == "<":
                if not inc.startswith("tapegrad/"):
                    continue  # the standard library and third-party headers
                target = inc[len("tapegrad/"):]
            else:  # "x.h": next to the including file, else from the source root
                target = os.path.normpath(os.path.join(os.path.dirname(name), inc))
                if target not in files and inc in files:
                    target = inc
                if target not in files:
                    continue  # a header found through another include path (not ours)
            targets.append(target)
        edges[name] = targets
    return edges


def unit_of(path):
    """foo.h, foo.cpp, foo.cu, foo.cuh: one unit; each generated file is a unit of its own."""
    return path if path.startswith("generated/") else os.path.splitext(path)[0]


def strongly_connected(graph):
    """Tarjan's algorithm, iterative: the groups of nodes that reach each other."""
    index, low, on_stack, stack, groups, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    group.append(n)
                    if n == node:
                        break
                groups.append(sorted(group))
    return groups


def shortest_loop(graph, start, members):
    """The shortest path start -> ... -> start inside members (breadth-first)."""
    prev, queue = {start: None}, collections.deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph.get(node, ())):
            if nxt not in members:
                continue
            if nxt == start:
                path = [node]  # node, its predecessor, ..., start
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return path[::-1] + [start]
            if nxt not in prev:
                prev[nxt] = node
                queue.append(nxt)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."),
                        help="source tree (default: this script's repository)")
    parser.add_argument("--build-dir", help="a configured build tree, for the generated files")
    parser.add_argument("--graph", action="store_true", help="also print the unit graph")
    args = parser.parse_args()
    root = os.path.normpath(args.root)
    edges = build_graph(root, args.build_dir)
    layers = parse_layers(LAYERS)

    # Unit graph, remembering one file-level include behind each unit edge.
    units, why = collections.defaultdict(set), {}
    for src, targets in edges.items():
        units[unit_of(src)]
        for t in targets:
            a, b = unit_of(src), unit_of(t)
            if a != b:
                units[a].add(b)
                why.setdefault((a, b), f"{src} includes {t}")
    if args.graph:
        for u in sorted(units):
            print(f"{u} -> {' '.join(sorted(units[u])) or '-'}")

    failed = False
    groups = [g for g in strongly_connected(units) if len(g) > 1]
    for g in groups:
        failed = True
        loop = shortest_loop(units, g[0], set(g))
        print(f"include cycle through {len(g)} units: {' '.join(g)}")
        print(f"  a shortest loop: {' -> '.join(loop)}")
        for a, b in zip(loop, loop[1:]):
            print(f"    {why[(a, b)]}")
        inside = sorted(why[(a, b)] for a in g for b in units[a] if b in g)
        print(f"  every include inside the group ({len(inside)} unit edges, one file each):")
        for line in inside:
            print(f"    {line}")

    violations = []
    for src, targets in sorted(edges.items()):
        layer = layer_of(src, layers)
        if layer is None:
            continue
        name, _, allowed = layer
        for t in targets:
            own = layer_of(t, layers)
            if (own is not None and own[0] == name) or any(matches(t, p) for p in allowed):
                continue
            violations.append(f"  {src} includes {t} ({name} may include: "
                              f"{' '.join(allowed) or 'only itself'})")
    if violations:
        failed = True
        print(f"layer violations: {len(violations)}")
        print("\n".join(violations))

    scope = f"{len(edges)} files" + ("" if args.build_dir else " (no --build-dir: generated files' "
                                     "own includes not read)")
    if failed:
        print(f"check_includes: FAILED ({scope})")
        return 1
    print(f"check_includes: no include cycle, every include allowed by the layer table ({scope})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
