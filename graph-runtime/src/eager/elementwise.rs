//! Eager elementwise ops: arithmetic and comparisons with broadcasting, unary math, `select`, `cast`, creation and the `assert_*` checks.

use super::{flat, from_vec, standard, IntoView};
use crate::dtype::{CastTo, Element, Float, Numeric};
use crate::error::Error;
use crate::exec::buffer;
use crate::exec::parallel::map_reduce;
use crate::kernels::elementwise::{
    binary_into, broadcast_shapes, map_into, math_into, ternary_into,
};
use crate::kernels::math::{ActivationMath, ElementaryMath, FloatMath, MathFn, NumberMath};
use ndarray::{ArrayD, ArrayViewD, IxDyn};

/// Runs a broadcasting binary kernel and allocates its result.
fn binary<'a, 'b, A, B, O, F>(
    op: &'static str,
    a: impl IntoView<'a, A>,
    b: impl IntoView<'b, B>,
    f: F,
) -> Result<ArrayD<O>, Error>
where
    A: Element,
    B: Element,
    O: Element,
    F: Fn(A, B) -> O + Sync,
{
    let (a, b) = (a.into_view(), b.into_view());
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let (sa, sb) = (standard(op, &a)?, standard(op, &b)?);
    let mut out = buffer::zeroed_for(op, &shape)?;
    binary_into(
        flat(&sa),
        a.shape(),
        flat(&sb),
        b.shape(),
        &shape,
        &mut out,
        f,
    );
    Ok(from_vec(&shape, out))
}

/// Runs a unary kernel and allocates its result.
fn unary<'a, A: Element, O: Element>(
    op: &'static str,
    x: impl IntoView<'a, A>,
    f: impl Fn(A) -> O + Sync,
) -> Result<ArrayD<O>, Error> {
    let x = x.into_view();
    let sx = standard(op, &x)?;
    let mut out = buffer::zeroed(op, x.len())?;
    map_into(flat(&sx), &mut out, f);
    Ok(from_vec(x.shape(), out))
}

/// Runs a dispatched math function over `x` and allocates its result.
fn math<'a, T: FloatMath>(
    op: &'static str,
    x: impl IntoView<'a, T>,
    f: MathFn,
) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    let sx = standard(op, &x)?;
    let mut out = buffer::zeroed(op, x.len())?;
    math_into(f, flat(&sx), &mut out);
    Ok(from_vec(x.shape(), out))
}

macro_rules! binary_numeric {
    ($($(#[$doc:meta])* $name:ident => $method:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name<'a, 'b, T: Numeric>(a: impl IntoView<'a, T>, b: impl IntoView<'b, T>) -> Result<ArrayD<T>, Error> {
            binary(stringify!($name), a, b, T::$method)
        }
    )*};
}

binary_numeric! {
    /// `a + b` with broadcasting (integers wrap).
    add => add;
    /// `a - b` with broadcasting (integers wrap).
    sub => sub;
    /// `a * b` with broadcasting (integers wrap).
    mul => mul;
    /// The NaN-propagating elementwise maximum.
    maximum => maximum;
    /// The NaN-propagating elementwise minimum.
    minimum => minimum;
}

/// The message of an integer division by zero.
pub const DIVISION_BY_ZERO: &str = "integer division by zero";
/// The message of a negative integer exponent.
pub const NEGATIVE_EXPONENT: &str =
    "integers to negative integer powers are not allowed (cast to a float first)";

/// Fails with [`Error::Arithmetic`] naming `op` if an integer divisor has a zero element;
/// floats always pass (they divide by zero to inf or NaN). Compiled graphs run this check
/// before the integer division of `op`, at its source line.
pub fn check_nonzero_divisor<'a, T: Numeric>(
    divisor: impl IntoView<'a, T>,
    op: &'static str,
) -> Result<(), Error> {
    let d = divisor.into_view();
    if !T::INTEGER || all(op, &d, |v| v != T::ZERO)? {
        Ok(())
    } else {
        Err(Error::arithmetic(op, DIVISION_BY_ZERO))
    }
}

/// Fails with [`Error::Arithmetic`] naming `op` if an integer exponent has a negative element
/// (TensorFlow: "Integers to negative integer powers are not allowed"); floats always pass.
pub fn check_non_negative_exponent<'a, T: Numeric>(
    exponent: impl IntoView<'a, T>,
    op: &'static str,
) -> Result<(), Error> {
    let e = exponent.into_view();
    if !T::INTEGER || all(op, &e, |v| v >= T::ZERO)? {
        Ok(())
    } else {
        Err(Error::arithmetic(op, NEGATIVE_EXPONENT))
    }
}

macro_rules! binary_dividing {
    ($($(#[$doc:meta])* $name:ident => $method:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name<'a, 'b, T: Numeric>(a: impl IntoView<'a, T>, b: impl IntoView<'b, T>) -> Result<ArrayD<T>, Error> {
            let b = b.into_view();
            check_nonzero_divisor(b.view(), stringify!($name))?;
            binary(stringify!($name), a, b, T::$method)
        }
    )*};
}

binary_dividing! {
    /// `a / b` with broadcasting. Integers truncate toward zero (as Rust's `/`) and wrap
    /// (`MIN / -1 = MIN`); an integer zero divisor is [`Error::Arithmetic`].
    div => div;
    /// TensorFlow's `truncatediv`: `a / b` rounded toward zero (integer `/`); floats `trunc(a / b)`.
    truncatediv => truncdiv;
    /// TensorFlow's `truncatemod` (Rust's `%`): the remainder with the sign of `a`; floats as
    /// `fmod`. `MIN % -1` is 0; an integer zero divisor is [`Error::Arithmetic`].
    truncatemod => truncmod;
    /// TensorFlow's `floordiv`: `a / b` rounded toward negative infinity; floats `floor(a / b)`.
    floordiv => floordiv;
    /// TensorFlow's `floormod`: the remainder of `floordiv`, with the sign of `b` (floats too).
    floormod => floormod;
}

/// `a` to the power `b` with broadcasting; integers multiply with wrapping over the whole
/// exponent range, and a negative integer exponent is [`Error::Arithmetic`].
pub fn pow<'a, 'b, T: Numeric>(
    a: impl IntoView<'a, T>,
    b: impl IntoView<'b, T>,
) -> Result<ArrayD<T>, Error> {
    let b = b.into_view();
    check_non_negative_exponent(b.view(), "pow")?;
    binary("pow", a, b, T::pow)
}

macro_rules! logical {
    ($($(#[$doc:meta])* $name:ident => $op:tt;)*) => {$(
        $(#[$doc])*
        pub fn $name<'a, 'b>(a: impl IntoView<'a, bool>, b: impl IntoView<'b, bool>) -> Result<ArrayD<bool>, Error> {
            binary(stringify!($name), a, b, |x: bool, y: bool| x $op y)
        }
    )*};
}

logical! {
    /// `a & b` on bool tensors, with broadcasting.
    logical_and => &;
    /// `a | b` on bool tensors, with broadcasting.
    logical_or => |;
    /// `a ^ b` on bool tensors, with broadcasting.
    logical_xor => ^;
}

/// `!x` on a bool tensor.
pub fn logical_not<'a>(x: impl IntoView<'a, bool>) -> Result<ArrayD<bool>, Error> {
    unary("logical_not", x, |v: bool| !v)
}

/// The error function.
pub fn erf<'a, T: ActivationMath>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("erf", x, T::erf_)
}

/// TensorFlow's `gelu`: `approximate = false` is the exact `0.5 * x * (1 + erf(x / sqrt(2)))`,
/// `true` the tanh form `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x³)))`.
pub fn gelu<'a, T: ActivationMath>(
    x: impl IntoView<'a, T>,
    approximate: bool,
) -> Result<ArrayD<T>, Error> {
    if approximate {
        unary("gelu", x, T::gelu_tanh_)
    } else {
        unary("gelu", x, T::gelu_)
    }
}

/// `ln(1 + e^x)`, computed without overflow, with TensorFlow's thresholds.
pub fn softplus<'a, T: ActivationMath>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("softplus", x, T::softplus_)
}

/// `x` for `x > 0`, `e^x - 1` otherwise.
pub fn elu<'a, T: ActivationMath>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("elu", x, T::elu_)
}

/// `x` for `x > 0`, `alpha * x` otherwise (TensorFlow's default `alpha` is 0.2).
pub fn leaky_relu<'a, T: Float>(x: impl IntoView<'a, T>, alpha: T) -> Result<ArrayD<T>, Error> {
    unary("leaky_relu", x, move |v: T| leaky_relu_scalar(v, alpha))
}

/// The scalar `leaky_relu`, shared with compiled graphs.
#[inline(always)]
pub fn leaky_relu_scalar<T: Numeric>(x: T, alpha: T) -> T {
    if x > T::ZERO {
        x
    } else {
        x.mul(alpha)
    }
}

/// TensorFlow's `clip_by_value`: `maximum(minimum(x, hi), lo)` with broadcasting (NaN stays NaN).
pub fn clip_by_value<'a, 'b, 'c, T: Numeric>(
    x: impl IntoView<'a, T>,
    lo: impl IntoView<'b, T>,
    hi: impl IntoView<'c, T>,
) -> Result<ArrayD<T>, Error> {
    let upper = minimum(x, hi)?;
    maximum(&upper, lo)
}

macro_rules! comparison {
    ($($(#[$doc:meta])* $name:ident => $op:tt;)*) => {$(
        $(#[$doc])*
        pub fn $name<'a, 'b, T: Element + PartialOrd>(a: impl IntoView<'a, T>, b: impl IntoView<'b, T>) -> Result<ArrayD<bool>, Error> {
            binary(stringify!($name), a, b, |x: T, y: T| x $op y)
        }
    )*};
}

comparison! {
    /// `a < b` elementwise with broadcasting.
    less => <;
    /// `a <= b` elementwise with broadcasting.
    less_equal => <=;
    /// `a > b` elementwise with broadcasting.
    greater => >;
    /// `a >= b` elementwise with broadcasting.
    greater_equal => >=;
    /// `a == b` elementwise with broadcasting.
    equal => ==;
    /// `a != b` elementwise with broadcasting.
    not_equal => !=;
}

/// `|x|` (integers wrap: `abs(MIN) = MIN`).
pub fn abs<'a, T: Numeric>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("abs", x, T::abs)
}

/// `-x` (integers wrap).
pub fn neg<'a, T: Numeric>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("neg", x, T::neg)
}

/// `x * x`.
pub fn square<'a, T: Numeric>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("square", x, |v: T| v.mul(v))
}

/// `max(x, 0)`; NaN stays NaN.
pub fn relu<'a, T: Numeric>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("relu", x, |v: T| if v < T::ZERO { T::ZERO } else { v })
}

/// `min(max(x, 0), 6)` (TensorFlow's `relu6`); NaN stays NaN.
pub fn relu6<'a, T: NumberMath>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("relu6", x, T::relu6_)
}

/// -1, 0 or 1 by the sign of each element (`+0` for both zeros, NaN for NaN).
pub fn sign<'a, T: NumberMath>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("sign", x, T::sign_)
}

/// Rounds half to even (TensorFlow's `round`); integers are returned as they are.
pub fn round<'a, T: NumberMath>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("round", x, T::round_)
}

/// The largest integer not above each element.
pub fn floor<'a, T: ElementaryMath>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("floor", x, T::floor_)
}

/// The smallest integer not below each element.
pub fn ceil<'a, T: ElementaryMath>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("ceil", x, T::ceil_)
}

/// `ln(1 + x)`, accurate near 0.
pub fn log1p<'a, T: ElementaryMath>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("log1p", x, T::log1p_)
}

/// `e^x - 1`, accurate near 0.
pub fn expm1<'a, T: ElementaryMath>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("expm1", x, T::expm1_)
}

/// `1 / x`.
pub fn reciprocal<'a, T: ElementaryMath>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    unary("reciprocal", x, T::reciprocal_)
}

macro_rules! unary_math {
    ($($(#[$doc:meta])* $name:ident => $f:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name<'a, T: FloatMath>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
            math(stringify!($name), x, MathFn::$f)
        }
    )*};
}

unary_math! {
    /// `e^x`.
    exp => Exp;
    /// The natural logarithm.
    log => Log;
    /// The square root.
    sqrt => Sqrt;
    /// `1 / sqrt(x)`.
    rsqrt => Rsqrt;
    /// The hyperbolic tangent.
    tanh => Tanh;
    /// The logistic function `1 / (1 + e^-x)`.
    sigmoid => Sigmoid;
    /// The sine.
    sin => Sin;
    /// The cosine.
    cos => Cos;
}

/// `cond ? a : b` elementwise, the three operands broadcast together.
pub fn select<'a, 'b, 'c, T: Element>(
    cond: impl IntoView<'a, bool>,
    a: impl IntoView<'b, T>,
    b: impl IntoView<'c, T>,
) -> Result<ArrayD<T>, Error> {
    let (c, a, b) = (cond.into_view(), a.into_view(), b.into_view());
    let ab = broadcast_shapes("select", a.shape(), b.shape())?;
    let shape = broadcast_shapes("select", c.shape(), &ab)?;
    let (sc, sa, sb) = (
        standard("select", &c)?,
        standard("select", &a)?,
        standard("select", &b)?,
    );
    let mut out = buffer::zeroed_for("select", &shape)?;
    ternary_into(
        flat(&sc),
        c.shape(),
        flat(&sa),
        a.shape(),
        flat(&sb),
        b.shape(),
        &shape,
        &mut out,
        |c: bool, x: T, y: T| if c { x } else { y },
    );
    Ok(from_vec(&shape, out))
}

/// Converts every element with Rust `as` semantics (see [`CastTo`]); `cast::<f32, _>(&x)`.
pub fn cast<'a, U: Element, T: CastTo<U>>(x: impl IntoView<'a, T>) -> Result<ArrayD<U>, Error> {
    unary("cast", x, T::cast_to)
}

/// An array of zeros; a shape too large to allocate is an error.
pub fn zeros<T: Numeric>(shape: &[usize]) -> Result<ArrayD<T>, Error> {
    creation("zeros", shape, T::ZERO)
}

/// An array of ones; a shape too large to allocate is an error.
pub fn ones<T: Numeric>(shape: &[usize]) -> Result<ArrayD<T>, Error> {
    creation("ones", shape, T::ONE)
}

/// An array with every element `v`; a shape too large to allocate is an error.
pub fn fill<T: Element>(shape: &[usize], v: T) -> Result<ArrayD<T>, Error> {
    creation("fill", shape, v)
}

/// The shared body of the creation ops: `shape` filled with `v`.
fn creation<T: Element>(op: &'static str, shape: &[usize], v: T) -> Result<ArrayD<T>, Error> {
    let len = buffer::element_count::<T>(op, shape)?;
    Ok(from_vec(shape, buffer::filled(op, len, v)?))
}

/// A rank-0 array holding `v`.
pub fn constant<T: Element>(v: T) -> ArrayD<T> {
    ArrayD::from_elem(IxDyn(&[]), v)
}

/// An array of `shape` holding `values` in row-major order (`constant([[1.0, 2.0], [3.0,
/// 4.0]])`); a count of values that is not the shape's is an error.
pub fn constant_array<T: Element>(shape: &[usize], values: &[T]) -> Result<ArrayD<T>, Error> {
    let len = buffer::element_count::<T>("constant", shape)?;
    if len != values.len() {
        return Err(Error::invalid(
            "constant",
            format!(
                "{} values do not fill the shape {shape:?} of {len} elements",
                values.len()
            ),
        ));
    }
    Ok(from_vec(shape, values.to_vec()))
}

/// Whether `pred` holds for every element (in parallel for large inputs), or the error of
/// a view too large to copy, naming `op`.
fn all<T: Element>(
    op: &'static str,
    x: &ArrayViewD<'_, T>,
    pred: impl Fn(T) -> bool + Sync,
) -> Result<bool, Error> {
    let sx = standard(op, x)?;
    let s = flat(&sx);
    Ok(map_reduce(
        s.len(),
        1,
        |r| s[r].iter().all(|&v| pred(v)),
        |a, b| a && b,
    ))
}

/// The error of a failed check.
#[cold]
fn assertion(op: &'static str, msg: &str) -> Error {
    Error::Assertion {
        op,
        message: msg.to_string(),
        line: 0,
    }
}

/// Fails unless every element is `>= 0` (NaN fails).
pub fn assert_non_negative<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    msg: &str,
) -> Result<(), Error> {
    let x = x.into_view();
    if all("assert_non_negative", &x, |v| v >= T::ZERO)? {
        Ok(())
    } else {
        Err(assertion("assert_non_negative", msg))
    }
}

/// Fails unless `x > y` everywhere (broadcasting; NaN fails; a shape error if they do not broadcast).
pub fn assert_greater<'a, 'b, T: Numeric>(
    x: impl IntoView<'a, T>,
    y: impl IntoView<'b, T>,
    msg: &str,
) -> Result<(), Error> {
    let ok = binary("assert_greater", x, y, |a: T, b: T| a > b)?;
    if all("assert_greater", &ok.view(), |v| v)? {
        Ok(())
    } else {
        Err(assertion("assert_greater", msg))
    }
}

/// Fails unless `x < y` everywhere (broadcasting; NaN fails; a shape error if they do not broadcast).
pub fn assert_less<'a, 'b, T: Numeric>(
    x: impl IntoView<'a, T>,
    y: impl IntoView<'b, T>,
    msg: &str,
) -> Result<(), Error> {
    let ok = binary("assert_less", x, y, |a: T, b: T| a < b)?;
    if all("assert_less", &ok.view(), |v| v)? {
        Ok(())
    } else {
        Err(assertion("assert_less", msg))
    }
}

/// Fails if any element is NaN or infinite.
pub fn assert_all_finite<'a, T: Float>(x: impl IntoView<'a, T>, msg: &str) -> Result<(), Error> {
    let x = x.into_view();
    if all("assert_all_finite", &x, |v| v.is_finite())? {
        Ok(())
    } else {
        Err(assertion("assert_all_finite", msg))
    }
}
