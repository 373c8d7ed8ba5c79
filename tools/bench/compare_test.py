#!/usr/bin/env python3
"""Checks compare.py's tables on small made-up benchmark files: the per-run table and --median
(median of the per-run ratios, their range, runs that met the target, the verdict on the
medians). Run by ctest as bench_compare; exits non-zero on the first wrong cell."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
COMPUTE = "matmul_512x512x512_f32"  # issue 14: <= 1.0x libtorch
MEMORY = "add_bcast_4096x1024_1024_f32"  # issue 14: <= 1.0x and >= 85% of the triad


def entry(library, case, threads, ms, gbps=None):
    name = f"{library}/{case}" + (f"/threads:{threads}/real_time" if threads > 1 else "")
    e = {"name": name + "_median", "run_name": name, "run_type": "aggregate",
         "aggregate_name": "median", "family_index": 0 if case == COMPUTE else 1,
         "real_time": ms, "cpu_time": ms, "time_unit": "ms"}
    if gbps is not None:
        e["bytes_per_second"] = gbps * 1e9
    return e


def run_file(directory, name, threads, compute_ratio, memory_ratio, memory_pct):
    """One run: libtorch at 2 ms, tapegrad at ratio * 2 ms; the triad at 40 GB/s."""
    benchmarks = [
        entry("tapegrad", COMPUTE, threads, 2.0 * compute_ratio),
        entry("libtorch", COMPUTE, threads, 2.0),
        entry("tapegrad", MEMORY, threads, 2.0 * memory_ratio, 40.0 * memory_pct / 100.0),
        entry("libtorch", MEMORY, threads, 2.0, 40.0),
        {"name": "reference/stream_triad_1<<24", "run_name": "reference/stream_triad_1<<24",
         "run_type": "aggregate", "aggregate_name": "median", "real_time": 1.0,
         "cpu_time": 1.0, "time_unit": "ms", "bytes_per_second": 40e9},
    ]
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        json.dump({"benchmarks": benchmarks}, f)
    return path


def table(*args):
    out = subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), "--issue", "14",
                          *args], check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] in (COMPUTE, MEMORY):
            rows[cells[0]] = cells
    return rows


def expect(actual, wanted, what):
    if actual != wanted:
        sys.exit(f"bench_compare: {what}: got {actual!r}, want {wanted!r}")


def main():
    with tempfile.TemporaryDirectory() as d:
        # 1 thread: compute ratios 0.90, 1.10, 0.95 -> median 0.95, met in 2 runs of 3.
        # 2 threads: compute ratios 1.20, 0.80, 1.05 -> median 1.05, met in 1 run of 3.
        # Memory-bound: 1 thread ratios 0.8 (90 % triad), 0.9 (80 %), 0.7 (95 %): median ratio
        # 0.80 and median 90 % -> met on the medians, though one run misses the triad target.
        one = [run_file(d, f"a{i}.json", 1, c, m, p) for i, (c, m, p) in
               enumerate([(0.90, 0.8, 90), (1.10, 0.9, 80), (0.95, 0.7, 95)])]
        two = [run_file(d, f"b{i}.json", 2, c, m, p) for i, (c, m, p) in
               enumerate([(1.20, 1.1, 150), (0.80, 1.3, 140), (1.05, 0.9, 160)])]

        rows = table("--median", *one, *two)
        c, m = rows[COMPUTE], rows[MEMORY]
        expect(c[1:5], ["**0.95**", "0.90-1.10", "2 of 3", "-"], "1-thread compute medians")
        expect(c[5:9], ["**1.05**", "0.80-1.20", "1 of 3", "-"], "2-thread compute medians")
        expect(c[9:], ["<= 1.0x", "yes / no"], "compute verdict on the medians")
        expect(m[1:5], ["**0.80**", "0.70-0.90", "2 of 3", "90%"], "1-thread memory medians")
        expect(m[5:9], ["**1.10**", "0.90-1.30", "1 of 3", "150%"], "2-thread memory medians")
        expect(m[9:], ["<= 1.0x, >= 85% triad", "yes / no"], "memory verdict on the medians")

        # An even number of runs: the median is the mean of the middle two.
        rows = table("--median", one[0], one[1])
        expect(rows[COMPUTE][1:3], ["**1.00**", "0.90-1.10"], "median of two runs")

        # Without --median: one column group per run, times as given.
        rows = table(one[1], two[0])
        expect(rows[COMPUTE][1:5], ["2.2 ms", "2 ms", "**1.10**", "-"], "per-run 1-thread cells")
        expect(rows[MEMORY][5:9], ["2.2 ms", "2 ms", "**1.10**", "150%"],
               "per-run 2-thread cells")
        expect(rows[COMPUTE][-1], "no / no", "per-run verdicts")
    print("bench_compare: per-run and median tables as expected")


if __name__ == "__main__":
    main()
