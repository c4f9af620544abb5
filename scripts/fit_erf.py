"""Fits the coefficients of grafo's branch-free erf (graph-runtime/src/math.rs).

erf(x) = x * P(x^2) for |x| < 0.875, and for 0.875 <= |x| <= clamp,
erf(x) = 1 - exp(-x^2) * s * Q(z), with s = 1 / (|x| + 2) and z = (s - mid) / half
mapping s onto [-1, 1]. P and Q are Chebyshev interpolants (near-minimax) of the exact
functions, computed with 60-digit decimals (erf by its Taylor series) and expanded to
monomials for Horner's rule. Run: python3 scripts/fit_erf.py
"""
from decimal import Decimal as D, getcontext
import os
getcontext().prec = int(os.environ.get("PREC", "70"))
def _arctan_inv(n):
    # arctan(1/n) by its series, to the working precision.
    x = D(1) / n; x2 = x * x; s = D(0); term = x; k = 0
    while term != 0:
        s += term / (2 * k + 1) * (1 if k % 2 == 0 else -1)
        term *= x2; k += 1
        if abs(term) < D(10) ** -(getcontext().prec + 5): break
    return s
PI = 16 * _arctan_inv(5) - 4 * _arctan_inv(239)  # Machin's formula
def erf(x):
    x = D(x); s = D(0); term = x; n = 0
    two_over_sqrtpi = 2 / PI.sqrt()
    while True:
        t = term / (2 * n + 1)
        s += t
        if abs(t) < D(10) ** -(getcontext().prec - 10) and n > 5: break
        n += 1
        term = -term * x * x / n
    return two_over_sqrtpi * s
def cos(x):
    x = D(x); s = D(0); term = D(1); n = 0
    while abs(term) > D(10) ** -65:
        s += term; n += 2; term = -term * x * x / (n * (n - 1))
    return s
def cheb_mono(fn, a, b, deg):
    a, b = D(a), D(b); n = deg + 1
    nodes = [cos(PI * (k + D("0.5")) / n) for k in range(n)]
    vals = [fn((b - a) / 2 * z + (a + b) / 2) for z in nodes]
    c = [D(2) / n * sum(vals[k] * cos(PI * j * (k + D("0.5")) / n) for k in range(n)) for j in range(n)]
    c[0] /= 2
    T = [[D(1)], [D(0), D(1)]]
    for j in range(2, n):
        t = [D(0)] * (j + 1)
        for i, v in enumerate(T[-1]): t[i + 1] += 2 * v
        for i, v in enumerate(T[-2]): t[i] -= v
        T.append(t)
    mono = [D(0)] * n
    for j in range(n):
        for i, v in enumerate(T[j]): mono[i] += c[j] * v
    return mono, (a + b) / 2, (b - a) / 2
SPLIT = D("0.875")
def fit(clamp, small_deg, large_deg):
    # Small range, in q = x^2 over [0, SPLIT^2]: erf(x)/x.
    def small_fn(q):
        return erf(q.sqrt()) / q.sqrt() if q > 0 else 2 / PI.sqrt()
    mz, mid, half = cheb_mono(small_fn, 0, SPLIT * SPLIT, small_deg)
    from math import comb
    mq = [sum(mz[k] * comb(k, i) * (-mid) ** (k - i) / half ** k for k in range(i, len(mz))) for i in range(len(mz))]
    # Large range, in s = 1 / (x + 2): erfc(x) * exp(x^2) * (x + 2).
    def large_fn(s):
        x = 1 / s - 2
        return (1 - erf(x)) * (x * x).exp() / s
    ml, lmid, lhalf = cheb_mono(large_fn, 1 / (D(clamp) + 2), 1 / (SPLIT + 2), large_deg)
    return mq, ml, lmid, lhalf
import sys
for name, clamp, sd, ld in [("f32", "4", 6, 7), ("f64", "6", 11, 18)]:
    mq, ml, lmid, lhalf = fit(clamp, sd, ld)
    print(name, "small", [repr(float(v)) for v in mq])
    print(name, "large mid", float(lmid), "half", float(lhalf))
    print(name, "large", [repr(float(v)) for v in ml])
