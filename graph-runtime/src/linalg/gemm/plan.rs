//! How a product's output is cut for the threads: the cutoffs, the row and column alignment of the micro-kernels, the sizes of a product and its block plan.

/// Below this many multiply-adds (`batch * m * k * n`) the whole product runs on the
/// calling thread: waking rayon costs more than the arithmetic. (Under Miri, which
/// interprets every element, this and the block sizes below are scaled down, so that the
/// small shapes of `miri_checks` reach the parallel paths.)
pub const SEQUENTIAL_MACS: usize = if cfg!(miri) { 1 << 8 } else { 1 << 16 };

/// A block of output rows should carry at least this many multiply-adds, so that the
/// GEMM core's fixed costs (packing the right operand) stay small next to the work.
pub const MIN_BLOCK_MACS: usize = if cfg!(miri) { 1 << 7 } else { 1 << 18 };

/// A block of output rows holds at most this many elements (1 MiB of f32, half an L2), and
/// with several threads there are at least as many blocks as threads, in whole rounds of
/// them. Fewer blocks read `b` fewer times: with one thread, one block of W2's 256 x 512
/// output instead of four took 256x512x10 from 39 to 61 GFLOP/s and sgemm 256 from 98 to 133
/// (interleaved, p10). With several, each block packs its own slices of `b` into its
/// thread's L2 and uses them there at once; finer blocks for load balance (eight a thread
/// before) cost more than they balanced, each reading `b` again and serving fewer tiles from
/// each packed slice (Xeon with AVX-512, 2 threads: sgemm 1024 7.65 -> 6.25 ms, W2's
/// product 905 -> 672 µs).
pub const BLOCK_ELEMENTS: usize = 1 << 18;

/// Block row counts are rounded up to a multiple of this: the row count of the micro-kernel
/// this CPU runs for f64 products and convolutions (6 for the AVX2 tile, 24 for the tall
/// AVX-512 one, see [`crate::exec::cpu::avx512_tiles`]), so that no block ends in a short tile
/// except the last.
#[inline]
pub fn row_align() -> usize {
    if crate::exec::cpu::avx512_tiles() {
        24
    } else {
        6
    }
}

/// A right operand shared by many row blocks is packed once for all of them only up to this
/// size (or when several batches share it); a larger one is packed by each block into its
/// own thread's L2 (see [`matmul_into`](super::matmul_into)).
pub const PREPACK_MAX_BYTES: usize = 1 << 20;

/// Whether a `k x n` right operand of `T` is small enough to pre-pack once for every row
/// block ([`PREPACK_MAX_BYTES`]); a larger one is packed by each block.
#[inline]
pub(super) fn prepackable<T>(k: usize, n: usize) -> bool {
    k.saturating_mul(n).saturating_mul(std::mem::size_of::<T>()) <= PREPACK_MAX_BYTES
}

/// The row count of the GEMM micro-kernel for `T` on this CPU: the wide 6-row AVX-512
/// tile for `f32`, else [`row_align`]'s.
#[inline]
pub fn gemm_row_align<T: 'static>() -> usize {
    if crate::exec::cpu::wide_tiles()
        && std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()
    {
        super::avx512_wide::MR
    } else {
        row_align()
    }
}

/// A row block should be at least this tall: unless `b` was pre-packed for all blocks, the
/// GEMM core packs the whole right operand for every call, and the block's rows amortise that
/// copy; and each packed micro-panel of `b` serves `MIN_BLOCK_ROWS / MR` micro-kernel calls.
pub const MIN_BLOCK_ROWS: usize = if cfg!(miri) { 6 } else { 60 };

/// A product whose `b` is too large to pre-pack ([`PREPACK_MAX_BYTES`]) and whose shared
/// dimension is at least [`DEEP_K`] gets row blocks at least this tall (when that still leaves
/// one a thread): each block packs all of `b` again, and the 1 MiB output cap of
/// [`BLOCK_ELEMENTS`] would cut sgemm 2048 into 16 blocks of 128 rows that re-read 16 MiB
/// each. On a Zen 4 with AVX-512 (2026-12-04, criterion, alternated x3): sgemm 2048 on 2
/// threads 103–111 ms with blocks of 128 rows, 86–89 ms with 512 (the `gemm` crate 89 ms);
/// on one thread 197–201 ms against 171–173; sgemm 1024 within the noise (11.2 ms either way).
pub const LARGE_B_MIN_ROWS: usize = 512;

/// The shared dimension from which [`LARGE_B_MIN_ROWS`] applies: every output element then
/// carries at least this many multiply-adds, so an epilogue that reads its block back from L3
/// rather than L2 costs next to nothing.
pub const DEEP_K: usize = 256;

/// When row blocks alone are too few to keep every thread busy, each is also split into
/// column panels of at least this many columns (a multiple of [`col_align`]).
pub const MIN_PANEL_COLS: usize = if cfg!(miri) { 16 } else { 64 };

/// Column panel widths are rounded up to a multiple of this: the width of the packed
/// micro-panels of `b` (64 for the wide AVX-512 f32 tiles, 16 otherwise; a multiple of
/// every float kernel's width).
#[inline]
pub fn col_align() -> usize {
    if crate::exec::cpu::wide_tiles() {
        64
    } else {
        16
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

/// How the output of one batch is cut for the threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockPlan {
    /// Output rows per block; the epilogue sees one whole block.
    pub rows: usize,
    /// Columns per panel inside a block (`>= n` when blocks are not split); panels run in parallel.
    pub cols: usize,
}

/// Row blocks shorter than this (with a large, deep `b`) are not made: the product is cut
/// into column panels instead (see [`column_split`]). GPT-2's 128 tokens on two threads
/// (64 rows each) are; W2's 256-row batch (128 each, `b` 1.6 MiB) is left to row blocks,
/// whose `b` stays in cache from call to call.
pub const COLUMN_SPLIT_BELOW_ROWS: usize = 128;

/// The plan for a short product with a large, deep `b` on several threads: one block of all
/// `m` rows cut into one column panel a thread, so that each thread packs only its own
/// columns of `b` and every packed slice serves all the rows. Row blocks would each pack
/// all of `b` for few rows: GPT-2's projections (`m` = 128 tokens, `b` 768 x 2304 and
/// larger, read from DRAM as a model's weights are) packed their 7 MiB weights twice a
/// call, once a thread, for 64 rows each. `None` when the row blocks would be at least
/// [`COLUMN_SPLIT_BELOW_ROWS`] tall, `b` is small enough to pre-pack or shallow, or there
/// are too few columns for a panel a thread.
fn column_split<T: 'static>(
    m: usize,
    k: usize,
    n: usize,
    batch: usize,
    threads: usize,
) -> Option<BlockPlan> {
    let col_align = col_align();
    let short = m.div_ceil(threads) < COLUMN_SPLIT_BELOW_ROWS;
    let wide = n / threads >= col_align.max(MIN_PANEL_COLS);
    if threads < 2 || batch > 1 || prepackable::<T>(k, n) || k < DEEP_K || !short || !wide {
        return None;
    }
    Some(BlockPlan {
        rows: m.max(1),
        cols: n.div_ceil(threads).div_ceil(col_align) * col_align,
    })
}

/// Plans the blocks of a product of `batch` matrices `[m, k] x [k, n]` of `T`, whose rows
/// are aligned to the micro-kernel that will run ([`gemm_row_align`]).
pub fn block_plan<T: 'static>(m: usize, k: usize, n: usize, batch: usize) -> BlockPlan {
    let threads = rayon::current_num_threads().max(1);
    if let Some(plan) = column_split::<T>(m, k, n, batch, threads) {
        return plan;
    }
    let per_row = k.max(1).saturating_mul(n.max(1));
    // Blocks only as many as keep each one's output in cache for the epilogue (each extra
    // block streams `b` from L3 once more), and with several threads at least one a thread.
    let for_cache = m.saturating_mul(n).div_ceil(BLOCK_ELEMENTS).max(1);
    let per_batch = if threads == 1 {
        for_cache
    } else if batch <= 1 {
        for_cache.div_ceil(threads) * threads
    } else {
        for_cache.max(threads.div_ceil(batch))
    };
    // Row blocks: as many as wanted, but tall and heavy enough to amortise packing `b`.
    let rows = m
        .div_ceil(per_batch)
        .max(MIN_BLOCK_ROWS)
        .max(MIN_BLOCK_MACS.div_ceil(per_row));
    // A large `b` is packed whole by every block: deep products take taller blocks, as
    // many as still give each thread one.
    let deep_rows = if !prepackable::<T>(k, n) && k >= DEEP_K {
        LARGE_B_MIN_ROWS.min(m.div_ceil(threads))
    } else {
        0
    };
    // Those blocks are at least one a thread, so they need no column panels.
    let per_batch = if deep_rows > rows { 1 } else { per_batch };
    let rows = rows.max(deep_rows);
    let align = gemm_row_align::<T>();
    let rows = (rows.div_ceil(align) * align).min(m.max(1));
    // Column panels make up for missing row blocks (only whole multiples of them: one row
    // block short of the wanted count is no reason to split every block), each still wide
    // and heavy enough.
    let block_macs = rows.saturating_mul(per_row);
    let panels = (per_batch / m.div_ceil(rows).max(1))
        .min(n / MIN_PANEL_COLS)
        .min(block_macs / MIN_BLOCK_MACS)
        .max(1);
    let col_align = col_align();
    let cols = n.div_ceil(panels).div_ceil(col_align) * col_align;
    BlockPlan {
        rows,
        cols: cols.max(n.min(col_align)),
    }
}
