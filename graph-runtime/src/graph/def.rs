//! The compiled graph as data (`NAME::graph()`): nodes, cond subgraphs, fusion groups, the schedule and the buffer plan.
//!
//! The macro decides all of this at expansion time and emits a constructor for a
//! [`GraphDef`]; nothing here is used to run the graph. Exports (Graphviz DOT, TensorBoard
//! event files) read from these types.

use crate::dtype::DType;
use std::fmt;

/// One dimension of a shape: a known size, a symbol (`B`) or an expression over symbols (`H - 2`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Dim {
    Static(usize),
    Symbol(String),
    Expr(String),
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Static(n) => write!(f, "{n}"),
            Dim::Symbol(s) | Dim::Expr(s) => f.write_str(s),
        }
    }
}

/// Formats a shape as `[B, 512, 16]`.
pub fn shape_text(shape: &[Dim]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Where a node lives: the top-level graph, or one arm of a cond node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Region {
    Main,
    /// Arm of cond `cond`: `then_arm == true` for the `if` branch.
    CondArm {
        cond: usize,
        then_arm: bool,
    },
}

/// What part of a train step a node belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Role {
    /// The forward pass (everything, in a graph without `gradients`).
    #[default]
    Forward,
    /// The backward pass `gradients` built: the adjoints, and forward values it recomputes
    /// rather than keeps.
    Backward,
    /// After the backward pass and reading its gradients: an optimizer's update.
    Update,
}

impl Role {
    /// `forward`, `backward` or `update`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Forward => "forward",
            Role::Backward => "backward",
            Role::Update => "update",
        }
    }
}

/// One operation of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeDef {
    /// Index of this node in [`GraphDef::nodes`].
    pub id: usize,
    /// A readable name: the `let` binding it came from when there is one, else `op_id`.
    pub name: String,
    /// The op, as named in docs/OPS.md (`matmul`, `add`, `input`, `constant`, `cond`...).
    pub op: String,
    /// The nodes this one reads.
    pub inputs: Vec<usize>,
    pub dtype: DType,
    pub shape: Vec<Dim>,
    /// 1-based source line of the expression this node came from.
    pub line: u32,
    /// Extra attributes (`axis`, `stride`, `padding`, a constant's value...).
    pub attrs: Vec<(String, String)>,
    pub region: Region,
    /// The fusion group that computes this node, if it survives optimisation and runs.
    pub group: Option<usize>,
    pub role: Role,
    /// A forward value the backward pass reads (PyTorch's saved tensor): its buffer is
    /// kept from the forward pass until the backward one is done with it.
    pub saved: bool,
}

/// A cond node (`tf.cond`): a predicate, two arms, and the values it outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct CondDef {
    pub id: usize,
    /// The node that computes the rank-0 bool predicate.
    pub predicate: usize,
    /// For each output: (name of the variable, node in the then arm, node in the else arm).
    pub outputs: Vec<(String, usize, usize)>,
    /// The node in the main graph (op `cond`) that stands for the cond's results.
    pub node: usize,
}

/// A fusion group: the nodes computed by one kernel call (one loop, or one matmul with its epilogue).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupDef {
    pub id: usize,
    /// `elementwise`, `reduce`, `matmul`, `conv2d`, `softmax`, `transpose`, `view`, `scalar`...
    pub kind: String,
    /// The nodes fused into this group, in evaluation order; the last one is the result.
    pub nodes: Vec<usize>,
    /// The node whose value the group writes.
    pub output: usize,
    /// The buffer slot the output is written to (`None` for graph outputs, which are fresh arrays, and views).
    pub buffer: Option<usize>,
    /// Whether the group overwrites one of its dead inputs in place.
    pub in_place: bool,
    pub region: Region,
    /// For a `conv2d` group: the all-axes reduction group (`norm`, `reduce_sum`,
    /// `reduce_mean` of its f32 result) whose partial sums its kernel records while each
    /// block of the output is in cache; the reduction reads back only what was not recorded.
    pub records_for: Option<usize>,
}

/// One reusable buffer of the static plan; several values with disjoint lifetimes share it.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferDef {
    pub id: usize,
    pub dtype: DType,
    /// Element count as a formula in the symbols (the largest of the values it holds).
    pub size: String,
    /// The nodes whose values live in this buffer, in schedule order.
    pub values: Vec<usize>,
}

/// An input of the graph (a parameter of the `#[graph]` function).
#[derive(Debug, Clone, PartialEq)]
pub struct InputDef {
    pub name: String,
    /// `None` for host parameters (plain Rust values).
    pub dtype: Option<DType>,
    pub shape: Vec<Dim>,
    pub node: Option<usize>,
    /// For a parameter the function updates in place (`w: &mut Tensor<..>`) and reassigns:
    /// the node whose value is written into the caller's array at the end.
    pub written_from: Option<usize>,
}

/// The whole compiled graph of one `#[graph]` function.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphDef {
    pub name: String,
    pub inputs: Vec<InputDef>,
    pub nodes: Vec<NodeDef>,
    pub conds: Vec<CondDef>,
    pub groups: Vec<GroupDef>,
    /// Group ids in the order they run (arms of a cond run in place of the cond's entry).
    pub schedule: Vec<usize>,
    pub buffers: Vec<BufferDef>,
    /// The nodes returned, in order.
    pub outputs: Vec<usize>,
    /// The optimisation passes that ran, in order.
    pub passes: Vec<String>,
}

impl GraphDef {
    /// The node named `name`, if any.
    pub fn node(&self, name: &str) -> Option<&NodeDef> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The groups of one kind (`"elementwise"`, `"matmul"`...).
    pub fn groups_of(&self, kind: &str) -> Vec<&GroupDef> {
        self.groups.iter().filter(|g| g.kind == kind).collect()
    }

    /// The nodes of one role, by id.
    pub fn nodes_of(&self, role: Role) -> Vec<&NodeDef> {
        self.nodes.iter().filter(|n| n.role == role).collect()
    }

    /// The forward values the backward pass reads.
    pub fn saved(&self) -> Vec<&NodeDef> {
        self.nodes.iter().filter(|n| n.saved).collect()
    }

    /// The ops of a group's nodes, in order.
    pub fn group_ops(&self, group: usize) -> Vec<&str> {
        self.groups[group]
            .nodes
            .iter()
            .map(|&n| self.nodes[n].op.as_str())
            .collect()
    }
}
