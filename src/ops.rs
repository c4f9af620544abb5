//! The op names of docs/OPS.md outside `#[graph]`: the eager ops, `SAME`/`VALID` and `NEAREST`/`BILINEAR`.
//!
//! Inside a `#[graph]` body the macro reads these names itself; outside one, the same names
//! run eagerly (like TensorFlow 2 without `tf.function`).

pub use graph_runtime::conv::{Padding, SAME, VALID};
pub use graph_runtime::eager::*;
pub use graph_runtime::kernels::resize::{ResizeMethod, BILINEAR, NEAREST};
