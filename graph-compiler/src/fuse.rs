//! Phase 5, fuse: decides which values are materialised and groups the rest into fused kernels (elementwise loops, reductions with their producer, matmul/conv2d epilogues).
//!
//! The rule for a value with several consumers: it is materialised once, unless its fused
//! expression is cheap (at most three arithmetic ops, no transcendental function), in which
//! case each consumer recomputes it (W4's `x - mean` is read by two passes and costs less to
//! recompute than to write and read back).

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
    /// For epilogue groups, the matmul/conv2d node whose output the epilogue reads in place.
    pub anchor: Option<NodeId>,
    /// For reductions, the root of the fused producer expression (the reduction's input).
    pub producer: Option<NodeId>,
    pub region: Region,
    /// For cond groups, which cond.
    pub cond: Option<CondId>,
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
        });
    };
    for i in 0..n {
        while let Some((at, c)) = checks_only.next_if(|&(at, _)| at <= i) {
            checks_group(&mut groups, at, c);
        }
        let node = &graph.nodes[i];
        if !live[i] || !materialised[i] || absorbed[i] || node.poisoned {
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
            Op::Pool { .. } => {
                group.kind = GroupKind::Pool;
                group.nodes = vec![id];
            }
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
    Plan {
        live,
        materialised,
        groups,
        group_of,
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
