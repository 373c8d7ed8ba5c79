#!/usr/bin/python3
"""Fits the float32 polynomials of gelu's erf form (vec_math_impl.h: PhiFloat, exp_nonpositive).

erfcx(u) = exp(u^2) erfc(u), u >= 0, as t * R(s) with t = 1 / (1 + u/2) and s = 1 - t = (u/2) t:
R is smooth on s in [0, 0.84] (u up to 10.5; beyond it erfc(u)/2 is below float32's smallest
subnormal), degree 10. R is written in s rather than t so that near u = 0, where R is about 1,
Horner's rounding stays at one ulp (in t, with terms of both signs adding to about 2, it cost
gelu' 5 ULP near 0). Each coefficient is rounded to float32 in turn and the rest refitted to
absorb its rounding; least squares weighted for relative error (Lawson's iteration toward
minimax). Second, the inline e^r = 1 + r + r^2 Q(r) of exp_nonpositive (AVX2, AVX-512) on
|r| <= ln2/2 (Q degree 4, relative error 3e-9), fitted the same way. Needs numpy and mpmath
(python3-numpy, python3-mpmath).
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


def fit_rounded(powers, f, target):
    """Coefficients c with powers @ c ~ target, relative to f; each rounded to float32 in turn
    and the rest refitted to absorb its rounding."""
    fixed = []
    for k in range(powers.shape[1]):
        rest = target - (powers[:, :k] @ np.array(fixed)) / f if k else target
        fixed.append(float(np.float32(lawson_fit(powers[:, k:] / f[:, None], rest)[0])))
    return np.array(fixed)


def erfcx_over_t(s):
    t = 1 - mp.mpf(s)
    u = (1 / t - 1) * 2
    return mp.erfc(u) * mp.exp(u * u) / t


s = nodes(0, 0.84, 800)
f = np.array([float(erfcx_over_t(v)) for v in s])
powers = np.vander(s, 11, increasing=True)
r_coeffs = fit_rounded(powers, f, np.ones(len(s)))
err = np.max(np.abs(powers @ r_coeffs / f - 1))
print(f"// R: max relative error {err:.2g} with float32 coefficients")
print("kR = {" + ", ".join("%.9gf" % v for v in r_coeffs) + "}")

half_ln2 = float(mp.log(2) / 2)
r = nodes(-half_ln2, half_ln2, 600)
e = np.array([float(mp.exp(v)) for v in r])
powers = np.vander(r, 5, increasing=True) * (r * r)[:, None]
q_coeffs = fit_rounded(powers, e, (e - 1 - r) / e)
err = np.max(np.abs((1 + r + powers @ q_coeffs) / e - 1))
print(f"// Q (exp): max relative error {err:.2g} with float32 coefficients")
print("kQ = {" + ", ".join("%.9gf" % v for v in q_coeffs) + "}")
