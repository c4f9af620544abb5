//! Graphviz export of a compiled graph (`NAME::graph().to_dot()`): nodes, edges labelled with dtype and shape, fusion groups and cond arms as clusters.
//!
//! Graphviz clusters must nest and never overlap, so every node is placed in exactly one
//! chain of clusters: the arm clusters of the conds it sits in (outermost first), then its
//! fusion group's cluster. A fusion group inside a cond arm is drawn inside that arm.
//! The output depends only on the graph, so it can be snapshotted.
//!
//! In a graph with a backward pass, each node is filled with its role's colour (forward
//! white, backward orange, update green) and a saved tensor (a forward value the backward
//! pass reads) has a thick red border and `saved` in its label; a legend says so.

use super::def::{shape_text, GraphDef, NodeDef, Region, Role};
use std::fmt::Write;

/// A cluster of the drawing: the whole graph, one arm of a cond, or one fusion group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Cluster {
    Root,
    Arm { cond: usize, then_arm: bool },
    Group(usize),
}

impl GraphDef {
    /// The graph in Graphviz's DOT language; render it with `dot -Tsvg graph.dot -o graph.svg`.
    pub fn to_dot(&self) -> String {
        let layout = Layout::new(self);
        let mut out = String::new();
        let _ = writeln!(out, "digraph \"{}\" {{", escape(&self.name));
        let _ = writeln!(
            out,
            "  graph [label=\"{}\", labelloc=t, fontname=\"Helvetica\", compound=true];",
            escape(&format!("graph {}", self.name))
        );
        out.push_str("  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=10];\n");
        out.push_str("  edge [fontname=\"Helvetica\", fontsize=9];\n");
        layout.write_cluster(self, Cluster::Root, 1, &mut out);
        if has_backward(self) {
            write_legend(&mut out);
        }
        self.write_edges(&mut out);
        out.push_str("}\n");
        out
    }

    fn write_edges(&self, out: &mut String) {
        for (to, node) in self.nodes.iter().enumerate() {
            for &from in &node.inputs {
                if let Some(src) = self.nodes.get(from) {
                    let _ = writeln!(
                        out,
                        "  n{from} -> n{to} [label=\"{}\"];",
                        escape(&value_text(src))
                    );
                }
            }
        }
        // An in-place parameter's new value goes back into the parameter.
        for input in &self.inputs {
            let (Some(from), Some(to)) = (input.written_from, input.node) else {
                continue;
            };
            if from < self.nodes.len() && to < self.nodes.len() {
                let _ = writeln!(
                    out,
                    "  n{from} -> n{to} [label=\"{}\", style=dashed, constraint=false];",
                    escape(&format!("new value of {}", input.name))
                );
            }
        }
        // A cond node also reads its predicate and, per output, the value of each arm.
        for (k, cond) in self.conds.iter().enumerate() {
            let Some(target) = self.nodes.get(cond.node) else {
                continue;
            };
            if let Some(pred) = self.nodes.get(cond.predicate) {
                if !target.inputs.contains(&cond.predicate) {
                    let _ = writeln!(
                        out,
                        "  n{} -> n{} [label=\"{}\", style=bold];",
                        cond.predicate,
                        cond.node,
                        escape(&format!("predicate of cond {k}\n{}", value_text(pred)))
                    );
                }
            }
            for (var, then_node, else_node) in &cond.outputs {
                for (arm, from) in [("then", *then_node), ("else", *else_node)] {
                    let Some(src) = self.nodes.get(from) else {
                        continue;
                    };
                    if target.inputs.contains(&from) {
                        continue;
                    }
                    let _ = writeln!(
                        out,
                        "  n{from} -> n{} [label=\"{}\", style=dashed];",
                        cond.node,
                        escape(&format!("{arm}: {var}\n{}", value_text(src)))
                    );
                }
            }
        }
    }
}

/// `f32[B, 784]`: the dtype and shape of a node's value.
fn value_text(node: &NodeDef) -> String {
    format!("{}{}", node.dtype, shape_text(&node.shape))
}

/// Which cluster each node and each cluster sits in.
struct Layout {
    /// The innermost cluster of each node, by node index.
    node_cluster: Vec<Cluster>,
    /// Every cluster but the root with its parent, sorted.
    parents: Vec<(Cluster, Cluster)>,
    /// Clusters that hold at least one node, directly or through nested clusters, in the
    /// order of their first node, which is the order they are drawn in.
    non_empty: Vec<Cluster>,
}

impl Layout {
    fn new(graph: &GraphDef) -> Layout {
        let mut parents: Vec<(Cluster, Cluster)> = Vec::new();
        for k in 0..graph.conds.len() {
            for then_arm in [true, false] {
                parents.push((Cluster::Arm { cond: k, then_arm }, arm_parent(graph, k)));
            }
        }
        for (g, group) in graph.groups.iter().enumerate() {
            parents.push((Cluster::Group(g), region_cluster(graph, group.region)));
        }
        parents.sort();
        let node_cluster: Vec<Cluster> = graph
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| {
                let group = node
                    .group
                    .or_else(|| graph.groups.iter().position(|g| g.nodes.contains(&i)));
                match group {
                    Some(g) if g < graph.groups.len() => Cluster::Group(g),
                    _ => region_cluster(graph, node.region),
                }
            })
            .collect();
        let mut non_empty = Vec::new();
        for &leaf in &node_cluster {
            let mut c = leaf;
            // The chain is acyclic (see `arm_parent`), so it ends at the root; the bound is a
            // second guard.
            for _ in 0..=parents.len() {
                if c == Cluster::Root || non_empty.contains(&c) {
                    break;
                }
                non_empty.push(c);
                c = parent_of(&parents, c);
            }
        }
        Layout {
            node_cluster,
            parents,
            non_empty,
        }
    }

    fn write_cluster(&self, graph: &GraphDef, cluster: Cluster, depth: usize, out: &mut String) {
        let indent = "  ".repeat(depth);
        for &child in &self.non_empty {
            if parent_of(&self.parents, child) != cluster {
                continue;
            }
            let (id, label, style) = match child {
                Cluster::Arm { cond, then_arm } => {
                    let arm = if then_arm { "then" } else { "else" };
                    (
                        format!("cluster_cond{cond}_{arm}"),
                        format!("cond {cond}: {arm}"),
                        "dashed",
                    )
                }
                Cluster::Group(g) => {
                    let Some(group) = graph.groups.get(g) else {
                        continue;
                    };
                    let mut label = format!("{} group {g}", group.kind);
                    if group.in_place {
                        label.push_str(" (in place)");
                    }
                    if let Some(r) = group.records_for {
                        label.push_str(&format!(" (records group {r}'s partial sums)"));
                    }
                    (
                        format!("cluster_g{g}"),
                        label,
                        "\"rounded,filled\"; fillcolor=\"#f2f2f2\"",
                    )
                }
                Cluster::Root => continue,
            };
            let _ = writeln!(out, "{indent}subgraph {id} {{");
            let _ = writeln!(
                out,
                "{indent}  label=\"{}\"; style={style};",
                escape(&label)
            );
            self.write_cluster(graph, child, depth + 1, out);
            let _ = writeln!(out, "{indent}}}");
        }
        for (i, node) in graph.nodes.iter().enumerate() {
            if self.node_cluster.get(i) == Some(&cluster) {
                write_node(graph, i, node, &indent, out);
            }
        }
    }
}

fn write_node(graph: &GraphDef, i: usize, node: &NodeDef, indent: &str, out: &mut String) {
    let mut label = format!("{}\n{}\n{}", node.name, node.op, value_text(node));
    if node.line > 0 {
        let _ = write!(label, "\nline {}", node.line);
    }
    let mut extra = String::new();
    match node.op.as_str() {
        "input" => extra.push_str(", shape=ellipse, style=solid"),
        "cond" => extra.push_str(", shape=diamond, style=solid"),
        _ => {}
    }
    if graph.outputs.contains(&i) || graph.inputs.iter().any(|p| p.written_from == Some(i)) {
        extra.push_str(", peripheries=2");
    }
    if has_backward(graph) {
        if node.saved {
            label.push_str("\nsaved");
            extra.push_str(", penwidth=2.5, color=\"#c0392b\"");
        }
        let fill = role_colour(node.role);
        if node.op == "input" || node.op == "cond" {
            let _ = write!(extra, ", style=filled, fillcolor=\"{fill}\"");
        } else {
            let _ = write!(extra, ", style=\"rounded,filled\", fillcolor=\"{fill}\"");
        }
    }
    let _ = writeln!(out, "{indent}n{i} [label=\"{}\"{extra}];", escape(&label));
}

/// Whether the graph has a backward pass (its nodes are then coloured by role).
pub(crate) fn has_backward(graph: &GraphDef) -> bool {
    graph.nodes.iter().any(|n| n.role == Role::Backward)
}

/// The fill colour of a role's nodes.
fn role_colour(role: Role) -> &'static str {
    match role {
        Role::Forward => "#ffffff",
        Role::Backward => "#fde3c8",
        Role::Update => "#d5f0d5",
    }
}

/// A legend of the role colours and of the saved tensors' border.
fn write_legend(out: &mut String) {
    out.push_str("  subgraph cluster_legend {\n    label=\"legend\"; style=dashed;\n");
    for role in [Role::Forward, Role::Backward, Role::Update] {
        let _ = writeln!(
            out,
            "    legend_{0} [label=\"{0}\", style=\"rounded,filled\", fillcolor=\"{1}\"];",
            role.name(),
            role_colour(role)
        );
    }
    out.push_str("    legend_saved [label=\"saved: a forward value\\nthe backward pass reads\", penwidth=2.5, color=\"#c0392b\"];\n  }\n");
}

fn parent_of(parents: &[(Cluster, Cluster)], c: Cluster) -> Cluster {
    parents
        .iter()
        .find(|(child, _)| *child == c)
        .map_or(Cluster::Root, |&(_, p)| p)
}

/// The cluster of the nodes of a region.
fn region_cluster(graph: &GraphDef, region: Region) -> Cluster {
    match region {
        Region::Main => Cluster::Root,
        Region::CondArm { cond, then_arm } if cond < graph.conds.len() => {
            Cluster::Arm { cond, then_arm }
        }
        Region::CondArm { .. } => Cluster::Root,
    }
}

/// The cluster the arms of cond `k` are drawn in: the region of the cond's own node.
/// A malformed graph whose conds contain each other in a cycle gets its arms at the top level.
fn arm_parent(graph: &GraphDef, k: usize) -> Cluster {
    match cond_region(graph, k) {
        Region::CondArm {
            cond: outer,
            then_arm,
        } if outer < graph.conds.len() && reaches_root(graph, outer, k) => Cluster::Arm {
            cond: outer,
            then_arm,
        },
        _ => Cluster::Root,
    }
}

/// The region the node of cond `k` sits in.
fn cond_region(graph: &GraphDef, k: usize) -> Region {
    graph
        .conds
        .get(k)
        .and_then(|c| graph.nodes.get(c.node))
        .map_or(Region::Main, |n| n.region)
}

/// Whether following the enclosing conds from `cond` reaches the main graph without meeting `k`.
fn reaches_root(graph: &GraphDef, mut cond: usize, k: usize) -> bool {
    for _ in 0..=graph.conds.len() {
        if cond == k {
            return false;
        }
        match cond_region(graph, cond) {
            Region::CondArm { cond: outer, .. } if outer < graph.conds.len() => cond = outer,
            _ => return true,
        }
    }
    false
}

/// Escapes text for a double-quoted DOT string; newlines become centred line breaks.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}
