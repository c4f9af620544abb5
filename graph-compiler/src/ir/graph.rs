//! The graph container: node and cond ids, nodes, cond nodes and regions, parameters and declared outputs.

use super::op::Op;
use super::span::SpanRange;
use super::types::{DType, Scalar, Shape};
use proc_macro2::Span;
use std::fmt;

/// Index of a node in [`Graph::nodes`]; prints as `n3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub usize);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.0)
    }
}

/// Index of a cond node in [`Graph::conds`]; prints as `cond1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CondId(pub usize);

impl fmt::Display for CondId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cond{}", self.0)
    }
}

/// Where a node lives: the main graph or one arm of a cond (arms nest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Region {
    Main,
    Arm { cond: CondId, then_arm: bool },
}

impl Region {
    /// The then and else arms of `cond`.
    pub fn arms(cond: CondId) -> (Region, Region) {
        let arm = |then_arm| Region::Arm { cond, then_arm };
        (arm(true), arm(false))
    }
}

/// One node of the graph.
#[derive(Debug, Clone)]
pub struct Node {
    pub op: Op,
    pub inputs: Vec<NodeId>,
    pub dtype: DType,
    pub shape: Shape,
    /// The expression this node came from.
    pub span: SpanRange,
    /// 1-based source line of `span`.
    pub line: u32,
    /// The `let` name bound to this node, if any.
    pub name: Option<String>,
    pub region: Region,
    /// Set when the node could not be typed; checks on its users are skipped (no cascade).
    pub poisoned: bool,
}

/// The condition of a cond: a rank-0 bool tensor node, or a host Rust expression.
#[derive(Debug, Clone)]
pub enum Predicate {
    Tensor(NodeId),
    Host(proc_macro2::TokenStream),
}

/// A cond node: both arms are subgraphs (regions); only the taken one runs.
#[derive(Debug, Clone)]
pub struct Cond {
    pub predicate: Predicate,
    /// The region the cond itself lives in.
    pub region: Region,
    /// The variable names it outputs (AutoGraph's rule), in order.
    pub names: Vec<String>,
    pub then_outputs: Vec<NodeId>,
    pub else_outputs: Vec<NodeId>,
    /// The `CondOut` nodes, one per output.
    pub results: Vec<NodeId>,
    /// Effect nodes (asserts) inside each arm, which must run when that arm runs.
    pub then_effects: Vec<NodeId>,
    pub else_effects: Vec<NodeId>,
    /// Set when an optimisation removed the cond (its results forward an arm's values).
    pub removed: bool,
}

/// A tensor parameter of the function.
#[derive(Debug, Clone)]
pub struct TensorParam {
    pub name: syn::Ident,
    pub dtype: DType,
    pub shape: Shape,
    pub span: Span,
    /// Declared `mut x: ...`: reassignable in the body like a `let mut`.
    pub mutable: bool,
    /// Declared `w: &mut Tensor<...>`: updated in place, the caller's array receives the
    /// value `w` holds at the end of the body (when the body reassigns it).
    pub in_place: bool,
    /// Set when this tensor is a field of a struct parameter (`p: Net` is passed as its
    /// leaf tensors, one parameter each): where it sits in the struct.
    pub field: Option<Box<FieldOf>>,
}

impl TensorParam {
    /// The parameter as messages name it: `x`, or a field's path, `p.blocks[3].wq`.
    pub fn label(&self) -> String {
        match &self.field {
            Some(f) => f.path.clone(),
            None => self.name.to_string(),
        }
    }
}

/// A leaf of a struct parameter: the parameter `p: Net` of a `#[graph] mod` function is
/// flattened into one [`TensorParam`] per tensor field, in declaration order.
#[derive(Debug, Clone)]
pub struct FieldOf {
    /// The struct parameter's name (`p`) and its type as written (`Net`, `[Block; 2]`).
    pub root: syn::Ident,
    pub root_ty: syn::Type,
    /// The field's path as messages show it (`p.blocks[3].wq`).
    pub path: String,
    /// The Rust access of the field from the root value (`.blocks[3].wq`).
    pub access: proc_macro2::TokenStream,
    /// Whether this is the struct's first leaf, where the public signature lists `p: &Net`.
    pub first: bool,
}

/// A host parameter (plain Rust value).
#[derive(Debug, Clone)]
pub struct HostParam {
    pub name: syn::Ident,
    pub ty: syn::Type,
    /// The scalar dtype it acts as when used as an operand.
    pub dtype: DType,
    /// Declared `mut n: ...`: reassignable in the body like a `let mut`.
    pub mutable: bool,
}

#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Param {
    Tensor(TensorParam),
    Host(HostParam),
}

impl Param {
    pub fn name(&self) -> &syn::Ident {
        match self {
            Param::Tensor(t) => &t.name,
            Param::Host(h) => &h.name,
        }
    }
}

/// The declared result: one tensor or a tuple of them.
#[derive(Debug, Clone)]
pub struct OutputDecl {
    pub dtype: DType,
    pub shape: Shape,
}

/// The whole graph of one `#[graph]` function.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub conds: Vec<Cond>,
    /// Values returned, in order.
    pub outputs: Vec<NodeId>,
    /// The in-place parameters the body reassigns (`w: &mut Tensor<..>`), each with the value
    /// `w` holds at the end of the body: the parameter's new value, written into the caller's
    /// array. Kept alive like an output; in parameter order.
    pub writebacks: Vec<(usize, NodeId)>,
    /// Effect nodes (asserts) of the main region, in program order.
    pub effects: Vec<NodeId>,
    /// The host parameters' identifiers as written, for emitting a host read (`Op::Host`
    /// keeps only the text) with the parameter's own span and hygiene.
    pub host_idents: Vec<proc_macro2::Ident>,
}

impl Graph {
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0]
    }

    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.nodes[id.0]
    }

    pub fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        NodeId(self.nodes.len() - 1)
    }

    /// Whether region `r` is an arm of `cond` or lies inside one (arms nest).
    pub fn within_cond(&self, mut r: Region, cond: CondId) -> bool {
        loop {
            match r {
                Region::Main => return false,
                Region::Arm { cond: c, .. } if c == cond => return true,
                Region::Arm { cond: c, .. } => r = self.conds[c.0].region,
            }
        }
    }

    /// Whether an arm of `cond`, or of a cond nested in it, runs a check (an `assert_*`):
    /// such a cond must run even when none of its results is used.
    pub fn cond_checks(&self, cond: CondId) -> bool {
        self.conds.iter().enumerate().any(|(i, c)| {
            let checks = !c.then_effects.is_empty() || !c.else_effects.is_empty();
            !c.removed && checks && (i == cond.0 || self.within_cond(c.region, cond))
        })
    }

    /// Where a cond runs in program order: at its first result or, for a cond without results
    /// (one that only checks, `if c { assert_non_negative(x); }`), right after its arms' last node.
    pub fn cond_position(&self, cond: CondId) -> usize {
        if let Some(first) = self.conds[cond.0].results.first() {
            return first.0;
        }
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| self.within_cond(n.region, cond))
            .map(|(i, _)| i + 1)
            .max()
            .unwrap_or(0)
    }

    /// Whether `v` is read once the schedule has run: a result, or an in-place parameter's
    /// new value (so no buffer plan may free, move or overwrite it before).
    pub fn read_at_end(&self, v: NodeId) -> bool {
        self.outputs.contains(&v) || self.writebacks.iter().any(|&(_, w)| w == v)
    }

    /// The parameter whose caller's memory `v` reads, if it is a parameter or a view
    /// (`reshape`) of one.
    pub fn param_read_by(&self, mut v: NodeId) -> Option<usize> {
        loop {
            let n = self.node(v);
            match n.op {
                Op::Input { param } => return Some(param),
                Op::Reshape => v = n.inputs[0],
                _ => return None,
            }
        }
    }

    /// The scalar value of a constant node.
    pub fn const_value(&self, id: NodeId) -> Option<Scalar> {
        match self.node(id).op {
            Op::Const { value, .. } => Some(value),
            _ => None,
        }
    }
}
