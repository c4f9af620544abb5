//! The parallel loops of a product ([`matmul_into`]): batches, row blocks and column panels on rayon, each row block finished by the epilogue while it is still in cache.

use rayon::prelude::*;

use super::element::{GemmElement, PrepackedB};
use super::plan::{block_plan, prepackable, BlockPlan, MatmulDims, SEQUENTIAL_MACS};

/// The epilogue that does nothing, for plain products.
#[inline(always)]
pub fn no_epilogue<T>(_: usize, _: usize, _: &mut [T]) {}

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

/// `out_blk[r, n] = a_rows[r, k] * b[k, n]`, split into column panels of `cols` that run in
/// parallel; `pb` is `b` pre-packed, if it was.
fn row_block<T: GemmElement>(
    a_rows: &[T],
    b: &[T],
    pb: Option<PrepackedB<'_, T>>,
    out_blk: &mut [T],
    k: usize,
    n: usize,
    cols: usize,
) {
    let r = out_blk.len() / n;
    assert!(a_rows.len() >= r * k && b.len() >= k * n && out_blk.len() == r * n);
    if cols >= n {
        match pb {
            // SAFETY: the slices hold r*k and r*n elements (asserted above).
            Some(pb) => unsafe {
                T::gemm_prepacked(r, k, n, a_rows.as_ptr(), k, pb, 0, out_blk.as_mut_ptr(), n)
            },
            None => T::gemm_block(r, k, n, a_rows, b, out_blk),
        }
        return;
    }
    let c = SendPtr(out_blk.as_mut_ptr());
    // LOOP 3 (parallel): over column panels of the block.
    (0..n.div_ceil(cols)).into_par_iter().for_each(|p| {
        let j0 = p * cols;
        let w = cols.min(n - j0);
        // SAFETY: the slices hold r*k, k*n and r*n elements (asserted above); panel p
        // reads columns j0..j0+w of `b` and is the only writer of those columns of `out_blk`.
        unsafe {
            match pb {
                Some(pb) => {
                    T::gemm_prepacked(r, k, w, a_rows.as_ptr(), k, pb, j0, c.get().add(j0), n)
                }
                None => T::gemm_strided(
                    r,
                    k,
                    w,
                    a_rows.as_ptr(),
                    k,
                    b.as_ptr().add(j0),
                    n,
                    c.get().add(j0),
                    n,
                ),
            }
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

    let plan = block_plan::<T>(m, k, n, batch);
    let rows = plan.rows;
    // One packing buffer per thread, made now if missing: the blocks then allocate nothing.
    T::reserve_gemm(rayon::current_num_threads());
    // With one `b` for more than two row blocks, pack it once for all of them when it is
    // small (a conv2d's filter: for two blocks, the extra pass and barrier cost about what the
    // second packing would) or shared by several batches. A large `b` (sgemm 1024, 2048) is
    // packed by each block slice by slice into its own thread's L2, where its tiles use it at
    // once: cheaper than reading a packed copy back from L3 (Xeon with AVX-512, 2 threads:
    // sgemm 1024 7.05 -> 6.59 ms, 2048 60.1 -> 55.8 ms).
    let shared_b = batch == 1 || dims.b_batch_stride == 0;
    let small_b = prepackable::<T>(k, n);
    if shared_b && batch * m.div_ceil(rows) > 2 && (small_b || batch > 1) {
        T::with_prepacked_b(k, n, b_of(0), |pb| {
            parallel_blocks(out, dims, plan, pb, &a_of, &b_of, &epilogue)
        })
    } else {
        parallel_blocks(out, dims, plan, None, &a_of, &b_of, &epilogue)
    }
}

/// The parallel loops of [`matmul_into`]; `pb` is the shared `b` pre-packed, if it was.
fn parallel_blocks<'a, T: GemmElement, E>(
    out: &mut [T],
    dims: MatmulDims,
    plan: BlockPlan,
    pb: Option<PrepackedB<'_, T>>,
    a_of: &(impl Fn(usize) -> &'a [T] + Sync),
    b_of: &(impl Fn(usize) -> &'a [T] + Sync),
    epilogue: &E,
) where
    E: Fn(usize, usize, &mut [T]) + Sync,
{
    let MatmulDims { m, k, n, .. } = dims;
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
                    row_block(
                        &a_b[r0 * k..(r0 + r) * k],
                        b_b,
                        pb,
                        out_blk,
                        k,
                        n,
                        plan.cols,
                    );
                    // The block is still in cache: fuse the tail now.
                    if plan.cols >= n {
                        epilogue(bi, r0, out_blk);
                    } else {
                        // Its column panels ran in parallel: so does the tail, on rows.
                        parallel_epilogue(bi, r0, out_blk, n, epilogue);
                    }
                });
        });
}

/// `epilogue(bi, r0 + i, rows)` on the block `out_blk` (`n` columns, first row `r0`) cut
/// into one run of whole rows a thread, in parallel: a block split into column panels is
/// shared by every thread, and a GELU or a bias on its 128 x 3072 outputs would otherwise
/// run on one of them while the others wait.
fn parallel_epilogue<T: Send, E>(bi: usize, r0: usize, out_blk: &mut [T], n: usize, epilogue: &E)
where
    E: Fn(usize, usize, &mut [T]) + Sync,
{
    let r = out_blk.len() / n;
    let threads = rayon::current_num_threads().max(1);
    let rows = r.div_ceil(threads).max(1);
    if rows >= r {
        epilogue(bi, r0, out_blk);
        return;
    }
    out_blk
        .par_chunks_mut(rows * n)
        .enumerate()
        .for_each(|(i, chunk)| epilogue(bi, r0 + i * rows, chunk));
}

/// Elements an operand must hold: its last batch's offset plus one matrix.
fn operand_len(batch: usize, stride: usize, matrix: usize) -> usize {
    if batch == 0 {
        0
    } else {
        (batch - 1) * stride + matrix
    }
}
