//! Phase 5, fuse: decides which values are materialised and groups the rest into fused kernels (elementwise loops, reductions with their producer, matmul/conv2d epilogues).
//!
//! The rule for a value with several consumers: it is materialised once, unless its fused
//! expression is cheap (at most three arithmetic ops, no transcendental function), in which
//! case each consumer recomputes it (W4's `x - mean` is read by two passes and costs less to
//! recompute than to write and read back).
//!
//! The [`Plan`] it hands to emit is complete: besides the groups, [`Plan::loops`] holds for
//! each group that runs a fused loop (an elementwise loop, a reduction reading its producer over
//! trailing or all axes, a matmul/conv2d epilogue) a [`LoopPlan`]: its [`LoopKind`], the
//! iteration shape and the axis where a row starts, whether it is one flat loop, every leaf
//! with its [`LeafClass`], the value computed per element with the fused ops in evaluation
//! order, and the value read from the output buffer itself. Emit renders these facts and
//! derives none of them. A leaf is `Scalar` when its shape is rank 0 (or broadcasts as one
//! value over the whole loop): the rank-0 values are exactly the ones emit keeps in a scalar
//! local, so the plan and emit's storage agree without emit asking.
//!
//! `grouping.rs` forms the groups, `plan.rs` plans the loop of each group that runs one.

use crate::ir::*;

mod grouping;
mod into_param;
mod plan;
#[cfg(test)]
mod tests;

pub use grouping::{epilogue_root, fuse, tree_leaves};
pub use plan::{LeafClass, LoopKind, LoopPlan};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupKind {
    /// One fused elementwise loop writing a tensor.
    Elementwise,
    /// A rank-0 value computed as a scalar expression (no loop, no threads).
    Scalar,
    /// A reduction, reading its fused producer expression.
    Reduce,
    /// `matmul` with an optional fused epilogue.
    MatMul,
    /// `conv2d` with an optional fused epilogue.
    Conv2d,
    Softmax,
    /// `max_pool2d` / `avg_pool2d`: one kernel call.
    Pool,
    /// `max_pool2d` / `avg_pool2d` of a `conv2d` (with its epilogue, if any) read nowhere else:
    /// one kernel that pools each band of convolution rows while it is in cache; the
    /// convolution's output is never materialised.
    ConvPool,
    /// The gradient of a convolution (input or filter) or of a pooling: one kernel call.
    Grad,
    Transpose,
    /// A selection or assembly op (`x[s![..]]`, concat, gather, ...): one kernel call.
    Selection,
    /// `reshape`: a view of its input, no work.
    View,
    /// A cond node: runs one arm.
    Cond,
    /// An `assert_*` check.
    Assert,
}

impl GroupKind {
    pub fn name(self) -> &'static str {
        match self {
            GroupKind::Elementwise => "elementwise",
            GroupKind::Scalar => "scalar",
            GroupKind::Reduce => "reduce",
            GroupKind::MatMul => "matmul",
            GroupKind::Conv2d => "conv2d",
            GroupKind::Softmax => "softmax",
            GroupKind::Pool => "pool",
            GroupKind::ConvPool => "conv2d_pool",
            GroupKind::Grad => "grad",
            GroupKind::Transpose => "transpose",
            GroupKind::Selection => "selection",
            GroupKind::View => "view",
            GroupKind::Cond => "cond",
            GroupKind::Assert => "assert",
        }
    }
}

/// One kernel call of the compiled function.
#[derive(Debug, Clone)]
pub struct Group {
    pub id: usize,
    pub kind: GroupKind,
    /// The node whose value the group produces (for a cond: its first result, if any).
    pub root: NodeId,
    /// Nodes computed inside this group (fused), in evaluation order; the root is last.
    pub nodes: Vec<NodeId>,
    /// For epilogue groups, the matmul/conv2d node whose output the epilogue reads in place
    /// (for a conv2d + pooling group, the conv2d).
    pub anchor: Option<NodeId>,
    /// For reductions, the root of the fused producer expression (the reduction's input).
    pub producer: Option<NodeId>,
    pub region: Region,
    /// For cond groups, which cond.
    pub cond: Option<CondId>,
    /// For a conv2d group: the all-axes f32 reduction group of its result whose partial sums
    /// its kernel records block by block, while each output block is still in cache.
    pub records_for: Option<usize>,
    /// For such a reduction: the conv2d group that records its partial sums (it reads only
    /// the blocks that were not recorded).
    pub recorded_by: Option<usize>,
}

/// The fusion decisions for a graph.
#[derive(Debug, Clone)]
pub struct Plan {
    pub live: Vec<bool>,
    /// Whether each node is materialised (a buffer or a scalar local) rather than inlined.
    pub materialised: Vec<bool>,
    pub groups: Vec<Group>,
    /// The group that produces each node (inlined nodes: the group they are fused into, if unique).
    pub group_of: Vec<Option<usize>>,
    /// For each group that runs a fused loop, how the loop reads and computes (emit renders it).
    pub loops: Vec<Option<LoopPlan>>,
    /// For each node: the in-place parameter whose caller's memory its elementwise loop
    /// writes (the new value of that parameter; such loops run last in the main schedule).
    pub into_param: Vec<Option<usize>>,
}
