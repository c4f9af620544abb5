//! grafo's run-time: the parallel kernels compiled graphs call, the eager API, `Session`, and the graph description types.

pub mod buffer;
pub mod compiled;
pub mod conv;
pub mod conv_general;
pub mod cpu;
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
pub mod selection;
pub mod session;
pub mod softmax;
pub mod tensorboard;

pub use dtype::{DType, Element, Float, Numeric};
pub use error::Error;
pub use graph::{BufferDef, CondDef, Dim, GraphDef, GroupDef, InputDef, NodeDef, Region};
