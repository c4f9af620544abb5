//! Constant folding: ops over constants become constants, conds with a constant predicate lose their dead arm, constant asserts are decided.

use super::replace_uses;
use crate::diag::Diagnostics;
use crate::ir::*;

/// Folds a binary op over two scalars of `dtype` exactly as the runtime computes it in
/// `dtype` (`graph_runtime::Numeric`): i32 wraps at 32 bits, i64 at 64, f32 rounds in f32.
/// `None` where the result is not exactly known here: float `pow` (libm's, at run time), an
/// integer division by zero or a negative or huge integer exponent (left to the runtime, or
/// rejected first by [`int_fold_refusal`]).
pub fn fold_binary(op: BinaryOp, a: Scalar, b: Scalar, dtype: DType) -> Option<Scalar> {
    match (dtype, a, b) {
        (DType::I32, Scalar::Int(x), Scalar::Int(y)) => {
            let v = int_binary(op, i32::try_from(x).ok()?, i32::try_from(y).ok()?)?;
            Some(Scalar::Int(i64::from(v)))
        }
        (DType::I64, Scalar::Int(x), Scalar::Int(y)) => Some(Scalar::Int(int_binary(op, x, y)?)),
        (DType::F32, a, b) if !matches!((a, b), (Scalar::Bool(_), _) | (_, Scalar::Bool(_))) => {
            let v = f32_binary(op, a.as_f64() as f32, b.as_f64() as f32)?;
            Some(Scalar::Float(f64::from(v)))
        }
        (DType::F64, a, b) if !matches!((a, b), (Scalar::Bool(_), _) | (_, Scalar::Bool(_))) => {
            Some(Scalar::Float(f64_binary(op, a.as_f64(), b.as_f64())?))
        }
        (DType::Bool, Scalar::Bool(x), Scalar::Bool(y)) => Some(Scalar::Bool(match op {
            BinaryOp::LogicalAnd => x & y,
            BinaryOp::LogicalOr => x | y,
            BinaryOp::LogicalXor => x ^ y,
            _ => return None,
        })),
        _ => None,
    }
}

/// The runtime's integer arithmetic (`Numeric` for `i32`/`i64`): wrapping.
fn int_binary<T>(op: BinaryOp, x: T, y: T) -> Option<T>
where
    T: Copy + Ord + From<i8> + WrappingInt,
{
    let zero = T::from(0);
    Some(match op {
        BinaryOp::Add => x.wrapping_add(y),
        BinaryOp::Sub => x.wrapping_sub(y),
        BinaryOp::Mul => x.wrapping_mul(y),
        _ if op.divides() && y == zero => return None,
        BinaryOp::Div | BinaryOp::TruncateDiv => x.wrapping_div(y),
        BinaryOp::TruncateMod => x.wrapping_rem(y),
        BinaryOp::FloorDiv => {
            let q = x.wrapping_div(y);
            if x.wrapping_rem(y) != zero && ((x < zero) != (y < zero)) {
                q.wrapping_sub(T::from(1))
            } else {
                q
            }
        }
        BinaryOp::FloorMod => {
            let r = x.wrapping_rem(y);
            if r != zero && ((r < zero) != (y < zero)) {
                r.wrapping_add(y)
            } else {
                r
            }
        }
        BinaryOp::LeakyRelu | BinaryOp::LogicalAnd | BinaryOp::LogicalOr | BinaryOp::LogicalXor => {
            return None
        }
        BinaryOp::Pow => {
            let e = u32::try_from(y.to_i64()).ok()?;
            x.wrapping_pow(e)
        }
        BinaryOp::Maximum => {
            if x >= y {
                x
            } else {
                y
            }
        }
        BinaryOp::Minimum => {
            if x <= y {
                x
            } else {
                y
            }
        }
    })
}

/// The wrapping operations of `i32` and `i64`, for [`int_binary`].
trait WrappingInt: Sized {
    fn wrapping_add(self, o: Self) -> Self;
    fn wrapping_sub(self, o: Self) -> Self;
    fn wrapping_mul(self, o: Self) -> Self;
    fn wrapping_div(self, o: Self) -> Self;
    fn wrapping_rem(self, o: Self) -> Self;
    fn wrapping_pow(self, e: u32) -> Self;
    fn to_i64(self) -> i64;
}

macro_rules! wrapping_int {
    ($($t:ty),*) => {$(
        impl WrappingInt for $t {
            fn wrapping_add(self, o: Self) -> Self { <$t>::wrapping_add(self, o) }
            fn wrapping_sub(self, o: Self) -> Self { <$t>::wrapping_sub(self, o) }
            fn wrapping_mul(self, o: Self) -> Self { <$t>::wrapping_mul(self, o) }
            fn wrapping_div(self, o: Self) -> Self { <$t>::wrapping_div(self, o) }
            fn wrapping_rem(self, o: Self) -> Self { <$t>::wrapping_rem(self, o) }
            fn wrapping_pow(self, e: u32) -> Self { <$t>::wrapping_pow(self, e) }
            fn to_i64(self) -> i64 { i64::from(self) }
        }
    )*};
}
wrapping_int!(i32, i64);

/// The runtime's float arithmetic (`Numeric` for `f32`/`f64`) in the value's own type;
/// `pow` is not folded (it is libm's `powf` at run time, which the compiler cannot promise
/// to reproduce).
macro_rules! float_binary {
    ($name:ident, $t:ty) => {
        fn $name(op: BinaryOp, x: $t, y: $t) -> Option<$t> {
            Some(match op {
                BinaryOp::Add => x + y,
                BinaryOp::Sub => x - y,
                BinaryOp::Mul => x * y,
                BinaryOp::Div => x / y,
                BinaryOp::Pow => return None,
                // Left to the runtime, which both paths share.
                BinaryOp::TruncateDiv
                | BinaryOp::TruncateMod
                | BinaryOp::FloorDiv
                | BinaryOp::FloorMod
                | BinaryOp::LeakyRelu
                | BinaryOp::LogicalAnd
                | BinaryOp::LogicalOr
                | BinaryOp::LogicalXor => return None,
                // NaN propagates as the type's NaN (TensorFlow's maximum and minimum).
                BinaryOp::Maximum | BinaryOp::Minimum if x.is_nan() || y.is_nan() => <$t>::NAN,
                BinaryOp::Maximum => {
                    if x >= y {
                        x
                    } else {
                        y
                    }
                }
                BinaryOp::Minimum => {
                    if x <= y {
                        x
                    } else {
                        y
                    }
                }
            })
        }
    };
}
float_binary!(f32_binary, f32);
float_binary!(f64_binary, f64);

/// Integer arithmetic on constants that is rejected rather than folded: a division by zero
/// and a negative exponent (as rustc rejects them on constants).
pub fn int_fold_refusal(op: BinaryOp, a: Scalar, b: Scalar, dtype: DType) -> Option<String> {
    let (Scalar::Int(x), Scalar::Int(y)) = (a, b) else {
        return None;
    };
    if !dtype.is_int() {
        return None;
    }
    match op {
        BinaryOp::Div if y == 0 => Some(format!("integer division by zero on constants (`{x} / 0`); Rust rejects it too")),
        _ if op.divides() && y == 0 => Some(format!("integer division by zero on constants (`{}({x}, 0)`)", op.name())),
        BinaryOp::Pow if y < 0 => Some(format!("`pow` of integers needs a non-negative exponent, found {y}; cast to a float for negative powers")),
        _ => None,
    }
}

/// What rustc says of the same integer arithmetic on literals: besides
/// [`int_fold_refusal`], a result out of the range of `dtype` is a compile error.
pub fn int_fold_error(op: BinaryOp, a: Scalar, b: Scalar, dtype: DType) -> Option<String> {
    if let Some(msg) = int_fold_refusal(op, a, b, dtype) {
        return Some(msg);
    }
    let (Scalar::Int(x), Scalar::Int(y)) = (a, b) else {
        return None;
    };
    if !dtype.is_int() {
        return None;
    }
    let (lo, hi) = if dtype == DType::I32 {
        (i32::MIN as i128, i32::MAX as i128)
    } else {
        (i64::MIN as i128, i64::MAX as i128)
    };
    let (x, y) = (x as i128, y as i128);
    let exact: Option<i128> = match op {
        BinaryOp::Add => Some(x + y),
        BinaryOp::Sub => Some(x - y),
        BinaryOp::Mul => Some(x * y),
        // Only `MIN / -1` overflows, where the quotient is exact whichever way it rounds.
        BinaryOp::Div | BinaryOp::TruncateDiv | BinaryOp::FloorDiv => Some(x / y),
        BinaryOp::Pow => Some(match x {
            0 | 1 if y == 0 => 1,
            0 | 1 => x,
            -1 if y % 2 == 0 => 1,
            -1 => -1,
            _ => {
                // |x| >= 2: at most 64 factors before the product leaves the range.
                let mut r: i128 = 1;
                let mut k = 0;
                while k < y && (lo..=hi).contains(&r) {
                    r *= x;
                    k += 1;
                }
                r
            }
        }),
        _ => None,
    };
    match exact {
        Some(v) if v < lo || v > hi => Some(format!(
            "`{}` of the constants {x} and {y} overflows {dtype}",
            op.name()
        )),
        _ => None,
    }
}

fn fold_compare(op: CmpOp, a: Scalar, b: Scalar) -> Option<bool> {
    let (x, y) = match (a, b) {
        (Scalar::Int(x), Scalar::Int(y)) => return Some(cmp(op, x.partial_cmp(&y))),
        (Scalar::Bool(x), Scalar::Bool(y)) => return Some(cmp(op, x.partial_cmp(&y))),
        (x, y) => (x.as_f64(), y.as_f64()),
    };
    Some(cmp(op, x.partial_cmp(&y)))
}

fn cmp(op: CmpOp, o: Option<std::cmp::Ordering>) -> bool {
    use std::cmp::Ordering::*;
    match (op, o) {
        (CmpOp::Ne, None) => true,
        (_, None) => false,
        (CmpOp::Lt, Some(o)) => o == Less,
        (CmpOp::Le, Some(o)) => o != Greater,
        (CmpOp::Gt, Some(o)) => o == Greater,
        (CmpOp::Ge, Some(o)) => o != Less,
        (CmpOp::Eq, Some(o)) => o == Equal,
        (CmpOp::Ne, Some(o)) => o != Equal,
    }
}

/// Folds a unary op over a scalar of `dtype` exactly as the runtime computes it; the
/// transcendental functions are not folded (the runtime's own approximations compute them).
fn fold_unary(op: UnaryOp, a: Scalar, dtype: DType) -> Option<Scalar> {
    match (dtype, a) {
        (DType::Bool, Scalar::Bool(b)) => (op == UnaryOp::LogicalNot).then_some(Scalar::Bool(!b)),
        (DType::I32, Scalar::Int(x)) => {
            let x = i32::try_from(x).ok()?;
            let v = match op {
                UnaryOp::Abs => x.wrapping_abs(),
                UnaryOp::Neg => x.wrapping_neg(),
                UnaryOp::Square => x.wrapping_mul(x),
                UnaryOp::Relu => x.max(0),
                _ => return None,
            };
            Some(Scalar::Int(i64::from(v)))
        }
        (DType::I64, Scalar::Int(x)) => Some(Scalar::Int(match op {
            UnaryOp::Abs => x.wrapping_abs(),
            UnaryOp::Neg => x.wrapping_neg(),
            UnaryOp::Square => x.wrapping_mul(x),
            UnaryOp::Relu => x.max(0),
            _ => return None,
        })),
        (DType::F32, Scalar::Float(x)) => {
            let x = x as f32;
            let v = match op {
                UnaryOp::Abs => x.abs(),
                UnaryOp::Neg => -x,
                UnaryOp::Square => x * x,
                // As the runtime: NaN and -0 pass through.
                UnaryOp::Relu => {
                    if x < 0.0 {
                        0.0
                    } else {
                        x
                    }
                }
                UnaryOp::Sqrt => x.sqrt(),
                _ => return None,
            };
            Some(Scalar::Float(f64::from(v)))
        }
        (DType::F64, Scalar::Float(x)) => Some(Scalar::Float(match op {
            UnaryOp::Abs => x.abs(),
            UnaryOp::Neg => -x,
            UnaryOp::Square => x * x,
            UnaryOp::Relu => {
                if x < 0.0 {
                    0.0
                } else {
                    x
                }
            }
            UnaryOp::Sqrt => x.sqrt(),
            _ => return None,
        })),
        _ => None,
    }
}

/// Folds every rank-0 op whose operands are constants, prunes decided conds and decides constant asserts.
pub fn run(graph: &mut Graph, diag: &mut Diagnostics) {
    for i in 0..graph.nodes.len() {
        let id = NodeId(i);
        let node = graph.node(id).clone();
        if node.poisoned || !node.shape.is_empty() {
            continue;
        }
        if let Some(value) = fold_reduce_of_fill(graph, &node) {
            graph.node_mut(id).op = Op::Const { value, weak: false };
            graph.node_mut(id).inputs.clear();
            continue;
        }
        let consts: Option<Vec<Scalar>> =
            node.inputs.iter().map(|&x| graph.const_value(x)).collect();
        let Some(c) = consts else { continue };
        let folded = match (&node.op, c.as_slice()) {
            // A constant zero divisor or negative exponent is reported once, by the op's check.
            (Op::Binary(op), [_, Scalar::Int(y)])
                if node.dtype.is_int()
                    && (op.divides() && *y == 0 || *op == BinaryOp::Pow && *y < 0) =>
            {
                None
            }
            (Op::Binary(op), [a, b]) => match int_fold_refusal(*op, *a, *b, node.dtype) {
                Some(msg) => {
                    diag.error(node.span, msg);
                    graph.node_mut(id).poisoned = true;
                    None
                }
                None => fold_binary(*op, *a, *b, node.dtype),
            },
            (Op::Compare(op), [a, b]) => fold_compare(*op, *a, *b).map(Scalar::Bool),
            (Op::Unary(op), [a]) => fold_unary(*op, *a, node.dtype),
            (Op::Cast, [a]) => Some(a.convert(node.dtype)),
            (Op::Select, [Scalar::Bool(c), a, b]) => Some(if *c { *a } else { *b }),
            _ => None,
        };
        if let Some(value) = folded {
            graph.node_mut(id).op = Op::Const { value, weak: false };
            graph.node_mut(id).inputs.clear();
        }
    }
    decide_asserts(graph, diag);
    prune_conds(graph);
}

/// A rank-0 reduction of a constant fill with a static shape (`reduce_sum(fill([4], 1.0))` is
/// 4), where the result is exactly what the runtime's reduction gives whatever its order of
/// additions: integer sums (wrapping), means whose sum does not overflow, float sums and means
/// whose partial sums are all exact integers, and the max or min of a non-empty fill. `norm`
/// is not folded (its rounding depends on how the runtime sums the squares).
fn fold_reduce_of_fill(graph: &Graph, node: &Node) -> Option<Scalar> {
    let Op::Reduce { kind, .. } = node.op else {
        return None;
    };
    let input = graph.node(*node.inputs.first()?);
    if input.op != Op::Fill {
        return None;
    }
    let v = graph.const_value(input.inputs[0])?;
    let mut count = 1u64;
    for d in &input.shape {
        match d {
            Dim::Const(n) => count = count.checked_mul(*n)?,
            Dim::Sym(_) | Dim::Prod(_) => return None,
        }
    }
    let dtype = node.dtype;
    if count == 0 {
        return match kind {
            ReduceKind::Sum => Some(Scalar::Int(0).convert(dtype)),
            _ => None,
        };
    }
    match (kind, v) {
        (ReduceKind::Max | ReduceKind::Min, Scalar::Float(x)) if x.is_nan() => None,
        (ReduceKind::Max | ReduceKind::Min, v) => Some(v),
        (ReduceKind::Sum, Scalar::Int(x)) => {
            Some(Scalar::Int(x.wrapping_mul(count as i64)).convert(dtype))
        }
        (ReduceKind::Mean, Scalar::Int(x)) => {
            let exact = i128::from(x) * i128::from(count);
            let fits = match dtype {
                DType::I32 => i32::try_from(exact).is_ok(),
                _ => i64::try_from(exact).is_ok(),
            };
            fits.then_some(Scalar::Int(x))
        }
        (ReduceKind::Sum | ReduceKind::Mean, Scalar::Float(x)) => {
            let exact_limit = if dtype == DType::F32 {
                (1u64 << f32::MANTISSA_DIGITS) as f64
            } else {
                (1u64 << f64::MANTISSA_DIGITS) as f64
            };
            let total = x * count as f64;
            if x.fract() != 0.0 || total.abs() > exact_limit {
                return None;
            }
            Some(Scalar::Float(if kind == ReduceKind::Sum {
                total
            } else {
                x
            }))
        }
        _ => None,
    }
}

/// An assert over constants is checked now: a failing one is a compile error, a passing one is dropped.
fn decide_asserts(graph: &mut Graph, diag: &mut Diagnostics) {
    let mut decided = Vec::new();
    for (i, n) in graph.nodes.iter().enumerate() {
        let Op::Assert { kind, message } = &n.op else {
            continue;
        };
        let consts: Option<Vec<Scalar>> = n.inputs.iter().map(|&x| graph.const_value(x)).collect();
        let Some(c) = consts else { continue };
        let ok = match (kind, c.as_slice()) {
            (AssertKind::NonNegative, [a]) => a.as_f64() >= 0.0,
            (AssertKind::AllFinite, [a]) => a.as_f64().is_finite(),
            (AssertKind::Greater, [a, b]) => fold_compare(CmpOp::Gt, *a, *b) == Some(true),
            (AssertKind::Less, [a, b]) => fold_compare(CmpOp::Lt, *a, *b) == Some(true),
            (AssertKind::NonZeroDivisor(_), [a]) => *a != Scalar::Int(0),
            (AssertKind::NonNegativeExponent, [a]) => !matches!(a, Scalar::Int(v) if *v < 0),
            _ => continue,
        };
        if let (false, Some(op)) = (ok, kind.checked_op()) {
            let msg = match kind {
                AssertKind::NonZeroDivisor(_) => {
                    format!("integer division by zero: the divisor of `{op}` is the constant 0")
                }
                _ => format!(
                    "`{op}` of integers needs a non-negative exponent, found the constant {}; cast to a float for negative powers",
                    c[0]
                ),
            };
            diag.error(n.span, msg);
        } else if !ok {
            let vals: Vec<String> = c.iter().map(|v| v.to_string()).collect();
            diag.error(
                n.span,
                format!(
                    "`{}` fails at compile time on constants ({}): {message}",
                    kind.name(),
                    vals.join(", ")
                ),
            );
        }
        decided.push(NodeId(i));
    }
    for id in decided {
        graph.effects.retain(|&e| e != id);
        for c in graph.conds.iter_mut() {
            c.then_effects.retain(|&e| e != id);
            c.else_effects.retain(|&e| e != id);
        }
    }
}

/// A cond whose predicate is a constant forwards the taken arm's values; the dead arm becomes dead code.
fn prune_conds(graph: &mut Graph) {
    for ci in 0..graph.conds.len() {
        let c = graph.conds[ci].clone();
        if c.removed {
            continue;
        }
        let Predicate::Tensor(p) = c.predicate else {
            continue;
        };
        let Some(Scalar::Bool(taken)) = graph.const_value(p) else {
            continue;
        };
        let outs = if taken {
            &c.then_outputs
        } else {
            &c.else_outputs
        };
        let effects = if taken {
            &c.then_effects
        } else {
            &c.else_effects
        };
        for (r, o) in c.results.iter().zip(outs) {
            replace_uses(graph, *r, *o);
        }
        // The taken arm's nodes now run in the cond's own region.
        let arm = Region::Arm {
            cond: CondId(ci),
            then_arm: taken,
        };
        for n in graph.nodes.iter_mut() {
            if n.region == arm {
                n.region = c.region;
            }
        }
        match c.region {
            Region::Main => graph.effects.extend(effects.iter().copied()),
            Region::Arm { cond, then_arm } => {
                let parent = &mut graph.conds[cond.0];
                if then_arm {
                    parent.then_effects.extend(effects.iter().copied());
                } else {
                    parent.else_effects.extend(effects.iter().copied());
                }
            }
        }
        graph.conds[ci].removed = true;
    }
}
