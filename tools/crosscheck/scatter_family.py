#!/usr/bin/env python3
"""Cross-check of the issue-3 ops (index, scatter and mask family) against PyTorch 1.13.

Runs every op on a battery of edge cases in PyTorch (ties, prod slots with 0, 1, 2 and 3 zeros,
duplicate indices, empty indices, negative dims, include_self on and off, every reduce, an index
smaller than src, broadcast masks, integral means) and prints JSON: per case the inputs, the
upstream gradient, the expected result and the expected gradients. The doctest
tests/indexing_crosscheck_tests.cpp reads a checked-in copy and compares tapegrad's forward and
both backward paths (fused, and the composed one used under create_graph).

    /usr/bin/python3 tools/crosscheck/scatter_family.py > tests/data/scatter_family_crosscheck.json

Where tapegrad deliberately differs from PyTorch 1.13 (docs/SEMANTICS.md, "Deliberate
differences"), the case carries a "difference" note and its expected gradients come from PyTorch
run on an equivalent input where both rules agree (e.g. the index-covered part of src, or self's
tied value moved off the result); the note says what was substituted. Nothing is skipped.
"""
import json
import sys

import torch

torch.manual_seed(0)
DT = torch.float64
TIE_POOL = [-1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0]


def tensor_json(t):
    t = t.detach()
    dtype = {torch.float64: "float64", torch.float32: "float32", torch.int64: "int64",
             torch.bool: "bool"}[t.dtype]
    values = t.reshape(-1).tolist()
    return {"dtype": dtype, "shape": list(t.shape), "values": values}


def ties(shape):
    """Values from a small pool: many ties."""
    pool = torch.tensor(TIE_POOL, dtype=DT)
    return pool[torch.randint(0, len(TIE_POOL), shape)]


def distinct(shape):
    n = 1
    for s in shape:
        n *= s
    return (torch.randperm(n).to(DT) * 0.25 - n * 0.1).reshape(shape)


def randint(low, high, shape):
    return torch.randint(low, high, shape, dtype=torch.int64)


def call(op, t, a):
    """The op on tensors t (dict) and attributes a (dict), as PyTorch spells it."""
    if op == "scatter_reduce":
        return torch.scatter_reduce(t["self"], a["dim"], t["index"], t["src"], a["reduce"],
                                    include_self=a["include_self"])
    if op == "index_reduce":
        return torch.index_reduce(t["self"], a["dim"], t["index"], t["source"], a["reduce"],
                                  include_self=a["include_self"])
    if op == "gather":
        return torch.gather(t["self"], a["dim"], t["index"])
    if op == "scatter":
        return torch.scatter(t["self"], a["dim"], t["index"], t["src"])
    if op == "scatter_add":
        return torch.scatter_add(t["self"], a["dim"], t["index"], t["src"])
    if op == "index_add":
        return torch.index_add(t["self"], a["dim"], t["index"], t["source"], alpha=a["alpha"])
    if op == "index_copy":
        return torch.index_copy(t["self"], a["dim"], t["index"], t["source"])
    if op == "index_select":
        return torch.index_select(t["self"], a["dim"], t["index"])
    if op == "index_fill":
        return torch.index_fill(t["self"], a["dim"], t["index"], t["value"])
    if op == "masked_scatter":
        return torch.masked_scatter(t["self"], t["mask"], t["source"])
    if op == "masked_fill":
        return torch.masked_fill(t["self"], t["mask"], t["value"])
    if op == "masked_select":
        return torch.masked_select(t["self"], t["mask"])
    raise ValueError(op)


def grads_of(op, t, a, diff, grad_output):
    """Gradients of <result, grad_output> wrt the tensors named in diff (PyTorch)."""
    leaves = {k: (v.detach().clone().requires_grad_(k in diff)) for k, v in t.items()}
    out = call(op, leaves, a)
    gs = torch.autograd.grad(out, [leaves[k] for k in diff], grad_output, allow_unused=True)
    return {k: (g if g is not None else torch.zeros_like(leaves[k])) for k, g in zip(diff, gs)}


CASES = []


def case(name, op, t, a, diff, grads_from=None, difference=None):
    """Records one case. grads_from(t) -> (t2, a2, fix) gives an equivalent input for the
    expected gradients (a deliberate difference) and fix(grads) maps them back."""
    result = call(op, t, a)
    grad_output = ties(list(result.shape)) if result.dtype == DT else None
    entry = {"name": name, "op": op, "args": a,
             "inputs": {k: tensor_json(v) for k, v in t.items()},
             "result": tensor_json(result)}
    if diff and result.dtype == DT:
        entry["grad_output"] = tensor_json(grad_output)
        if grads_from is None:
            grads = grads_of(op, t, a, diff, grad_output)
        else:
            t2, a2, fix = grads_from(t)
            if torch.is_tensor(call(op, t2, a2)):
                assert torch.equal(call(op, t2, a2), result) or op in ("scatter", "index_copy")
            grads = fix(grads_of(op, t2, a2, diff, grad_output))
        entry["grads"] = {k: tensor_json(g) for k, g in grads.items()}
    if difference:
        entry["difference"] = difference
    CASES.append(entry)


def same(t):
    return t, None, None


# ---- scatter_reduce ---------------------------------------------------------------------------

def self_off_result(t, a, reduce):
    """self with the touched slots that tie the result moved to -inf/+inf: with include_self
    false PyTorch 1.13 counts such a self as a tie; tapegrad does not. Moving self there changes
    neither result nor tapegrad's rule, and makes PyTorch's rule the same as tapegrad's."""
    t2 = dict(t)
    touched = torch.zeros_like(t["self"], dtype=torch.bool)
    if "src" in t:
        touched = touched.scatter(a["dim"], t["index"], True)
    else:
        touched = touched.index_fill(a["dim"], t["index"], True)
    far = float("-inf") if reduce == "amax" else float("inf")
    t2["self"] = torch.where(touched, torch.full_like(t["self"], far), t["self"])
    return t2


def self_ties_result(op, t, a):
    touched = torch.zeros_like(t["self"], dtype=torch.bool)
    if op == "scatter_reduce":
        touched = touched.scatter(a["dim"], t["index"], True)
    else:
        touched = touched.index_fill(a["dim"], t["index"], True)
    return bool((touched & (t["self"] == call(op, t, a))).any())


def reduce_case(op, name, t, a):
    src = "src" if op == "scatter_reduce" else "source"
    diff = ["self", src]
    r = a["reduce"]
    if r in ("amax", "amin") and not a["include_self"] and self_ties_result(op, t, a):
        case(name, op, t, a, diff,
             grads_from=lambda t: (self_off_result(t, a, r), a, lambda g: g),
             difference="amax/amin with include_self=false where self ties the result: "
                        "PyTorch 1.13 counts self as a tie; expected grads are PyTorch's with "
                        "self moved off the result at touched slots (tapegrad's rule)")
    else:
        case(name, op, t, a, diff)


SMALLER = ("index smaller than src: PyTorch 1.13 raises in backward; expected grads are "
           "PyTorch's on src[:index.shape], zero-padded")


def narrowed_src(a):
    """Expected grads for an index smaller than src: PyTorch on src narrowed to the index's
    shape (only that part takes part), src's gradient zero-padded back to its shape."""
    def grads_from(t):
        part = tuple(slice(0, n) for n in t["index"].shape)
        t2 = dict(t, src=t["src"][part].clone())

        def fix(g):
            full = torch.zeros_like(t["src"])
            full[part] = g["src"]
            return dict(g, src=full)
        return t2, a, fix
    return grads_from


REDUCES = ["sum", "prod", "mean", "amax", "amin"]
for reduce in REDUCES:
    for include_self in (True, False):
        tag = f"{reduce}_{'self' if include_self else 'noself'}"
        a = {"dim": 1, "reduce": reduce, "include_self": include_self}
        # ties and duplicates, dim 1
        reduce_case("scatter_reduce", f"scatter_reduce_{tag}_ties_dim1", {
            "self": ties([3, 4]), "index": randint(0, 4, [3, 6]), "src": ties([3, 6])}, a)
        # dim 0, distinct values
        a0 = dict(a, dim=0)
        reduce_case("scatter_reduce", f"scatter_reduce_{tag}_distinct_dim0", {
            "self": distinct([4, 3]), "index": randint(0, 4, [5, 3]), "src": distinct([5, 3])}, a0)
        # negative dim, 3-d, ties
        an = dict(a, dim=-2)
        reduce_case("scatter_reduce", f"scatter_reduce_{tag}_ties_dimneg2_3d", {
            "self": ties([2, 3, 2]), "index": randint(0, 3, [2, 4, 2]), "src": ties([2, 4, 2])},
            an)
        # empty index
        case(f"scatter_reduce_{tag}_empty_index", "scatter_reduce", {
            "self": ties([2, 3]), "index": torch.zeros([2, 0], dtype=torch.int64),
            "src": ties([2, 0])}, a, ["self", "src"])
        # index smaller than src (and than self off dim): PyTorch raises in backward
        t = {"self": ties([3, 4]), "index": randint(0, 4, [2, 3]), "src": ties([3, 5])}
        if reduce in ("amax", "amin") and not include_self:  # keep self off the result
            t["self"] = distinct([3, 4]) + 100 * (1 if reduce == "amin" else -1)
        case(f"scatter_reduce_{tag}_index_smaller_than_src", "scatter_reduce", t, a,
             ["self", "src"], grads_from=narrowed_src(a), difference=SMALLER)

# prod: slots with 0, 1, 2 and 3 zeros (one slot each), dim 0 / dim 1
for include_self in (True, False):
    a = {"dim": 1, "reduce": "prod", "include_self": include_self}
    self_ = torch.tensor([[1.5, 2.0, 0.0, -1.0]] * 4, dtype=DT)
    index = torch.tensor([[0, 0, 1, 1, 1, 2, 2, 3]] * 4)
    src = torch.tensor([[0.5, 2.0, 0.0, 1.5, -1.0, 0.0, 0.0, 3.0],
                        [0.0, 0.0, 0.0, 1.5, 2.0, 0.0, 0.0, 0.0],
                        [2.0, -0.5, 1.0, 0.0, 0.0, 1.5, 1.5, 0.0],
                        [0.0, 2.0, 0.5, 0.5, 0.5, 0.0, 2.0, 1.0]], dtype=DT)
    tag = "self" if include_self else "noself"
    reduce_case("scatter_reduce", f"scatter_reduce_prod_{tag}_zeros_per_slot",
                {"self": self_, "index": index, "src": src}, a)
    a0 = {"dim": 0, "reduce": "prod", "include_self": include_self}
    reduce_case("index_reduce", f"index_reduce_prod_{tag}_zeros_per_slot", {
        "self": self_.t().contiguous(), "index": torch.tensor([0, 0, 1, 1, 1, 2, 2, 3]),
        "source": src.t().contiguous()}, a0)

# ---- index_reduce -----------------------------------------------------------------------------

for reduce in ["prod", "mean", "amax", "amin"]:
    for include_self in (True, False):
        tag = f"{reduce}_{'self' if include_self else 'noself'}"
        a = {"dim": 0, "reduce": reduce, "include_self": include_self}
        reduce_case("index_reduce", f"index_reduce_{tag}_ties_dim0", {
            "self": ties([4, 3]), "index": randint(0, 4, [7]), "source": ties([7, 3])}, a)
        a1 = dict(a, dim=-1)
        reduce_case("index_reduce", f"index_reduce_{tag}_distinct_dimneg1_3d", {
            "self": distinct([2, 3, 4]), "index": randint(0, 4, [5]),
            "source": distinct([2, 3, 5])}, a1)
        a2 = dict(a, dim=1)
        reduce_case("index_reduce", f"index_reduce_{tag}_ties_dim1_dups", {
            "self": ties([2, 3, 2]), "index": torch.tensor([2, 2, 2, 0]),
            "source": ties([2, 4, 2])}, a2)
        case(f"index_reduce_{tag}_empty_index", "index_reduce", {
            "self": ties([3, 2]), "index": torch.zeros([0], dtype=torch.int64),
            "source": ties([0, 2])}, a, ["self", "source"])

# self ties the result with include_self=false (the documented difference, made on purpose)
for reduce, source in (("amax", [[5.0, 0.0], [3.0, 1.0]]), ("amin", [[5.0, 1.0], [7.0, 2.0]])):
    a = {"dim": 0, "reduce": reduce, "include_self": False}
    reduce_case("index_reduce", f"index_reduce_{reduce}_noself_self_ties_result", {
        "self": torch.tensor([[5.0, 1.0]], dtype=DT), "index": torch.tensor([0, 0]),
        "source": torch.tensor(source, dtype=DT)}, a)
    a = {"dim": 1, "reduce": reduce, "include_self": False}
    reduce_case("scatter_reduce", f"scatter_reduce_{reduce}_noself_self_ties_result", {
        "self": torch.tensor([[2.0, 1.0, 7.0]], dtype=DT), "index": torch.tensor([[0, 0, 2]]),
        "src": torch.tensor([[2.0, 2.0, 1.0]], dtype=DT)}, a)

# integral forward (means round down; prod/amax/amin on int64)
for op, srcname in (("scatter_reduce", "src"), ("index_reduce", "source")):
    for reduce in (["sum"] if op == "scatter_reduce" else []) + ["prod", "mean", "amax", "amin"]:
        for include_self in (True, False):
            a = {"dim": 0, "reduce": reduce, "include_self": include_self}
            if op == "scatter_reduce":
                t = {"self": randint(-5, 6, [3, 2]), "index": randint(0, 3, [4, 2]),
                     "src": randint(-7, 8, [4, 2])}
            else:
                t = {"self": randint(-5, 6, [3, 2]), "index": randint(0, 3, [4]),
                     "source": randint(-7, 8, [4, 2])}
            case(f"{op}_{reduce}_{'self' if include_self else 'noself'}_int64", op, t, a, [])

# ---- gather, scatter, scatter_add --------------------------------------------------------------

for dim in (0, 1, -1):
    index_shape = [5, 3] if dim == 0 else [2, 6]  # long along dim: duplicates
    case(f"gather_dim{dim}", "gather", {"self": ties([3, 4]),
                                         "index": randint(0, 3 if dim == 0 else 4, index_shape)},
         {"dim": dim}, ["self"])
    case(f"scatter_add_dim{dim}_dups", "scatter_add", {
        "self": ties([3, 4]), "index": randint(0, 3 if dim == 0 else 4, [2, 3]),
        "src": ties([2, 3])}, {"dim": dim}, ["self", "src"])
    case(f"scatter_add_dim{dim}_index_smaller_than_src", "scatter_add", {
        "self": ties([3, 4]), "index": randint(0, 3 if dim == 0 else 4, [2, 3]),
        "src": ties([2, 5])}, {"dim": dim}, ["self", "src"], grads_from=narrowed_src({"dim": dim}),
        difference=SMALLER)
case("gather_3d_dim1", "gather", {"self": ties([2, 3, 4]), "index": randint(0, 3, [2, 5, 3])},
     {"dim": 1}, ["self"])
case("gather_empty", "gather", {"self": ties([2, 3]), "index": torch.zeros([2, 0],
                                                                           dtype=torch.int64)},
     {"dim": 1}, ["self"])
# scatter without duplicates (each line a permutation)
case("scatter_dim1_perm", "scatter", {"self": ties([3, 4]),
                                      "index": torch.stack([torch.randperm(4)[:3] for _ in
                                                            range(3)]),
                                      "src": ties([3, 3])}, {"dim": 1}, ["self", "src"])
case("scatter_dim0_perm", "scatter", {"self": ties([4, 2]),
                                      "index": torch.stack([torch.randperm(4)[:3] for _ in
                                                            range(2)], 1),
                                      "src": ties([3, 2])}, {"dim": 0}, ["self", "src"])


def last_write_wins(op, a):
    """Expected grads for scatter/index_copy with duplicates: only the last write to a slot
    gets its gradient (PyTorch 1.13 gives every duplicate the slot's gradient)."""
    def grads_from(t):
        def fix(g):
            src = "src" if op == "scatter" else "source"
            g = dict(g)
            index = t["index"]
            win = torch.zeros_like(g[src], dtype=torch.bool)
            if op == "scatter":  # dim 1, 2-d: per row, the last position of each value
                for i in range(index.shape[0]):
                    seen = set()
                    for k in reversed(range(index.shape[1])):
                        v = int(index[i, k])
                        if v not in seen:
                            win[i, k] = True
                            seen.add(v)
            else:  # index_copy dim 0
                seen = set()
                for k in reversed(range(index.shape[0])):
                    v = int(index[k])
                    if v not in seen:
                        win[k] = True
                        seen.add(v)
            g[src] = torch.where(win, g[src], torch.zeros_like(g[src]))
            return g
        return t, a, fix
    return grads_from


t = {"self": ties([2, 4]), "index": torch.tensor([[1, 3, 1, 1], [0, 0, 2, 3]]),
     "src": ties([2, 4])}
case("scatter_dim1_dups_last_wins", "scatter", t, {"dim": 1}, ["self", "src"],
     grads_from=last_write_wins("scatter", {"dim": 1}),
     difference="scatter with duplicates: tapegrad's last write wins and only it gets the "
                "gradient; PyTorch 1.13 leaves the result unspecified and gives every duplicate "
                "the gradient (expected src grad: PyTorch's, zeroed at the losing duplicates)")

# ---- index_select, index_add, index_copy ------------------------------------------------------

for dim in (0, -1):
    n = 4 if dim == 0 else 3
    case(f"index_select_dim{dim}_dups", "index_select", {
        "self": ties([4, 3]), "index": torch.tensor([n - 1, 0, n - 1, 1])}, {"dim": dim},
        ["self"])
    shape = [4, 3] if dim == 0 else [4, 4]
    case(f"index_add_dim{dim}_dups_alpha", "index_add", {
        "self": ties([4, 3]), "index": torch.tensor([n - 1, 0, n - 1, 1]),
        "source": ties(shape)}, {"dim": dim, "alpha": -1.5}, ["self", "source"])
case("index_select_0d_index", "index_select", {"self": ties([3, 4]),
                                               "index": torch.tensor(2)}, {"dim": 1}, ["self"])
case("index_select_empty", "index_select", {"self": ties([3, 4]),
                                            "index": torch.zeros([0], dtype=torch.int64)},
     {"dim": 0}, ["self"])
case("index_copy_dim1_perm", "index_copy", {"self": ties([2, 4]), "index": torch.tensor([3, 0]),
                                            "source": ties([2, 2])}, {"dim": 1},
     ["self", "source"])
t = {"self": ties([4, 2]), "index": torch.tensor([3, 3, 0, 3]), "source": ties([4, 2])}
case("index_copy_dim0_dups_last_wins", "index_copy", t, {"dim": 0}, ["self", "source"],
     grads_from=last_write_wins("index_copy", {"dim": 0}),
     difference="index_copy with duplicates: last write wins and only it gets the gradient "
                "(PyTorch 1.13: every duplicate gets it; expected: PyTorch's, zeroed at the "
                "losing duplicates)")

# ---- index_fill -------------------------------------------------------------------------------

case("index_fill_dim0", "index_fill", {"self": ties([4, 3]), "index": torch.tensor([2, 0]),
                                       "value": torch.tensor(0.75, dtype=DT)},
     {"dim": 0}, ["self", "value"])
case("index_fill_dim1_dups", "index_fill", {"self": ties([3, 4]),
                                            "index": torch.tensor([1, 3, 1]),
                                            "value": torch.tensor(-2.0, dtype=DT)},
     {"dim": 1}, ["self", "value"])


def wrapped(n, dim):
    def grads_from(t):
        i = t["index"]
        return dict(t, index=torch.where(i < 0, i + n, i)), {"dim": dim}, lambda g: g
    return grads_from


case("index_fill_negative_and_alias", "index_fill", {
    "self": ties([3, 4]), "index": torch.tensor([-1, 3, 0]),
    "value": torch.tensor(1.25, dtype=DT)}, {"dim": 1}, ["self", "value"],
    grads_from=wrapped(4, 1),
    difference="index_fill with a negative index: PyTorch 1.13 raises in backward (and would "
               "count -1 and n-1 as two slices); expected grads: PyTorch's with the index "
               "wrapped")

# ---- masked ops -------------------------------------------------------------------------------

mask = torch.tensor([True, False, True, True])
case("masked_scatter_broadcast_mask", "masked_scatter", {
    "self": ties([3, 4]), "mask": mask, "source": ties([14])}, {}, ["self", "source"])
case("masked_scatter_2d_source", "masked_scatter", {
    "self": ties([2, 3]), "mask": torch.tensor([[True, False, True], [False, False, True]]),
    "source": ties([2, 3])}, {}, ["self", "source"])
case("masked_fill_broadcast", "masked_fill", {
    "self": ties([3, 4]), "mask": mask, "value": torch.tensor(0.5, dtype=DT)}, {},
    ["self", "value"])
case("masked_select_broadcast", "masked_select", {"self": ties([4]),
                                                  "mask": torch.rand([3, 4]) < 0.5}, {},
     ["self"])

json.dump({"generator": "tools/crosscheck/scatter_family.py", "torch": torch.__version__,
           "cases": CASES}, sys.stdout, indent=None, separators=(",", ":"))
sys.stdout.write("\n")
