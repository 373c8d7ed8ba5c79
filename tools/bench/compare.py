#!/usr/bin/env python3
"""Turns a tg_bench_vs_torch JSON file into the tables of docs/PERFORMANCE.md.

  tg_bench_vs_torch --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
      --benchmark_out=run.json --benchmark_out_format=json
  python3 tools/bench/compare.py run.json

Prints, per case, the median CPU and wall-clock times of tapegrad and libtorch, the ratio
tapegrad / libtorch (below 1: tapegrad is faster) and the target where the issue sets one; then
each large case's bandwidth as a percentage of the STREAM triad's.
"""
import json
import sys

# Ratio targets (tapegrad time / libtorch time) and bandwidth targets (% of triad) from the issue.
RATIO_TARGETS = {"add_1elem_grad": 0.25, "tiny_fwd_bwd": 0.1}
TRIAD_TARGETS = {"add_1<<24_f32": 90.0}
TRIAD = "stream_triad_1<<24"


def medians(path):
    """{(library, case): benchmark entry}: the median aggregates, or the plain runs if the file
    has no aggregates (a run without --benchmark_repetitions)."""
    with open(path) as f:
        data = json.load(f)
    entries = data["benchmarks"]
    if any(b.get("run_type") == "aggregate" for b in entries):
        entries = [b for b in entries if b.get("aggregate_name") == "median"]
    out = {}
    for b in entries:
        library, _, rest = b["run_name"].partition("/")
        case = rest.split("/")[0]  # drop /real_time, /threads:N
        out[(library, case)] = b
    return out


def fmt(b, key):
    if not b:
        return "-"
    unit = b["time_unit"]
    return f"{b[key]:,.0f} {unit}" if unit == "ns" else f"{b[key]:.2f} {unit}"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: compare.py RUN.json (from --benchmark_out=RUN.json "
                 "--benchmark_out_format=json)")
    runs = medians(sys.argv[1])
    if any("/threads:" in b["run_name"] for b in runs.values()):
        print("(multi-thread run: the CPU columns count the calling thread only; "
              "read the wall columns)")
        print()
    cases = [c for (lib, c) in runs if lib == "tapegrad"]
    print("| case | tapegrad CPU | libtorch CPU | ratio (CPU) | tapegrad wall | libtorch wall |"
          " ratio (wall) | target | met |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        tg, lt = runs.get(("tapegrad", case)), runs.get(("libtorch", case))
        ratio_cpu = tg["cpu_time"] / lt["cpu_time"] if lt else None
        ratio_wall = tg["real_time"] / lt["real_time"] if lt else None
        target = RATIO_TARGETS.get(case)
        met = "-" if target is None or ratio_cpu is None else (
            "yes" if ratio_cpu <= target else "**no**")
        print(f"| {case} | {fmt(tg, 'cpu_time')} | {fmt(lt, 'cpu_time')} | "
              f"{'-' if ratio_cpu is None else f'{ratio_cpu:.3f}'} | {fmt(tg, 'real_time')} | "
              f"{fmt(lt, 'real_time')} | {'-' if ratio_wall is None else f'{ratio_wall:.3f}'} | "
              f"{'-' if target is None else f'<= {target}'} | {met} |")

    triad = runs.get(("reference", TRIAD))
    if not triad:
        return
    # Google Benchmark computes bytes_per_second from the timed clock (CPU time, or wall-clock
    # time with UseRealTime); the triad uses the same clock, so percentages compare like with like.
    print()
    print(f"STREAM triad: {triad['bytes_per_second'] / 1e9:.2f} GB/s (GB = 10^9 bytes)")
    print()
    print("| case | library | GB/s | % of triad | target | met |")
    print("|---|---|---|---|---|---|")
    for (library, case), b in runs.items():
        if library == "reference" or "bytes_per_second" not in b:
            continue
        pct = 100.0 * b["bytes_per_second"] / triad["bytes_per_second"]
        target = TRIAD_TARGETS.get(case) if library == "tapegrad" else None
        met = "-" if target is None else ("yes" if pct >= target else "**no**")
        print(f"| {case} | {library} | {b['bytes_per_second'] / 1e9:.2f} | {pct:.0f}% | "
              f"{'-' if target is None else f'>= {target:.0f}%'} | {met} |")


if __name__ == "__main__":
    main()
