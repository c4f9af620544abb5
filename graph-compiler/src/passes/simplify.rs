//! Algebraic simplification: `x*1`, `x+0`, `x-0`, `x/1`, integer `x*0`, `--x`, `x/c` as `x*(1/c)` when exact, and transposes that cancel.
//!
//! Every rewrite gives the same bits as the op it replaces, for every input (-0, NaN, ±inf,
//! overflow, subnormals): for floats the additive identity is `x + (-0.0)` and `x - 0.0`
//! (`-0.0 + 0.0` is `+0.0`, so `x + 0.0` is not `x`), and `x / c` becomes `x * (1/c)` only
//! when `c` and `1/c` are both exact in the value's dtype.

use super::replace_uses;
use crate::ir::*;

fn is_const(graph: &Graph, id: NodeId, v: f64) -> bool {
    matches!(graph.const_value(id), Some(s) if !matches!(s, Scalar::Bool(_)) && s.as_f64() == v)
}

/// Whether `id` is a zero that leaves `x` unchanged when added (`negative`: `x + z`) or
/// subtracted (`x - z`): any integer zero; for floats only -0.0 when added, +0.0 when subtracted.
fn is_identity_zero(graph: &Graph, id: NodeId, dtype: DType, added: bool) -> bool {
    match graph.const_value(id) {
        Some(Scalar::Int(0)) => true,
        Some(Scalar::Float(z)) if z == 0.0 => !dtype.is_float() || z.is_sign_negative() == added,
        _ => false,
    }
}

/// Whether `v` (held as f64) is exactly representable in the float `dtype`, finite and non-zero.
fn exact_in(v: f64, dtype: DType) -> bool {
    let fits = match dtype {
        DType::F32 => (v as f32) as f64 == v,
        _ => true,
    };
    fits && v.is_finite() && v != 0.0
}

/// Rewrites the identities above; a rewrite that would change a shape (broadcasting) is skipped.
pub fn run(graph: &mut Graph) {
    for i in 0..graph.nodes.len() {
        let id = NodeId(i);
        let n = graph.node(id).clone();
        if n.poisoned {
            continue;
        }
        let same_shape =
            |g: &Graph, x: NodeId| g.node(x).shape == n.shape && g.node(x).dtype == n.dtype;
        let forward = match (&n.op, n.inputs.as_slice()) {
            (Op::Binary(BinaryOp::Mul), [a, b])
                if is_const(graph, *b, 1.0) && same_shape(graph, *a) =>
            {
                Some(*a)
            }
            (Op::Binary(BinaryOp::Mul), [a, b])
                if is_const(graph, *a, 1.0) && same_shape(graph, *b) =>
            {
                Some(*b)
            }
            (Op::Binary(BinaryOp::Add), [a, b])
                if is_identity_zero(graph, *b, n.dtype, true) && same_shape(graph, *a) =>
            {
                Some(*a)
            }
            (Op::Binary(BinaryOp::Add), [a, b])
                if is_identity_zero(graph, *a, n.dtype, true) && same_shape(graph, *b) =>
            {
                Some(*b)
            }
            (Op::Binary(BinaryOp::Sub), [a, b])
                if is_identity_zero(graph, *b, n.dtype, false) && same_shape(graph, *a) =>
            {
                Some(*a)
            }
            (Op::Binary(BinaryOp::Div), [a, b])
                if is_const(graph, *b, 1.0) && same_shape(graph, *a) =>
            {
                Some(*a)
            }
            (Op::Unary(UnaryOp::Neg), [a]) => {
                match (&graph.node(*a).op, graph.node(*a).inputs.as_slice()) {
                    (Op::Unary(UnaryOp::Neg), [x]) => Some(*x),
                    _ => None,
                }
            }
            (Op::Transpose { perm }, [a]) => {
                match (&graph.node(*a).op, graph.node(*a).inputs.as_slice()) {
                    (Op::Transpose { perm: inner }, [x])
                        if perm
                            .iter()
                            .map(|&p| inner[p])
                            .enumerate()
                            .all(|(i, q)| i == q) =>
                    {
                        Some(*x)
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(to) = forward {
            replace_uses(graph, id, to);
            continue;
        }
        // Integer `x * 0` is 0 (for floats it is not: NaN and inf).
        if let (Op::Binary(BinaryOp::Mul), [a, b]) = (&n.op, n.inputs.as_slice()) {
            if n.dtype.is_int()
                && n.shape.is_empty()
                && (is_const(graph, *a, 0.0) || is_const(graph, *b, 0.0))
            {
                graph.node_mut(id).op = Op::Const {
                    value: Scalar::Int(0),
                    weak: false,
                };
                graph.node_mut(id).inputs.clear();
                continue;
            }
        }
        // `x / c` becomes `x * (1/c)` when 1/c is exact (c a power of two).
        if let (Op::Binary(BinaryOp::Div), [a, b]) = (&n.op, n.inputs.as_slice()) {
            if let Some(Scalar::Float(c)) = graph.const_value(*b) {
                let r = 1.0 / c;
                // A power of two whose reciprocal is exact too (not an f32 subnormal whose
                // reciprocal overflows): then `x * r` rounds the same real as `x / c`.
                let exact = exact_in(c, n.dtype)
                    && exact_in(r, n.dtype)
                    && c * r == 1.0
                    && c.abs().log2().fract() == 0.0;
                if exact && n.dtype.is_float() {
                    let span = graph.node(*b).span;
                    let recip = graph.push(Node {
                        op: Op::Const {
                            value: Scalar::Float(r),
                            weak: false,
                        },
                        inputs: vec![],
                        dtype: n.dtype,
                        shape: vec![],
                        span,
                        line: graph.node(*b).line,
                        name: None,
                        region: n.region,
                        poisoned: false,
                        role: n.role,
                    });
                    let node = graph.node_mut(id);
                    node.op = Op::Binary(BinaryOp::Mul);
                    node.inputs = vec![*a, recip];
                }
            }
        }
    }
}
