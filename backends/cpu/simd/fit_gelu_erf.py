#!/usr/bin/python3
"""Fits the two float32 polynomials of vec_math_impl.h's gelu (erf form) and prints them.

erfcx(u) = exp(u^2) erfc(u), u >= 0, as t * P(t) with t = 1 / (1 + u/2): P is smooth on (0, 1]
(t -> 0 as u -> inf), degree 10, relative error 1.1e-8. erf(z) = z * Q(z^2) for |z| <= 0.6,
degree 5, relative error 1e-10. Least squares on Chebyshev nodes, weighted for relative error
(Lawson's iteration toward minimax for P). Needs numpy and mpmath (python3-numpy, python3-mpmath).
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40


def nodes(lo, hi, n):
    k = np.arange(n)
    return lo + (hi - lo) * (0.5 - 0.5 * np.cos(np.pi * (k + 0.5) / n))


def relative_fit(s, f, deg, lawson=0):
    a = np.vander(s, deg + 1, increasing=True) / f[:, None]
    w = np.ones(len(s))
    for _ in range(lawson + 1):
        c, *_ = np.linalg.lstsq(a * np.sqrt(w)[:, None], np.sqrt(w), rcond=None)
        r = np.abs(a @ c - 1)
        w = w * r / np.sum(w * r)
    return c, np.max(np.abs(a @ c - 1))


def erfcx_over_t(t):
    u = (1 / mp.mpf(t) - 1) * 2
    return mp.erfc(u) * mp.exp(u * u) / mp.mpf(t)


t = nodes(0, 1, 800)
p, err_p = relative_fit(t, np.array([float(erfcx_over_t(v)) for v in t]), 10, lawson=30)
s = nodes(0, 0.36, 400)
q, err_q = relative_fit(s, np.array([float(mp.erf(mp.sqrt(v)) / mp.sqrt(v)) for v in s]), 5)
print(f"// P: max relative error {err_p:.2g}; Q: {err_q:.2g}")
for name, c in (("kErfcxP", p), ("kErfQ", q)):
    print(f"{name} = {{" + ", ".join("%.9gf" % v for v in c.astype(np.float32)) + "}")
