//! Constant folding: ops over constants become constants, conds with a constant predicate lose their dead arm, constant asserts are decided.

use super::replace_uses;
use crate::diag::Diagnostics;
use crate::ir::*;

/// Folds a binary op over two scalars with the runtime's semantics (wrapping ints, int division by zero gives 0).
pub fn fold_binary(op: BinaryOp, a: Scalar, b: Scalar) -> Option<Scalar> {
    Some(match (a, b) {
        (Scalar::Int(x), Scalar::Int(y)) => Scalar::Int(match op {
            BinaryOp::Add => x.wrapping_add(y),
            BinaryOp::Sub => x.wrapping_sub(y),
            BinaryOp::Mul => x.wrapping_mul(y),
            BinaryOp::Div => {
                if y == 0 {
                    0
                } else {
                    x.wrapping_div(y)
                }
            }
            BinaryOp::Pow => {
                if y < 0 {
                    match x {
                        1 => 1,
                        -1 => {
                            if y % 2 == 0 {
                                1
                            } else {
                                -1
                            }
                        }
                        _ => 0,
                    }
                } else {
                    x.wrapping_pow(y.min(u32::MAX as i64) as u32)
                }
            }
            BinaryOp::Maximum => x.max(y),
            BinaryOp::Minimum => x.min(y),
        }),
        (Scalar::Bool(_), _) | (_, Scalar::Bool(_)) => return None,
        (x, y) => {
            let (x, y) = (x.as_f64(), y.as_f64());
            Scalar::Float(match op {
                BinaryOp::Add => x + y,
                BinaryOp::Sub => x - y,
                BinaryOp::Mul => x * y,
                BinaryOp::Div => x / y,
                BinaryOp::Pow => x.powf(y),
                BinaryOp::Maximum => {
                    if x.is_nan() || y.is_nan() {
                        f64::NAN
                    } else {
                        x.max(y)
                    }
                }
                BinaryOp::Minimum => {
                    if x.is_nan() || y.is_nan() {
                        f64::NAN
                    } else {
                        x.min(y)
                    }
                }
            })
        }
    })
}

/// What rustc says of the same integer arithmetic on constants: division by zero,
/// overflow of the dtype, and a negative exponent are compile errors.
pub fn int_fold_error(op: BinaryOp, a: Scalar, b: Scalar, dtype: DType) -> Option<String> {
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
        BinaryOp::Div if y == 0 => return Some(format!("integer division by zero on constants (`{x} / 0`); Rust rejects it too")),
        BinaryOp::Div => Some(x / y),
        BinaryOp::Pow if y < 0 => return Some(format!("`pow` of integers needs a non-negative exponent, found {y}; cast to a float for negative powers")),
        BinaryOp::Pow => (x as f64).powf(y as f64).is_finite().then(|| {
            let mut r: i128 = 1;
            for _ in 0..y.min(200) {
                r = r.saturating_mul(x);
            }
            r
        }),
        BinaryOp::Maximum | BinaryOp::Minimum => None,
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

fn fold_unary(op: UnaryOp, a: Scalar, dtype: DType) -> Option<Scalar> {
    if let Scalar::Int(x) = a {
        return Some(Scalar::Int(match op {
            UnaryOp::Abs => x.wrapping_abs(),
            UnaryOp::Neg => x.wrapping_neg(),
            UnaryOp::Square => x.wrapping_mul(x),
            UnaryOp::Relu => x.max(0),
            _ => return None,
        }));
    }
    let x = match a {
        Scalar::Float(x) => x,
        _ => return None,
    };
    let v = match op {
        UnaryOp::Abs => x.abs(),
        UnaryOp::Neg => -x,
        UnaryOp::Square => x * x,
        UnaryOp::Relu => {
            if x.is_nan() {
                x
            } else {
                x.max(0.0)
            }
        }
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Rsqrt => 1.0 / x.sqrt(),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
    };
    Some(Scalar::Float(v).convert(dtype))
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
            (Op::Binary(op), [a, b]) => match int_fold_error(*op, *a, *b, node.dtype) {
                Some(msg) => {
                    diag.error(node.span, msg);
                    graph.node_mut(id).poisoned = true;
                    None
                }
                None => fold_binary(*op, *a, *b).map(|v| v.convert(node.dtype)),
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

/// A rank-0 reduction of a constant fill with a static shape (`reduce_sum(fill([4], 1.0))` is 4).
fn fold_reduce_of_fill(graph: &Graph, node: &Node) -> Option<Scalar> {
    if !matches!(node.op, Op::Reduce { .. } | Op::Norm) {
        return None;
    }
    let input = graph.node(*node.inputs.first()?);
    if input.op != Op::Fill {
        return None;
    }
    let v = graph.const_value(input.inputs[0])?;
    let mut count = 1u64;
    for d in &input.shape {
        match d {
            Dim::Const(n) => count *= n,
            Dim::Sym(_) | Dim::Prod(_) => return None,
        }
    }
    let value = match (&node.op, v) {
        (Op::Norm, v) => Scalar::Float(v.as_f64().abs() * (count as f64).sqrt()),
        (
            Op::Reduce {
                kind: ReduceKind::Sum,
                ..
            },
            Scalar::Int(x),
        ) => Scalar::Int(x.wrapping_mul(count as i64)),
        (
            Op::Reduce {
                kind: ReduceKind::Sum,
                ..
            },
            v,
        ) => Scalar::Float(v.as_f64() * count as f64),
        (Op::Reduce { .. }, _) if count == 0 => return None,
        (Op::Reduce { .. }, v) => v,
        _ => return None,
    };
    Some(value.convert(node.dtype))
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
            _ => continue,
        };
        if !ok {
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
