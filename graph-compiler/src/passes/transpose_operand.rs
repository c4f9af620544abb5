//! `matmul(a, transpose(b))` and `matmul(transpose(a), b)` read the transposed operand in
//! place: a matmul operand that is a transpose of the last two axes is replaced by the
//! transpose's input, flagged `transpose_b` / `transpose_a`, and the GEMM reads it from the
//! swapped layout (dce then drops the transpose if nothing else reads it). Both operands may
//! be flagged (`matmul(transpose(a), transpose(b))`).

use crate::ir::*;

/// Whether `perm` swaps the last two axes and keeps the others.
fn swaps_last_two(perm: &[usize]) -> bool {
    let r = perm.len();
    r >= 2
        && perm[r - 1] == r - 2
        && perm[r - 2] == r - 1
        && perm[..r - 2].iter().enumerate().all(|(i, &p)| i == p)
}

/// The stored input of operand `x` when it is such a transpose.
fn stored_of(graph: &Graph, x: NodeId) -> Option<NodeId> {
    let t = graph.node(x);
    match &t.op {
        Op::Transpose { perm } if !t.poisoned && swaps_last_two(perm) => Some(t.inputs[0]),
        _ => None,
    }
}

/// Rewrites every such matmul; the result is bit for bit the same (the GEMM reads the stored
/// layout into the same panels; see `gemm_strided_bt` and `matmul_nd_into`).
pub fn run(graph: &mut Graph) {
    for i in 0..graph.nodes.len() {
        let n = &graph.nodes[i];
        let Op::MatMul {
            transpose_a,
            transpose_b,
        } = n.op
        else {
            continue;
        };
        if n.poisoned {
            continue;
        }
        let a = (!transpose_a)
            .then(|| stored_of(graph, n.inputs[0]))
            .flatten();
        let b = (!transpose_b)
            .then(|| stored_of(graph, n.inputs[1]))
            .flatten();
        let node = graph.node_mut(NodeId(i));
        if let Some(stored) = a {
            node.inputs[0] = stored;
        }
        if let Some(stored) = b {
            node.inputs[1] = stored;
        }
        node.op = Op::MatMul {
            transpose_a: transpose_a || a.is_some(),
            transpose_b: transpose_b || b.is_some(),
        };
    }
}
