//! Rounding, sign, relu6 and the reciprocal, and the traits that give the eager ops every elementwise math function generically (`NumberMath`, `ElementaryMath`, the activations).

use super::*;

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
