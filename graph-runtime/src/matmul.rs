//! Batched matrix multiplication with a fused epilogue: row blocks of the output run in parallel, each GEMM'd single-threaded and then handed to the epilogue while still in cache.
//!
//! The GEMM core is `matrixmultiply` (its AVX2+FMA kernels are picked at run time) for
//! floats and a small blocked loop for integers. Parallelism is ours: the output rows of
//! every batch are cut into blocks ([`block_plan`]), the blocks run on rayon, and each block
//! is finished (GEMM, then epilogue) before the thread moves on, so a fused bias or
//! activation touches the block while it is still in L2. Short, wide products also split
//! each block into column panels that run in parallel before the block's epilogue.
//!
//! conv2d's f32 kernel lives here too ([`GemmElement::gemm_gather`]): a 6x16 AVX2+FMA
//! micro-kernel whose left operand is gathered through an offset table, so input patches
//! are read in place rather than copied.

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

/// A row block should be at least this tall: the GEMM core packs the whole right operand
/// for every call, and the block's rows amortise that copy.
pub const MIN_BLOCK_ROWS: usize = 128;

/// When row blocks alone are too few to keep every thread busy, each is also split into
/// column panels of at least this many columns (a multiple of `COL_ALIGN`).
pub const MIN_PANEL_COLS: usize = 64;

/// Column panel widths are rounded up to a multiple of this (the micro-kernel's column count).
pub const COL_ALIGN: usize = 16;

/// Element types the GEMM core handles: `f32`, `f64`, `i32`, `i64`.
pub trait GemmElement: Numeric {
    /// `c[m, n] = a[m, k] * b[k, n]`, single-threaded, each matrix row-major with its own
    /// row stride (`lda`, `ldb`, `ldc` elements) and contiguous rows.
    ///
    /// `c` is overwritten (never read); `k` may be zero, which gives zeros.
    ///
    /// # Safety
    /// The three pointers must be valid for the extents the sizes and strides describe, and
    /// no other thread may touch those elements of `c` during the call.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_strided(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        lda: usize,
        b: *const Self,
        ldb: usize,
        c: *mut Self,
        ldc: usize,
    );

    /// `out[m, n] = a[m, k] * b[k, n]`, all row-major and contiguous, single-threaded.
    ///
    /// `out` is overwritten (never read); `k` may be zero, which gives zeros.
    #[inline]
    fn gemm_block(m: usize, k: usize, n: usize, a: &[Self], b: &[Self], out: &mut [Self]) {
        check_block(m, k, n, a.len(), b.len(), out.len());
        // SAFETY: the slices hold m*k, k*n and m*n elements (checked above).
        unsafe { Self::gemm_strided(m, k, n, a.as_ptr(), k, b.as_ptr(), n, out.as_mut_ptr(), n) }
    }

    /// Runs `f` on this thread's scratch buffer of `Self`, grown to at least `len` elements.
    ///
    /// The buffer lives as long as the thread, so steady-state kernels (conv2d's im2col)
    /// allocate nothing. `f` must not call `with_scratch` again nor wait on rayon work
    /// (a stolen task on this thread could reach for the borrowed buffer).
    fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [Self]) -> R) -> R;

    /// Whether [`gemm_gather`](GemmElement::gemm_gather) has a fast kernel for `n` output columns on this CPU.
    #[inline]
    fn has_gather_kernel(n: usize) -> bool {
        let _ = n;
        false
    }

    /// `out[r, j] = sum_p src[rows[r] + cols[p]] * b[p, j]`: a GEMM whose left operand is
    /// gathered from `src` (row `r` starts at `rows[r]`, column `p` sits `cols[p]` further),
    /// so conv2d reads input patches in place instead of copying them (im2col).
    ///
    /// Only called when [`has_gather_kernel`](GemmElement::has_gather_kernel) said yes.
    /// Panics if an index falls outside a slice.
    #[inline]
    fn gemm_gather(
        src: &[Self],
        rows: &[usize],
        cols: &[usize],
        b: &[Self],
        n: usize,
        out: &mut [Self],
    ) {
        let _ = (src, rows, cols, b, n, out);
        unreachable!("gemm_gather without a kernel");
    }
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
    fn has_gather_kernel(n: usize) -> bool {
        gather_f32::supported(n)
    }

    #[inline]
    fn gemm_gather(
        src: &[f32],
        rows: &[usize],
        cols: &[usize],
        b: &[f32],
        n: usize,
        out: &mut [f32],
    ) {
        gather_f32::gemm_gather(src, rows, cols, b, n, out)
    }

    #[inline]
    unsafe fn gemm_strided(
        m: usize,
        k: usize,
        n: usize,
        a: *const f32,
        lda: usize,
        b: *const f32,
        ldb: usize,
        c: *mut f32,
        ldc: usize,
    ) {
        if k == 0 {
            zero_rows(m, n, c, ldc);
            return;
        }
        // SAFETY: the caller vouches for the extents; matrixmultiply does not read `c` when beta is 0.
        unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                a,
                lda as isize,
                1,
                b,
                ldb as isize,
                1,
                0.0,
                c,
                ldc as isize,
                1,
            );
        }
    }
}

impl GemmElement for f64 {
    scratch_impl!(f64);

    #[inline]
    unsafe fn gemm_strided(
        m: usize,
        k: usize,
        n: usize,
        a: *const f64,
        lda: usize,
        b: *const f64,
        ldb: usize,
        c: *mut f64,
        ldc: usize,
    ) {
        if k == 0 {
            zero_rows(m, n, c, ldc);
            return;
        }
        // SAFETY: the caller vouches for the extents; matrixmultiply does not read `c` when beta is 0.
        unsafe {
            matrixmultiply::dgemm(
                m,
                k,
                n,
                1.0,
                a,
                lda as isize,
                1,
                b,
                ldb as isize,
                1,
                0.0,
                c,
                ldc as isize,
                1,
            );
        }
    }
}

impl GemmElement for i32 {
    scratch_impl!(i32);

    #[inline]
    unsafe fn gemm_strided(
        m: usize,
        k: usize,
        n: usize,
        a: *const i32,
        lda: usize,
        b: *const i32,
        ldb: usize,
        c: *mut i32,
        ldc: usize,
    ) {
        int_gemm_i32(m, k, n, a, lda, b, ldb, c, ldc);
    }
}

impl GemmElement for i64 {
    scratch_impl!(i64);

    #[inline]
    unsafe fn gemm_strided(
        m: usize,
        k: usize,
        n: usize,
        a: *const i64,
        lda: usize,
        b: *const i64,
        ldb: usize,
        c: *mut i64,
        ldc: usize,
    ) {
        int_gemm_i64(m, k, n, a, lda, b, ldb, c, ldc);
    }
}

/// Writes zeros into `m` rows of `n` elements, `ldc` apart.
///
/// # Safety
/// As for [`GemmElement::gemm_strided`].
unsafe fn zero_rows<T: Numeric>(m: usize, n: usize, c: *mut T, ldc: usize) {
    for i in 0..m {
        // SAFETY: row i of `c` is valid for n elements (the caller's contract).
        unsafe { std::slice::from_raw_parts_mut(c.add(i * ldc), n) }.fill(T::ZERO);
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

/// Integer GEMM with wrapping arithmetic: `c = a * b`, loop order k-block, i, k, j so
/// that the innermost loop is a contiguous axpy LLVM vectorises.
///
/// # Safety
/// As for [`GemmElement::gemm_strided`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn int_gemm_generic<T: Numeric>(
    m: usize,
    k: usize,
    n: usize,
    a: *const T,
    lda: usize,
    b: *const T,
    ldb: usize,
    c: *mut T,
    ldc: usize,
) {
    // SAFETY (all row slices below): the caller vouches for these extents.
    unsafe { zero_rows(m, n, c, ldc) };
    let mut k0 = 0;
    while k0 < k {
        let k1 = (k0 + INT_K_BLOCK).min(k);
        for i in 0..m {
            let a_row = unsafe { std::slice::from_raw_parts(a.add(i * lda), k) };
            let c_row = unsafe { std::slice::from_raw_parts_mut(c.add(i * ldc), n) };
            for (p, &av) in a_row.iter().enumerate().take(k1).skip(k0) {
                let b_row = unsafe { std::slice::from_raw_parts(b.add(p * ldb), n) };
                for (o, &bv) in c_row.iter_mut().zip(b_row) {
                    *o = o.add(av.mul(bv));
                }
            }
        }
        k0 = k1;
    }
}

// The integer kernels take raw pointers: they are private, and their callers uphold
// `gemm_strided`'s contract.
crate::multiversion! {
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn int_gemm_i32(m: usize, k: usize, n: usize, a: *const i32, lda: usize, b: *const i32, ldb: usize, c: *mut i32, ldc: usize) {
        // SAFETY: see above.
        unsafe { int_gemm_generic(m, k, n, a, lda, b, ldb, c, ldc) }
    }
}

crate::multiversion! {
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn int_gemm_i64(m: usize, k: usize, n: usize, a: *const i64, lda: usize, b: *const i64, ldb: usize, c: *mut i64, ldc: usize) {
        // SAFETY: see above.
        unsafe { int_gemm_generic(m, k, n, a, lda, b, ldb, c, ldc) }
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

/// How the output of one batch is cut for the threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockPlan {
    /// Output rows per block; the epilogue sees one whole block.
    pub rows: usize,
    /// Columns per panel inside a block (`>= n` when blocks are not split); panels run in parallel.
    pub cols: usize,
}

/// Plans the blocks of a product of `batch` matrices `[m, k] x [k, n]`.
pub fn block_plan(m: usize, k: usize, n: usize, batch: usize) -> BlockPlan {
    let threads = rayon::current_num_threads().max(1);
    let per_row = k.max(1).saturating_mul(n.max(1));
    // Enough tasks in all for load balance, counting every batch.
    let per_batch = (threads * BLOCKS_PER_THREAD).div_ceil(batch.max(1)).max(1);
    // Row blocks: as many as wanted, but tall and heavy enough to amortise packing `b`.
    let rows = m
        .div_ceil(per_batch)
        .max(MIN_BLOCK_ROWS)
        .max(MIN_BLOCK_MACS.div_ceil(per_row));
    let rows = (rows.div_ceil(ROW_ALIGN) * ROW_ALIGN).min(m.max(1));
    // Column panels make up for missing row blocks, each still wide and heavy enough.
    let block_macs = rows.saturating_mul(per_row);
    let panels = per_batch
        .div_ceil(m.div_ceil(rows).max(1))
        .min(n / MIN_PANEL_COLS)
        .min(block_macs / MIN_BLOCK_MACS)
        .max(1);
    let cols = n.div_ceil(panels).div_ceil(COL_ALIGN) * COL_ALIGN;
    BlockPlan {
        rows,
        cols: cols.max(n.min(COL_ALIGN)),
    }
}

/// A raw pointer that may cross threads: the column panels of one block write disjoint columns.
#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);

// SAFETY: only used for disjoint writes, see `row_block`.
unsafe impl<T: Send> Send for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SendPtr<T> {}

impl<T> SendPtr<T> {
    /// The pointer (a method, so closures capture the whole wrapper).
    fn get(self) -> *mut T {
        self.0
    }
}

/// `out_blk[r, n] = a_rows[r, k] * b[k, n]`, split into column panels of `cols` that run in parallel.
fn row_block<T: GemmElement>(
    a_rows: &[T],
    b: &[T],
    out_blk: &mut [T],
    k: usize,
    n: usize,
    cols: usize,
) {
    let r = out_blk.len() / n;
    if cols >= n {
        T::gemm_block(r, k, n, a_rows, b, out_blk);
        return;
    }
    assert!(a_rows.len() >= r * k && b.len() >= k * n && out_blk.len() == r * n);
    let c = SendPtr(out_blk.as_mut_ptr());
    // LOOP 3 (parallel): over column panels of the block.
    (0..n.div_ceil(cols)).into_par_iter().for_each(|p| {
        let j0 = p * cols;
        let w = cols.min(n - j0);
        // SAFETY: the slices hold r*k, k*n and r*n elements (asserted above); panel p
        // reads columns j0..j0+w of `b` and is the only writer of those columns of `out_blk`.
        unsafe {
            T::gemm_strided(
                r,
                k,
                w,
                a_rows.as_ptr(),
                k,
                b.as_ptr().add(j0),
                n,
                c.get().add(j0),
                n,
            )
        }
    });
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

    let plan = block_plan(m, k, n, batch);
    let rows = plan.rows;
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
                    // LOOP 3 (parallel, when planned) over column panels; LOOP 4 (inside the
                    // GEMM core, single-threaded): k panels, n panels, micro-kernels.
                    row_block(&a_b[r0 * k..(r0 + r) * k], b_b, out_blk, k, n, plan.cols);
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

/// The f32 gather-GEMM micro-kernel (AVX2+FMA): `GATHER_MR` rows by 8 or 16 columns held in registers.
mod gather_f32 {
    use crate::cpu::{level, Level};

    /// Rows of the micro-tile: 6 rows x 16 columns is 12 accumulators, plus 2 for a row of
    /// `b` and 1 broadcast: 15 of the 16 AVX2 registers.
    pub const GATHER_MR: usize = 6;

    /// Column counts the kernel takes: whole 8-lane vectors.
    pub fn supported(n: usize) -> bool {
        n > 0 && n.is_multiple_of(8) && level() >= Level::Avx2Fma
    }

    pub fn gemm_gather(
        src: &[f32],
        rows: &[usize],
        cols: &[usize],
        b: &[f32],
        n: usize,
        out: &mut [f32],
    ) {
        let k = cols.len();
        // Validate every index once, so the kernel can read unchecked.
        let max_row = rows.iter().copied().max().unwrap_or(0);
        let max_col = cols.iter().copied().max().unwrap_or(0);
        assert!(
            supported(n)
                && out.len() >= rows.len() * n
                && b.len() >= k * n
                && (rows.is_empty() || k == 0 || max_row + max_col < src.len()),
            "gemm_gather: index out of range"
        );
        #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
        // SAFETY: `supported` checked AVX2+FMA; the assert above bounds every index.
        unsafe {
            avx2::driver(src, rows, cols, b, n, out)
        }
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    mod avx2 {
        #[cfg(target_arch = "x86")]
        use std::arch::x86::*;
        #[cfg(target_arch = "x86_64")]
        use std::arch::x86_64::*;

        use super::GATHER_MR;

        /// LOOP 1: column panels of 16 (then 8); LOOP 2: tiles of `GATHER_MR` rows.
        #[target_feature(enable = "avx2,fma")]
        pub unsafe fn driver(
            src: &[f32],
            rows: &[usize],
            cols: &[usize],
            b: &[f32],
            n: usize,
            out: &mut [f32],
        ) {
            let mut j0 = 0;
            while j0 < n {
                let wide = n - j0 >= 16;
                let mut r0 = 0;
                while r0 < rows.len() {
                    let mr = (rows.len() - r0).min(GATHER_MR);
                    // A short tile repeats its last row; only `mr` rows are stored.
                    let mut tile = [rows[r0 + mr - 1]; GATHER_MR];
                    tile[..mr].copy_from_slice(&rows[r0..r0 + mr]);
                    let o = out.as_mut_ptr().add(r0 * n + j0);
                    if wide {
                        tile_kernel::<2>(src.as_ptr(), &tile, cols, b.as_ptr().add(j0), n, o, mr);
                    } else {
                        tile_kernel::<1>(src.as_ptr(), &tile, cols, b.as_ptr().add(j0), n, o, mr);
                    }
                    r0 += mr;
                }
                j0 += if wide { 16 } else { 8 };
            }
        }

        /// LOOP 3: over the shared dimension, one broadcast and `V` FMAs per row and step.
        #[target_feature(enable = "avx2,fma")]
        #[inline]
        unsafe fn tile_kernel<const V: usize>(
            src: *const f32,
            tile: &[usize; GATHER_MR],
            cols: &[usize],
            b: *const f32,
            ldb: usize,
            out: *mut f32,
            mr: usize,
        ) {
            let mut acc = [[_mm256_setzero_ps(); V]; GATHER_MR];
            let bases = tile.map(|r| src.add(r));
            for (p, &c) in cols.iter().enumerate() {
                let mut bv = [_mm256_setzero_ps(); V];
                for (v, slot) in bv.iter_mut().enumerate() {
                    *slot = _mm256_loadu_ps(b.add(p * ldb + 8 * v));
                }
                for r in 0..GATHER_MR {
                    let a = _mm256_broadcast_ss(&*bases[r].add(c));
                    for v in 0..V {
                        acc[r][v] = _mm256_fmadd_ps(a, bv[v], acc[r][v]);
                    }
                }
            }
            for (r, acc_r) in acc.iter().enumerate().take(mr) {
                for (v, acc_v) in acc_r.iter().enumerate() {
                    _mm256_storeu_ps(out.add(r * ldb + 8 * v), *acc_v);
                }
            }
        }
    }
}
