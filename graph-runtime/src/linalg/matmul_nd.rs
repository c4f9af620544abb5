//! N-D `matmul` with NumPy's broadcast batch dims (`[B, H, S, D] @ [B, H, D, S]`, `[B, S, D] @ [D, E]`), and either operand read transposed in place, on the GEMM of [`crate::linalg::gemm`].
//!
//! The last two axes of each operand are the matrices; the axes before them are batch axes,
//! right-aligned and broadcast as NumPy does (a 1 or a missing axis repeats the operand).
//! When the batch maps onto plain strides, the product is one [`matmul_into`] call (the
//! same path as before N-D products existed); otherwise each output matrix is its own
//! product, run in parallel.

use rayon::prelude::*;

use super::gemm::{block_plan, matmul_into, GemmElement, MatmulDims, SEQUENTIAL_MACS};
use crate::error::Error;

/// The sizes of an N-D product; batch shapes are right-aligned against each other.
#[derive(Debug, Clone, Copy)]
pub struct NdMatmul<'s> {
    /// The batch axes of `a` (its shape without the last two axes).
    pub a_batch: &'s [usize],
    /// The batch axes of `b`.
    pub b_batch: &'s [usize],
    pub m: usize,
    pub k: usize,
    pub n: usize,
    /// `a` is stored as `[.., k, m]` and read as its transpose (`matmul(transpose(a), b)`).
    pub a_transposed: bool,
    /// `b` is stored as `[.., n, k]` and read as its transpose (`matmul(a, transpose(b))`).
    pub b_transposed: bool,
}

/// The broadcast batch shape of two batch shapes, or the output axis where they clash.
pub fn broadcast_batch(a: &[usize], b: &[usize]) -> Result<Vec<usize>, usize> {
    let rank = a.len().max(b.len());
    (0..rank).map(|i| out_dim(a, b, rank, i).ok_or(i)).collect()
}

/// Output batch axis `i` of the broadcast of `a` and `b` (`rank` axes), or `None` if the
/// two clash there.
fn out_dim(a: &[usize], b: &[usize], rank: usize, i: usize) -> Option<usize> {
    let da = (i + a.len() >= rank).then(|| a[i + a.len() - rank]);
    let db = (i + b.len() >= rank).then(|| b[i + b.len() - rank]);
    match (da, db) {
        (Some(x), Some(y)) if x == y || y == 1 => Some(x),
        (Some(1), Some(y)) => Some(y),
        (Some(x), None) | (None, Some(x)) => Some(x),
        (Some(_), Some(_)) => None,
        (None, None) => Some(1),
    }
}

/// The matrix offset (in matrices) in operand `x` of output matrix `flat`: the output
/// index is unravelled over the broadcast batch, and `x`'s broadcast axes (1 or missing)
/// contribute nothing. Allocation-free, like the rest of the steady-state path.
fn offset(flat: usize, x: &[usize], a: &[usize], b: &[usize]) -> usize {
    let rank = a.len().max(b.len());
    let (mut rest, mut at, mut step) = (flat, 0, 1);
    for i in (0..rank).rev() {
        let d = out_dim(a, b, rank, i).unwrap_or(1).max(1);
        let idx = rest % d;
        rest /= d;
        if i + x.len() >= rank {
            let xd = x[i + x.len() - rank];
            if xd != 1 {
                at += idx * step;
            }
            step *= xd;
        }
    }
    at
}

/// How an operand's batch maps onto the output's: one matrix for all, one per output
/// matrix in order, or neither (a partial broadcast such as `[B, 1]` against `[B, H]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Map {
    Shared,
    Dense,
    General,
}

fn map_of(batch: &[usize], out_count: usize) -> Map {
    let count: usize = batch.iter().product();
    if count == 1 {
        Map::Shared
    } else if count == out_count {
        Map::Dense
    } else {
        Map::General
    }
}

/// `out[i] = a[i'] * b[i'']` for every matrix `i` of the broadcast batch, then
/// `epilogue(i, first_row, block)` on each finished block of rows of output matrix `i`, as
/// for [`matmul_into`]. The output batch is the broadcast of the operands'; `out` holds its
/// matrices row-major.
///
/// Panics if a slice is shorter than the sizes say or the batches do not broadcast (the
/// callers check shapes first: the macro at compile time, [`check`] for the eager API).
pub fn matmul_nd_into<T: GemmElement, E>(
    a: &[T],
    b: &[T],
    out: &mut [T],
    spec: NdMatmul<'_>,
    epilogue: E,
) where
    E: Fn(usize, usize, &mut [T]) + Sync,
{
    let NdMatmul { m, k, n, .. } = spec;
    let (ab, bb) = (spec.a_batch, spec.b_batch);
    let rank = ab.len().max(bb.len());
    let batch: usize = (0..rank)
        .map(|i| out_dim(ab, bb, rank, i).expect("matmul batch dims broadcast"))
        .product();
    let (map_a, map_b) = (map_of(ab, batch), map_of(bb, batch));
    let stride_of = |map: Map, matrix: usize| if map == Map::Shared { 0 } else { matrix };
    if !spec.a_transposed && !spec.b_transposed && map_a != Map::General && map_b != Map::General {
        let dims = MatmulDims {
            batch,
            m,
            k,
            n,
            a_batch_stride: stride_of(map_a, m * k),
            b_batch_stride: stride_of(map_b, k * n),
        };
        matmul_into(a, b, out, dims, epilogue);
        return;
    }
    let out = &mut out[..batch * m * n];
    if out.is_empty() {
        return;
    }
    let a_count: usize = spec.a_batch.iter().product();
    let b_count: usize = spec.b_batch.iter().product();
    assert!(
        a.len() >= a_count * m * k && b.len() >= b_count * k * n,
        "matmul_nd_into: operands shorter than {spec:?}"
    );
    let one = |bi: usize, out_b: &mut [T]| {
        let a_b = &a[offset(bi, ab, ab, bb) * m * k..][..m * k];
        let b_b = &b[offset(bi, bb, ab, bb) * k * n..][..k * n];
        if !spec.a_transposed && !spec.b_transposed {
            let dims = MatmulDims::single(m, k, n);
            matmul_into(a_b, b_b, out_b, dims, |_, r0, blk: &mut [T]| {
                epilogue(bi, r0, blk)
            });
            return;
        }
        let rows = if m * k * n < SEQUENTIAL_MACS {
            m
        } else {
            block_plan::<T>(m, k, n, batch).rows
        };
        let block = |(blk, out_blk): (usize, &mut [T])| {
            let r0 = blk * rows;
            let r = out_blk.len() / n;
            if spec.a_transposed {
                // Rows r0..r0+r of the product read columns r0..r0+r of the stored `[k, m]`
                // matrix: they are gathered into a scratch buffer as an `r x k` block (a
                // slab that stays in cache; the whole transpose is never materialised), then
                // multiplied as a row-major left operand, the same arithmetic as on a
                // transposed copy. The pool was provisioned for whole blocks below.
                T::with_scratch(rows.min(m) * k, |scratch| {
                    let a_rows = &mut scratch[..r * k];
                    // 16 stored rows at a time: each block row gets a contiguous run of 16
                    // while the 16 rows read stream along (element by element, a scattered
                    // write a cache line apart per element missed L1 on every store).
                    const RUN: usize = 16;
                    for p0 in (0..k).step_by(RUN) {
                        let p1 = (p0 + RUN).min(k);
                        for (i, dst) in a_rows.chunks_exact_mut(k).enumerate() {
                            for (d, p) in dst[p0..p1].iter_mut().zip(p0..p1) {
                                *d = a_b[p * m + r0 + i];
                            }
                        }
                    }
                    // SAFETY: `a_rows` holds r rows of k; `b_b` holds k x n (or n x k when
                    // stored transposed) and the r x n block is `out_blk`.
                    unsafe { gemm_rows(spec.b_transposed, r, k, n, a_rows.as_ptr(), b_b, out_blk) }
                });
            } else {
                // SAFETY: rows r0..r0+r of `a_b` (k each), all of `b_b` and the r x n block
                // are inside the slices taken above.
                unsafe {
                    gemm_rows(
                        spec.b_transposed,
                        r,
                        k,
                        n,
                        a_b[r0 * k..].as_ptr(),
                        b_b,
                        out_blk,
                    )
                }
            }
            epilogue(bi, r0, out_blk);
        };
        if n == 0 {
            return;
        }
        if rows >= m {
            out_b
                .chunks_mut(rows.max(1) * n)
                .enumerate()
                .for_each(block);
        } else {
            out_b.par_chunks_mut(rows * n).enumerate().for_each(block);
        }
    };
    if spec.a_transposed {
        // Every thread's scratch for a whole block, whichever blocks it gets, before the
        // loops (see `ScratchPool`).
        let rows = if m * k * n < SEQUENTIAL_MACS {
            m
        } else {
            block_plan::<T>(m, k, n, batch).rows
        };
        T::reserve_scratch(rayon::current_num_threads(), rows.min(m) * k);
    }
    if batch == 1 || m * k * n * batch < SEQUENTIAL_MACS {
        out.chunks_mut(m * n)
            .enumerate()
            .for_each(|(bi, o)| one(bi, o));
    } else {
        out.par_chunks_mut(m * n)
            .enumerate()
            .for_each(|(bi, o)| one(bi, o));
    }
}

/// `out[r, n] = a[r, k] * b`, `a` row-major with row stride `k`, `b` the `k x n` matrix, or
/// its `n x k` transpose when `b_transposed`; single-threaded.
///
/// # Safety
/// `a` is valid for `r * k` elements; `b` holds `k * n` and `out` `r * n` elements.
unsafe fn gemm_rows<T: GemmElement>(
    b_transposed: bool,
    r: usize,
    k: usize,
    n: usize,
    a: *const T,
    b: &[T],
    out: &mut [T],
) {
    debug_assert!(b.len() >= k * n && out.len() >= r * n);
    // SAFETY: the extents are the caller's contract; `out` is exclusively borrowed.
    unsafe {
        if b_transposed {
            T::gemm_strided_bt(r, k, n, a, k, b.as_ptr(), k, out.as_mut_ptr(), n)
        } else {
            T::gemm_strided(r, k, n, a, k, b.as_ptr(), n, out.as_mut_ptr(), n)
        }
    }
}

/// The output shape of `matmul(a, b)` for the eager API, or the error naming both shapes
/// and the axis of the left operand that is wrong.
pub fn check(sa: &[usize], sb: &[usize]) -> Result<Vec<usize>, Error> {
    if sa.len() < 2 || sb.len() < 2 {
        return Err(Error::shape(
            "matmul",
            "operands must have rank 2 or more (matrices, or batches of them in the leading axes)",
            sa,
            sb,
            None,
        ));
    }
    let (ra, rb) = (sa.len(), sb.len());
    let (k, k2) = (sa[ra - 1], sb[rb - 2]);
    if k != k2 {
        return Err(Error::shape(
            "matmul",
            format!("inner dimensions differ ({k} != {k2})"),
            sa,
            sb,
            Some(ra - 1),
        ));
    }
    let (ba, bb) = (&sa[..ra - 2], &sb[..rb - 2]);
    let mut shape = broadcast_batch(ba, bb).map_err(|i| {
        let rank = ba.len().max(bb.len());
        let (x, y) = (ba[i + ba.len() - rank], bb[i + bb.len() - rank]);
        Error::shape(
            "matmul",
            format!("batch dimensions do not broadcast ({x} != {y})"),
            sa,
            sb,
            Some(i + ba.len() - rank),
        )
    })?;
    shape.push(sa[ra - 2]);
    shape.push(sb[rb - 1]);
    Ok(shape)
}
