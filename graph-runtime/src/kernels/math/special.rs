//! erf and the activations built on it (gelu in both forms, softplus, elu), with log1p and expm1: branch-free f32 versions that vectorise, f64 versions over `std`.

use super::*;

// ----- erf and the activations built on it (issue 10) -----------------------------------------
//
// `erf` is two near-minimax polynomials, both evaluated and one selected, so the function is
// branch-free: `x * P(x²)` for `|x| < 0.875`, and `erfc(|x|) = e^{-x²} * s * Q(z)` beyond, with
// `s = 1 / (|x| + 2)` and `z` the affine map of `s` onto `[-1, 1]`. `Q` covers `|x|` up to a
// clamp (10 for f32, 27 for f64) where `erfc` has underflowed, so `1 + erf(x)` (what `gelu`
// needs) is accurate in the negative tail instead of cancelling. The coefficients are
// Chebyshev interpolants of the exact functions computed with high-precision decimals
// (`scripts/fit_erf.py`); their own error is below 1e-8 (f32) and 1e-19 (f64) relative.

/// Where `erf` switches from the odd polynomial to the `erfc` form.
const ERF_SPLIT: f32 = 0.875;
/// `|x|` is clamped here before the `erfc` form (its value has underflowed below `1e-44`).
const ERF_CLAMP_F32: f32 = 10.0;

/// `(erf(x), erfc(|x|))` for f32, branch-free; the second is only meaningful for `|x| ≥ 0.875`.
/// `x² = sq_hi + sq_lo` exactly (or nearly): `e^{-x²}` is evaluated as `e^{-sq_hi} (1 - sq_lo)`,
/// so the rounding of the square is not amplified by `x²` in the tail.
#[inline(always)]
fn erf_parts_f32(x: f32, sq_hi: f32, sq_lo: f32) -> (f32, f32) {
    let q = x * x;
    let p = 8.690_369e-5f32;
    let p = p * q - 8.214_570_7e-4;
    let p = p * q + 5.207_048_7e-3;
    let p = p * q - 2.686_170_7e-2;
    let p = p * q + 1.128_373_5e-1;
    let p = p * q - 3.761_263_5e-1;
    let p = p * q + std::f32::consts::FRAC_2_SQRT_PI;
    let small = x * p;
    // Comparisons keep NaN (it fails the test).
    let t = x.abs();
    let t = if t > ERF_CLAMP_F32 { ERF_CLAMP_F32 } else { t };
    let s = 1.0 / (t + 2.0);
    let z = (s - 2.155_797e-1) * 7.561_643_6;
    let g = -2.451_827_2e-6f32;
    let g = g * z + 1.557_921_7e-5;
    let g = g * z + 4.235_678_4e-5;
    let g = g * z - 3.551_484_3e-4;
    let g = g * z - 1.273_428e-3;
    let g = g * z + 6.943_654_7e-3;
    let g = g * z + 7.335_855e-2;
    let g = g * z + 3.239_978_6e-1;
    let g = g * z + 9.321_688_4e-1;
    let sq_hi = if t >= ERF_CLAMP_F32 { 100.0 } else { sq_hi };
    let erfc = exp_f32(-sq_hi) * (1.0 - sq_lo) * s * g;
    // Past the clamp `erfc` has underflowed: exactly 0, so `x * (1 + erf)` is 0 in the tail.
    let erfc = if t >= ERF_CLAMP_F32 { 0.0 } else { erfc };
    let large = (1.0 - erfc).copysign(x);
    let erf = if x.abs() < ERF_SPLIT { small } else { large };
    (erf, erfc)
}

/// The error function for f32, branch-free: within 2 ulp of the correctly rounded value (the
/// root test `kernels_elementwise` sweeps it densely); `erf(±inf) = ±1`, `erf(-0) = -0`, NaN stays NaN.
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    let sq = x * x;
    erf_parts_f32(x, sq, x.mul_add(x, -sq)).0
}

/// `1 + erf(x / sqrt(2))` for f32 without cancellation for negative `x` (it is `erfc` there),
/// with the square `x² / 2` split exactly.
#[inline(always)]
fn one_plus_erf_scaled_f32(x: f32) -> f32 {
    let y = x / std::f32::consts::SQRT_2;
    let sq = x * x;
    let (erf, erfc) = erf_parts_f32(y, 0.5 * sq, 0.5 * x.mul_add(x, -sq));
    let x = y;
    let tail = if x > 0.0 { 2.0 - erfc } else { erfc };
    if x.abs() < ERF_SPLIT {
        1.0 + erf
    } else {
        tail
    }
}

/// TensorFlow's exact `gelu` for f32: `0.5 * x * (1 + erf(x / sqrt(2)))`, without its
/// cancellation in the negative tail; `gelu(-inf) = -0` (its limit; the formula gives NaN).
#[inline(always)]
pub fn gelu_f32(x: f32) -> f32 {
    let r = 0.5 * x * one_plus_erf_scaled_f32(x);
    if x == f32::NEG_INFINITY {
        -0.0
    } else {
        r
    }
}

/// `sqrt(2 / pi)`, the scale of the tanh form of `gelu`.
const GELU_TANH_SCALE: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient of the tanh form of `gelu`.
const GELU_TANH_CUBIC: f64 = 0.044_715;

/// TensorFlow's `gelu(x, approximate=true)` for f32: `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x³)))`,
/// computed as `x * sigmoid(2u)` (the same function) so the negative tail does not cancel.
#[inline(always)]
pub fn gelu_tanh_f32(x: f32) -> f32 {
    let u = (2.0 * GELU_TANH_SCALE) as f32 * (x + GELU_TANH_CUBIC as f32 * (x * x * x));
    let r = x * sigmoid_f32(u);
    if x == f32::NEG_INFINITY {
        -0.0
    } else {
        r
    }
}

/// `ln(1 + e)` for f32 from the vectorised `log` (Goldberg's correction: exact where `1 + e`
/// rounds to 1), branch-free: `log1p(-1) = -inf`, NaN below -1, `log1p(inf) = inf`, `-0` kept.
#[inline(always)]
pub fn log1p_f32(e: f32) -> f32 {
    let u = 1.0 + e;
    let corrected = log_f32(u) * (e / (u - 1.0));
    // `e / (u - 1)` is inf/inf at e = +inf.
    let r = if u == f32::INFINITY { u } else { corrected };
    if u == 1.0 {
        e
    } else {
        r
    }
}

/// `e^x - 1` for f32 from the vectorised `exp` and `log` (Kahan's correction near 0),
/// branch-free: `expm1(-inf) = -1`, overflow gives `inf`, `-0` kept.
#[inline(always)]
pub fn expm1_f32(x: f32) -> f32 {
    let u = exp_f32(x);
    let um1 = u - 1.0;
    let corrected = um1 * (x / log_f32(u));
    let r = if um1 == -1.0 { -1.0 } else { corrected };
    // `x / log(u)` is 0/0 at u = 1 and inf/inf at x = +inf.
    let r = if u == f32::INFINITY { u } else { r };
    if u == 1.0 {
        x
    } else {
        r
    }
}

/// TensorFlow's softplus thresholds: `log(eps) + 2` for the type's machine epsilon.
const SOFTPLUS_THRESHOLD_F32: f32 = -13.942_385;
const SOFTPLUS_THRESHOLD_F64: f64 = -34.043_653_389_117_15;

/// `softplus(x) = ln(1 + e^x)` for f32: `x` above `-log(eps) - 2`, `e^x` below `log(eps) + 2`
/// (TensorFlow's thresholds), and `max(x, 0) + ln(1 + e^{-|x|})` between (never overflows).
#[inline(always)]
pub fn softplus_f32(x: f32) -> f32 {
    let e = exp_f32(-x.abs());
    let relu = if x > 0.0 { x } else { 0.0 };
    let mid = relu + log1p_f32(e);
    let r = if x < SOFTPLUS_THRESHOLD_F32 {
        exp_f32(x)
    } else {
        mid
    };
    if x > -SOFTPLUS_THRESHOLD_F32 {
        x
    } else {
        r
    }
}

/// `elu(x)` for f32: `x` for `x > 0`, `e^x - 1` otherwise (TensorFlow's `elu`, alpha 1).
#[inline(always)]
pub fn elu_f32(x: f32) -> f32 {
    let m = expm1_f32(x);
    if x > 0.0 {
        x
    } else {
        m
    }
}

/// Where the f64 `erfc` form is clamped (its value has underflowed below `1e-316`).
const ERF_CLAMP_F64: f64 = 27.0;

/// `(erf(x), erfc(|x|))` for f64, branch-free except for `std`'s `exp` (as [`erf_parts_f32`]).
#[inline(always)]
fn erf_parts_f64(x: f64, sq_hi: f64, sq_lo: f64) -> (f64, f64) {
    let q = x * x;
    let mut p = ERF_SMALL_F64[ERF_SMALL_F64.len() - 1];
    for &c in ERF_SMALL_F64.iter().rev().skip(1) {
        p = p * q + c;
    }
    let small = x * p;
    let t = x.abs();
    let t = if t > ERF_CLAMP_F64 { ERF_CLAMP_F64 } else { t };
    let s = 1.0 / (t + 2.0);
    let z = (s - ERF_LARGE_MID_F64) * ERF_LARGE_INV_HALF_F64;
    let mut g = ERF_LARGE_F64[ERF_LARGE_F64.len() - 1];
    for &c in ERF_LARGE_F64.iter().rev().skip(1) {
        g = g * z + c;
    }
    let sq_hi = if t >= ERF_CLAMP_F64 { 729.0 } else { sq_hi };
    let erfc = (-sq_hi).exp() * (1.0 - sq_lo) * s * g;
    let erfc = if t >= ERF_CLAMP_F64 { 0.0 } else { erfc };
    let large = (1.0 - erfc).copysign(x);
    let erf = if x.abs() < ERF_SPLIT as f64 {
        small
    } else {
        large
    };
    (erf, erfc)
}

/// The error function for f64 (see the accuracy section of `docs/LANGUAGE-NOTES.md`).
#[inline(always)]
pub fn erf_f64(x: f64) -> f64 {
    let sq = x * x;
    erf_parts_f64(x, sq, x.mul_add(x, -sq)).0
}

/// `1 + erf(x / sqrt(2))` for f64 without cancellation for negative `x`.
#[inline(always)]
fn one_plus_erf_scaled_f64(x: f64) -> f64 {
    let y = x / std::f64::consts::SQRT_2;
    let sq = x * x;
    let (erf, erfc) = erf_parts_f64(y, 0.5 * sq, 0.5 * x.mul_add(x, -sq));
    let x = y;
    let tail = if x > 0.0 { 2.0 - erfc } else { erfc };
    if x.abs() < ERF_SPLIT as f64 {
        1.0 + erf
    } else {
        tail
    }
}

/// The exact `gelu` for f64 (as [`gelu_f32`]).
#[inline(always)]
pub fn gelu_f64(x: f64) -> f64 {
    let r = 0.5 * x * one_plus_erf_scaled_f64(x);
    if x == f64::NEG_INFINITY {
        -0.0
    } else {
        r
    }
}

/// The tanh form of `gelu` for f64 (as [`gelu_tanh_f32`]).
#[inline(always)]
pub fn gelu_tanh_f64(x: f64) -> f64 {
    let u = 2.0 * GELU_TANH_SCALE * (x + GELU_TANH_CUBIC * (x * x * x));
    let r = x * sigmoid_f64(u);
    if x == f64::NEG_INFINITY {
        -0.0
    } else {
        r
    }
}

/// `softplus` for f64 (as [`softplus_f32`], with f64's thresholds; `ln_1p` from `std`).
#[inline(always)]
pub fn softplus_f64(x: f64) -> f64 {
    if x > -SOFTPLUS_THRESHOLD_F64 {
        x
    } else if x < SOFTPLUS_THRESHOLD_F64 {
        x.exp()
    } else {
        let relu = if x > 0.0 { x } else { 0.0 };
        relu + (-x.abs()).exp().ln_1p()
    }
}

/// `elu` for f64 (`exp_m1` from `std`).
#[inline(always)]
pub fn elu_f64(x: f64) -> f64 {
    if x > 0.0 {
        x
    } else {
        x.exp_m1()
    }
}

/// `ln(1 + x)` for f64 (`std`).
#[inline(always)]
pub fn log1p_f64(x: f64) -> f64 {
    x.ln_1p()
}

/// `e^x - 1` for f64 (`std`).
#[inline(always)]
pub fn expm1_f64(x: f64) -> f64 {
    x.exp_m1()
}

/// `erf(x) / x` as a polynomial in `x²` on `|x| < 0.875` (f64), constant term first.
const ERF_SMALL_F64: [f64; 12] = [
    std::f64::consts::FRAC_2_SQRT_PI,
    -0.3761263890318374,
    0.11283791670954353,
    -0.026866170644942594,
    0.005223977623059443,
    -0.0008548326845690305,
    0.00012055324561705379,
    -1.492538720169797e-05,
    1.6456607597388118e-06,
    -1.6289242608284092e-07,
    1.4122777660357666e-08,
    -8.666276629203472e-10,
];

/// The midpoint and inverse half-width of `s = 1 / (|x| + 2)` over `0.875 ≤ |x| ≤ 27`.
const ERF_LARGE_MID_F64: f64 = 0.1911544227886057;
const ERF_LARGE_INV_HALF_F64: f64 = 6.382775119617225;

/// `erfc(x) * e^{x²} * (x + 2)` as a polynomial in `z` (f64), constant term first.
const ERF_LARGE_F64: [f64; 23] = [
    0.8747852226412134,
    0.3526132731312017,
    0.09722548494503314,
    0.012900466609570208,
    -0.001825104788274188,
    -0.0009112244887724997,
    4.9675774433990665e-05,
    6.733264168756257e-05,
    -4.852032986028137e-06,
    -5.71281907052874e-06,
    9.371800907577743e-07,
    4.771531335683296e-07,
    -1.6975844021042965e-07,
    -2.58051527828605e-08,
    2.5385733524293056e-08,
    -2.2898088813994977e-09,
    -2.770848624252125e-09,
    1.0186605096131188e-09,
    1.1759178377572978e-10,
    -1.7288220101527415e-10,
    2.5975041471107765e-11,
    1.416640268548634e-11,
    -4.582260176045269e-12,
];
