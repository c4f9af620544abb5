//! Dead-code elimination: computes which nodes are live (reachable from the outputs, the in-place parameters' new values and the asserts); the rest is never emitted.
//!
//! A cond whose results are all dead (and whose arms check nothing) is removed; a live cond
//! loses its dead outputs, so neither arm computes a value nobody reads (the early-stop
//! pattern `if go { a = reduce_max(h); h = tanh(h); } h` keeps only `h`).

use crate::ir::*;

/// Removes dead conds and the dead outputs of live ones.
pub fn run(graph: &mut Graph) {
    let live = live_nodes(graph);
    let checks: Vec<bool> = (0..graph.conds.len())
        .map(|c| graph.cond_checks(CondId(c)))
        .collect();
    for (ci, &checks) in checks.iter().enumerate() {
        let c = &graph.conds[ci];
        if c.removed {
            continue;
        }
        if !c.results.iter().any(|r| live[r.0]) && !checks {
            graph.conds[ci].removed = true;
            continue;
        }
        prune_dead_outputs(graph, CondId(ci), &live);
    }
}

/// Drops the outputs of `cond` whose result is dead, renumbering the live results.
///
/// The dropped `CondOut` nodes stay in the node list but nothing live reads them (they are
/// dead), and their arm values are dead too unless something else reads them.
fn prune_dead_outputs(graph: &mut Graph, cond: CondId, live: &[bool]) {
    let c = &graph.conds[cond.0];
    if c.results.iter().all(|r| live[r.0]) {
        return;
    }
    let keep: Vec<bool> = c.results.iter().map(|r| live[r.0]).collect();
    let filter = |v: &[NodeId]| -> Vec<NodeId> {
        v.iter()
            .zip(&keep)
            .filter(|(_, &k)| k)
            .map(|(&x, _)| x)
            .collect()
    };
    let then_outputs = filter(&c.then_outputs);
    let else_outputs = filter(&c.else_outputs);
    let results = filter(&c.results);
    let names: Vec<String> = c
        .names
        .iter()
        .zip(&keep)
        .filter(|(_, &k)| k)
        .map(|(n, _)| n.clone())
        .collect();
    for (k, &r) in results.iter().enumerate() {
        graph.node_mut(r).op = Op::CondOut { cond, index: k };
    }
    let c = &mut graph.conds[cond.0];
    c.then_outputs = then_outputs;
    c.else_outputs = else_outputs;
    c.results = results;
    c.names = names;
}
/// Which nodes are needed: outputs, in-place parameters' new values, effects, and everything
/// they read (conds pull in their predicate and live arms).
pub fn live_nodes(graph: &Graph) -> Vec<bool> {
    let mut live = vec![false; graph.nodes.len()];
    let mut stack: Vec<NodeId> = graph.outputs.clone();
    stack.extend(graph.writebacks.iter().map(|&(_, w)| w));
    stack.extend(graph.effects.iter().copied());
    let mut cond_live = vec![false; graph.conds.len()];
    let checks: Vec<bool> = (0..graph.conds.len())
        .map(|c| graph.cond_checks(CondId(c)))
        .collect();
    loop {
        while let Some(id) = stack.pop() {
            if live[id.0] {
                continue;
            }
            live[id.0] = true;
            let n = graph.node(id);
            stack.extend(n.inputs.iter().copied());
            if let Op::CondOut { cond, .. } = n.op {
                mark_cond_live(graph, cond, &mut cond_live, &mut stack);
            }
            if let Region::Arm { cond, .. } = n.region {
                mark_cond_live(graph, cond, &mut cond_live, &mut stack);
            }
        }
        // A cond with effects in its arms runs even when none of its results is used.
        let mut more = false;
        for (ci, c) in graph.conds.iter().enumerate() {
            if !cond_live[ci]
                && !c.removed
                && checks[ci]
                && region_live(graph, c.region, &cond_live)
            {
                mark_cond_live(graph, CondId(ci), &mut cond_live, &mut stack);
                more = true;
            }
        }
        if !more {
            break;
        }
    }
    live
}

/// Marks a cond live the first time: its arms' effects and its predicate become needed.
fn mark_cond_live(graph: &Graph, cond: CondId, cond_live: &mut [bool], stack: &mut Vec<NodeId>) {
    if cond_live[cond.0] {
        return;
    }
    cond_live[cond.0] = true;
    let c = &graph.conds[cond.0];
    stack.extend(c.then_effects.iter().copied());
    stack.extend(c.else_effects.iter().copied());
    if let Predicate::Tensor(p) = c.predicate {
        stack.push(p);
    }
}

fn region_live(graph: &Graph, r: Region, cond_live: &[bool]) -> bool {
    match r {
        Region::Main => true,
        Region::Arm { cond, .. } => {
            cond_live[cond.0] && region_live(graph, graph.conds[cond.0].region, cond_live)
        }
    }
}
