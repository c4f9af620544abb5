//! The graph description: the compiled graph as data (`NAME::graph()`), the static tables the macro builds it from, and its exports.
//!
//! Nothing here runs a graph: this folder depends only on [`crate::dtype`] and
//! [`crate::error`].
//!
//! - [`def`]: [`GraphDef`] and its parts (nodes, conds, fusion groups, buffers), re-exported here;
//! - [`describe`]: the static rows `#[graph]` writes into the binary, turned into those parts;
//! - [`dot`] and [`tensorboard`]: the Graphviz and TensorBoard exports;
//! - [`memory`]: the bytes the static buffer plan holds, step by step, and its peak.

pub mod def;
pub mod describe;
pub mod dot;
pub mod memory;
pub mod tensorboard;

pub use def::{
    shape_text, BufferDef, CondDef, Dim, GraphDef, GroupDef, InputDef, NodeDef, Region, Role,
};
