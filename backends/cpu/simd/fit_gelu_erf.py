#!/usr/bin/python3
"""Fits the float32 polynomial of vec_math_impl.h's gelu (erf form) and prints it.

erfcx(u) = exp(u^2) erfc(u), u >= 0, as t * R(s) with t = 1 / (1 + u/2) and s = 1 - t = (u/2) t:
R is smooth on s in [0, 0.84] (u up to 10.5; beyond it erfc(u)/2 is below float32's smallest
subnormal), degree 10. R is written in s rather than t so that near u = 0, where R is about 1,
Horner's rounding stays at one ulp (in t, with terms of both signs adding to about 2, it cost
gelu' 5 ULP near 0). Each coefficient is rounded to float32 in turn and the rest refitted to
absorb its rounding; least squares weighted for relative error (Lawson's iteration toward
minimax). Needs numpy and mpmath (python3-numpy, python3-mpmath).
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40


def nodes(lo, hi, n):
    k = np.arange(n)
    return lo + (hi - lo) * (0.5 - 0.5 * np.cos(np.pi * (k + 0.5) / n))


def lawson_fit(a, rhs, iterations=20):
    w = np.ones(len(rhs))
    for _ in range(iterations):
        c, *_ = np.linalg.lstsq(a * np.sqrt(w)[:, None], rhs * np.sqrt(w), rcond=None)
        r = np.abs(a @ c - rhs)
        w = w * r / np.sum(w * r)
    return c


def erfcx_over_t(s):
    t = 1 - mp.mpf(s)
    u = (1 / t - 1) * 2
    return mp.erfc(u) * mp.exp(u * u) / t


s = nodes(0, 0.84, 800)
f = np.array([float(erfcx_over_t(v)) for v in s])
powers = np.vander(s, 11, increasing=True)
fixed = []
for k in range(11):  # round coefficient k to float32, refit k+1.. to the remaining error
    rest = 1 - (powers[:, :k] @ np.array(fixed)) / f if k else np.ones(len(s))
    fixed.append(float(np.float32(lawson_fit(powers[:, k:] / f[:, None], rest)[0])))
err = np.max(np.abs(powers @ np.array(fixed) / f - 1))
print(f"// R: max relative error {err:.2g} with float32 coefficients")
print("kR = {" + ", ".join("%.9gf" % v for v in fixed) + "}")
