"""How the polynomial coefficients of the library were made (run by hand; never at import).

    python gpupromote/kernel/math/_coefficients.py [name ...]      # a FITS name, or
    python gpupromote/kernel/math/_coefficients.py tables|logtable|exptable|erfc

prints, for each fit, the coefficients as Python float literals (repr: exact doubles, rendered
as hex floats in C++) and the fit's error measured with mpmath on a dense grid after rounding
the coefficients to double. The literals were pasted into the function modules.

Method: a near-minimax fit by Lawson's iteration (iteratively reweighted least squares) on
Chebyshev-distributed points. The least-squares steps run in float64 on residuals computed with
mpmath at 200 bits, so a fit can reach errors far below 2^-53 relative to the function. After
rounding, each coefficient in turn is rounded to double and the later ones are refitted, so the
rounding of the earlier ones is compensated.
"""
from __future__ import annotations

import sys

import mpmath as mp
import numpy as np

mp.mp.prec = 200


def _nodes(a, b, n):
    a, b = mp.mpf(a), mp.mpf(b)
    return [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (k + mp.mpf(0.5)) / n) for k in range(n)] + [a, b]


def fit(g, a, b, exps, weight=lambda x: 1, n=700, iters=40, fixed=()):
    """Coefficients c_k (for x**exps[k]) minimising max |weight(x) * (g(x) - sum c_k x**e_k)|
    on [a, b]. ``fixed``: ((exponent, exact value), ...) terms kept out of the fit."""
    xs = [x for x in _nodes(a, b, n) if g(x) is not None]
    gs = [g(x) - sum(mp.mpf(v) * x**e for e, v in fixed) for x in xs]
    ws = [mp.mpf(weight(x)) for x in xs]
    A = np.array([[float(w * x**e) for e in exps] for x, w in zip(xs, ws)])
    scale = np.max(np.abs(A), axis=0)
    scale[scale == 0] = 1
    As = A / scale
    c = [mp.mpf(0)] * len(exps)
    u = np.ones(len(xs))
    best = None
    for _ in range(iters):
        r = np.array([float(w * (gx - sum(ck * x**e for ck, e in zip(c, exps)))) for x, w, gx in zip(xs, ws, gs)])
        sw = np.sqrt(u)
        d, *_ = np.linalg.lstsq(As * sw[:, None], r * sw, rcond=None)
        c = [ck + mp.mpf(float(dk / s)) for ck, dk, s in zip(c, d, scale)]
        r = np.array([float(w * (gx - sum(ck * x**e for ck, e in zip(c, exps)))) for x, w, gx in zip(xs, ws, gs)])
        m = np.max(np.abs(r))
        if best is None or m < best[0]:
            best = (m, list(c))
        u = u * np.abs(r)
        u = u / u.sum()
        u = np.maximum(u, 1e-30)
    c = best[1]
    # round one coefficient at a time, refit the rest (plain least squares on the residual)
    out = []
    for k in range(len(exps)):
        ck = float(c[k])
        out.append(ck)
        rest = exps[k + 1:]
        if not rest:
            break
        r = np.array([float(w * (gx - sum(mp.mpf(v) * x**e for v, e in zip(out, exps))
                                 - sum(cj * x**e for cj, e in zip(c[k + 1:], rest))))
                      for x, w, gx in zip(xs, ws, gs)])
        Ar = As[:, k + 1:]
        d, *_ = np.linalg.lstsq(Ar, r, rcond=None)
        c = c[:k + 1] + [cj + mp.mpf(float(dj / s)) for cj, dj, s in zip(c[k + 1:], d, scale[k + 1:])]
    err = max_error(g, a, b, exps, out, weight, fixed)
    return out, err


def max_error(g, a, b, exps, coeffs, weight=lambda x: 1, fixed=(), n=2500):
    worst = 0
    for x in _nodes(a, b, n):
        gx = g(x)
        if gx is None:
            continue
        p = sum(mp.mpf(v) * x**e for e, v in fixed) + sum(mp.mpf(c) * x**e for c, e in zip(coeffs, exps))
        worst = max(worst, abs(mp.mpf(weight(x)) * (gx - p)))
    return float(worst)


def _report(name, coeffs, err):
    print(f"# {name}: max weighted error {err:.3e} (2^{float(mp.log(err, 2)) if err else -999:.1f})")
    print(f"{name} = (" + ", ".join(repr(c) for c in coeffs) + ("," if len(coeffs) == 1 else "") + ")")


def _safe(f):
    def g(x):
        if x == 0:
            return None
        return f(x)
    return g


LN2 = mp.log(2)

# name -> (function, interval, exponents, weight, fixed terms). Errors are stated relative to
# what the coefficients approximate in the caller (the weight).
FITS = {
    # exp(r) = 1 + r + r^2/2 + r^3 * P(r), |r| <= ln2/2; absolute error (exp(r) ~ 1)
    "EXP_P_F64": (lambda r: mp.exp(r), -LN2 / 2 * 1.0001, LN2 / 2 * 1.0001, list(range(3, 13)), lambda r: 1,
                  ((0, 1), (1, 1), (2, 0.5))),
    "EXP_P_F32": (lambda r: mp.exp(r), -LN2 / 2 * 1.0001, LN2 / 2 * 1.0001, list(range(3, 11)), lambda r: 1,
                  ((0, 1), (1, 1), (2, 0.5))),
    # log1p(f) = 2s + s*R(s^2), s = f/(2+f), |s| <= 0.1716; error relative to 2s
    "LOG_R_F64": (_safe(lambda z: (2 * mp.atanh(mp.sqrt(z)) - 2 * mp.sqrt(z)) / mp.sqrt(z)), 0, 0.02945,
                  list(range(1, 10)), _safe(lambda z: 1 / 2), ()),
    "LOG_R_F32": (_safe(lambda z: (2 * mp.atanh(mp.sqrt(z)) - 2 * mp.sqrt(z)) / mp.sqrt(z)), 0, 0.02945,
                  list(range(1, 7)), _safe(lambda z: 1 / 2), ()),
    # the float32 log twin's (fast32.py LS0..LS4): the same form, one degree less
    "LOG_R_SHORT": (_safe(lambda z: (2 * mp.atanh(mp.sqrt(z)) - 2 * mp.sqrt(z)) / mp.sqrt(z)), 0, 0.02945,
                    list(range(1, 6)), _safe(lambda z: 1 / 2), ()),
    # the float32 tanh twin's (fast32.py TS0..TS3): -2u / expm1(-2u) = 1 + u + u^2 S(u^2), |u| <= ln2/4
    # (S(w) = (u coth u - 1) / u^2, even); absolute error of u^2 S (weight w)
    "TANH_S_SHORT": (_safe(lambda w: (mp.sqrt(w) * mp.coth(mp.sqrt(w)) - 1) / w), 0, (LN2 / 4 * 1.0005)**2,
                     list(range(0, 4)), lambda w: w, ()),
    # sin(r) = r + r^3 S(r^2), |r| <= pi/4: error of r^3 S relative to r (weight z)
    "SIN_S_F64": (_safe(lambda z: (mp.sin(mp.sqrt(z)) - mp.sqrt(z)) / mp.sqrt(z)**3), 0, (mp.pi / 4)**2 * 1.001,
                  list(range(0, 9)), lambda z: z, ()),
    "SIN_S_F32": (_safe(lambda z: (mp.sin(mp.sqrt(z)) - mp.sqrt(z)) / mp.sqrt(z)**3), 0, (mp.pi / 4)**2 * 1.001,
                  list(range(0, 6)), lambda z: z, ()),
    # cos(r) = 1 - r^2/2 + r^4 C(r^2): absolute error (weight z^2)
    "COS_C_F64": (_safe(lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z**2), 0, (mp.pi / 4)**2 * 1.001,
                  list(range(0, 8)), lambda z: z * z, ()),
    "COS_C_F32": (_safe(lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z**2), 0, (mp.pi / 4)**2 * 1.001,
                  list(range(0, 6)), lambda z: z * z, ()),
    # asin(x) = x + x^3 A(x^2), |x| <= 1/2: error relative to x (weight z)
    "ASIN_A_F64": (_safe(lambda z: (mp.asin(mp.sqrt(z)) - mp.sqrt(z)) / mp.sqrt(z)**3), 0, 0.2501,
                   list(range(0, 15)), lambda z: z, ()),
    "ASIN_A_F32": (_safe(lambda z: (mp.asin(mp.sqrt(z)) - mp.sqrt(z)) / mp.sqrt(z)**3), 0, 0.2501,
                   list(range(0, 11)), lambda z: z, ()),
    # atan(t) = t + t^3 T(t^2), |t| <= tan(pi/8): error relative to t (weight z)
    "ATAN_T_F64": (_safe(lambda z: (mp.atan(mp.sqrt(z)) - mp.sqrt(z)) / mp.sqrt(z)**3), 0, mp.tan(mp.pi / 8)**2 * 1.001,
                   list(range(0, 13)), lambda z: z, ()),
    "ATAN_T_F32": (_safe(lambda z: (mp.atan(mp.sqrt(z)) - mp.sqrt(z)) / mp.sqrt(z)**3), 0, mp.tan(mp.pi / 8)**2 * 1.001,
                   list(range(0, 10)), lambda z: z, ()),
    # cbrt(v) ~ C(v) on [1, 8]: a first guess for Newton (relative)
    "CBRT_G": (lambda v: mp.cbrt(v), 1, 8, list(range(0, 6)), lambda v: 1 / mp.cbrt(v), ()),
    # v^(-1/3) ~ R(v) on [1, 8]: the float32 cbrt's first guess for the division-free Newton (relative)
    "RCBRT_G": (lambda v: 1 / mp.cbrt(v), 1, 8, list(range(0, 6)), lambda v: mp.cbrt(v), ()),
    # erf(x) = x + x Q(x^2), |x| <= 0.84375 (absolute in Q)
    "ERF_Q_F64": (_safe(lambda z: mp.erf(mp.sqrt(z)) / mp.sqrt(z) - 1), 0, 0.7119, list(range(0, 14)), lambda z: 1,
                  ()),
    "ERF_Q_F32": (_safe(lambda z: mp.erf(mp.sqrt(z)) / mp.sqrt(z) - 1), 0, 0.7119, list(range(0, 10)), lambda z: 1,
                  ()),
}
# erfc(x) = exp(-x^2) G(x) on pieces of [0.84375, 6]: Chebyshev interpolation (mpmath.chebyfit)
# of G in t = x - mid, converted to monomials; error relative to G
ERFC_PIECES = [(0.84375, 1.5), (1.5, 2.25), (2.25, 3.25), (3.25, 4.5), (4.5, 6.0)]


def cheb(g, a, b, n):
    with mp.workprec(200):
        p = mp.chebyfit(g, [a, b], n)
    return [float(c) for c in reversed(p)]


def erfc_pieces():
    for k, (a, b) in enumerate(ERFC_PIECES):
        m = (a + b) / 2
        g = (lambda m: lambda t: mp.erfc(t + m) * mp.exp((t + m)**2))(m)
        w = (lambda m: lambda t: 1 / (mp.erfc(t + m) * mp.exp((t + m)**2)))(m)
        for tag, n in (("F64", 16), ("F32", 12)):
            c = cheb(g, a - m, b - m, n)
            _report(f"ERFC_G{k}_{tag}", c, max_error(g, a - m, b - m, list(range(n)), c, w, n=800))


def tables():
    """The reduction constants and tables of trig.py (2/pi and pi/2 in pieces)."""
    with mp.workprec(3000):
        two_over_pi = 2 / mp.pi
        digits = []
        v = two_over_pi
        for _ in range(56):
            v = v * 2**24
            d = int(mp.floor(v))
            digits.append(d)
            v = v - d
        print("# 2/pi = sum_j D[j] 2^(-24 (j+1)); two zero digits first (the column sums index j - 2)")
        print("TWO_OVER_PI_24 = Table(\"f64\", (0.0, 0.0, " + ", ".join(f"{float(d)!r}" for d in digits) + "))")
        # float32: C_e = (2^(e-150) * 2/pi) mod 8 as three doubles, for biased exponents e = 151..254
        rows = []
        for e in range(151, 255):
            c = (mp.mpf(2)**(e - 150) * two_over_pi) % 8
            parts = []
            for _ in range(3):
                p = float(c)
                p = mp.mpf(p)
                # truncate, not round, so every part is non-negative and the sum stays below 8
                ex = int(mp.floor(mp.log(c, 2))) if c > 0 else -1000
                p = mp.floor(c * mp.mpf(2)**(52 - ex)) / mp.mpf(2)**(52 - ex)
                parts.append(float(p))
                c = c - p
            rows.append(parts)
        print("# (2^(e-150) * 2/pi) mod 8 = C[3i] + C[3i+1] + C[3i+2] for the float32 exponent e = 151 + i")
        print("TWO_OVER_PI_F32 = Table(\"f64\", (" + ", ".join(repr(v) for r in rows for v in r) + "))")
        pio2 = mp.pi / 2
        parts = []
        c = pio2
        for bits in (33, 33, 33):
            ex = int(mp.floor(mp.log(c, 2)))
            p = mp.floor(c * mp.mpf(2)**(bits - 1 - ex)) / mp.mpf(2)**(bits - 1 - ex)
            parts.append(float(p))
            c = c - p
        parts.append(float(c))
        print("PIO2_CW = " + repr(tuple(parts)) + "   # 33 + 33 + 33 bits + a double")
        parts = []
        c = pio2
        for bits in (28, 28):
            ex = int(mp.floor(mp.log(c, 2)))
            p = mp.floor(c * mp.mpf(2)**(bits - 1 - ex)) / mp.mpf(2)**(bits - 1 - ex)
            parts.append(float(p))
            c = c - p
        parts.append(float(c))
        print("PIO2_CW_F32 = " + repr(tuple(parts)) + "   # 28 + 28 bits + a double")
        print("PIO2 =", repr(float(pio2)), "PIO2_LO =", repr(float(pio2 - mp.mpf(float(pio2)))))
        print("TWO_OVER_PI =", repr(float(two_over_pi)))


def log_table():
    """pow.py's table: for i in 0..127, the mantissas m (in [sqrt(1/2), sqrt(2))) whose offset bits
    have top bits i, their centre c (1 for the interval holding 1), INVC = RN(1/c), and -log(INVC)
    as a double-double."""
    off = 0x3fe6a09e667f3bcd
    import struct
    f = lambda b: struct.unpack("<d", struct.pack("<Q", b))[0]  # noqa: E731
    invc, hi, lo = [], [], []
    worst = 0
    with mp.workprec(300):
        for i in range(128):
            a = f(off + (i << 45))
            b = f(off + ((i + 1) << 45))
            c = (a + b) / 2
            if a <= 1.0 < b:
                c = 1.0            # exact near 1: log x keeps its relative accuracy there
            v = float(1 / mp.mpf(c))
            lc = -mp.log(mp.mpf(v))
            h = float(lc)
            invc.append(v)
            hi.append(h)
            lo.append(float(lc - h))
            worst = max(worst, abs(a * v - 1), abs(b * v - 1))
    print(f"# |m * INVC - 1| <= {worst:.3e}")
    print("LOG_INVC = Table(\"f64\", (" + ", ".join(repr(v) for v in invc) + "))")
    print("LOG_LOGC_HI = Table(\"f64\", (" + ", ".join(repr(v) for v in hi) + "))")
    print("LOG_LOGC_LO = Table(\"f64\", (" + ", ".join(repr(v) for v in lo) + "))")


def exp_table():
    """exp_log.py's accurate exp: 2^(j/64) as double-doubles, ln2/64 in three pieces."""
    with mp.workprec(300):
        hi, lo = [], []
        for j in range(64):
            v = mp.mpf(2)**(mp.mpf(j) / 64)
            h = float(v)
            hi.append(h)
            lo.append(float(v - h))
        c = mp.log(2) / 64
        ex = int(mp.floor(mp.log(c, 2)))
        p1 = mp.floor(c * mp.mpf(2)**(34 - ex)) / mp.mpf(2)**(34 - ex)     # 35 bits
        p2 = float(c - p1)
        p3 = float(c - p1 - mp.mpf(p2))
    print(f"LN2_64 = ({float(p1)!r}, {p2!r}, {p3!r})   # 35 bits, a double, a double")
    print("EXP2_J_HI = Table(\"f64\", (" + ", ".join(repr(v) for v in hi) + "))")
    print("EXP2_J_LO = Table(\"f64\", (" + ", ".join(repr(v) for v in lo) + "))")


def main(names):
    if names == ["exptable"]:
        return exp_table()
    if names == ["tables"]:
        return tables()
    if names == ["logtable"]:
        return log_table()
    if names == ["erfc"]:
        return erfc_pieces()
    for name in names or list(FITS):
        g, a, b, exps, w, fixed = FITS[name]
        coeffs, err = fit(g, a, b, exps, w, fixed=fixed)
        _report(name, coeffs, err)
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
