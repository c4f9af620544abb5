//! Common-subexpression elimination: two pure nodes with the same op, inputs, dtype and region become one.

use super::replace_uses;
use crate::ir::*;

/// Merges duplicate pure nodes (program order keeps the first; later duplicates forward to it).
pub fn run(graph: &mut Graph) {
    // Candidates by op name and inputs, so a long program stays linear.
    let mut seen: std::collections::HashMap<(String, Vec<NodeId>), Vec<NodeId>> =
        std::collections::HashMap::new();
    for i in 0..graph.nodes.len() {
        let id = NodeId(i);
        let n = graph.node(id).clone();
        if n.poisoned || n.op.is_effect() || matches!(n.op, Op::Input { .. } | Op::CondOut { .. }) {
            continue;
        }
        let key = (n.op.name(), n.inputs.clone());
        let candidates = seen.entry(key.clone()).or_default();
        let twin = candidates.iter().copied().find(|&s| {
            let m = graph.node(s);
            same_op(&m.op, &n.op)
                && m.inputs == n.inputs
                && m.dtype == n.dtype
                && m.shape == n.shape
                && visible(graph, m.region, n.region)
        });
        match twin {
            Some(t) => replace_uses(graph, id, t),
            None => seen.entry(key).or_default().push(id),
        }
    }
}

/// Whether two ops compute the same thing: float constants by their bits (`-0.0 == 0.0`
/// in f64, but they are different constants), everything else by `==`.
fn same_op(a: &Op, b: &Op) -> bool {
    match (a, b) {
        (Op::Const { value: x, weak: wx }, Op::Const { value: y, weak: wy }) => {
            same_scalar(x, y) && wx == wy
        }
        (Op::Sel(SelOp::Values { values: x }), Op::Sel(SelOp::Values { values: y })) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_scalar(x, y))
        }
        (
            Op::Sel(SelOp::Range { start: s, delta: d }),
            Op::Sel(SelOp::Range { start: t, delta: e }),
        ) => same_scalar(s, t) && same_scalar(d, e),
        _ => a == b,
    }
}

/// Two scalars of the same bits (floats compared as bit patterns).
fn same_scalar(a: &Scalar, b: &Scalar) -> bool {
    match (a, b) {
        (Scalar::Float(x), Scalar::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// Whether a value computed in region `def` may be used in region `at` (same region, or an arm nested in it).
pub fn visible(graph: &Graph, def: Region, at: Region) -> bool {
    let mut r = at;
    loop {
        if r == def {
            return true;
        }
        match r {
            Region::Main => return false,
            Region::Arm { cond, .. } => r = graph.conds[cond.0].region,
        }
    }
}
