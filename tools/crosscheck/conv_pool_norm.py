# Writes tests/data/conv_pool_norm_crosscheck.json: PyTorch 1.13's results (Debian's
# python3-torch) for the cases of tests/conv_pool_norm_tests.cpp, which builds the same inputs
# and compares. Run: /usr/bin/python3 tools/crosscheck/conv_pool_norm.py
# Inputs are wave(shape, a, b)[k] = sin(a * k + b) in row-major order, as the test builds them;
# each upstream gradient is wave(output shape, 0.61, 0.2).
import json
import math
import os
import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore", message="Using padding='same'")

torch.set_default_dtype(torch.float64)


def wave(shape, a, b):
    n = math.prod(shape)
    return torch.sin(torch.arange(n, dtype=torch.float64) * a + b).reshape(shape)


def leaf(t):
    return t.clone().requires_grad_(True)


OUT = {}


def emit(name, t):
    values = [float(v) for v in t.detach().reshape(-1).tolist()]
    OUT[name] = {"shape": list(t.shape), "values": values}


def grads(y, *xs):
    g = wave(y.shape, 0.61, 0.2)
    return torch.autograd.grad((y * g).sum(), xs, create_graph=True)


# conv2d with stride, padding, dilation and bias; first and second derivatives.
x, w = leaf(wave([2, 2, 4, 5], 0.37, 0.1)), leaf(wave([3, 2, 3, 2], 0.23, 0.5))
b = leaf(wave([3], 1.1, 0.0))
y = F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2))
emit("conv2d y", y)
gx, gw, gb = grads(y, x, w, b)
emit("conv2d grad x", gx); emit("conv2d grad w", gw); emit("conv2d grad b", gb)
h = wave(gx.shape, 0.17, 0.4)
ggw, = torch.autograd.grad((gx * gx * h).sum(), (w,))
emit("conv2d d/dw sum(grad_x^2 * h)", ggw)

# groups = 2, unbatched input.
x, w = leaf(wave([4, 3, 3], 0.29, 0.7)), leaf(wave([4, 2, 2, 2], 0.41, 0.2))
y = F.conv2d(x, w, groups=2, padding=1)
emit("grouped y", y)
gx, gw = grads(y, x, w)
emit("grouped grad x", gx); emit("grouped grad w", gw)

# padding="same" with an even kernel and dilation (asymmetric padding).
x, w = leaf(wave([1, 2, 4, 5], 0.31, 0.0)), leaf(wave([2, 2, 2, 3], 0.53, 0.9))
y = F.conv2d(x, w, padding="same", dilation=(1, 2))
emit("same y", y)
gx, gw = grads(y, x, w)
emit("same grad x", gx)

# conv1d.
x, w = leaf(wave([2, 3, 7], 0.19, 0.3)), leaf(wave([2, 3, 3], 0.47, 0.1))
b = leaf(wave([2], 0.9, 1.0))
y = F.conv1d(x, w, b, stride=2, padding=2, dilation=2)
emit("conv1d y", y)
gx, gw, gb = grads(y, x, w, b)
emit("conv1d grad x", gx); emit("conv1d grad w", gw)
y = F.conv1d(x, w, b, padding="same", dilation=3)
emit("conv1d same y", y)

# max_pool2d with padding, stride and ceil_mode; dilation.
x = leaf(wave([1, 2, 5, 5], 0.83, 0.2))
y, idx = F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, return_indices=True)
emit("max_pool2d y", y); emit("max_pool2d indices", idx)
gx, = grads(y, x)
emit("max_pool2d grad x", gx)
y, idx = F.max_pool2d(x, 2, stride=1, dilation=2, return_indices=True)
emit("max_pool2d dilated y", y); emit("max_pool2d dilated indices", idx)

# avg_pool2d variants.
x = leaf(wave([1, 1, 5, 6], 0.57, 0.1))
emit("avg_pool2d ceil count_include_pad", F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True))
y = F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
emit("avg_pool2d ceil exclude pad", y)
gx, = grads(y, x)
emit("avg_pool2d exclude pad grad x", gx)
emit("avg_pool2d divisor_override", F.avg_pool2d(x, (2, 3), stride=(1, 2), divisor_override=5))

# adaptive_avg_pool2d.
x = leaf(wave([1, 2, 5, 7], 0.33, 0.6))
y = F.adaptive_avg_pool2d(x, (3, 4))
emit("adaptive y", y)
gx, = grads(y, x)
emit("adaptive grad x", gx)

# batch_norm: training (with the running-stat update), then eval.
x = leaf(wave([3, 2, 2, 2], 0.71, 0.4) * 2 + 0.5)
w, b = leaf(wave([2], 0.8, 1.0)), leaf(wave([2], 0.3, 0.2))
rm, rv = wave([2], 0.5, 0.1), wave([2], 0.5, 0.1).abs() + 0.5
y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2, eps=1e-5)
emit("batch_norm train y", y); emit("running_mean after", rm); emit("running_var after", rv)
gx, gw, gb = grads(y, x, w, b)
emit("batch_norm train grad x", gx)
emit("batch_norm train grad w", gw)
emit("batch_norm train grad b", gb)
ggx, ggw = torch.autograd.grad((gx * gx).sum() + (gw * gw).sum(), (x, w))
emit("batch_norm train d/dx sum(grad_x^2 + grad_w^2)", ggx)
emit("batch_norm train d/dw sum(grad_x^2 + grad_w^2)", ggw)
y = F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-3)
emit("batch_norm eval y", y)
gx, gw = grads(y, x, w)
emit("batch_norm eval grad x", gx); emit("batch_norm eval grad w", gw)
ggx, ggw = torch.autograd.grad((gx * gx).sum() + (gw * gw).sum(), (x, w))
emit("batch_norm eval d/dx sum(grad_x^2 + grad_w^2)", ggx)
emit("batch_norm eval d/dw sum(grad_x^2 + grad_w^2)", ggw)

# group_norm.
x, w, b = leaf(wave([2, 4, 3], 0.67, 0.5)), leaf(wave([4], 0.9, 0.3)), leaf(wave([4], 0.4, 0.8))
y = F.group_norm(x, 2, w, b, eps=1e-5)
emit("group_norm y", y)
gx, gw, gb = grads(y, x, w, b)
emit("group_norm grad x", gx); emit("group_norm grad w", gw)

path = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data",
                    "conv_pool_norm_crosscheck.json")
with open(path, "w") as f:
    json.dump({"generator": "tools/crosscheck/conv_pool_norm.py", "torch": torch.__version__,
               "values": OUT}, f)
    f.write("\n")
