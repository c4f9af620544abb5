//! Batched matrix multiplication with a fused epilogue: row blocks of the output run in parallel, each GEMM'd single-threaded and then handed to the epilogue while still in cache.
//!
//! The GEMM core is `matrixmultiply` (AVX2/FMA and AVX-512 kernels picked at run time)
//! for floats and a small blocked loop for integers. Parallelism is ours: the output rows
//! of every batch are cut into blocks, the blocks run on rayon, and each block is finished
//! (GEMM, then epilogue) by one thread, so a fused bias or activation touches the block
//! while it is still in L2.

use rayon::prelude::*;

use crate::dtype::Numeric;

/// Below this many multiply-adds (`batch * m * k * n`) the whole product runs on the
/// calling thread: waking rayon costs more than the arithmetic.
pub const SEQUENTIAL_MACS: usize = 1 << 16;

/// A block of output rows should carry at least this many multiply-adds, so that the
/// GEMM core's fixed costs (packing the right operand) stay small next to the work.
pub const MIN_BLOCK_MACS: usize = 1 << 18;

/// How many blocks each rayon thread should get at least, for load balance.
pub const BLOCKS_PER_THREAD: usize = 4;

/// Block row counts are rounded up to a multiple of this (the GEMM micro-kernel's row count).
pub const ROW_ALIGN: usize = 8;

/// Element types the GEMM core handles: `f32`, `f64`, `i32`, `i64`.
pub trait GemmElement: Numeric {
    /// `out[m, n] = a[m, k] * b[k, n]`, all row-major and contiguous, single-threaded.
    ///
    /// `out` is overwritten (never read); `k` may be zero, which gives zeros.
    fn gemm_block(m: usize, k: usize, n: usize, a: &[Self], b: &[Self], out: &mut [Self]);

    /// Runs `f` on this thread's scratch buffer of `Self`, grown to at least `len` elements.
    ///
    /// The buffer lives as long as the thread, so steady-state kernels (conv2d's im2col)
    /// allocate nothing. `f` must not call `with_scratch` again (the buffer is borrowed).
    fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [Self]) -> R) -> R;
}

/// Implements [`GemmElement::with_scratch`] with one thread-local vector per type.
macro_rules! scratch_impl {
    ($t:ty) => {
        #[inline]
        fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [$t]) -> R) -> R {
            thread_local! {
                static SCRATCH: std::cell::RefCell<Vec<$t>> = const { std::cell::RefCell::new(Vec::new()) };
            }
            SCRATCH.with(|cell| {
                let mut buf = cell.borrow_mut();
                if buf.len() < len {
                    buf.resize(len, <$t>::default());
                }
                f(&mut buf[..len])
            })
        }
    };
}

impl GemmElement for f32 {
    scratch_impl!(f32);

    #[inline]
    fn gemm_block(m: usize, k: usize, n: usize, a: &[f32], b: &[f32], out: &mut [f32]) {
        check_block(m, k, n, a.len(), b.len(), out.len());
        if k == 0 {
            out.fill(0.0);
            return;
        }
        // SAFETY: the slices hold m*k, k*n and m*n elements (checked above), and the
        // strides describe row-major contiguous matrices inside them.
        unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr(),
                k as isize,
                1,
                b.as_ptr(),
                n as isize,
                1,
                0.0,
                out.as_mut_ptr(),
                n as isize,
                1,
            );
        }
    }
}

impl GemmElement for f64 {
    scratch_impl!(f64);

    #[inline]
    fn gemm_block(m: usize, k: usize, n: usize, a: &[f64], b: &[f64], out: &mut [f64]) {
        check_block(m, k, n, a.len(), b.len(), out.len());
        if k == 0 {
            out.fill(0.0);
            return;
        }
        // SAFETY: as for f32.
        unsafe {
            matrixmultiply::dgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr(),
                k as isize,
                1,
                b.as_ptr(),
                n as isize,
                1,
                0.0,
                out.as_mut_ptr(),
                n as isize,
                1,
            );
        }
    }
}

impl GemmElement for i32 {
    scratch_impl!(i32);

    #[inline]
    fn gemm_block(m: usize, k: usize, n: usize, a: &[i32], b: &[i32], out: &mut [i32]) {
        check_block(m, k, n, a.len(), b.len(), out.len());
        int_gemm_i32(m, k, n, a, b, out);
    }
}

impl GemmElement for i64 {
    scratch_impl!(i64);

    #[inline]
    fn gemm_block(m: usize, k: usize, n: usize, a: &[i64], b: &[i64], out: &mut [i64]) {
        check_block(m, k, n, a.len(), b.len(), out.len());
        int_gemm_i64(m, k, n, a, b, out);
    }
}

/// Panics (an internal bug, never a user error) if a block's slices are too short.
#[inline(always)]
fn check_block(m: usize, k: usize, n: usize, a: usize, b: usize, out: usize) {
    assert!(
        a >= m * k && b >= k * n && out >= m * n,
        "gemm block operands too short"
    );
}

/// Rows of `b` read per pass of the integer loop: a slab of `b` stays in L1/L2 across the rows of `a`.
const INT_K_BLOCK: usize = 128;

/// Integer GEMM with wrapping arithmetic: `out = a * b`, loop order k-block, i, k, j so
/// that the innermost loop is a contiguous axpy LLVM vectorises.
#[inline(always)]
fn int_gemm_generic<T: Numeric>(m: usize, k: usize, n: usize, a: &[T], b: &[T], out: &mut [T]) {
    let out = &mut out[..m * n];
    out.fill(T::ZERO);
    let mut k0 = 0;
    while k0 < k {
        let k1 = (k0 + INT_K_BLOCK).min(k);
        for i in 0..m {
            let a_row = &a[i * k..i * k + k];
            let o_row = &mut out[i * n..i * n + n];
            for p in k0..k1 {
                let av = a_row[p];
                let b_row = &b[p * n..p * n + n];
                for (o, &bv) in o_row.iter_mut().zip(b_row) {
                    *o = o.add(av.mul(bv));
                }
            }
        }
        k0 = k1;
    }
}

crate::multiversion! {
    fn int_gemm_i32(m: usize, k: usize, n: usize, a: &[i32], b: &[i32], out: &mut [i32]) {
        int_gemm_generic(m, k, n, a, b, out)
    }
}

crate::multiversion! {
    fn int_gemm_i64(m: usize, k: usize, n: usize, a: &[i64], b: &[i64], out: &mut [i64]) {
        int_gemm_generic(m, k, n, a, b, out)
    }
}

/// The sizes of a (batched) product `out[b] = a[b] * b[b]`, each operand row-major and contiguous.
#[derive(Debug, Clone, Copy)]
pub struct MatmulDims {
    pub batch: usize,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    /// Elements between two batches of `a` (`m * k`), or 0 to use one matrix for every batch.
    pub a_batch_stride: usize,
    /// Elements between two batches of `b` (`k * n`), or 0 to use one matrix for every batch.
    pub b_batch_stride: usize,
}

impl MatmulDims {
    /// An unbatched product `[m, k] x [k, n]`.
    pub fn single(m: usize, k: usize, n: usize) -> MatmulDims {
        MatmulDims {
            batch: 1,
            m,
            k,
            n,
            a_batch_stride: m * k,
            b_batch_stride: k * n,
        }
    }

    /// Multiply-adds of the whole product.
    pub fn macs(&self) -> usize {
        self.batch
            .saturating_mul(self.m)
            .saturating_mul(self.k)
            .saturating_mul(self.n)
    }
}

/// The epilogue that does nothing, for plain products.
#[inline(always)]
pub fn no_epilogue<T>(_: usize, _: usize, _: &mut [T]) {}

/// How many output rows one parallel block holds, for a product of `m` rows of `k * n` work each.
pub fn rows_per_block(m: usize, k: usize, n: usize, batch: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    let per_row = k.max(1).saturating_mul(n.max(1));
    // Enough blocks in all for load balance, counting every batch.
    let wanted_blocks = threads * BLOCKS_PER_THREAD;
    let per_batch = wanted_blocks.div_ceil(batch.max(1)).max(1);
    let balanced = m.div_ceil(per_batch);
    // But never so few rows that the GEMM core's fixed costs dominate.
    let floor = MIN_BLOCK_MACS.div_ceil(per_row);
    let rows = balanced.max(floor).max(1);
    rows.div_ceil(ROW_ALIGN) * ROW_ALIGN
}

/// `out[b] = a[b] * b[b]` for every batch `b`, then `epilogue(b, first_row, block)` on each
/// finished block of rows (`block` holds `rows * n` elements of batch `b`, starting at row
/// `first_row`). Every output element is passed to the epilogue exactly once.
///
/// Panics if a slice is shorter than `dims` says (the callers check shapes first).
pub fn matmul_into<T: GemmElement, E>(
    a: &[T],
    b: &[T],
    out: &mut [T],
    dims: MatmulDims,
    epilogue: E,
) where
    E: Fn(usize, usize, &mut [T]) + Sync,
{
    let MatmulDims { batch, m, k, n, .. } = dims;
    let a_len = operand_len(batch, dims.a_batch_stride, m * k);
    let b_len = operand_len(batch, dims.b_batch_stride, k * n);
    assert!(
        a.len() >= a_len && b.len() >= b_len && out.len() >= batch * m * n,
        "matmul_into: operands shorter than {dims:?}"
    );
    let out = &mut out[..batch * m * n];
    if out.is_empty() {
        return;
    }
    let a_of = |bi: usize| &a[bi * dims.a_batch_stride..][..m * k];
    let b_of = |bi: usize| &b[bi * dims.b_batch_stride..][..k * n];

    if dims.macs() < SEQUENTIAL_MACS {
        // Tiny product: one block per batch, on this thread.
        for (bi, out_b) in out.chunks_mut(m * n).enumerate() {
            T::gemm_block(m, k, n, a_of(bi), b_of(bi), out_b);
            epilogue(bi, 0, out_b);
        }
        return;
    }

    let rows = rows_per_block(m, k, n, batch);
    // LOOP 1 (parallel): over the batches.
    out.par_chunks_mut(m * n)
        .enumerate()
        .for_each(|(bi, out_b)| {
            let (a_b, b_b) = (a_of(bi), b_of(bi));
            // LOOP 2 (parallel): over blocks of `rows` output rows of this batch.
            out_b
                .par_chunks_mut(rows * n)
                .enumerate()
                .for_each(|(blk, out_blk)| {
                    let r0 = blk * rows;
                    let r = out_blk.len() / n;
                    // LOOP 3 (inside the GEMM core, single-threaded): k panels, n panels, micro-kernels.
                    T::gemm_block(r, k, n, &a_b[r0 * k..(r0 + r) * k], b_b, out_blk);
                    // The block is still in cache: fuse the tail now.
                    epilogue(bi, r0, out_blk);
                });
        });
}

/// Elements an operand must hold: its last batch's offset plus one matrix.
fn operand_len(batch: usize, stride: usize, matrix: usize) -> usize {
    if batch == 0 {
        0
    } else {
        (batch - 1) * stride + matrix
    }
}
