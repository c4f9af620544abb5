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

mod rounding;
mod special;
pub use rounding::*;
pub use special::*;
