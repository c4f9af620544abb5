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
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// Division; integer division by zero yields zero (never a panic) and wraps on overflow.
    fn div(self, o: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    /// `pow(a, b)`: `powf` for floats, repeated multiplication (wrapping) for integers; a negative integer exponent gives 0 (or 1 for a base of 1).
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
                    return match self {
                        1 => 1,
                        -1 => {
                            if o % 2 == 0 {
                                1
                            } else {
                                -1
                            }
                        }
                        _ => 0,
                    };
                }
                self.wrapping_pow(if (o as i64) > u32::MAX as i64 {
                    u32::MAX
                } else {
                    o as u32
                })
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
