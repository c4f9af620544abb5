//! Division by a divisor many dividends share (a row's standard deviation), bit for bit the same quotients as `/`, at a quarter of `vdivps zmm`'s cost.
//!
//! A vector division (`vdivps`) costs ~8 cycles a vector of 16 f32 on the machines grafo is
//! measured on, more than the rest of W4's normalisation pass together. When the divisor `b`
//! is the same for a whole row, its correctly rounded reciprocal `y = 1/b` is computed once,
//! and each quotient takes one multiplication and four fused multiply-adds:
//!
//! ```text
//! q0 = a * y               (within 1.5 ulp of a/b)
//! q1 = q0 + (a - b*q0) * y  (within 1 ulp: faithful)
//! q  = q1 + (a - b*q1) * y  (correctly rounded: Markstein's theorem)
//! ```
//!
//! Markstein's theorem (P. Markstein, "Computation of elementary functions on the IBM RISC
//! System/6000 processor", IBM J. R&D 34(1), 1990; Muller et al., *Handbook of Floating-Point
//! Arithmetic*, §4.7): if `y` is within half an ulp of `1/b` and `q1` is within one ulp of
//! `a/b`, then `a - b*q1` is exact and `q1 + (a - b*q1) * y` rounded to nearest is `a/b` rounded
//! to nearest. The first correction makes `q1` faithful whatever the error of `q0`, so the
//! sequence needs no assumption on the accuracy of `q0`. The theorem holds when nothing
//! overflows or underflows on the way, which [`SharedDivisor`] guarantees by taking the fast
//! path only for `|b|` and every `|a|` in `[2^-60, 2^60)` (f32; `[2^-500, 2^500)` for f64):
//! the quotient is then a normal number and every remainder is exact. Zeros (whose sign the
//! fused sequence can lose), infinities, NaN and tiny or huge values fall outside that range;
//! a row that has any is divided again with `/`. `tests/kernels_elementwise.rs` checks the
//! fast path against `/` on every f32 significand for thousands of divisors.
//!
//! The fast path is taken at the AVX-512 level only (`cpu::Level::Avx512`), where it was
//! measured: W4 0.91 ms against 1.05 with `vdivps zmm` on the Xeon model 167. With AVX2 the
//! same sequence on ymm measured no faster than `vdivps ymm` there (0.99-1.02 ms against
//! 0.98-0.99), and without FMA it would call libm. Elsewhere [`SharedDivisor::fast`] is
//! false and callers divide with `/`. AMD's AVX-512 cores (Zen 4, Zen 5) take it too. On a
//! Zen 4 its bits were checked (every significand x 4096 divisors) but its speed in W4 could
//! not be told from `vdivps zmm` in a noisy VM; in a C model of W4's last pass it was as fast
//! with the row in L1 (280 vs 272 cycles a row of 1024) and twice as fast writing a 16 MiB
//! result (364 vs 702; BENCHMARKS.md). Zen 5 is not measured.

use crate::exec::cpu::{level, Level};

/// A divisor shared by many divisions, with its reciprocal and whether the fast path applies.
#[derive(Debug, Clone, Copy)]
pub struct SharedDivisor<T> {
    b: T,
    y: T,
    fast: bool,
}

macro_rules! shared_divisor {
    ($t:ty, $bits:ty, $abs_mask:expr, $lo:expr, $hi:expr) => {
        impl SharedDivisor<$t> {
            /// The bits of the smallest magnitude the fast path admits.
            const LO: $bits = $lo;
            /// The bits of the smallest magnitude above the admitted range.
            const HI: $bits = $hi;

            /// Prepares dividing by `b`.
            #[inline(always)]
            pub fn new(b: $t) -> Self {
                let fast = Self::in_range(b) && level() == Level::Avx512;
                SharedDivisor {
                    b,
                    y: 1.0 / b,
                    fast,
                }
            }

            /// Whether `|v|` lies in the range where the fused sequence is exact.
            #[inline(always)]
            fn in_range(v: $t) -> bool {
                Self::all_exact(Self::check(v))
            }

            /// `v`'s range check: below `HI - LO` when `|v|` is admitted.
            #[inline(always)]
            fn check(v: $t) -> $bits {
                (v.to_bits() & $abs_mask).wrapping_sub(Self::LO)
            }

            /// Whether the fast path may be taken: the divisor is in range and the kernels run
            /// at the AVX-512 level.
            #[inline(always)]
            pub fn fast(&self) -> bool {
                self.fast
            }

            /// `a / b` by the fused sequence, with `a`'s range check; the quotient is `a / b`
            /// bit for bit when [`SharedDivisor::fast`] is true and [`SharedDivisor::all_exact`]
            /// accepts the largest check of the row.
            #[inline(always)]
            pub fn div(&self, a: $t) -> ($t, $bits) {
                let (b, y) = (self.b, self.y);
                let q0 = a * y;
                let r0 = (-q0).mul_add(b, a);
                let q1 = r0.mul_add(y, q0);
                let r1 = (-q1).mul_add(b, a);
                (r1.mul_add(y, q1), Self::check(a))
            }

            /// Whether every dividend whose checks fold (by `max`) to `worst` was in range.
            #[inline(always)]
            pub fn all_exact(worst: $bits) -> bool {
                worst < Self::HI - Self::LO
            }

            /// Divides every element of `x` by the divisor into `out` (equal lengths), bit for
            /// bit as `x[i] / b`.
            #[inline(always)]
            pub fn div_slice(&self, x: &[$t], out: &mut [$t]) {
                let out = &mut out[..x.len()];
                if self.fast {
                    let mut worst: $bits = 0;
                    for (o, &a) in out.iter_mut().zip(x) {
                        let (q, k) = self.div(a);
                        *o = q;
                        worst = worst.max(k);
                    }
                    if Self::all_exact(worst) {
                        return;
                    }
                }
                let b = self.b;
                for (o, &a) in out.iter_mut().zip(x) {
                    *o = a / b;
                }
            }
        }
    };
}

shared_divisor!(f32, u32, 0x7fff_ffff, 67 << 23, 187 << 23);
shared_divisor!(
    f64,
    u64,
    0x7fff_ffff_ffff_ffff,
    (1023 - 500) << 52,
    (1023 + 500) << 52
);

crate::multiversion! {
    /// `out[i] = x[i] / b` for every `i` (equal lengths), bit for bit, by the fused sequence
    /// where it applies.
    pub fn divide_f32(x: &[f32], b: f32, out: &mut [f32]) {
        SharedDivisor::<f32>::new(b).div_slice(x, out)
    }
}

crate::multiversion! {
    /// `out[i] = x[i] / b` for every `i` (equal lengths), bit for bit, by the fused sequence
    /// where it applies.
    pub fn divide_f64(x: &[f64], b: f64, out: &mut [f64]) {
        SharedDivisor::<f64>::new(b).div_slice(x, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specials32() -> Vec<f32> {
        let mut v = vec![
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            f32::MIN_POSITIVE / 8.0,
            f32::from_bits(1),
            f32::MAX,
            -f32::MAX,
            1.0,
            -1.0,
            3.0,
            0.1,
            1e-5,
            2f32.powi(-60),
            2f32.powi(60),
            2f32.powi(60) * (1.0 - f32::EPSILON / 2.0),
            2f32.powi(-60) * (1.0 - f32::EPSILON / 2.0),
            f32::from_bits(0x3fff_ffff),
            f32::from_bits(0x3f80_0001),
        ];
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..300 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            v.push(f32::from_bits(s as u32));
            // Magnitudes near the workloads' (normalised data, standard deviations).
            v.push(((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 8.0);
        }
        v
    }

    /// Every pair of special and random values, fast path or not, at every CPU level this
    /// machine runs (the fallback is `/`, so the result is `/` bit for bit either way).
    #[test]
    fn matches_division_on_specials_f32() {
        let values = specials32();
        let mut out = vec![0.0f32; values.len()];
        for &b in &values {
            let d = SharedDivisor::<f32>::new(b);
            divide_f32(&values, b, &mut out);
            for (&a, &q) in values.iter().zip(&out) {
                let want = a / b;
                assert!(
                    q.to_bits() == want.to_bits() || (q.is_nan() && want.is_nan()),
                    "{a:e} / {b:e}: {q:e}, want {want:e}"
                );
            }
            // Element by element, the fused sequence is `/` whenever both checks pass.
            if d.fast() {
                for &a in &values {
                    let (q, k) = d.div(a);
                    if SharedDivisor::<f32>::all_exact(k) {
                        assert_eq!(q.to_bits(), (a / b).to_bits(), "{a:e} / {b:e}");
                    }
                }
            }
        }
    }

    #[test]
    fn matches_division_on_specials_f64() {
        let mut values: Vec<f64> = specials32().iter().map(|&v| v as f64).collect();
        values.extend([
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::from_bits(1),
            2f64.powi(-500),
            2f64.powi(500),
        ]);
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..300 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            values.push(f64::from_bits(s));
        }
        let mut out = vec![0.0f64; values.len()];
        for &b in &values {
            divide_f64(&values, b, &mut out);
            for (&a, &q) in values.iter().zip(&out) {
                let want = a / b;
                assert!(
                    q.to_bits() == want.to_bits() || (q.is_nan() && want.is_nan()),
                    "{a:e} / {b:e}: {q:e}, want {want:e}"
                );
            }
        }
    }

    #[test]
    fn range_excludes_zeros_and_non_finite() {
        for v in [
            0.0f32,
            -0.0,
            f32::INFINITY,
            f32::NAN,
            f32::from_bits(1),
            1e-30,
            1e30,
        ] {
            assert!(!SharedDivisor::<f32>::in_range(v), "{v:e}");
        }
        for v in [1.0f32, -1.0, 1e-10, 1e10, 2f32.powi(-60)] {
            assert!(SharedDivisor::<f32>::in_range(v), "{v:e}");
        }
        assert!(!SharedDivisor::<f32>::in_range(2f32.powi(60)));
    }
}
