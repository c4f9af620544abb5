//! The graph IR: nodes (ops over tensors) with dtype, shape and the span they came from, plus cond nodes and regions.
//!
//! `span.rs` holds source ranges, `types.rs` dtypes, scalars, dims and shapes, `op.rs` the
//! ops, and `graph.rs` the nodes, conds, parameters and the graph container.

mod graph;
mod op;
mod span;
mod types;

pub use graph::*;
pub use op::*;
pub use span::*;
pub use types::*;
