#!/usr/bin/env python3
"""Turns tg_bench_vs_torch JSON files into the tables of docs/PERFORMANCE.md.

  B=build-bench/tools/bench/tg_bench_vs_torch
  R='--benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
     --benchmark_report_aggregates_only=true --benchmark_out_format=json'
  $B $R --benchmark_out=run1.json
  $B --threads=2 $R --benchmark_out=run2.json
  python3 tools/bench/compare.py run1.json run2.json             # every case
  python3 tools/bench/compare.py --issue 14 run1.json run2.json  # issue 14's table only
  python3 tools/bench/compare.py --issue 14 --median a1.json a2.json b1.json b2.json c1.json c2.json

Per case and per run (one column group per JSON file, one file per thread count): the medians of
tapegrad and libtorch, the ratio tapegrad / libtorch (below 1: tapegrad is faster), and, for
cases that report bytes moved, tapegrad's bandwidth as a percentage of the STREAM triad's in the
same run. Then the target (the strictest of the issues that set one, or the one --issue names)
and whether each run meets it. A 1-thread run is read in CPU time (the benchmark thread's own,
robust on a shared machine; --wall reads wall-clock time instead); a multi-thread run in
wall-clock time, the only clock that counts every thread (its cases run with UseRealTime, so
their bytes_per_second is wall-clock too).

--median takes several runs per thread count (whole-table runs, one after another) and prints one
column group per thread count: the median of the per-run ratios, their range, how many runs met
the target, and the verdict on the medians. On a host whose speed drifts, make the runs
back-to-back passes (one repetition, no interleaving, tg_bench's --libtorch_first on every other
pass: docs/PERFORMANCE.md, "How to reproduce"), so that each ratio compares two timings taken
within a second of each other.
"""
import argparse
import json
import re
import statistics
import sys

TRIAD = "stream_triad_1<<24"

# Targets per issue: case -> (ratio target: tapegrad / libtorch at most, triad target: % of the
# triad's bandwidth at least); None where the issue sets none. Edit here when an issue changes.
ISSUE3 = {f"{op}_fwd_bwd": (goal, None) for op, goal in (
    ("masked_scatter", 0.3), ("index_reduce_prod", 0.3), ("index_reduce_mean", 0.3),
    ("index_reduce_amax", 0.3), ("scatter_reduce_sum", 0.3), ("scatter_reduce_prod", 0.3),
    ("scatter_reduce_mean", 0.3), ("scatter_reduce_amax", 0.3), ("index_fill", 1.0),
    ("index_add", 1.0), ("gather", 1.0), ("index_select", 1.0))}

# Issue 14: every case at most 1.0x libtorch; the memory-bound ones at least 85% of the triad.
ISSUE14_COMPUTE = [
    "exp_fwd_1<<22_f32", "log_fwd_1<<22_f32", "tanh_fwd_1<<22_f32", "sigmoid_fwd_1<<22_f32",
    "gelu_erf_fwd_1<<22_f32", "gelu_tanh_fwd_1<<22_f32", "gelu_fwd_bwd_4096x1024_f32",
    "sigmoid_fwd_bwd_4096x1024_f32", "tanh_fwd_bwd_4096x1024_f32",
    "softmax_dim1_fwd_bwd_4096x1024_f32", "log_softmax_dim1_fwd_bwd_4096x1024_f32",
    "layer_norm_fwd_bwd_4096x1024_f32", "cross_entropy_fwd_bwd_512x1000_f32",
    "embedding_fwd_bwd_50000x128_8192ids_f32", "matmul_512x512x512_f32", "matmul_64x784x256_f32",
    "matmul_batched_32x128x64x128_f32", "linear_fwd_bwd_256x512_512_f32", "adamw_step_1M_f32",
    "add_1elem_grad"]
ISSUE14_MEMORY_BOUND = [
    "add_bcast_4096x1024_1024_f32", "mul_bcast_4096x1024_1024_f32",
    "add_bcast_inplace_4096x1024_1024_f32", "mul_bcast_inplace_4096x1024_1024_f32",
    "add_inplace_1<<24_f32", "sum_1<<24_f32", "sum_dim0_4096x1024_f32", "sum_dim1_4096x1024_f32",
    "amax_dim1_4096x1024_f32", "mean_dim1_keepdim_4096x1024_f32",
    "contiguous_transposed_4096x4096_f32", "cat_8x512x1024_f32"]
ISSUE14 = {**{c: (1.0, None) for c in ISSUE14_COMPUTE},
           **{c: (1.0, 85.0) for c in ISSUE14_MEMORY_BOUND},
           "tiny_fwd_bwd_1elem": (0.1, None)}

TARGETS = {
    "2": {"add_1elem_grad": (0.25, None), "tiny_fwd_bwd": (0.1, None),
          "add_1<<24_f32": (None, 90.0)},
    "3": ISSUE3,
    "14": ISSUE14,
}


def strictest(case):
    """The strictest ratio and triad targets any issue sets for the case."""
    ratios = [t[case][0] for t in TARGETS.values() if case in t and t[case][0] is not None]
    triads = [t[case][1] for t in TARGETS.values() if case in t and t[case][1] is not None]
    return (min(ratios) if ratios else None, max(triads) if triads else None)


def load(path, wall):
    """One run: (threads, {(library, case): entry}, [cases in registration order])."""
    with open(path) as f:
        entries = json.load(f)["benchmarks"]
    if any(b.get("run_type") == "aggregate" for b in entries):
        entries = [b for b in entries if b.get("aggregate_name") == "median"]
    threads, runs, order = 1, {}, {}
    for b in entries:
        if b["run_name"].startswith("reference/"):  # hand-written loops: the triad and floors
            runs[("reference", b["run_name"].split("/")[1])] = b
            continue
        library, _, rest = b["run_name"].partition("/")
        case = rest.split("/")[0]  # drop /threads:N, /real_time
        m = re.search(r"/threads:(\d+)", b["run_name"])
        if m:
            threads = int(m.group(1))
        runs[(library, case)] = b
        # registration order (random interleaving shuffles the file's order)
        order.setdefault(case, b.get("family_index", len(order)))
    clock = "real_time" if threads > 1 or wall else "cpu_time"
    for b in runs.values():
        b["_time"] = b[clock]
    return threads, clock, runs, sorted(order, key=order.get)


def fmt_time(b):
    if not b:
        return "-"
    v, unit = b["_time"], b["time_unit"]
    return f"{v:,.0f} {unit}" if unit == "ns" else f"{v:.3g} {unit}"


def verdict(ratio, pct, ratio_goal, triad_goal):
    """'yes', 'no', or '-' when a value the targets need is missing."""
    ok = []
    if ratio_goal is not None:
        ok.append(None if ratio is None else ratio <= ratio_goal)
    if triad_goal is not None:
        ok.append(None if pct is None else pct >= triad_goal)
    if not ok:
        return None
    return "-" if None in ok else ("yes" if all(ok) else "no")


def measure(runs, case):
    """(ratio tapegrad / libtorch, tapegrad's % of the triad) of one run; None where missing."""
    tg, lt = runs.get(("tapegrad", case)), runs.get(("libtorch", case))
    triad = runs.get(("reference", TRIAD))
    ratio = tg["_time"] / lt["_time"] if tg and lt else None
    pct = (100.0 * tg["bytes_per_second"] / triad["bytes_per_second"]
           if tg and triad and "bytes_per_second" in tg else None)
    return ratio, pct


def goals_text(ratio_goal, triad_goal):
    goals = []
    if ratio_goal is not None:
        goals.append(f"<= {ratio_goal}x")
    if triad_goal is not None:
        goals.append(f">= {triad_goal:.0f}% triad")
    return ", ".join(goals) or "-"


def threads_label(threads):
    return f"{threads} thread{'s' if threads > 1 else ''}"


def print_table(groups, cases, targets_of, first_columns, last_column, group_cells):
    """A markdown table: per case, group_cells(group, case, goals) -> (cells, verdict) for each
    column group, then the targets and the verdicts. first_columns(group) names a group's
    columns."""
    header = ["case"]
    for group in groups:
        header += first_columns(group)
    header += ["target", last_column]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for case in cases:
        goals = targets_of(case)
        cells, verdicts = [case], []
        for group in groups:
            group_cell_list, v = group_cells(group, case, goals)
            cells += group_cell_list
            if v:
                verdicts.append(v)
        cells += [goals_text(*goals), " / ".join(verdicts) or "-"]
        print("| " + " | ".join(cells) + " |")


def print_runs(loaded, cases, targets_of):
    """One column group per run: both medians, the ratio and % of the triad."""
    def columns(run):
        return [f"{threads_label(run[0])}: tapegrad", "libtorch", "ratio", "% triad"]

    def cells(run, case, goals):
        runs = run[2]
        ratio, pct = measure(runs, case)
        return ([fmt_time(runs.get(("tapegrad", case))), fmt_time(runs.get(("libtorch", case))),
                 "-" if ratio is None else f"**{ratio:.2f}**",
                 "-" if pct is None else f"{pct:.0f}%"], verdict(ratio, pct, *goals))

    print_table(loaded, cases, targets_of, columns, "met", cells)


def median(values):
    return statistics.median(values) if values else None


def print_medians(loaded, cases, targets_of):
    """One column group per thread count: the median over the runs at that count of the
    per-run ratio, the smallest and largest, how many runs met every target of the case, and
    the median % of the triad. The verdict reads the medians: on a shared host one run in
    several lands on a bad cache mode (docs/PERFORMANCE.md), and the median is the value a user
    would see."""
    by_threads = {}
    for threads, _, runs, _ in loaded:
        by_threads.setdefault(threads, []).append(runs)

    def columns(item):
        threads, group = item
        return [f"{threads_label(threads)}: median ratio ({len(group)} runs)", "range",
                "runs met", "% triad"]

    def cells(item, case, goals):
        group = item[1]
        measured = [measure(runs, case) for runs in group]
        ratios = [r for r, _ in measured if r is not None]
        ratio, pct = median(ratios), median([p for _, p in measured if p is not None])
        met = sum(verdict(r, p, *goals) == "yes" for r, p in measured)
        return (["-" if ratio is None else f"**{ratio:.2f}**",
                 f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-",
                 f"{met} of {len(group)}", "-" if pct is None else f"{pct:.0f}%"],
                verdict(ratio, pct, *goals))

    print_table(sorted(by_threads.items()), cases, targets_of, columns, "met (medians)", cells)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", help="JSON files (--benchmark_out_format=json), "
                        "e.g. one at 1 thread and one at 2 threads")
    parser.add_argument("--issue", choices=sorted(TARGETS), help="only this issue's cases, "
                        "with its targets")
    parser.add_argument("--filter", default="", help="only cases matching this regex")
    parser.add_argument("--wall", action="store_true", help="wall-clock time at 1 thread too")
    parser.add_argument("--median", action="store_true", help="several runs per thread count: "
                        "one column group per thread count with the median ratio over its runs")
    args = parser.parse_args()

    loaded = [load(p, args.wall) for p in args.runs]
    cases = []
    for _, _, _, order in loaded:
        cases += [c for c in order if c not in cases]
    if args.issue:  # the issue's cases in registration order, then any the runs lack
        wanted = TARGETS[args.issue]
        cases = [c for c in cases if c in wanted] + [c for c in wanted if c not in cases]
    cases = [c for c in cases if re.search(args.filter, c)]

    def targets_of(case):
        return TARGETS[args.issue].get(case, (None, None)) if args.issue else strictest(case)

    if args.median:
        print_medians(loaded, cases, targets_of)
    else:
        print_runs(loaded, cases, targets_of)

    print()
    for path, (threads, clock, runs, _) in zip(args.runs, loaded):
        triad = runs.get(("reference", TRIAD))
        bw = f"{triad['bytes_per_second'] / 1e9:.2f} GB/s" if triad else "not in this run"
        print(f"{path}: {threads} thread(s), {clock.replace('_', ' ')}; "
              f"STREAM triad {bw} (GB = 10^9 bytes)")
    if any(("reference", TRIAD) not in runs for _, _, runs, _ in loaded):
        print("(% triad needs reference/stream_triad_1<<24 in the same run: keep it in "
              "--benchmark_filter)", file=sys.stderr)


if __name__ == "__main__":
    main()
