//! Branch-free, inlinable math functions that LLVM vectorises inside a loop (unlike libm calls).
//!
//! The f32 `exp`, `log` and `sigmoid` are Cephes-style range reductions plus polynomials
//! written on plain `f32` with selects instead of branches, and `tanh` is one rational plus
//! the doubling formula for `|x| ≥ 1`, so a loop that calls them compiles to SIMD code at
//! every [`crate::exec::cpu::Level`]. `exp`, `log` and `sigmoid` use `a * b + c` rather than
//! `mul_add`, because `mul_add` is a libm call when the `fma` feature is off; `tanh` needs the
//! FMA for its speed and accepts that cost at the portable level. The results are identical at
//! every level. Each stays within 4 ulp of the correctly rounded value over the whole finite
//! range (see the root test `kernels_elementwise`).
//!
//! `sin`/`cos` (f32) call `std`: an accurate vectorised range reduction for large
//! arguments was not worth its cost yet. The f64 functions call `std` too.

/// `log2(e)`.
const LOG2E_F32: f32 = std::f32::consts::LOG2_E;
/// `ln(2)` split in a high part with few mantissa bits (so `n * LN2_HI` is exact) and the rest.
const LN2_HI_F32: f32 = 0.693_359_4;
const LN2_LO_F32: f32 = -2.121_944_4e-4;
/// `1.5 * 2^23`: adding it rounds an f32 of magnitude below `2^22` to an integer held in the low mantissa bits.
const ROUND_MAGIC_F32: f32 = 12_582_912.0;

/// `e^x` for f32, branch-free; `exp(+inf) = inf`, `exp(-inf) = 0`, overflow gives `inf`, underflow gives subnormals then 0.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    // Clamping with comparisons keeps NaN (it fails both tests) and bounds n to [-159, 145].
    let x = if x > 100.0 { 100.0 } else { x };
    let x = if x < -110.0 { -110.0 } else { x };
    // n = round(x / ln 2) through the magic-number trick: no float-to-int conversion.
    let t = x * LOG2E_F32 + ROUND_MAGIC_F32;
    let n_f = t - ROUND_MAGIC_F32;
    let n = (t.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let r = x - n_f * LN2_HI_F32 - n_f * LN2_LO_F32;
    let r2 = r * r;
    let p = 1.987_569_1e-4;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 5.0e-1;
    let y = p * r2 + r + 1.0;
    // Scale by 2^n in two steps so that each factor is a normal float and the only rounding
    // is the last multiplication (which also produces subnormals and infinities correctly).
    let n1 = n >> 1;
    let n2 = n.wrapping_sub(n1);
    let s1 = f32::from_bits((n1.wrapping_add(127) as u32) << 23);
    let s2 = f32::from_bits((n2.wrapping_add(127) as u32) << 23);
    y * s1 * s2
}

/// Natural logarithm for f32, branch-free; `log(0) = -inf`, `log(x < 0) = NaN`, `log(inf) = inf`.
#[inline(always)]
pub fn log_f32(x: f32) -> f32 {
    // Subnormals are scaled into the normal range first.
    let tiny = x < f32::MIN_POSITIVE;
    let xs = if tiny { x * 8_388_608.0 } else { x };
    let bits = xs.to_bits();
    let e_bias: i32 = if tiny { 126 + 23 } else { 126 };
    let e = ((bits >> 23) & 0xff) as i32 - e_bias;
    // The mantissa in [0.5, 1).
    let m = f32::from_bits((bits & 0x807f_ffff) | 0x3f00_0000);
    let small = m < std::f32::consts::FRAC_1_SQRT_2;
    let e = if small { e - 1 } else { e };
    let m = if small { m + m - 1.0 } else { m - 1.0 };
    let e = e as f32;
    let z = m * m;
    let p = 7.037_683_6e-2;
    let p = p * m - 1.151_461e-1;
    let p = p * m + 1.167_699_9e-1;
    let p = p * m - 1.242_014_1e-1;
    let p = p * m + 1.424_932_3e-1;
    let p = p * m - 1.666_805_8e-1;
    let p = p * m + 2.000_071_4e-1;
    let p = p * m - 2.499_999_4e-1;
    let p = p * m + 3.333_333e-1;
    let y = m * z * p + e * LN2_LO_F32 - 0.5 * z;
    let r = m + y + e * LN2_HI_F32;
    // Special values, as selects.
    let r = if x == f32::INFINITY { f32::INFINITY } else { r };
    let r = if x == 0.0 { f32::NEG_INFINITY } else { r };
    let r = if x < 0.0 { f32::NAN } else { r };
    if x.is_nan() {
        x
    } else {
        r
    }
}

/// Hyperbolic tangent for f32, branch-free; exact for tiny `x`, `tanh(±inf) = ±1`, keeps the sign of `-0`.
///
/// One rational `t(u) = u·P(u²)/Q(u²) ≈ tanh(u)`, `P` of degree 3 and `Q` of degree 4 (a
/// relative minimax fit on `u ∈ [0, 4.6]`, error below `6e-10`), evaluated with FMA:
/// - for `|x| < 1`, `u = x` and the result is `t`;
/// - for `|x| ≥ 1`, `u = x/2` and the result is `2t/(1 + t²)` (the doubling formula),
///   computed as `2uP·Q / ((uP)² + Q²)` so that both cases share one division. Its
///   sensitivity to an error in `uP` or `Q` is `(1 - t²)/(1 + t²)`, so the rounding errors
///   of the polynomials shrink just where the result nears `±1` and its ulp is relatively
///   smallest.
///
/// `x` is clamped to `±9.2` (beyond 9.02 the correctly rounded result is `±1`). The worst case
/// is 3 ulp against the correctly rounded value, over all 2^32 inputs. Halving `x` goes through
/// its exponent bits so that LLVM computes the rational once rather than for both choices of
/// `u`. `mul_add` is an FMA instruction at the AVX2 and AVX-512 levels; at the portable level
/// it is a libm call (slower, same results).
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    // Comparisons keep NaN (it fails both tests).
    let x = if x > 9.2 { 9.2 } else { x };
    let x = if x < -9.2 { -9.2 } else { x };
    let doubled = x.abs() >= 1.0;
    // u = x/2 when doubled: x is then normal, so one off its exponent is an exact halving.
    let u = f32::from_bits(x.to_bits().wrapping_sub(u32::from(doubled) << 23));
    let z = u * u;
    let p = 1.503_617_5e-5f32;
    let p = p.mul_add(z, 3.241_589e-3);
    let p = p.mul_add(z, 1.318_442_8e-1);
    let p = p.mul_add(z, 1.0);
    let q = 3.749_452_4e-7f32;
    let q = q.mul_add(z, 2.820_868_7e-4);
    let q = q.mul_add(z, 2.496_747_3e-2);
    let q = q.mul_add(z, 4.651_776_3e-1);
    let q = q.mul_add(z, 1.0);
    // t = n/d; for |x| >= 1 the doubling formula 2t/(1 + t²) is 2nd/(d² + n²): one
    // division for both cases, not two (a division is the slowest step of the loop: on
    // AVX-512 each zmm division costs as much as the rest of the polynomial).
    let n = u * p;
    let num = if doubled { (n + n) * q } else { n };
    let den = if doubled { n.mul_add(n, q * q) } else { q };
    num / den
}

/// The logistic function `1 / (1 + e^{-x})` for f32, branch-free; accurate in the subnormal tail.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    // e^{-|x|} never overflows; for x < 0 the result is e^x / (1 + e^x).
    let e = exp_f32(-x.abs());
    let num = if x < 0.0 { e } else { 1.0 };
    num / (1.0 + e)
}

/// Sine for f32 (calls `std`; not vectorised).
#[inline(always)]
pub fn sin_f32(x: f32) -> f32 {
    x.sin()
}

/// Cosine for f32 (calls `std`; not vectorised).
#[inline(always)]
pub fn cos_f32(x: f32) -> f32 {
    x.cos()
}

/// `1 / sqrt(x)` for f32 (a correctly rounded square root, then a division).
#[inline(always)]
pub fn rsqrt_f32(x: f32) -> f32 {
    1.0 / x.sqrt()
}

/// `e^x` for f64 (`std`).
#[inline(always)]
pub fn exp_f64(x: f64) -> f64 {
    x.exp()
}

/// Natural logarithm for f64 (`std`).
#[inline(always)]
pub fn log_f64(x: f64) -> f64 {
    x.ln()
}

/// Hyperbolic tangent for f64 (`std`).
#[inline(always)]
pub fn tanh_f64(x: f64) -> f64 {
    x.tanh()
}

/// The logistic function for f64, written so that neither tail overflows.
#[inline(always)]
pub fn sigmoid_f64(x: f64) -> f64 {
    let e = (-x.abs()).exp();
    let num = if x < 0.0 { e } else { 1.0 };
    num / (1.0 + e)
}

/// Sine for f64 (`std`).
#[inline(always)]
pub fn sin_f64(x: f64) -> f64 {
    x.sin()
}

/// Cosine for f64 (`std`).
#[inline(always)]
pub fn cos_f64(x: f64) -> f64 {
    x.cos()
}

/// `1 / sqrt(x)` for f64.
#[inline(always)]
pub fn rsqrt_f64(x: f64) -> f64 {
    1.0 / x.sqrt()
}

/// A unary math function, named so a whole slice can be mapped by one dispatched kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MathFn {
    Exp,
    Log,
    Tanh,
    Sigmoid,
    Sin,
    Cos,
    Sqrt,
    Rsqrt,
}

/// The transcendental functions of a float element type, each `#[inline(always)]`.
pub trait FloatMath: crate::dtype::Float {
    fn exp_(self) -> Self;
    fn log_(self) -> Self;
    fn tanh_(self) -> Self;
    fn sigmoid_(self) -> Self;
    fn sin_(self) -> Self;
    fn cos_(self) -> Self;
    fn sqrt_(self) -> Self;
    fn rsqrt_(self) -> Self;
    /// Writes `f(x[i])` into `out[i]` (equal lengths) with a loop compiled for the best CPU level.
    fn map_slice(f: MathFn, x: &[Self], out: &mut [Self]);
}

macro_rules! float_math {
    ($t:ident, $exp:ident, $log:ident, $tanh:ident, $sig:ident, $sin:ident, $cos:ident, $rsqrt:ident) => {
        impl FloatMath for $t {
            #[inline(always)]
            fn exp_(self) -> Self {
                $exp(self)
            }
            #[inline(always)]
            fn log_(self) -> Self {
                $log(self)
            }
            #[inline(always)]
            fn tanh_(self) -> Self {
                $tanh(self)
            }
            #[inline(always)]
            fn sigmoid_(self) -> Self {
                $sig(self)
            }
            #[inline(always)]
            fn sin_(self) -> Self {
                $sin(self)
            }
            #[inline(always)]
            fn cos_(self) -> Self {
                $cos(self)
            }
            #[inline(always)]
            fn sqrt_(self) -> Self {
                self.sqrt()
            }
            #[inline(always)]
            fn rsqrt_(self) -> Self {
                $rsqrt(self)
            }
            fn map_slice(f: MathFn, x: &[Self], out: &mut [Self]) {
                /// One dispatched loop per function.
                macro_rules! kernel {
                    ($name:ident, $fun:expr) => {{
                        $crate::multiversion! {
                            fn $name(x: &[$t], out: &mut [$t]) {
                                for (o, &v) in out.iter_mut().zip(x) {
                                    *o = $fun(v);
                                }
                            }
                        }
                        $name(x, out)
                    }};
                }
                match f {
                    MathFn::Exp => kernel!(k_exp, $exp),
                    MathFn::Log => kernel!(k_log, $log),
                    MathFn::Tanh => kernel!(k_tanh, $tanh),
                    MathFn::Sigmoid => kernel!(k_sigmoid, $sig),
                    MathFn::Sin => kernel!(k_sin, $sin),
                    MathFn::Cos => kernel!(k_cos, $cos),
                    MathFn::Sqrt => kernel!(k_sqrt, $t::sqrt),
                    MathFn::Rsqrt => kernel!(k_rsqrt, $rsqrt),
                }
            }
        }
    };
}
float_math!(
    f32,
    exp_f32,
    log_f32,
    tanh_f32,
    sigmoid_f32,
    sin_f32,
    cos_f32,
    rsqrt_f32
);
float_math!(
    f64,
    exp_f64,
    log_f64,
    tanh_f64,
    sigmoid_f64,
    sin_f64,
    cos_f64,
    rsqrt_f64
);

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

// ----- rounding, sign, relu6 and the reciprocal (issue 31) -----------------------------------
//
// Each is a select or one instruction (`roundps` at the AVX2 and AVX-512 levels), so a fused
// loop calling them vectorises; compiled and eager code call these same functions.

macro_rules! float_steps {
    ($t:ident, $floor:ident, $ceil:ident, $round:ident, $sign:ident, $relu6:ident, $recip:ident) => {
        /// `floor(x)` (`-0` and NaN kept).
        #[inline(always)]
        pub fn $floor(x: $t) -> $t {
            x.floor()
        }

        /// `ceil(x)` (`ceil(-0.5) = -0`; NaN kept).
        #[inline(always)]
        pub fn $ceil(x: $t) -> $t {
            x.ceil()
        }

        /// Round half to even (TensorFlow's `round`, C's `rint`): `round(0.5) = 0`,
        /// `round(1.5) = 2`, `round(-2.5) = -2`, `round(-0.4) = -0`.
        #[inline(always)]
        pub fn $round(x: $t) -> $t {
            x.round_ties_even()
        }

        /// `-1` below 0, `1` above, `+0` at both zeros (Eigen's `sign`, which TensorFlow
        /// calls), NaN for NaN; branch-free.
        #[inline(always)]
        pub fn $sign(x: $t) -> $t {
            let r = if x > 0.0 { 1.0 } else { x };
            let r = if x < 0.0 { -1.0 } else { r };
            if x == 0.0 {
                0.0
            } else {
                r
            }
        }

        /// `min(max(x, 0), 6)`; NaN stays NaN and `-0` stays `-0` (as `relu`).
        #[inline(always)]
        pub fn $relu6(x: $t) -> $t {
            let r = if x < 0.0 { 0.0 } else { x };
            if r > 6.0 {
                6.0
            } else {
                r
            }
        }

        /// `1 / x`.
        #[inline(always)]
        pub fn $recip(x: $t) -> $t {
            1.0 / x
        }
    };
}
float_steps!(
    f32,
    floor_f32,
    ceil_f32,
    round_f32,
    sign_f32,
    relu6_f32,
    reciprocal_f32
);
float_steps!(
    f64,
    floor_f64,
    ceil_f64,
    round_f64,
    sign_f64,
    relu6_f64,
    reciprocal_f64
);

/// `sign`, `relu6` and `round` on any number (integers included: `round` is their identity).
pub trait NumberMath: crate::dtype::Numeric {
    fn sign_(self) -> Self;
    fn relu6_(self) -> Self;
    fn round_(self) -> Self;
}

macro_rules! number_math_float {
    ($t:ident, $sign:ident, $relu6:ident, $round:ident) => {
        impl NumberMath for $t {
            #[inline(always)]
            fn sign_(self) -> Self {
                $sign(self)
            }
            #[inline(always)]
            fn relu6_(self) -> Self {
                $relu6(self)
            }
            #[inline(always)]
            fn round_(self) -> Self {
                $round(self)
            }
        }
    };
}
number_math_float!(f32, sign_f32, relu6_f32, round_f32);
number_math_float!(f64, sign_f64, relu6_f64, round_f64);

macro_rules! number_math_int {
    ($t:ident) => {
        impl NumberMath for $t {
            #[inline(always)]
            fn sign_(self) -> Self {
                self.signum()
            }
            #[inline(always)]
            fn relu6_(self) -> Self {
                self.clamp(0, 6)
            }
            #[inline(always)]
            fn round_(self) -> Self {
                self
            }
        }
    };
}
number_math_int!(i32);
number_math_int!(i64);

/// `floor`, `ceil`, `log1p`, `expm1` and `reciprocal` on a float type, so the eager ops are generic.
pub trait ElementaryMath: FloatMath {
    fn floor_(self) -> Self;
    fn ceil_(self) -> Self;
    fn log1p_(self) -> Self;
    fn expm1_(self) -> Self;
    fn reciprocal_(self) -> Self;
}

macro_rules! elementary_math {
    ($t:ident, $floor:ident, $ceil:ident, $log1p:ident, $expm1:ident, $recip:ident) => {
        impl ElementaryMath for $t {
            #[inline(always)]
            fn floor_(self) -> Self {
                $floor(self)
            }
            #[inline(always)]
            fn ceil_(self) -> Self {
                $ceil(self)
            }
            #[inline(always)]
            fn log1p_(self) -> Self {
                $log1p(self)
            }
            #[inline(always)]
            fn expm1_(self) -> Self {
                $expm1(self)
            }
            #[inline(always)]
            fn reciprocal_(self) -> Self {
                $recip(self)
            }
        }
    };
}
elementary_math!(
    f32,
    floor_f32,
    ceil_f32,
    log1p_f32,
    expm1_f32,
    reciprocal_f32
);
elementary_math!(
    f64,
    floor_f64,
    ceil_f64,
    log1p_f64,
    expm1_f64,
    reciprocal_f64
);

/// The activations above on a float type, so the eager ops are generic.
pub trait ActivationMath: FloatMath {
    fn erf_(self) -> Self;
    fn gelu_(self) -> Self;
    fn gelu_tanh_(self) -> Self;
    fn softplus_(self) -> Self;
    fn elu_(self) -> Self;
}

macro_rules! activation_math {
    ($t:ident, $erf:ident, $gelu:ident, $gelu_tanh:ident, $softplus:ident, $elu:ident) => {
        impl ActivationMath for $t {
            #[inline(always)]
            fn erf_(self) -> Self {
                $erf(self)
            }
            #[inline(always)]
            fn gelu_(self) -> Self {
                $gelu(self)
            }
            #[inline(always)]
            fn gelu_tanh_(self) -> Self {
                $gelu_tanh(self)
            }
            #[inline(always)]
            fn softplus_(self) -> Self {
                $softplus(self)
            }
            #[inline(always)]
            fn elu_(self) -> Self {
                $elu(self)
            }
        }
    };
}
activation_math!(f32, erf_f32, gelu_f32, gelu_tanh_f32, softplus_f32, elu_f32);
activation_math!(f64, erf_f64, gelu_f64, gelu_tanh_f64, softplus_f64, elu_f64);

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
