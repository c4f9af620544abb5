//! The loop plan of a fused group: its loop kind, iteration shape and row split, flatness, each leaf's class, and the fused ops in evaluation order.

use super::grouping::{
    collect_tree, epilogue_root, reduction_can_fuse, reduction_split, tree_leaves,
};
use super::{Group, GroupKind};
use crate::ir::*;

/// How one leaf of a fused expression is read, relative to the group's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafClass {
    /// A rank-0 value: one scalar for the whole loop.
    Scalar,
    /// Same shape as the output: element `i` for output element `i`.
    Full,
    /// Broadcast over rows: the same row slice for every row.
    RowVec,
    /// One scalar per row at index `row` (e.g. `[N, 1]` against `[N, C]`).
    RowScalar,
    /// A row slice at an offset computed from the row (general broadcasting of outer dims).
    RowSliceAt,
    /// One scalar per row at an offset computed from the row.
    RowScalarAt,
}

/// Classifies a leaf of shape `leaf` read by a loop over `out` split into rows at axis `split`.
pub fn classify(leaf: &[Dim], out: &[Dim], split: usize) -> Option<LeafClass> {
    if leaf.is_empty() {
        return Some(LeafClass::Scalar);
    }
    if leaf == out {
        return Some(LeafClass::Full);
    }
    if leaf.len() > out.len() {
        return None;
    }
    let r = out.len();
    let one = Dim::Const(1);
    let padded: Vec<Dim> = std::iter::repeat_n(one.clone(), r - leaf.len())
        .chain(leaf.iter().cloned())
        .collect();
    let inner_eq = padded[split..] == out[split..];
    let inner_one = padded[split..].iter().all(|d| *d == one);
    let outer_one = padded[..split].iter().all(|d| *d == one);
    let outer_eq = padded[..split] == out[..split];
    match (inner_eq, inner_one) {
        (true, _) if outer_one => Some(LeafClass::RowVec),
        (true, _) if outer_eq => Some(LeafClass::Full),
        (true, _) => Some(LeafClass::RowSliceAt),
        (false, true) if outer_eq => Some(LeafClass::RowScalar),
        (false, true) if outer_one => Some(LeafClass::Scalar),
        (false, true) => Some(LeafClass::RowScalarAt),
        _ => None,
    }
}
/// The loop a fused group runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopKind {
    /// An elementwise loop writing the output.
    Elementwise,
    /// A reduction of each row `shape[split..]` of its input to one value.
    RowReduction,
    /// A reduction of its whole input to one value (`split` is 0).
    WholeReduction,
    /// The elementwise tail of a matmul or conv2d, applied to each output block it writes.
    Epilogue,
}

/// A fused group's loop as fusion decided it: what it iterates over, how it splits into
/// parallel work, what it reads and how, and the per-element op sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopPlan {
    pub kind: LoopKind,
    /// The iteration shape: the output's, or for a reduction its input's.
    pub shape: Shape,
    /// Where a row starts: the loop runs over rows `shape[split..]`, which are also the unit of
    /// parallel work (for a flat loop, blocks of elements instead).
    pub split: usize,
    /// Every leaf is a scalar or has the loop's shape: one flat loop over all the elements.
    pub flat: bool,
    /// The values the loop reads, each with how it is read relative to the rows.
    pub leaves: Vec<(NodeId, LeafClass)>,
    /// The value computed per element (the group's root; a reduction's producer or input).
    pub element: NodeId,
    /// The fused nodes computing `element`, operands first (empty when `element` is read as it is).
    pub ops: Vec<NodeId>,
    /// The value read from the output buffer itself rather than a leaf (an epilogue's anchor).
    pub reads_output: Option<NodeId>,
}

/// How `leaf` is read by a loop over `shape` split at `split`. A rank-0 value is one scalar:
/// emit keeps every rank-0 value (and only those) in a scalar local, so this is also how it
/// stores the leaf. A leaf that does not classify is read in full (fusion only inlines a
/// reduction's producer whose leaves classify, and elementwise leaves broadcast to the output).
fn leaf_class(graph: &Graph, leaf: NodeId, shape: &[Dim], split: usize) -> LeafClass {
    let ls = &graph.node(leaf).shape;
    if ls.is_empty() {
        return LeafClass::Scalar;
    }
    classify(ls, shape, split).unwrap_or(LeafClass::Full)
}

/// The loop of group `g`, if it runs a fused loop (elementwise, a fusable reduction, an epilogue).
pub(super) fn loop_plan(graph: &Graph, materialised: &[bool], g: &Group) -> Option<LoopPlan> {
    let root = graph.node(g.root);
    let tree = |id: NodeId| {
        let mut ops = Vec::new();
        collect_tree(graph, id, materialised, &mut ops);
        ops
    };
    let classes = |leaves: Vec<NodeId>, shape: &[Dim], split: usize| -> Vec<(NodeId, LeafClass)> {
        leaves
            .into_iter()
            .map(|l| (l, leaf_class(graph, l, shape, split)))
            .collect()
    };
    let same_or_scalar = |leaves: &[NodeId], shape: &[Dim]| {
        leaves.iter().all(|&l| {
            let ls = &graph.node(l).shape;
            ls.is_empty() || ls.as_slice() == shape
        })
    };
    match g.kind {
        GroupKind::Elementwise => {
            let shape = root.shape.clone();
            let split = shape.len().saturating_sub(1);
            let leaves = tree_leaves(graph, g.root, materialised);
            Some(LoopPlan {
                kind: LoopKind::Elementwise,
                flat: same_or_scalar(&leaves, &shape),
                leaves: classes(leaves, &shape, split),
                shape,
                split,
                element: g.root,
                ops: tree(g.root),
                reads_output: None,
            })
        }
        GroupKind::Reduce => {
            let input = root.inputs[0];
            let shape = graph.node(input).shape.clone();
            if !reduction_can_fuse(graph, g.root) || shape.is_empty() {
                return None;
            }
            let split = reduction_split(graph, g.root);
            let (leaves, element, ops) = match g.producer {
                Some(p) => (tree_leaves(graph, p, materialised), p, tree(p)),
                None => (vec![input], input, Vec::new()),
            };
            let whole = split == 0;
            let flat = whole && same_or_scalar(&leaves, &shape);
            // A whole reduction that is not flat still runs over the rows of the last axis.
            let loop_split = if whole && !flat {
                shape.len() - 1
            } else {
                split
            };
            Some(LoopPlan {
                kind: if whole {
                    LoopKind::WholeReduction
                } else {
                    LoopKind::RowReduction
                },
                flat,
                leaves: classes(leaves, &shape, loop_split),
                shape,
                split: loop_split,
                element,
                ops,
                reads_output: None,
            })
        }
        GroupKind::MatMul | GroupKind::Conv2d | GroupKind::ConvPool => {
            let anchor = g.anchor?;
            // The epilogue's value: the group's root, or what a fused pooling reads.
            let element = match g.kind {
                GroupKind::ConvPool => epilogue_root(graph, g)?,
                _ => g.root,
            };
            let shape = graph.node(element).shape.clone();
            let split = shape.len() - 1;
            let mut leaves = tree_leaves(graph, element, materialised);
            leaves.retain(|&l| l != anchor);
            Some(LoopPlan {
                kind: LoopKind::Epilogue,
                flat: false,
                leaves: classes(leaves, &shape, split),
                shape,
                split,
                element,
                ops: tree(element),
                reads_output: Some(anchor),
            })
        }
        _ => None,
    }
}
