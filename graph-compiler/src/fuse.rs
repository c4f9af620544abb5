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

use crate::ir::*;
use crate::passes::PassConfig;

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
fn loop_plan(graph: &Graph, materialised: &[bool], g: &Group) -> Option<LoopPlan> {
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

/// The root of a conv2d + pooling group's epilogue: the pooling's input, unless that is the
/// convolution itself (no epilogue).
pub fn epilogue_root(graph: &Graph, g: &Group) -> Option<NodeId> {
    let input = graph.node(g.root).inputs[0];
    (g.kind == GroupKind::ConvPool && Some(input) != g.anchor).then_some(input)
}

/// Constants are written into the loops as literals; everything else is a leaf or fused.
fn is_leaf_scalar_const(op: &Op) -> bool {
    matches!(op, Op::Const { .. })
}

/// Fuses the live part of `graph`.
pub fn fuse(graph: &Graph, config: &PassConfig) -> Plan {
    let n = graph.nodes.len();
    let live = if config.dce {
        crate::passes::dce::live_nodes(graph)
    } else {
        all_nodes(graph)
    };
    let mut uses = vec![0usize; n];
    let mut users: Vec<Vec<NodeId>> = vec![Vec::new(); n];
    for (i, node) in graph.nodes.iter().enumerate() {
        if !live[i] {
            continue;
        }
        for &inp in &node.inputs {
            uses[inp.0] += 1;
            users[inp.0].push(NodeId(i));
        }
    }
    let mut pinned = vec![false; n];
    for &o in &graph.outputs {
        uses[o.0] += 1;
        pinned[o.0] = true;
    }
    for c in graph.conds.iter().filter(|c| !c.removed) {
        for &o in c.then_outputs.iter().chain(&c.else_outputs) {
            pinned[o.0] = true;
        }
        if let Predicate::Tensor(p) = c.predicate {
            pinned[p.0] = true;
        }
    }

    // Decide materialisation in program order (operands before users).
    let mut materialised = vec![true; n];
    let mut transcendental = vec![false; n];
    let mut cost = vec![0usize; n];
    for i in 0..n {
        let node = &graph.nodes[i];
        if !live[i] {
            continue;
        }
        if is_leaf_scalar_const(&node.op) && node.shape.is_empty() {
            materialised[i] = false;
            continue;
        }
        if !config.fusion || !node.op.is_elementwise() || node.shape.is_empty() || pinned[i] {
            cost[i] = 1;
            continue;
        }
        let c = 1 + node
            .inputs
            .iter()
            .filter(|x| !materialised[x.0])
            .map(|x| cost[x.0])
            .sum::<usize>();
        cost[i] = c;
        // Whether the fused expression has a transcendental function, from the operands'
        // answers (each inlined operand was decided before, so this stays linear).
        let expensive = {
            let own = matches!(node.op, Op::Unary(u) if u.needs_float())
                || matches!(node.op, Op::Binary(BinaryOp::Pow));
            own || node.inputs.iter().any(|x| {
                !materialised[x.0] && graph.node(*x).op.is_elementwise() && transcendental[x.0]
            })
        };
        transcendental[i] = expensive;
        let fusable_users = users[i].iter().all(|&u| {
            let un = graph.node(u);
            un.region == node.region
                && (un.op.is_elementwise() && !un.shape.is_empty()
                    || reduction_can_fuse(graph, u) && {
                        let split = reduction_split(graph, u);
                        let mut leaves = tree_leaves(graph, NodeId(i), &materialised);
                        leaves.retain(|l| !is_leaf_scalar_const(&graph.node(*l).op));
                        // An all-axes reduction reads its producer as one flat range (the
                        // runtime's order, so eager and compiled agree): no broadcast leaves.
                        leaves.iter().all(|l| {
                            let shape = &graph.node(*l).shape;
                            if split == 0 {
                                shape.is_empty() || *shape == node.shape
                            } else {
                                classify(shape, &node.shape, split).is_some()
                            }
                        })
                    })
        });
        let inline = fusable_users && (uses[i] == 1 || (c <= 3 && !expensive));
        materialised[i] = !inline;
    }

    // Epilogues: a materialised elementwise result whose fused tree reads a matmul/conv2d
    // used only there, of the same shape, computes that tail inside the kernel's epilogue.
    let mut absorbed = vec![false; n];
    let mut anchor_of: Vec<Option<NodeId>> = vec![None; n];
    if config.fusion {
        for i in 0..n {
            let node = &graph.nodes[i];
            if !live[i]
                || !materialised[i]
                || node.poisoned
                || !node.op.is_elementwise()
                || node.shape.is_empty()
            {
                continue;
            }
            let mut tree = Vec::new();
            collect_tree(graph, NodeId(i), &materialised, &mut tree);
            if tree.iter().any(|t| t.0 != i && uses[t.0] != 1) {
                continue;
            }
            let leaves = tree_leaves(graph, NodeId(i), &materialised);
            let anchor = leaves.iter().copied().find(|&l| {
                let ln = graph.node(l);
                matches!(
                    ln.op,
                    Op::MatMul { .. } | Op::Conv2d { .. } | Op::ConvGeneral { .. }
                ) && uses[l.0] == 1
                    && !pinned[l.0]
                    && ln.region == node.region
                    && ln.shape == node.shape
                    && ln.dtype == node.dtype
                    && !absorbed[l.0]
            });
            if let Some(a) = anchor {
                absorbed[a.0] = true;
                anchor_of[i] = Some(a);
            }
        }
    }

    // Pooling after a convolution: a pool whose input is a conv2d, bare or as the anchor of
    // an epilogue, read nowhere else, runs inside the convolution's kernel.
    let mut pooled_conv: Vec<Option<NodeId>> = vec![None; n];
    let mut into_pool = vec![false; n];
    if config.fusion {
        for i in 0..n {
            let node = &graph.nodes[i];
            if !live[i] || node.poisoned || !matches!(node.op, Op::Pool { .. }) {
                continue;
            }
            let input = node.inputs[0];
            let inode = graph.node(input);
            if uses[input.0] != 1
                || pinned[input.0]
                || inode.region != node.region
                || inode.poisoned
            {
                continue;
            }
            let conv = match anchor_of[input.0] {
                Some(a) => a,
                None if !absorbed[input.0] => input,
                None => continue,
            };
            if !matches!(graph.node(conv).op, Op::Conv2d { .. }) {
                continue;
            }
            pooled_conv[i] = Some(conv);
            into_pool[input.0] = true;
            absorbed[conv.0] = true;
        }
    }

    // Build groups in program order.
    let mut groups: Vec<Group> = Vec::new();
    let mut group_of = vec![None; n];
    let mut cond_seen = vec![false; graph.conds.len()];
    // A live cond without results (it only checks) has no `CondOut` node to start its group.
    let mut checks_only: Vec<(usize, CondId)> = (0..graph.conds.len())
        .map(CondId)
        .filter(|&c| {
            let cond = &graph.conds[c.0];
            !cond.removed
                && cond.results.is_empty()
                && graph.cond_checks(c)
                && region_alive(graph, cond.region)
        })
        .map(|c| (graph.cond_position(c), c))
        .collect();
    checks_only.sort();
    let mut checks_only = checks_only.into_iter().peekable();
    let checks_group = |groups: &mut Vec<Group>, at: usize, c: CondId| {
        let cond = &graph.conds[c.0];
        groups.push(Group {
            id: groups.len(),
            kind: GroupKind::Cond,
            // The arms' last node (a check, or the cond nested around one) stands for the cond.
            root: NodeId(at - 1),
            nodes: vec![],
            anchor: None,
            producer: None,
            region: cond.region,
            cond: Some(c),
            records_for: None,
            recorded_by: None,
        });
    };
    for i in 0..n {
        while let Some((at, c)) = checks_only.next_if(|&(at, _)| at <= i) {
            checks_group(&mut groups, at, c);
        }
        let node = &graph.nodes[i];
        if !live[i] || !materialised[i] || absorbed[i] || into_pool[i] || node.poisoned {
            continue;
        }
        let id = NodeId(i);
        let mut group = Group {
            id: groups.len(),
            kind: GroupKind::Elementwise,
            root: id,
            nodes: vec![],
            anchor: None,
            producer: None,
            region: node.region,
            cond: None,
            records_for: None,
            recorded_by: None,
        };
        match &node.op {
            Op::Input { .. } => continue,
            Op::CondOut { cond, .. } => {
                if cond_seen[cond.0] {
                    group_of[i] = groups.iter().position(|g| g.cond == Some(*cond));
                    continue;
                }
                cond_seen[cond.0] = true;
                group.kind = GroupKind::Cond;
                group.cond = Some(*cond);
                group.nodes = graph.conds[cond.0].results.clone();
            }
            op if op.is_elementwise() => {
                let mut tree = Vec::new();
                collect_tree(graph, id, &materialised, &mut tree);
                group.kind = if node.shape.is_empty() {
                    GroupKind::Scalar
                } else {
                    GroupKind::Elementwise
                };
                if let Some(a) = anchor_of[i] {
                    group.kind = if matches!(graph.node(a).op, Op::MatMul { .. }) {
                        GroupKind::MatMul
                    } else {
                        GroupKind::Conv2d
                    };
                    group.anchor = Some(a);
                    group_of[a.0] = Some(group.id);
                    let mut nodes = vec![a];
                    nodes.extend(tree);
                    tree = nodes;
                }
                group.nodes = tree;
            }
            Op::Reduce { .. } | Op::Norm => {
                group.kind = GroupKind::Reduce;
                let p = node.inputs[0];
                let mut tree = Vec::new();
                if !materialised[p.0] {
                    collect_tree(graph, p, &materialised, &mut tree);
                    group.producer = Some(p);
                }
                tree.push(id);
                group.nodes = tree;
            }
            Op::MatMul { .. } => {
                group.kind = GroupKind::MatMul;
                group.nodes = vec![id];
            }
            Op::Conv2d { .. } | Op::ConvGeneral { .. } => {
                group.kind = GroupKind::Conv2d;
                group.nodes = vec![id];
            }
            Op::Pool { .. } => match pooled_conv[i] {
                Some(conv) => {
                    group.kind = GroupKind::ConvPool;
                    group.anchor = Some(conv);
                    let input = node.inputs[0];
                    let mut nodes = vec![conv];
                    if input != conv {
                        collect_tree(graph, input, &materialised, &mut nodes);
                    }
                    nodes.push(id);
                    group.nodes = nodes;
                }
                None => {
                    group.kind = GroupKind::Pool;
                    group.nodes = vec![id];
                }
            },
            Op::Softmax { .. } => {
                group.kind = GroupKind::Softmax;
                group.nodes = vec![id];
            }
            Op::Transpose { .. } => {
                group.kind = GroupKind::Transpose;
                group.nodes = vec![id];
            }
            Op::Sel(_) => {
                group.kind = GroupKind::Selection;
                group.nodes = vec![id];
            }
            Op::Reshape => {
                group.kind = GroupKind::View;
                group.nodes = vec![id];
            }
            Op::Assert { .. } => {
                group.kind = GroupKind::Assert;
                group.nodes = vec![id];
            }
            _ => continue,
        }
        for &m in &group.nodes {
            if group_of[m.0].is_none() {
                group_of[m.0] = Some(group.id);
            }
        }
        groups.push(group);
    }
    for (at, c) in checks_only {
        checks_group(&mut groups, at, c);
    }
    if config.fusion {
        record_reductions_in_convolutions(graph, &mut groups, &group_of);
    }
    let loops = groups
        .iter()
        .map(|g| loop_plan(graph, &materialised, g))
        .collect();
    Plan {
        live,
        materialised,
        groups,
        group_of,
        loops,
    }
}

/// An all-axes f32 `reduce_sum`, `reduce_mean` or `norm` of a conv2d group's result (the
/// convolution with its epilogue, if any) in the same region: the convolution records the
/// reduction's partial sums block by block while each block of its output is in cache, and
/// the reduction reads back only what was not recorded (W3's `norm(y)` was a second pass over
/// the 16 MiB result). The order of the additions is the reduction's own, so the bits are the
/// same. One reduction per convolution.
fn record_reductions_in_convolutions(
    graph: &Graph,
    groups: &mut [Group],
    group_of: &[Option<usize>],
) {
    for r in 0..groups.len() {
        let g = &groups[r];
        if g.kind != GroupKind::Reduce || g.producer.is_some() {
            continue;
        }
        let rnode = graph.node(g.root);
        let input = rnode.inputs[0];
        let all_f32_sum = match &rnode.op {
            Op::Norm => true,
            Op::Reduce { kind, .. } => {
                matches!(kind, ReduceKind::Sum | ReduceKind::Mean)
                    && reduction_split(graph, g.root) == 0
            }
            _ => false,
        };
        if !all_f32_sum
            || !reduction_can_fuse(graph, g.root)
            || rnode.dtype != DType::F32
            || graph.node(input).dtype != DType::F32
        {
            continue;
        }
        let Some(c) = group_of[input.0] else {
            continue;
        };
        let conv = &groups[c];
        let conv_node = graph.node(conv.anchor.unwrap_or(conv.root));
        if conv.kind != GroupKind::Conv2d
            || conv.root != input
            || conv.region != g.region
            || conv.records_for.is_some()
            || !matches!(conv_node.op, Op::Conv2d { .. })
        {
            continue;
        }
        groups[c].records_for = Some(r);
        groups[r].recorded_by = Some(c);
    }
}

fn all_nodes(graph: &Graph) -> Vec<bool> {
    graph
        .nodes
        .iter()
        .map(|n| {
            !n.poisoned
                && match n.region {
                    Region::Main => true,
                    Region::Arm { .. } => region_alive(graph, n.region),
                }
        })
        .collect()
}

fn region_alive(graph: &Graph, r: Region) -> bool {
    match r {
        Region::Main => true,
        Region::Arm { cond, .. } => {
            !graph.conds[cond.0].removed && region_alive(graph, graph.conds[cond.0].region)
        }
    }
}

/// Whether a reduction can read a fused producer: all axes, or trailing axes whose leaves classify.
pub fn reduction_can_fuse(graph: &Graph, r: NodeId) -> bool {
    let node = graph.node(r);
    let input = graph.node(node.inputs[0]);
    let rank = input.shape.len();
    match &node.op {
        // The f64 norm is the runtime's, scaled by the largest magnitude (two passes).
        Op::Norm => rank > 0 && node.dtype == DType::F32,
        Op::Reduce { axes, .. } => {
            rank > 0
                && !axes.is_empty()
                && axes
                    .iter()
                    .enumerate()
                    .all(|(i, &a)| a == rank - axes.len() + i)
        }
        _ => false,
    }
}

/// The split axis for the loop of a reduction: where its reduced (trailing) axes start.
pub fn reduction_split(graph: &Graph, r: NodeId) -> usize {
    let node = graph.node(r);
    let rank = graph.node(node.inputs[0]).shape.len();
    match &node.op {
        Op::Reduce { axes, .. } => rank - axes.len(),
        _ => 0,
    }
}

/// The nodes of the fused expression rooted at `id` (inlined ones), operands first, root last.
pub fn collect_tree(graph: &Graph, id: NodeId, materialised: &[bool], out: &mut Vec<NodeId>) {
    // Iterative (a 10,000-op chain is one tree) and linear: a node is entered once.
    let mut seen: std::collections::HashSet<NodeId> = out.iter().copied().collect();
    let mut stack: Vec<(NodeId, usize)> = vec![(id, 0)];
    while let Some((x, next)) = stack.pop() {
        let inputs = &graph.node(x).inputs;
        if let Some(&c) = inputs.get(next) {
            stack.push((x, next + 1));
            if !materialised[c.0] && !seen.contains(&c) && !is_leaf_scalar_const(&graph.node(c).op)
            {
                stack.push((c, 0));
            }
        } else if seen.insert(x) {
            out.push(x);
        }
    }
}

/// The materialised values (and scalar constants) the fused expression rooted at `id` reads.
pub fn tree_leaves(graph: &Graph, id: NodeId, materialised: &[bool]) -> Vec<NodeId> {
    let mut out = Vec::new();
    let mut stack = vec![id];
    let mut seen = std::collections::HashSet::new();
    let mut found = std::collections::HashSet::new();
    while let Some(x) = stack.pop() {
        if !seen.insert(x) {
            continue;
        }
        for &c in &graph.node(x).inputs {
            if materialised[c.0] {
                if found.insert(c) {
                    out.push(c);
                }
            } else if !is_leaf_scalar_const(&graph.node(c).op) {
                stack.push(c);
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::plan_of;
    use quote::quote;

    /// The group whose root is the op named `name`, and its loop plan.
    fn loop_of<'p>(g: &Graph, plan: &'p Plan, name: &str) -> (&'p Group, &'p LoopPlan) {
        let grp = plan
            .groups
            .iter()
            .find(|grp| g.node(grp.root).op.name() == name)
            .unwrap_or_else(|| panic!("a group rooted at `{name}`"));
        let lp = plan.loops[grp.id]
            .as_ref()
            .unwrap_or_else(|| panic!("a loop plan for `{name}`"));
        (grp, lp)
    }

    /// Each leaf named (`p0` for the first parameter, else its op), with its class.
    fn leaf_names(g: &Graph, lp: &LoopPlan) -> Vec<(String, LeafClass)> {
        lp.leaves
            .iter()
            .map(|&(l, c)| match g.node(l).op {
                Op::Input { param } => (format!("p{param}"), c),
                ref op => (op.name(), c),
            })
            .collect()
    }

    fn names(list: &[(&str, LeafClass)]) -> Vec<(String, LeafClass)> {
        list.iter().map(|&(n, c)| (n.to_string(), c)).collect()
    }

    /// The op names of a plan's per-element ops.
    fn op_names(g: &Graph, lp: &LoopPlan) -> Vec<String> {
        lp.ops.iter().map(|&o| g.node(o).op.name()).collect()
    }

    #[test]
    fn the_plan_gives_each_loop_its_leaf_classes_split_and_flatness() {
        let (g, plan) = plan_of(quote! {
            fn f(x: Tensor<f32, N, 8>, gamma: Tensor<f32, 8>, s: Tensor<f32>, c: Tensor<f32, 1, 1>)
                -> (Tensor<f32, N, 1>, Tensor<f32, N, 8>, Tensor<f32>, Tensor<f32, N, 8>) {
                let m = reduce_max(x, -1, true);
                let y = (x - m) * gamma + c;
                let t = reduce_sum(x * s);
                let z = exp(x) * s;
                (m, y, t, z)
            }
        });
        assert_eq!(plan.loops.len(), plan.groups.len());
        let n8 = vec![Dim::Sym("N".into()), Dim::Const(8)];

        // A row reduction over the last axis: rows of 8, its input read row by row.
        let (grp, lp) = loop_of(&g, &plan, "reduce_max");
        assert_eq!(lp.kind, LoopKind::RowReduction);
        assert_eq!(
            (lp.shape.clone(), lp.split, lp.flat),
            (n8.clone(), 1, false)
        );
        assert_eq!(leaf_names(&g, lp), names(&[("p0", LeafClass::Full)]));
        assert_eq!(lp.element, g.node(grp.root).inputs[0]);
        assert!(lp.ops.is_empty(), "no producer: {:?}", lp.ops);

        // An elementwise loop with broadcast leaves: by rows, each leaf read its own way;
        // `[1, 1]` against `[N, 8]` is one value for the whole loop.
        let (grp, lp) = loop_of(&g, &plan, "add");
        assert_eq!(lp.kind, LoopKind::Elementwise);
        assert_eq!(
            (lp.shape.clone(), lp.split, lp.flat),
            (n8.clone(), 1, false)
        );
        let mut leaves = leaf_names(&g, lp);
        leaves.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            leaves,
            names(&[
                ("p0", LeafClass::Full),
                ("p1", LeafClass::RowVec),
                ("p3", LeafClass::Scalar),
                ("reduce_max", LeafClass::RowScalar),
            ])
        );
        assert_eq!(op_names(&g, lp), vec!["sub", "mul", "add"]);
        assert_eq!(
            (lp.element, lp.ops.last().copied()),
            (grp.root, Some(grp.root))
        );

        // A whole reduction of a fused producer reading only full and rank-0 leaves: one flat loop.
        let (grp, lp) = loop_of(&g, &plan, "reduce_sum");
        assert_eq!(lp.kind, LoopKind::WholeReduction);
        assert_eq!((lp.shape.clone(), lp.split, lp.flat), (n8.clone(), 0, true));
        assert_eq!(
            leaf_names(&g, lp),
            names(&[("p0", LeafClass::Full), ("p2", LeafClass::Scalar)])
        );
        assert_eq!(Some(lp.element), grp.producer);
        assert_eq!(op_names(&g, lp), vec!["mul"]);

        // An elementwise loop whose leaves are full or rank 0: flat.
        let (_, lp) = loop_of(&g, &plan, "mul");
        assert_eq!(lp.kind, LoopKind::Elementwise);
        assert_eq!((lp.shape.clone(), lp.split, lp.flat), (n8, 1, true));
        assert_eq!(
            leaf_names(&g, lp),
            names(&[("p0", LeafClass::Full), ("p2", LeafClass::Scalar)])
        );
        assert!(plan
            .loops
            .iter()
            .flatten()
            .all(|lp| lp.reads_output.is_none()));
    }

    #[test]
    fn an_epilogue_plan_reads_the_kernel_output_and_its_other_leaves_by_rows() {
        let (g, plan) = plan_of(quote! {
            fn f(x: Tensor<f32, B, 16>, w: Tensor<f32, 16, 4>, b: Tensor<f32, 4>) -> Tensor<f32, B, 4> {
                relu(matmul(x, w) + b)
            }
        });
        assert_eq!(plan.groups.len(), 1);
        let grp = &plan.groups[0];
        let lp = plan.loops[0].as_ref().expect("an epilogue plan");
        assert_eq!(lp.kind, LoopKind::Epilogue);
        assert_eq!(lp.reads_output, grp.anchor);
        assert_eq!((lp.split, lp.flat), (1, false));
        assert_eq!(leaf_names(&g, lp), names(&[("p2", LeafClass::RowVec)]));
        assert_eq!(op_names(&g, lp), vec!["add", "relu"]);
    }

    #[test]
    fn groups_without_a_fused_loop_have_no_loop_plan() {
        let (g, plan) = plan_of(quote! {
            fn f(x: Tensor<f32, 4, 6>) -> (Tensor<f32, 6>, Tensor<f32, 6, 4>) {
                (reduce_sum(x, 0), transpose(x))
            }
        });
        for grp in &plan.groups {
            assert!(
                plan.loops[grp.id].is_none(),
                "{} ({}) has a loop plan",
                g.node(grp.root).op.name(),
                grp.kind.name()
            );
        }
        assert_eq!(plan.groups.len(), 2);
    }
}
