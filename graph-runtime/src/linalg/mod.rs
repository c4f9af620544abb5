//! The linear algebra: the GEMM behind `matmul` ([`gemm`]), batched N-D products ([`matmul_nd`]) and the convolutions.
//!
//! Built on [`crate::exec`] and, for the padding modes and the pooling a fused convolution
//! runs, on [`crate::kernels`]; nothing here knows about a session, the eager API or the
//! graph description.
//!
//! - [`gemm`]: the packed GEMM with its fused epilogue, per-ISA micro-kernels and conv2d's
//!   gather kernels (the flat path `matmul` names it);
//! - [`matmul_nd`]: NumPy-style broadcast batches over the GEMM;
//! - [`conv`]: conv2d as im2col or gather + GEMM, with [`conv_plan`]'s blocking for deep
//!   kernels (few pixels, many channels); [`conv_general`]: dilated and depthwise
//!   convolutions (depthwise's vectorised kernel in `depthwise.rs`); [`conv_pool`]: conv2d
//!   and the pooling that follows it in one kernel;
//!   [`conv_backprop`]: the input and filter gradients of all of them.

pub mod conv;
pub mod conv_backprop;
pub mod conv_general;
pub mod conv_plan;
pub mod conv_pool;
mod depthwise;
pub mod gemm;
pub mod matmul_nd;
