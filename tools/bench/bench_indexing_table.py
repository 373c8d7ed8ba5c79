#!/usr/bin/env python3
"""The issue-3 table of docs/PERFORMANCE.md from two tg_bench_vs_torch runs (1 and 2 threads).

  B=build-bench/tools/bench/tg_bench_vs_torch
  F='masked|index|scatter|gather'
  R='--benchmark_repetitions=7 --benchmark_enable_random_interleaving=true'
  $B --benchmark_filter=$F $R --benchmark_report_aggregates_only=true \\
     --benchmark_out=run1.json --benchmark_out_format=json
  $B --threads=2 --benchmark_filter=$F $R \\
     --benchmark_report_aggregates_only=true --benchmark_out=run2.json --benchmark_out_format=json
  python3 tools/bench/bench_indexing_table.py run1.json run2.json

Per case: the medians of tapegrad and libtorch and their ratio (tapegrad / libtorch; below 1,
tapegrad is faster), forward and forward+backward, 1 thread (CPU time: the benchmark thread's own,
robust on a shared machine) and 2 threads (wall-clock time, the only clock that counts both).
The issue's targets apply to forward+backward.
"""
import json
import sys

# fwd+bwd ratio targets from issue 3
TARGETS = {"masked_scatter": 0.3, "index_reduce": 0.3, "scatter_reduce": 0.3, "index_fill": 1.0,
           "index_add": 1.0, "gather": 1.0, "index_select": 1.0}


ORDER = ["masked_scatter", "index_reduce_prod", "index_reduce_mean", "index_reduce_amax",
         "scatter_reduce_sum", "scatter_reduce_prod", "scatter_reduce_mean", "scatter_reduce_amax",
         "index_fill", "index_add", "gather", "index_select"]


def medians(path, clock):
    with open(path) as f:
        entries = json.load(f)["benchmarks"]
    if any(b.get("run_type") == "aggregate" for b in entries):
        entries = [b for b in entries if b.get("aggregate_name") == "median"]
    out = {}
    for b in entries:
        library, _, rest = b["run_name"].partition("/")
        out[(library, rest.split("/")[0])] = b[clock]  # ms (the large cases' unit)
    return out


def target(case):
    for prefix, value in TARGETS.items():
        if case.startswith(prefix):
            return value
    return None


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: bench_indexing_table.py RUN_1_THREAD.json RUN_2_THREADS.json")
    one, two = medians(sys.argv[1], "cpu_time"), medians(sys.argv[2], "real_time")
    # the cases in the benchmark's order (interleaved runs list them in random order)
    cases = sorted((c for (lib, c) in one if lib == "tapegrad" and c.endswith("_fwd")),
                   key=lambda c: ORDER.index(c[: -len("_fwd")]) if c[: -len("_fwd")] in ORDER
                   else len(ORDER))
    print("| case | pass | 1 thread: tapegrad | libtorch | ratio | 2 threads: tapegrad | libtorch "
          "| ratio | target | met (1 / 2 threads) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for fwd in cases:
        base = fwd[: -len("_fwd")]
        for case, label in ((fwd, "fwd"), (base + "_fwd_bwd", "fwd+bwd")):
            cells, ratios = [], []
            for runs in (one, two):
                tg, lt = runs.get(("tapegrad", case)), runs.get(("libtorch", case))
                ratio = tg / lt if tg and lt else None
                ratios.append(ratio)
                cells += [f"{tg:.3g} ms" if tg else "-", f"{lt:.3g} ms" if lt else "-",
                          f"**{ratio:.2f}**" if ratio else "-"]
            goal = target(base) if label == "fwd+bwd" else None
            met = "-" if goal is None else " / ".join(
                "-" if r is None else ("yes" if r <= goal else "no") for r in ratios)
            print(f"| {base} | {label} | " + " | ".join(cells) +
                  f" | {'-' if goal is None else f'<= {goal}'} | {met} |")


if __name__ == "__main__":
    main()
