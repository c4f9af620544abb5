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

/// What part of a train step a node belongs to: the forward pass, the backward pass that
/// `gradients` built, or what comes after it and reads gradients (an optimizer's update).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Role {
    #[default]
    Forward,
    /// Built by a `gradients` sweep (an adjoint, or a forward value recomputed for one).
    Backward,
    /// Not built by a sweep, but reads what one built (`apply_adam(w, .., gw)`); set by
    /// [`Graph::roles`], never stored on a node.
    Update,
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
    /// [`Role::Backward`] for the nodes a `gradients` sweep built, else [`Role::Forward`].
    pub role: Role,
}

impl Node {
    /// The bytes of the value with every symbol standing for [`NOMINAL_SYMBOL`] (for
    /// comparing sizes at expansion time: every symbolic dim counts as the same size).
    pub fn nominal_bytes(&self) -> u64 {
        let elems = self.shape.iter().fold(1u64, |acc, d| {
            let m = d.monomial();
            let n = m
                .syms
                .iter()
                .fold(m.coef, |a, _| a.saturating_mul(NOMINAL_SYMBOL));
            acc.saturating_mul(n)
        });
        elems.saturating_mul(self.dtype.size_bytes())
    }
}

/// The size a symbol stands for when the compiler compares bytes.
pub const NOMINAL_SYMBOL: u64 = 1024;

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

    /// The role of every node: a node a sweep built is backward; any other node that reads
    /// a backward or update value is an update; the rest are forward.
    pub fn roles(&self) -> Vec<Role> {
        let mut roles: Vec<Role> = self.nodes.iter().map(|n| n.role).collect();
        for i in 0..self.nodes.len() {
            if roles[i] == Role::Forward
                && self.nodes[i]
                    .inputs
                    .iter()
                    .any(|x| x.0 < i && roles[x.0] != Role::Forward)
            {
                roles[i] = Role::Update;
            }
        }
        roles
    }

    /// The forward values a backward node reads: what the backward pass keeps from the
    /// forward one (values computed in a forward cond arm count through the cond's result).
    pub fn saved(&self, live: &[bool]) -> Vec<bool> {
        let roles = self.roles();
        let mut saved = vec![false; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            if !live[i] || roles[i] != Role::Backward {
                continue;
            }
            for &x in &n.inputs {
                let xn = self.node(x);
                if roles[x.0] == Role::Forward
                    && !xn.shape.is_empty()
                    && !matches!(xn.op, Op::Const { .. })
                {
                    saved[x.0] = true;
                }
            }
        }
        saved
    }

    /// Puts the nodes in the order `order` (a permutation of the ids that keeps every
    /// operand before its readers) and renames every reference to a node to match: inputs,
    /// cond outputs, results, effects and predicates, outputs, new values of parameters.
    pub fn reorder(&mut self, order: &[NodeId]) {
        debug_assert_eq!(order.len(), self.nodes.len());
        let mut new_id = vec![NodeId(usize::MAX); self.nodes.len()];
        for (k, &old) in order.iter().enumerate() {
            new_id[old.0] = NodeId(k);
        }
        let map = |x: &mut NodeId| *x = new_id[x.0];
        let mut old_nodes: Vec<Option<Node>> = std::mem::take(&mut self.nodes)
            .into_iter()
            .map(Some)
            .collect();
        self.nodes = order
            .iter()
            .map(|o| old_nodes[o.0].take().expect("a permutation"))
            .collect();
        for n in &mut self.nodes {
            n.inputs.iter_mut().for_each(map);
        }
        for c in &mut self.conds {
            c.then_outputs.iter_mut().for_each(map);
            c.else_outputs.iter_mut().for_each(map);
            c.results.iter_mut().for_each(map);
            c.then_effects.iter_mut().for_each(map);
            c.else_effects.iter_mut().for_each(map);
            if let Predicate::Tensor(p) = &mut c.predicate {
                map(p);
            }
        }
        self.outputs.iter_mut().for_each(map);
        self.writebacks.iter_mut().for_each(|(_, w)| map(w));
        self.effects.iter_mut().for_each(map);
    }

    /// The scalar value of a constant node.
    pub fn const_value(&self, id: NodeId) -> Option<Scalar> {
        match self.node(id).op {
            Op::Const { value, .. } => Some(value),
            _ => None,
        }
    }
}
