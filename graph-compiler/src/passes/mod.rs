//! Phase 4, optimise: the graph-to-graph passes (Grappler's work, done at expansion time) and the helpers they share.

pub mod cse;
pub mod dce;
pub mod fold;
pub mod recompute;
pub mod simplify;
pub mod transpose_operand;

use crate::ir::{Graph, NodeId, Predicate};

/// Which passes run; `#[graph(disable(fold, cse, dce, simplify, fusion, recompute))]`
/// switches some off.
#[derive(Debug, Clone, Copy)]
pub struct PassConfig {
    pub fold: bool,
    pub cse: bool,
    pub dce: bool,
    pub simplify: bool,
    pub fusion: bool,
    /// Rematerialisation: the backward pass recomputes cheap forward values (`recompute.rs`).
    pub recompute: bool,
}

impl Default for PassConfig {
    fn default() -> Self {
        PassConfig {
            fold: true,
            cse: true,
            dce: true,
            simplify: true,
            fusion: true,
            recompute: true,
        }
    }
}

impl PassConfig {
    /// The names of the passes that run, in pipeline order.
    pub fn names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.fold {
            v.push("fold");
        }
        if self.simplify {
            v.push("simplify");
        }
        if self.cse {
            v.push("cse");
        }
        if self.recompute {
            v.push("recompute");
        }
        if self.dce {
            v.push("dce");
        }
        if self.fusion {
            v.push("fusion");
        }
        v
    }
}

/// Runs the enabled passes in order: fold, simplify, cse, transposed matmul operands (with
/// fusion), recompute, dce (fold again after simplify exposes constants). Recompute comes
/// after cse, which would merge its copies back into the forward values.
pub fn optimise(graph: &mut Graph, config: &PassConfig, diag: &mut crate::diag::Diagnostics) {
    if config.fold {
        fold::run(graph, diag);
    }
    if config.simplify {
        simplify::run(graph);
        if config.fold {
            fold::run(graph, diag);
        }
    }
    if config.cse {
        cse::run(graph);
    }
    if config.fusion {
        transpose_operand::run(graph);
    }
    if config.recompute {
        recompute::run(graph, config);
    }
    if config.dce {
        dce::run(graph);
    }
}

/// Replaces every use of `from` by `to`: node inputs, cond outputs and predicates, graph
/// outputs and in-place parameters' new values.
pub fn replace_uses(graph: &mut Graph, from: NodeId, to: NodeId) {
    if from == to {
        return;
    }
    for n in graph.nodes.iter_mut() {
        for i in n.inputs.iter_mut() {
            if *i == from {
                *i = to;
            }
        }
    }
    for c in graph.conds.iter_mut() {
        for o in c.then_outputs.iter_mut().chain(c.else_outputs.iter_mut()) {
            if *o == from {
                *o = to;
            }
        }
        if let Predicate::Tensor(p) = &mut c.predicate {
            if *p == from {
                *p = to;
            }
        }
    }
    for o in graph.outputs.iter_mut() {
        if *o == from {
            *o = to;
        }
    }
    for (_, w) in graph.writebacks.iter_mut() {
        if *w == from {
            *w = to;
        }
    }
}
