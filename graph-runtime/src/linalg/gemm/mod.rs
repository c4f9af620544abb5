//! Batched matrix multiplication with a fused epilogue: row blocks of the output run in parallel, each GEMM'd single-threaded and then handed to the epilogue while still in cache.
//!
//! The GEMM core is our own packed GEMM for floats (the BLIS loops around a 24x16 f32 /
//! 24x8 f64 AVX-512 or a 6x16 / 6x8 AVX2+FMA micro-kernel picked at run time, or a portable
//! one; its packing buffers come from a pool, so steady-state products allocate nothing) and
//! a small blocked loop for integers. Parallelism is ours: the output rows of every batch
//! are cut into blocks ([`block_plan`]), the blocks run on rayon, and each block is finished
//! (GEMM, then epilogue) before the thread moves on, so a fused bias or activation touches
//! the block while it is still in L2. Short, wide products also split each block into
//! column panels that run in parallel before the block's epilogue; a short product with a
//! large, deep `b` (GPT-2's projections) is one block cut into a panel a thread, so that
//! `b` is packed once a call, and its epilogue then runs on rows in parallel.
//!
//! conv2d's f32 kernel lives here too ([`GemmElement::gemm_gather`]): the same AVX-512 or
//! AVX2+FMA micro-kernels with their left operand gathered through an offset table, so
//! input patches are read in place rather than copied.
//!
//! The files, from the entry point down:
//! - `parallel.rs`: [`matmul_into`], the batches, row blocks and column panels on rayon;
//! - `plan.rs`: how the output is cut ([`block_plan`]) and the cutoffs that decide it;
//! - `element.rs`: [`GemmElement`], each element type on its core (integers on their own loop);
//! - `blis.rs`: the float core: the BLIS loops around a micro-kernel, the packing buffers, and
//!   the choice of micro-kernel for this CPU;
//! - `pack.rs`: packing `a` and `b` into micro-panels;
//! - `kernel.rs`: the micro-kernel trait and the sources a tile reads `a` from;
//! - `portable.rs`, `avx2.rs`, `avx512.rs`: the micro-kernels, one file per instruction set
//!   (a new one implements `Kernel` in a file of its own and joins the dispatch in `blis.rs`);
//!   `avx512_wide.rs`: AVX-512's own f32 driver on 6 x 64 tiles;
//! - `gather.rs`: conv2d's f32 GEMM over a gathered left operand;
//! - `scratch.rs`: [`ScratchPool`], the scratch buffers every thread borrows from (im2col rows,
//!   reordered kernels, pre-packed operands), provisioned before each parallel loop.

#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
mod avx2;
#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
mod avx512;
#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
mod avx512_wide;
mod blis;
mod element;
mod gather;
mod kernel;
mod pack;
mod parallel;
mod plan;
mod portable;
mod scratch;

pub use element::{GemmElement, PrepackedB, Scratch};
pub use parallel::{matmul_into, no_epilogue};
pub use plan::{
    block_plan, col_align, gemm_row_align, row_align, BlockPlan, MatmulDims, BLOCK_ELEMENTS,
    COLUMN_SPLIT_BELOW_ROWS, DEEP_K, LARGE_B_MIN_ROWS, MIN_BLOCK_MACS, MIN_BLOCK_ROWS,
    MIN_PANEL_COLS, PREPACK_MAX_BYTES, SEQUENTIAL_MACS,
};
pub use scratch::ScratchPool;
