//! grafo's run-time: the parallel kernels compiled graphs call, the eager API, `Session`, and the graph description types.

// Every unsafe operation sits in its own `unsafe` block with a `// SAFETY:` comment saying why
// it holds (clippy's `-D warnings` in CI makes a missing one an error); every `unsafe fn`
// documents its contract in a `# Safety` section.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod buffer;
pub mod compiled;
pub mod conv;
pub mod conv_general;
pub mod conv_pool;
pub mod cpu;
pub mod describe;
pub mod division;
pub mod dot;
pub mod dtype;
pub mod eager;
pub mod elementwise;
pub mod error;
pub mod exec;
pub mod graph;
pub mod layout;
pub mod math;
pub mod matmul;
pub mod matmul_nd;
pub mod pages;
pub mod parallel;
pub mod pool;
pub mod profile;
pub mod reduce;
pub mod reduce_blocks;
pub mod selection;
pub mod session;
pub mod softmax;
pub mod tensorboard;

pub use dtype::{DType, Element, Float, Numeric};
pub use error::Error;
pub use graph::{BufferDef, CondDef, Dim, GraphDef, GroupDef, InputDef, NodeDef, Region};
