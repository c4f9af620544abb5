//! Which in-place parameters' new values are computed straight into the caller's memory: the elementwise loop of such a value writes the parameter's own elements, so the update neither copies nor allocates.
//!
//! A value qualifies when its loop is the last thing that reads the parameter and nothing
//! but another such loop reads the value: an elementwise value of the main region (not a
//! matmul's epilogue, not a cond's result), assigned to one parameter only, not returned,
//! whose parameter is not returned either and is read by no other such loop (nor through a
//! `reshape` view by any). Grouping puts these loops at the end of the main schedule, so
//! every other reader of the parameter runs before, and emit runs them after everything that
//! can fail: an `Err` leaves the parameter untouched. The others take the copy path (the
//! value is computed as usual and copied into the parameter at the end).

use super::grouping::{collect_tree, tree_leaves};
use crate::ir::*;

/// For each node, the parameter whose memory its loop writes, if it qualifies (above).
pub fn into_param(graph: &Graph, live: &[bool], materialised: &[bool]) -> Vec<Option<usize>> {
    let n = graph.nodes.len();
    let mut into = vec![None; n];
    // Each candidate: (parameter, value, the fused tree's nodes, its leaves).
    let mut cands: Vec<(usize, NodeId, Vec<NodeId>, Vec<NodeId>)> = graph
        .writebacks
        .iter()
        .filter(|&&(p, w)| {
            let node = graph.node(w);
            live[w.0]
                && materialised[w.0]
                && !node.poisoned
                && node.op.is_elementwise()
                && !node.shape.is_empty()
                && node.region == Region::Main
                && graph.writebacks.iter().filter(|&&(_, x)| x == w).count() == 1
                && !graph.outputs.contains(&w)
                && !graph
                    .outputs
                    .iter()
                    .any(|&o| graph.param_read_by(o) == Some(p))
        })
        .map(|&(p, w)| {
            let mut tree = Vec::new();
            collect_tree(graph, w, materialised, &mut tree);
            (p, w, tree, tree_leaves(graph, w, materialised))
        })
        .collect();
    // Values read by a cond (its predicate, or what an arm outputs): never a loop's leaf.
    let cond_reads: Vec<NodeId> = graph
        .conds
        .iter()
        .filter(|c| !c.removed)
        .flat_map(|c| {
            let p = match c.predicate {
                Predicate::Tensor(p) => Some(p),
                Predicate::Host(_) => None,
            };
            c.then_outputs
                .iter()
                .chain(&c.else_outputs)
                .copied()
                .chain(p)
        })
        .collect();
    loop {
        let keep: Vec<bool> = cands
            .iter()
            .map(|(p, w, _, _)| {
                let read_by_other_loops_only = !cond_reads.contains(w)
                    && graph.nodes.iter().enumerate().all(|(i, u)| {
                        !live[i]
                            || !u.inputs.contains(w)
                            || cands
                                .iter()
                                .any(|(_, x, tree, _)| x != w && tree.contains(&NodeId(i)))
                    });
                let param_read_here_only = cands.iter().all(|(_, x, _, other_leaves)| {
                    other_leaves.iter().all(|&l| {
                        graph.param_read_by(l) != Some(*p)
                            || (x == w && graph.node(l).op == Op::Input { param: *p })
                    })
                });
                read_by_other_loops_only && param_read_here_only
            })
            .collect();
        if keep.iter().all(|&k| k) {
            break;
        }
        let mut k = keep.into_iter();
        cands.retain(|_| k.next().unwrap_or(false));
    }
    for (p, w, _, _) in cands {
        into[w.0] = Some(p);
    }
    into
}
