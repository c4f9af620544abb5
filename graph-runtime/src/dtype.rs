//! Element types a tensor may hold (`f32 f64 i32 i64 bool`) and the traits kernels are generic over.

use std::fmt;

/// The dtype of a tensor, as named in `Tensor<DT, ...>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F64,
    I32,
    I64,
    Bool,
}

impl DType {
    /// The Rust spelling (`f32`), also used in messages and exports.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::Bool => "bool",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Any element a tensor may hold.
pub trait Element: Copy + Send + Sync + Default + PartialEq + fmt::Debug + 'static {
    const DTYPE: DType;
}

/// Elements with arithmetic: `+ - * /`, comparisons, `abs`, `maximum`, sums.
pub trait Numeric: Element + PartialOrd {
    const ZERO: Self;
    const ONE: Self;
    /// The smallest value (`-inf` for floats); the identity of `max`.
    const LOWEST: Self;
    /// The largest value (`+inf` for floats); the identity of `min`.
    const HIGHEST: Self;
    /// Whether this is an integer type (whose division by zero and negative powers are errors).
    const INTEGER: bool;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// Division; integers truncate toward zero and wrap on overflow (`MIN / -1 = MIN`). An
    /// integer division by zero yields zero here (never a panic): the ops that divide check
    /// their divisor first and return [`crate::Error::Arithmetic`].
    fn div(self, o: Self) -> Self;
    /// TensorFlow's `truncatemod` (Rust's `%`): the remainder of the truncated division, with
    /// the sign of `self` (`fmod` for floats; an integer `MIN % -1` is 0, a zero divisor gives 0).
    fn truncmod(self, o: Self) -> Self;
    /// TensorFlow's `truncatediv`: the quotient rounded toward zero (as integer `/`).
    fn truncdiv(self, o: Self) -> Self;
    /// TensorFlow's `floordiv`: the quotient rounded toward negative infinity.
    fn floordiv(self, o: Self) -> Self;
    /// TensorFlow's `floormod`: the remainder of `floordiv`, with the sign of `o`.
    fn floormod(self, o: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    /// `pow(a, b)`: `powf` for floats; for integers, squaring and multiplying (wrapping) over
    /// the exponent's whole range. A negative integer exponent yields 0 here: the ops check
    /// their exponent first and return [`crate::Error::Arithmetic`].
    fn pow(self, o: Self) -> Self;
    /// NaN-propagating maximum (TensorFlow's `maximum`).
    fn maximum(self, o: Self) -> Self;
    /// NaN-propagating minimum.
    fn minimum(self, o: Self) -> Self;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
}

/// Floating-point elements: the transcendental ops.
pub trait Float: Numeric {
    fn is_nan(self) -> bool;
    fn is_finite(self) -> bool;
}

impl Element for bool {
    const DTYPE: DType = DType::Bool;
}

macro_rules! float_numeric {
    ($t:ident, $dt:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
        }
        impl Numeric for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const LOWEST: Self = $t::NEG_INFINITY;
            const HIGHEST: Self = $t::INFINITY;
            const INTEGER: bool = false;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self / o
            }
            #[inline(always)]
            fn truncmod(self, o: Self) -> Self {
                self % o
            }
            #[inline(always)]
            fn truncdiv(self, o: Self) -> Self {
                (self / o).trunc()
            }
            #[inline(always)]
            fn floordiv(self, o: Self) -> Self {
                (self / o).floor()
            }
            #[inline(always)]
            fn floormod(self, o: Self) -> Self {
                // TensorFlow's rule: the truncated remainder, moved by `o` when its sign differs.
                let r = self % o;
                if r != 0.0 && ((o < 0.0) != (r < 0.0)) {
                    r + o
                } else {
                    r
                }
            }
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn abs(self) -> Self {
                $t::abs(self)
            }
            /// `powf`, except for the exponents 2 (`x * x`, correctly rounded) and 0.5 (the
            /// correctly rounded square root, with pow's `pow(-0, 0.5) = +0` and
            /// `pow(-inf, 0.5) = +inf`); the compiled and eager paths both call this.
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                if o == 2.0 {
                    self * self
                } else if o == 0.5 {
                    if self == $t::NEG_INFINITY {
                        $t::INFINITY
                    } else if self == 0.0 {
                        0.0
                    } else {
                        self.sqrt()
                    }
                } else {
                    self.powf(o)
                }
            }
            #[inline(always)]
            fn maximum(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    $t::NAN
                } else if self >= o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn minimum(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    $t::NAN
                } else if self <= o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
        }
        impl Float for $t {
            #[inline(always)]
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                $t::is_finite(self)
            }
        }
    };
}
float_numeric!(f32, F32);
float_numeric!(f64, F64);

macro_rules! int_numeric {
    ($t:ident, $dt:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
        }
        impl Numeric for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const LOWEST: Self = $t::MIN;
            const HIGHEST: Self = $t::MAX;
            const INTEGER: bool = true;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    self.wrapping_div(o)
                }
            }
            #[inline(always)]
            fn truncmod(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    self.wrapping_rem(o)
                }
            }
            #[inline(always)]
            fn truncdiv(self, o: Self) -> Self {
                Numeric::div(self, o)
            }
            #[inline(always)]
            fn floordiv(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let q = self.wrapping_div(o);
                if self.wrapping_rem(o) != 0 && ((self < 0) != (o < 0)) {
                    q - 1
                } else {
                    q
                }
            }
            #[inline(always)]
            fn floormod(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                // |r| < |o| and their signs differ when adjusted, so `r + o` cannot overflow.
                let r = self.wrapping_rem(o);
                if r != 0 && ((r < 0) != (o < 0)) {
                    r + o
                } else {
                    r
                }
            }
            #[inline(always)]
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
            #[inline(always)]
            fn abs(self) -> Self {
                self.wrapping_abs()
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                if o < 0 {
                    return 0;
                }
                // Exponentiation by squaring over every bit of the exponent (no clamping).
                let (mut base, mut e, mut acc) = (self, o, 1 as $t);
                while e > 0 {
                    if e & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                acc
            }
            #[inline(always)]
            fn maximum(self, o: Self) -> Self {
                if self >= o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn minimum(self, o: Self) -> Self {
                if self <= o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
        }
    };
}
int_numeric!(i32, I32);
int_numeric!(i64, I64);

/// `cast::<U>(x)`: Rust `as` semantics between numbers (float to int saturates, NaN gives 0);
/// `bool` casts to 0/1 and a number casts to `bool` as `!= 0`.
pub trait CastTo<U>: Element {
    fn cast_to(self) -> U;
}

macro_rules! cast_num {
    ($($from:ty),*) => {
        $(
            impl CastTo<f32> for $from { #[inline(always)] fn cast_to(self) -> f32 { self as f32 } }
            impl CastTo<f64> for $from { #[inline(always)] fn cast_to(self) -> f64 { self as f64 } }
            impl CastTo<i32> for $from { #[inline(always)] fn cast_to(self) -> i32 { self as i32 } }
            impl CastTo<i64> for $from { #[inline(always)] fn cast_to(self) -> i64 { self as i64 } }
            #[allow(clippy::float_cmp)]
            impl CastTo<bool> for $from { #[inline(always)] fn cast_to(self) -> bool { self != (0 as $from) } }
        )*
    };
}
cast_num!(f32, f64, i32, i64);

impl CastTo<f32> for bool {
    #[inline(always)]
    fn cast_to(self) -> f32 {
        self as u8 as f32
    }
}
impl CastTo<f64> for bool {
    #[inline(always)]
    fn cast_to(self) -> f64 {
        self as u8 as f64
    }
}
impl CastTo<i32> for bool {
    #[inline(always)]
    fn cast_to(self) -> i32 {
        self as i32
    }
}
impl CastTo<i64> for bool {
    #[inline(always)]
    fn cast_to(self) -> i64 {
        self as i64
    }
}
impl CastTo<bool> for bool {
    #[inline(always)]
    fn cast_to(self) -> bool {
        self
    }
}
