//! Dead-code elimination: computes which nodes are live (reachable from the outputs and the asserts); the rest is never emitted.

use crate::ir::*;

/// Marks live nodes; dead ones get `Region::Main` cleared from every list that could reach them.
pub fn run(graph: &mut Graph) {
    let live = live_nodes(graph);
    for c in graph.conds.iter_mut() {
        if !c.removed
            && !c.results.iter().any(|r| live[r.0])
            && c.then_effects.is_empty()
            && c.else_effects.is_empty()
        {
            c.removed = true;
        }
    }
}

/// Which nodes are needed: outputs, effects, and everything they read (conds pull in their predicate and live arms).
pub fn live_nodes(graph: &Graph) -> Vec<bool> {
    let mut live = vec![false; graph.nodes.len()];
    let mut stack: Vec<NodeId> = graph.outputs.clone();
    stack.extend(graph.effects.iter().copied());
    let mut cond_live = vec![false; graph.conds.len()];
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
                && (!c.then_effects.is_empty() || !c.else_effects.is_empty())
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
