//! `matmul(a, transpose(b))` reads `b` in place: a matmul whose right operand is a transpose
//! of the last two axes takes the transpose's input instead, flagged `transpose_b`, and the
//! GEMM packs it from the swapped layout (dce then drops the transpose if nothing else reads it).

use crate::ir::*;

/// Whether `perm` swaps the last two axes and keeps the others.
fn swaps_last_two(perm: &[usize]) -> bool {
    let r = perm.len();
    r >= 2
        && perm[r - 1] == r - 2
        && perm[r - 2] == r - 1
        && perm[..r - 2].iter().enumerate().all(|(i, &p)| i == p)
}

/// Rewrites every such matmul; the result is bit for bit the same (see `gemm_strided_bt`).
pub fn run(graph: &mut Graph) {
    for i in 0..graph.nodes.len() {
        let n = &graph.nodes[i];
        if n.poisoned || n.op != (Op::MatMul { transpose_b: false }) {
            continue;
        }
        let b = graph.node(n.inputs[1]);
        let Op::Transpose { perm } = &b.op else {
            continue;
        };
        if b.poisoned || !swaps_last_two(perm) {
            continue;
        }
        let stored = b.inputs[0];
        let node = graph.node_mut(NodeId(i));
        node.op = Op::MatMul { transpose_b: true };
        node.inputs[1] = stored;
    }
}
