//! grafo's run-time: the parallel kernels compiled graphs call, the eager API, `Session`, and the graph description types.
//!
//! One folder per role, imports running one way (each room uses only those listed before it):
//!
//! - [`dtype`], [`error`]: the element types and the error every fallible call returns;
//! - [`exec`]: where work runs and values live: CPU dispatch and `multiversion!`, the
//!   parallel drivers, buffers and output buffers, the helpers emitted code calls, the
//!   execution context of a compiled graph, [`Session`](exec::session::Session) and its profile;
//! - [`kernels`]: the kernels over flat buffers (math, elementwise, division, reductions,
//!   softmax, layout, selection, pooling): a new op's kernel goes in its family's file;
//! - [`linalg`]: the GEMM ([`linalg::gemm`], one file per instruction set's micro-kernels),
//!   batched products and the convolutions;
//! - [`eager`]: every op run at once over ndarray arrays, on those kernels;
//! - [`graph`]: the graph as data ([`GraphDef`]), the static tables it is built from and its
//!   exports (DOT, TensorBoard); it uses nothing but `dtype` and `error`;
//! - [`checkpoint`], [`init`]: the parameter structs' safetensors files and initialisers,
//!   called by the code `#[graph]` emits for a struct; they use `dtype` and `error`;
//! - [`layers`]: the layers library's parameter structs (`Dense<IN, OUT>`, `Conv2d<..>`...),
//!   over `checkpoint` and `init`.
//!
//! Code emitted by `#[graph]` and the tests name modules by their flat paths
//! (`graph_runtime::matmul`, `::grafo::__private::compiled`...): each is re-exported at the
//! root under its old name.

// Every unsafe operation sits in its own `unsafe` block with a `// SAFETY:` comment saying why
// it holds (clippy's `-D warnings` in CI makes a missing one an error); every `unsafe fn`
// documents its contract in a `# Safety` section.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod checkpoint;
pub mod dtype;
pub mod eager;
pub mod error;
pub mod exec;
pub mod graph;
pub mod init;
pub mod kernels;
pub mod layers;
pub mod linalg;

#[cfg(test)]
mod miri_checks;

// Flat paths the emitted code and the tests use (`::grafo::__private::compiled::check_dim`,
// `graph_runtime::parallel::for_each_chunk`...): each moved module under its old name.
// `exec::{ExecCtx, Arena, ...}` and `graph::{GraphDef, ...}` are re-exported by their folders.
#[doc(no_inline)]
pub use exec::{buffer, compiled, cpu, pages, parallel, profile, session};
#[doc(no_inline)]
pub use graph::{describe, dot, tensorboard};
#[doc(no_inline)]
pub use kernels::{
    division, elementwise, layout, math, pool, pool_grad, reduce, reduce_blocks, scatter,
    selection, softmax,
};
#[doc(no_inline)]
pub use linalg::gemm as matmul;
#[doc(no_inline)]
pub use linalg::{conv, conv_backprop, conv_general, conv_pool, matmul_nd};

pub use dtype::{DType, Element, Float, Numeric};
pub use error::Error;
pub use graph::{BufferDef, CondDef, Dim, GraphDef, GroupDef, InputDef, NodeDef, Region, Role};
