#!/usr/bin/env python3
"""Cross-check of the issue-16 sequence ops and modules against PyTorch 1.13.

Ops (float64): bmm, baddbmm, scaled_dot_product_attention (1.13's
F._scaled_dot_product_attention, which returns the output and the attention weights; the `scale`
cases, an argument 1.13 lacks, are computed from its definition), tril, triu, cumsum, sort, topk,
one_hot. Per case: the inputs, an upstream gradient per differentiable output, PyTorch's outputs
and the gradients of every differentiable input.

Modules (float64, dropout 0): LSTM, GRU, MultiheadAttention and
TransformerEncoderLayer(norm_first=True, batch_first=True) as tapegrad's TransformerBlock, and
clip_grad_norm_. Per case: the module's options, its state_dict, the inputs, PyTorch's outputs,
and the gradients of the inputs and of every parameter for an upstream gradient.

Prints JSON; tests/seq_crosscheck_tests.cpp reads a checked-in copy:

    /usr/bin/python3 tools/crosscheck/seq_family.py > tests/data/seq_family_crosscheck.json
"""
import json
import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)
DT = torch.float64


def tj(t):
    """A tensor as JSON: dtype, shape and row-major values."""
    t = t.detach()
    dtype = {torch.float64: "float64", torch.int64: "int64", torch.bool: "bool"}[t.dtype]
    return {"dtype": dtype, "shape": list(t.shape), "values": t.reshape(-1).tolist()}


def rnd(*shape):
    return torch.randn(*shape, dtype=DT)


def distinct(*shape):
    n = math.prod(shape)
    return (torch.randperm(n).to(DT) * 0.37 - n * 0.15).reshape(shape)


def op_case(op, args, inputs, fn, **extra):
    """Runs fn(**inputs) and backpropagates a random gradient through each float output."""
    leaves = {k: v.clone().requires_grad_(v.is_floating_point()) for k, v in inputs.items()}
    outs = fn(**leaves)
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    grads_out = [rnd(*o.shape) if o.is_floating_point() and o.requires_grad else None for o in outs]
    pairs = [(o, g) for o, g in zip(outs, grads_out) if g is not None]
    diff = [v for v in leaves.values() if v.requires_grad]
    grads = torch.autograd.grad([o for o, _ in pairs], diff, [g for _, g in pairs],
                                allow_unused=True) if pairs and diff else []
    grads = dict(zip([k for k, v in leaves.items() if v.requires_grad], grads))
    case = {"op": op, "args": args, "inputs": {k: tj(v) for k, v in inputs.items()},
            "outputs": [tj(o) for o in outs],
            "grad_outputs": [tj(g) if g is not None else None for g in grads_out],
            "grads": {k: tj(g) for k, g in grads.items() if g is not None}}
    case.update(extra)
    return case


def sdpa_reference(query, key, value, attn_mask=None, is_causal=False, scale=None):
    """The definition, for the `scale` argument that 1.13's private function does not take."""
    s = query @ key.transpose(-2, -1) * scale
    if is_causal:
        s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), -math.inf)
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, -math.inf) if attn_mask.dtype == torch.bool else s + attn_mask
    attn = torch.softmax(s, -1)
    return attn @ value, attn


def op_cases():
    cases = []
    cases.append(op_case("bmm", {}, {"self": rnd(2, 3, 4), "mat2": rnd(2, 4, 5)},
                         lambda self, mat2: torch.bmm(self, mat2)))
    cases.append(op_case("baddbmm", {"beta": 0.5, "alpha": -1.5},
                         {"self": rnd(3, 5), "batch1": rnd(2, 3, 4), "batch2": rnd(2, 4, 5)},
                         lambda self, batch1, batch2: torch.baddbmm(self, batch1, batch2, beta=0.5,
                                                                   alpha=-1.5)))
    cases.append(op_case("baddbmm", {"beta": 0.0, "alpha": 2.0},
                         {"self": rnd(2, 3, 5), "batch1": rnd(2, 3, 4), "batch2": rnd(2, 4, 5)},
                         lambda self, batch1, batch2: torch.baddbmm(self, batch1, batch2, beta=0.0,
                                                                   alpha=2.0)))

    def sdpa(args, **shapes):
        inputs = {k: v for k, v in shapes.items()}
        def fn(query, key, value, attn_mask=None):
            if args.get("scale") is not None:
                return sdpa_reference(query, key, value, attn_mask, args.get("is_causal", False),
                                      args["scale"])
            return F._scaled_dot_product_attention(query, key, value, attn_mask, 0.0, True,
                                                   args.get("is_causal", False))
        return op_case("scaled_dot_product_attention", args, inputs, fn)

    cases.append(sdpa({}, query=rnd(2, 3, 4), key=rnd(2, 5, 4), value=rnd(2, 5, 3)))
    cases.append(sdpa({"is_causal": True}, query=rnd(2, 2, 4, 3), key=rnd(2, 2, 4, 3),
                      value=rnd(2, 2, 4, 5)))
    cases.append(sdpa({"is_causal": True}, query=rnd(2, 5, 3), key=rnd(2, 3, 3), value=rnd(2, 3, 2)))
    bool_mask = torch.rand(3, 5) > 0.4
    bool_mask[:, 0] = True  # no row fully masked
    cases.append(sdpa({}, query=rnd(2, 3, 4), key=rnd(2, 5, 4), value=rnd(2, 5, 3),
                      attn_mask=bool_mask))
    cases.append(sdpa({}, query=rnd(2, 3, 4), key=rnd(2, 5, 4), value=rnd(2, 5, 3),
                      attn_mask=rnd(2, 1, 5)))
    cases.append(sdpa({"scale": 0.3}, query=rnd(2, 3, 4), key=rnd(5, 4), value=rnd(1, 5, 3),
                      attn_mask=rnd(3, 5)))
    cases.append(sdpa({"scale": 0.7, "is_causal": True}, query=rnd(3, 4), key=rnd(3, 4),
                      value=rnd(3, 2)))

    for op, fn in (("tril", torch.tril), ("triu", torch.triu)):
        for diagonal in (0, 1, -2):
            cases.append(op_case(op, {"diagonal": diagonal}, {"self": rnd(2, 4, 5)},
                                 lambda self, fn=fn, d=diagonal: fn(self, d)))
    cases.append(op_case("cumsum", {"dim": 1}, {"self": rnd(3, 5, 2)},
                         lambda self: torch.cumsum(self, 1)))
    cases.append(op_case("cumsum", {"dim": -1}, {"self": rnd(4, 6)},
                         lambda self: torch.cumsum(self, -1)))
    cases.append(op_case("cumsum", {"dim": 0}, {"self": torch.randint(-5, 5, (6, 2))},
                         lambda self: torch.cumsum(self, 0)))
    ties = torch.tensor([[1.0, 3.0, 1.0, 2.0, 3.0, 0.5], [0.0, 2.0, 0.0, 1.0, 2.0, 2.0]], dtype=DT)
    cases.append(op_case("sort", {"dim": -1, "descending": False, "stable": True},
                         {"self": distinct(3, 6)}, lambda self: torch.sort(self, stable=True)))
    cases.append(op_case("sort", {"dim": 0, "descending": True, "stable": True},
                         {"self": distinct(4, 3)},
                         lambda self: torch.sort(self, dim=0, descending=True, stable=True)))
    for descending in (False, True):
        cases.append(op_case("sort", {"dim": 1, "descending": descending, "stable": True},
                             {"self": ties},
                             lambda self, d=descending: torch.sort(self, dim=1, descending=d, stable=True),
                             note="ties: PyTorch's stable order"))
    cases.append(op_case("topk", {"k": 3, "dim": -1, "largest": True}, {"self": distinct(3, 6)},
                         lambda self: torch.topk(self, 3)))
    cases.append(op_case("topk", {"k": 2, "dim": 0, "largest": False}, {"self": distinct(4, 3)},
                         lambda self: torch.topk(self, 2, 0, False)))
    cases.append(op_case("one_hot", {"num_classes": -1},
                         {"self": torch.tensor([[0, 3], [1, 1], [2, 0]])},
                         lambda self: F.one_hot(self)))
    cases.append(op_case("one_hot", {"num_classes": 6},
                         {"self": torch.tensor([4, 0, 5])}, lambda self: F.one_hot(self, 6)))
    return cases


def module_case(kind, options, module, inputs, run):
    """Runs run(module, **inputs) and backpropagates a random gradient through its outputs."""
    leaves = {k: (v.clone().requires_grad_(v.is_floating_point()) if v is not None else None)
              for k, v in inputs.items()}
    outs = run(module, **leaves)
    outs = [o for o in outs if o is not None]
    grads_out = [rnd(*o.shape) for o in outs]
    wrt = [v for v in leaves.values() if v is not None and v.requires_grad]
    params = list(module.named_parameters())
    grads = torch.autograd.grad(outs, wrt + [p for _, p in params], grads_out)
    names = [k for k, v in leaves.items() if v is not None and v.requires_grad]
    names += ["param:" + n for n, _ in params]
    return {"module": kind, "options": options,
            "state_dict": {k: tj(v) for k, v in module.state_dict().items()},
            "inputs": {k: tj(v) for k, v in inputs.items() if v is not None},
            "outputs": [tj(o) for o in outs], "grad_outputs": [tj(g) for g in grads_out],
            "grads": {n: tj(g) for n, g in zip(names, grads)}}


def module_cases():
    cases = []
    lstm = torch.nn.LSTM(3, 4, num_layers=2, batch_first=True).to(DT)
    cases.append(module_case(
        "LSTM", {"input_size": 3, "hidden_size": 4, "num_layers": 2, "batch_first": True}, lstm,
        {"input": rnd(2, 5, 3), "h0": rnd(2, 2, 4), "c0": rnd(2, 2, 4)},
        lambda m, input, h0, c0: (lambda o: (o[0], o[1][0], o[1][1]))(m(input, (h0, c0)))))
    lstm1 = torch.nn.LSTM(2, 3, bias=False).to(DT)
    cases.append(module_case(
        "LSTM", {"input_size": 2, "hidden_size": 3, "num_layers": 1, "bias": False}, lstm1,
        {"input": rnd(4, 2)},
        lambda m, input: (lambda o: (o[0], o[1][0], o[1][1]))(m(input))))
    gru = torch.nn.GRU(3, 4, num_layers=2).to(DT)
    cases.append(module_case(
        "GRU", {"input_size": 3, "hidden_size": 4, "num_layers": 2}, gru,
        {"input": rnd(5, 2, 3), "h0": rnd(2, 2, 4)},
        lambda m, input, h0: m(input, h0)))
    gru1 = torch.nn.GRU(2, 3, batch_first=True).to(DT)
    cases.append(module_case(
        "GRU", {"input_size": 2, "hidden_size": 3, "num_layers": 1, "batch_first": True}, gru1,
        {"input": rnd(2, 4, 2)}, lambda m, input: m(input)))

    mha = torch.nn.MultiheadAttention(6, 2).to(DT)
    with torch.no_grad():
        mha.in_proj_bias.normal_()
        mha.out_proj.bias.normal_()
    x = rnd(4, 2, 6)
    kpm = torch.tensor([[False, False, True, False], [False, False, False, False]])
    cases.append(module_case(
        "MultiheadAttention", {"embed_dim": 6, "num_heads": 2, "self": True,
                               "key_padding_mask": tj(kpm), "is_causal": True}, mha,
        {"query": x},
        lambda m, query: m(query, query, query, key_padding_mask=kpm,
                           attn_mask=torch.ones(4, 4, dtype=torch.bool).triu(1))))
    mha2 = torch.nn.MultiheadAttention(4, 2, batch_first=True).to(DT)
    amask = rnd(3, 5)
    cases.append(module_case(
        "MultiheadAttention", {"embed_dim": 4, "num_heads": 2, "batch_first": True,
                               "average_attn_weights": False, "attn_mask": tj(amask)}, mha2,
        {"query": rnd(2, 3, 4), "key": rnd(2, 5, 4), "value": rnd(2, 5, 4)},
        lambda m, query, key, value: m(query, key, value, attn_mask=amask,
                                       average_attn_weights=False)))

    block = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0, "gelu", batch_first=True,
                                             norm_first=True).to(DT)
    with torch.no_grad():
        for n, p in block.named_parameters():
            if "norm" in n or "bias" in n:
                p.normal_(0, 0.5)  # not the 1 / 0 they start at, so a mixed-up name shows
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
    cases.append(module_case(
        "TransformerBlock", {"embed_dim": 8, "num_heads": 2, "dim_feedforward": 16,
                             "activation": "gelu", "causal": True}, block, {"x": rnd(2, 5, 8)},
        lambda m, x: (m(x, src_mask=causal),)))
    return cases


def clip_cases():
    cases = []
    for norm_type, max_norm in ((2.0, 1.0), (math.inf, 0.5), (1.5, 100.0), (1.0, 0.1)):
        grads = [rnd(3, 4), rnd(5), rnd(2, 2)]
        params = [torch.zeros_like(g, requires_grad=True) for g in grads]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type)
        cases.append({"norm_type": "inf" if math.isinf(norm_type) else norm_type,
                      "max_norm": max_norm, "grads": [tj(g) for g in grads],
                      "total": total.item(), "clipped": [tj(p.grad) for p in params]})
    return cases


print(json.dumps({"torch": torch.__version__, "ops": op_cases(), "modules": module_cases(),
                  "clip_grad_norm": clip_cases()}))
