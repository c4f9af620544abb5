//! Phase 6, schedule: fixes the order of the fused groups and the buffer plan (slots assigned by liveness, so values whose lifetimes do not overlap share memory).

use crate::fuse::{tree_leaves, Group, GroupKind, Plan};
use crate::ir::*;
use std::collections::HashMap;

/// The static schedule and buffer plan.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Group ids of each region, in the order they run.
    pub region_groups: HashMap<Region, Vec<usize>>,
    /// Values whose buffer goes back to its slot right after each group (region-local).
    pub frees_after: Vec<Vec<NodeId>>,
    /// For a value written in place: the dead input whose buffer it takes over.
    pub in_place: Vec<Option<NodeId>>,
    /// The slot of each value held in a reusable buffer.
    pub slot: Vec<Option<usize>>,
    /// Values allocated fresh because they (may) leave the function as results.
    pub fresh: Vec<bool>,
    /// Per slot: dtype and the values it holds, in schedule order.
    pub slots: Vec<(DType, Vec<NodeId>)>,
    /// Two independent branches of the main schedule, run concurrently when the session
    /// has more than one inter-op thread.
    pub fork: Option<Fork>,
    /// The last group (effective, in the value's own region) that reads each value; for an
    /// in-place parameter's new value, the number of groups (it is read after all of them).
    pub last_use: Vec<Option<usize>>,
}

/// The main schedule split as `prefix; (branch 0 || branch 1)`: the two branches read only
/// the prefix's values and the inputs, never each other's.
#[derive(Debug, Clone)]
pub struct Fork {
    pub prefix: Vec<usize>,
    pub branches: [Vec<usize>; 2],
    /// The results each branch computes (returned from it).
    pub outputs: [Vec<NodeId>; 2],
}

/// The main-region group a group belongs to (itself, or the cond group enclosing its arm).
fn main_level(
    graph: &Graph,
    groups: &[Group],
    cond_group: &HashMap<CondId, usize>,
    mut g: usize,
) -> Option<usize> {
    loop {
        match groups[g].region {
            Region::Main => return Some(g),
            Region::Arm { cond, .. } => g = *cond_group.get(&cond)?,
        }
        let _ = graph;
    }
}

/// Finds a fork when the first result and the others depend on disjoint heavy work.
fn find_fork(
    graph: &Graph,
    plan: &Plan,
    reads: &[Vec<NodeId>],
    region_groups: &HashMap<Region, Vec<usize>>,
) -> Option<Fork> {
    // A forked branch returns only results: a parameter's new value could not leave it.
    if graph.outputs.len() < 2 || !graph.effects.is_empty() || !graph.writebacks.is_empty() {
        return None;
    }
    let groups = &plan.groups;
    let cond_group: HashMap<CondId, usize> = groups
        .iter()
        .filter_map(|g| g.cond.map(|c| (c, g.id)))
        .collect();
    let producer = |v: NodeId| -> Option<usize> {
        let g = plan.group_of[v.0]?;
        main_level(graph, groups, &cond_group, g)
    };
    // Direct dependencies of each main-level group (reads of its arms included).
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); groups.len()];
    for g in groups {
        let Some(top) = main_level(graph, groups, &cond_group, g.id) else {
            continue;
        };
        for &v in &reads[g.id] {
            if let Some(p) = producer(v) {
                if p != top && !deps[top].contains(&p) {
                    deps[top].push(p);
                }
            }
        }
    }
    let ancestors = |outs: &[NodeId]| -> Vec<bool> {
        let mut seen = vec![false; groups.len()];
        let mut stack: Vec<usize> = outs.iter().filter_map(|&o| producer(o)).collect();
        while let Some(g) = stack.pop() {
            if !std::mem::replace(&mut seen[g], true) {
                stack.extend(deps[g].iter().copied());
            }
        }
        seen
    };
    let s0 = ancestors(&graph.outputs[..1]);
    let s1 = ancestors(&graph.outputs[1..]);
    let main = region_groups.get(&Region::Main)?;
    if main.iter().any(|&g| !s0[g] && !s1[g]) {
        return None;
    }
    let prefix: Vec<usize> = main.iter().copied().filter(|&g| s0[g] && s1[g]).collect();
    let a: Vec<usize> = main.iter().copied().filter(|&g| s0[g] && !s1[g]).collect();
    let b: Vec<usize> = main.iter().copied().filter(|&g| !s0[g] && s1[g]).collect();
    let heavy = |gs: &[usize]| {
        gs.iter()
            .any(|&g| !matches!(groups[g].kind, GroupKind::Scalar | GroupKind::View))
    };
    if !heavy(&a) || !heavy(&b) {
        return None;
    }
    // Each result a branch computes once, however many times and wherever the function
    // returns it (`(a % b, x, a % b)`): the branch's tuple binds one name per value.
    let outputs_of = |gs: &[usize]| -> Vec<NodeId> {
        let mut v: Vec<NodeId> = Vec::new();
        for &o in &graph.outputs {
            if producer(o).is_some_and(|p| gs.contains(&p)) && !v.contains(&o) {
                v.push(o);
            }
        }
        v
    };
    let outputs = [outputs_of(&a), outputs_of(&b)];
    Some(Fork {
        prefix,
        branches: [a, b],
        outputs,
    })
}

/// The materialised values a group reads.
pub fn group_reads(graph: &Graph, plan: &Plan, g: &Group) -> Vec<NodeId> {
    let mut reads: Vec<NodeId> = match g.kind {
        GroupKind::Elementwise | GroupKind::Scalar | GroupKind::MatMul | GroupKind::Conv2d => {
            let mut r = tree_leaves(graph, g.root, &plan.materialised);
            if let Some(a) = g.anchor {
                r.retain(|&x| x != a);
                r.extend(graph.node(a).inputs.iter().copied());
            }
            if g.anchor.is_none() && !graph.node(g.root).op.is_elementwise() {
                r = graph.node(g.root).inputs.clone();
            }
            r
        }
        GroupKind::ConvPool => {
            let conv = g.anchor.expect("a conv2d + pooling group has its conv2d");
            let mut r = match crate::fuse::epilogue_root(graph, g) {
                Some(e) => tree_leaves(graph, e, &plan.materialised),
                None => Vec::new(),
            };
            r.retain(|&x| x != conv);
            r.extend(graph.node(conv).inputs.iter().copied());
            r
        }
        GroupKind::Reduce => match g.producer {
            Some(p) => tree_leaves(graph, p, &plan.materialised),
            None => graph.node(g.root).inputs.clone(),
        },
        GroupKind::Cond => {
            let c = &graph.conds[g.cond.expect("cond group").0];
            let mut r = Vec::new();
            if let Predicate::Tensor(p) = c.predicate {
                r.push(p);
            }
            r.extend(c.then_outputs.iter().chain(&c.else_outputs).copied());
            r
        }
        _ => graph.node(g.root).inputs.clone(),
    };
    reads.retain(|&x| plan.materialised[x.0]);
    reads.sort();
    reads.dedup();
    reads
}

/// Builds the schedule and the buffer plan for `plan`.
pub fn schedule(graph: &Graph, plan: &Plan) -> Schedule {
    let n = graph.nodes.len();
    let groups = &plan.groups;
    let mut region_groups: HashMap<Region, Vec<usize>> = HashMap::new();
    for g in groups {
        region_groups.entry(g.region).or_default().push(g.id);
    }
    let cond_group: HashMap<CondId, usize> = groups
        .iter()
        .filter_map(|g| g.cond.map(|c| (c, g.id)))
        .collect();
    let reads: Vec<Vec<NodeId>> = groups.iter().map(|g| group_reads(graph, plan, g)).collect();

    // Effective last use of each value, in its own region.
    let mut last_use: Vec<Option<usize>> = vec![None; n];
    for g in groups {
        for &v in &reads[g.id] {
            let vr = graph.node(v).region;
            let mut r = g.region;
            let mut pos = g.id;
            let mut ok = true;
            while r != vr {
                match r {
                    Region::Main => {
                        ok = false;
                        break;
                    }
                    Region::Arm { cond, .. } => {
                        pos = cond_group.get(&cond).copied().unwrap_or(pos);
                        r = graph.conds[cond.0].region;
                    }
                }
            }
            if ok {
                last_use[v.0] = Some(last_use[v.0].map_or(pos, |p: usize| p.max(pos)));
            }
        }
    }

    // An in-place parameter's new value is read after the last group (copied into the
    // parameter), so its buffer stays put until then.
    for &(_, w) in &graph.writebacks {
        last_use[w.0] = Some(groups.len());
    }

    // A fork runs both branches after the whole prefix, whatever their groups' ids: a value a
    // branch reads lives until the branches are done. `branch_end` is the last branch group
    // reading it, where its free goes (the emitter defers it past both branches); its slot
    // stays busy past the prefix, and no prefix loop takes its buffer over.
    let fork = find_fork(graph, plan, &reads, &region_groups);
    let mut branch_end: Vec<Option<usize>> = vec![None; n];
    let mut prefix_end = 0;
    let mut in_prefix = vec![false; groups.len()];
    if let Some(f) = &fork {
        prefix_end = f.prefix.iter().copied().max().unwrap_or(0);
        for &p in &f.prefix {
            in_prefix[p] = true;
        }
        for g in groups {
            let Some(top) = main_level(graph, groups, &cond_group, g.id) else {
                continue;
            };
            if f.branches.iter().any(|b| b.contains(&top)) {
                for &v in &reads[g.id] {
                    branch_end[v.0] = Some(branch_end[v.0].map_or(top, |e: usize| e.max(top)));
                }
            }
        }
        // A value read through a reshape view is read where the view is (a view follows its
        // input in node order).
        for i in (0..n).rev() {
            let node = &graph.nodes[i];
            if plan.live[i] && node.op == Op::Reshape {
                if let Some(b) = branch_end[i] {
                    let x = node.inputs[0].0;
                    branch_end[x] = Some(branch_end[x].map_or(b, |e: usize| e.max(b)));
                }
            }
        }
    }
    // Where the free of `v`, last read (by id) at `end`, goes: after its last branch reader
    // when `end` is in the prefix; and until when its slot is busy.
    let free_at = |v: NodeId, end: usize| match branch_end[v.0] {
        Some(b) if end < groups.len() && in_prefix[end] => b,
        _ => end,
    };
    let busy_until = |v: NodeId, end: usize| match branch_end[v.0] {
        Some(b) => end.max(b).max(prefix_end),
        None => end,
    };

    // Values that may leave the function are fresh allocations.
    let mut fresh = vec![false; n];
    let mut stack: Vec<NodeId> = graph.outputs.clone();
    while let Some(v) = stack.pop() {
        if fresh[v.0] {
            continue;
        }
        fresh[v.0] = true;
        match &graph.node(v).op {
            Op::CondOut { cond, index } => {
                let c = &graph.conds[cond.0];
                stack.push(c.then_outputs[*index]);
                stack.push(c.else_outputs[*index]);
            }
            Op::Reshape => stack.push(graph.node(v).inputs[0]),
            _ => {}
        }
    }

    // Interval colouring of slot-backed values, per dtype.
    let mut slot = vec![None; n];
    let mut in_place: Vec<Option<NodeId>> = vec![None; n];
    let mut slots: Vec<(DType, Vec<NodeId>, usize)> = Vec::new();
    // The largest value of each slot, in bytes with every symbol at a nominal size.
    let mut slot_bytes: Vec<u64> = Vec::new();
    let mut frees_after: Vec<Vec<NodeId>> = vec![Vec::new(); groups.len()];
    for g in groups {
        // A view needs no buffer, unless it makes a tensor of a scalar (`reshape` of a rank-0
        // value, or of one computed inline): that one element gets a buffer like any value.
        let view_of_scalar = g.kind == GroupKind::View && {
            let input = graph.node(g.root).inputs[0];
            graph.node(input).shape.is_empty() || !plan.materialised[input.0]
        };
        if matches!(
            g.kind,
            GroupKind::View | GroupKind::Cond | GroupKind::Scalar | GroupKind::Assert
        ) && !view_of_scalar
        {
            continue;
        }
        let v = g.root;
        let node = graph.node(v);
        // A loop writing a parameter's new value into the caller's memory needs no buffer.
        if node.shape.is_empty() || plan.into_param[v.0].is_some() {
            continue;
        }
        // A value that may be returned gets a slot of its own: when it is returned the slot
        // is empty next time (that allocation is the result), when it is not it goes back.
        if fresh[v.0] {
            slots.push((node.dtype, vec![v], usize::MAX));
            slot_bytes.push(node.nominal_bytes());
            slot[v.0] = Some(slots.len() - 1);
            let end = last_use[v.0].unwrap_or(g.id);
            let returned_through_view =
                graph.nodes.iter().enumerate().any(|(i, n)| {
                    plan.live[i] && n.op == Op::Reshape && n.inputs[0] == v && fresh[i]
                });
            if !graph.outputs.contains(&v)
                && !returned_through_view
                && end < groups.len()
                && !is_arm_output(graph, v)
            {
                frees_after[free_at(v, end)].push(v);
            }
            continue;
        }
        let end = last_use[v.0]
            .unwrap_or(g.id)
            .max(aliases_end(graph, plan, &last_use, v));
        // An elementwise loop may write over a full-shape input whose last reader it is.
        let dead_input = (g.kind == GroupKind::Elementwise)
            .then(|| {
                reads[g.id].iter().copied().find(|&l| {
                    let ln = graph.node(l);
                    slot[l.0].is_some()
                        && ln.shape == node.shape
                        && ln.dtype == node.dtype
                        && ln.region == g.region
                        && last_use[l.0] == Some(g.id)
                        && aliases_end(graph, plan, &last_use, l) <= g.id
                        && !is_arm_output(graph, l)
                        && !graph.read_at_end(l)
                        && branch_end[l.0].is_none()
                })
            })
            .flatten();
        if let Some(l) = dead_input {
            frees_after[g.id].retain(|&x| x != l);
            in_place[v.0] = Some(l);
        }
        // Of the free slots, the smallest that holds the value already and is at most twice
        // its size, else the largest smaller one (it grows least), else a new slot: a small
        // value never takes a large slot that a large value could reuse later.
        let need = node.nominal_bytes();
        let free = match dead_input {
            Some(l) => slot[l.0],
            None => {
                let free = || {
                    (0..slots.len()).filter(|&s| {
                        let (dt, _, busy_until) = &slots[s];
                        *dt == node.dtype && *busy_until < g.id
                    })
                };
                free()
                    .filter(|&s| slot_bytes[s] >= need && slot_bytes[s] / 2 <= need)
                    .min_by_key(|&s| slot_bytes[s])
                    .or_else(|| {
                        free()
                            .filter(|&s| slot_bytes[s] < need)
                            .max_by_key(|&s| (slot_bytes[s], std::cmp::Reverse(s)))
                    })
            }
        };
        let s = match free {
            Some(s) => s,
            None => {
                slots.push((node.dtype, Vec::new(), 0));
                slot_bytes.push(0);
                slots.len() - 1
            }
        };
        slot_bytes[s] = slot_bytes[s].max(need);
        slots[s].1.push(v);
        slots[s].2 = busy_until(v, end);
        slot[v.0] = Some(s);
        if end < groups.len() && !is_arm_output(graph, v) {
            frees_after[free_at(v, end)].push(v);
        }
    }
    // Results of a cond that die are handed back to the slot of the arm value they came from.
    for g in groups.iter().filter(|g| g.kind == GroupKind::Cond) {
        let c = &graph.conds[g.cond.expect("cond group").0];
        for &r in &c.results {
            if graph.node(r).shape.is_empty() || graph.read_at_end(r) || is_arm_output(graph, r) {
                continue;
            }
            let end = last_use[r.0].unwrap_or(g.id);
            if end < groups.len() {
                frees_after[free_at(r, end)].push(r);
            }
        }
    }
    Schedule {
        fork,
        in_place,
        region_groups,
        frees_after,
        slot,
        fresh,
        slots: slots.into_iter().map(|(d, v, _)| (d, v)).collect(),
        last_use,
    }
}

/// A value read through a reshape view stays alive as long as the view is read.
fn aliases_end(graph: &Graph, plan: &Plan, last_use: &[Option<usize>], v: NodeId) -> usize {
    let mut end = 0;
    for (i, node) in graph.nodes.iter().enumerate() {
        if plan.live[i] && matches!(node.op, Op::Reshape) && node.inputs[0] == v {
            end = end.max(last_use[i].unwrap_or(0)).max(aliases_end(
                graph,
                plan,
                last_use,
                NodeId(i),
            ));
        }
    }
    end
}

/// Arm outputs are moved (or copied) into the cond's result rather than freed; so is the
/// buffer under a reshape view that is an arm output (`c = reshape(matmul(..), [N])`).
fn is_arm_output(graph: &Graph, v: NodeId) -> bool {
    graph
        .conds
        .iter()
        .filter(|c| !c.removed)
        .any(|c| c.then_outputs.contains(&v) || c.else_outputs.contains(&v))
        || graph.nodes.iter().enumerate().any(|(i, n)| {
            n.op == Op::Reshape && n.inputs[0] == v && is_arm_output(graph, NodeId(i))
        })
}
