//! Grouping: which values are materialised, and the fused groups over the rest (elementwise loops, reductions with their producer, matmul/conv2d epilogues, conv2d + pooling, reductions a conv2d records).

use super::plan::{classify, loop_plan};
use super::{Group, GroupKind, Plan};
use crate::ir::*;
use crate::passes::PassConfig;

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
    for &o in graph
        .outputs
        .iter()
        .chain(graph.writebacks.iter().map(|(_, w)| w))
    {
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

    // In-place parameters' new values whose loops write the caller's memory (they keep
    // their own loop: an epilogue would write the product over the parameter it reads).
    let into_param = super::into_param::into_param(graph, &live, &materialised);

    // Epilogues: a materialised elementwise result whose fused tree reads a matmul/conv2d
    // used only there, of the same shape, computes that tail inside the kernel's epilogue.
    let mut absorbed = vec![false; n];
    let mut anchor_of: Vec<Option<NodeId>> = vec![None; n];
    if config.fusion {
        for i in 0..n {
            let node = &graph.nodes[i];
            if !live[i]
                || into_param[i].is_some()
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
    // The loops writing parameters in place run last (`into_param.rs`).
    let mut last: Vec<usize> = Vec::new();
    for i in 0..n {
        while let Some((at, c)) = checks_only.next_if(|&(at, _)| at <= i) {
            checks_group(&mut groups, at, c);
        }
        let node = &graph.nodes[i];
        if !live[i] || !materialised[i] || absorbed[i] || into_pool[i] || node.poisoned {
            continue;
        }
        if into_param[i].is_some() {
            last.push(i);
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
            Op::Conv2dBackpropInput { .. }
            | Op::Conv2dBackpropFilter { .. }
            | Op::PoolGrad { .. } => {
                group.kind = GroupKind::Grad;
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
    for i in last {
        let id = NodeId(i);
        let mut tree = Vec::new();
        collect_tree(graph, id, &materialised, &mut tree);
        let group = Group {
            id: groups.len(),
            kind: GroupKind::Elementwise,
            root: id,
            nodes: tree,
            anchor: None,
            producer: None,
            region: Region::Main,
            cond: None,
            records_for: None,
            recorded_by: None,
        };
        for &m in &group.nodes {
            if group_of[m.0].is_none() {
                group_of[m.0] = Some(group.id);
            }
        }
        groups.push(group);
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
        into_param,
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
