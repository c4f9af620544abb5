//! Layout kernels: axis permutation (`transpose`) into a row-major output, blocked for cache and parallel for big arrays.
//!
//! A permutation is first simplified: axes of size 1 are dropped and input axes that stay
//! next to each other in the output are merged. What is left is a plain copy, a (batched)
//! 2-D transpose done in square tiles, or a general gather whose innermost loop runs along
//! the output's last axis.

use rayon::prelude::*;

use crate::error::Error;

/// Arrays with fewer elements than this are permuted on the calling thread.
pub const PARALLEL_ELEMS: usize = 1 << 15;

/// Side of the square tiles of the 2-D transpose: a tile of 8-byte elements is 8 KiB,
/// so the source and destination tiles both stay in L1.
pub const TILE: usize = 32;

/// Output elements per parallel task of the general gather.
const GATHER_CHUNK: usize = 1 << 14;

/// Checks that `perm` is a permutation of `0..rank`.
pub fn check_perm(perm: &[usize], rank: usize) -> Result<(), Error> {
    if perm.len() != rank {
        return Err(bad_perm(perm, rank));
    }
    let mut seen = vec![false; rank];
    for &p in perm {
        if p >= rank || seen[p] {
            return Err(bad_perm(perm, rank));
        }
        seen[p] = true;
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn bad_perm(perm: &[usize], rank: usize) -> Error {
    Error::invalid(
        "transpose",
        format!("{perm:?} is not a permutation of the {rank} axes 0..{rank}"),
    )
}

/// `out = x.permuted_axes(perm)` written row-major: output axis `j` is input axis `perm[j]`.
///
/// `x` is row-major with `shape`; `out` must hold as many elements. Panics if `perm` is not
/// a permutation of the axes or a slice has the wrong length (callers check first).
pub fn transpose_into<T: Copy + Send + Sync>(
    x: &[T],
    shape: &[usize],
    perm: &[usize],
    out: &mut [T],
) {
    assert!(
        check_perm(perm, shape.len()).is_ok(),
        "transpose_into: bad permutation"
    );
    let total: usize = shape.iter().product();
    assert!(
        x.len() == total && out.len() == total,
        "transpose_into: slices do not match shape"
    );
    if total == 0 {
        return;
    }
    let (dims, order) = simplify(shape, perm);
    match (dims.len(), order.as_slice()) {
        (0, _) | (1, _) => copy(x, out),
        (2, [1, 0]) => transpose_batched(x, 1, dims[0], dims[1], out),
        (3, [0, 2, 1]) => transpose_batched(x, dims[0], dims[1], dims[2], out),
        _ => gather(x, &dims, &order, out),
    }
}

/// Drops unit axes and merges input axes that stay adjacent in the output.
///
/// Returns the simplified input shape and permutation, which describe the same copy.
fn simplify(shape: &[usize], perm: &[usize]) -> (Vec<usize>, Vec<usize>) {
    // Output order of the non-unit input axes.
    let kept: Vec<usize> = perm.iter().copied().filter(|&p| shape[p] != 1).collect();
    // Runs of consecutive input axes, in output order.
    let mut runs: Vec<(usize, usize)> = Vec::new(); // (first input axis, last input axis)
    for &p in &kept {
        match runs.last_mut() {
            Some((_, last)) if next_kept(shape, *last) == Some(p) => *last = p,
            _ => runs.push((p, p)),
        }
    }
    // Input order of the runs gives the new axis numbers.
    let mut by_input: Vec<usize> = (0..runs.len()).collect();
    by_input.sort_by_key(|&r| runs[r].0);
    let mut new_axis = vec![0; runs.len()];
    for (i, &r) in by_input.iter().enumerate() {
        new_axis[r] = i;
    }
    let dims = by_input
        .iter()
        .map(|&r| (runs[r].0..=runs[r].1).map(|a| shape[a]).product())
        .collect();
    let order = (0..runs.len()).map(|r| new_axis[r]).collect();
    (dims, order)
}

/// The next input axis after `axis` that is not of size 1.
fn next_kept(shape: &[usize], axis: usize) -> Option<usize> {
    (axis + 1..shape.len()).find(|&a| shape[a] != 1)
}

/// A straight copy, split in parallel for big arrays.
fn copy<T: Copy + Send + Sync>(x: &[T], out: &mut [T]) {
    if out.len() < PARALLEL_ELEMS {
        out.copy_from_slice(x);
        return;
    }
    out.par_chunks_mut(PARALLEL_ELEMS)
        .zip(x.par_chunks(PARALLEL_ELEMS))
        .for_each(|(o, i)| o.copy_from_slice(i));
}

/// `out[b, c, r] = x[b, r, c]` for `batch` matrices of `rows x cols`, in `TILE`-square tiles.
fn transpose_batched<T: Copy + Send + Sync>(
    x: &[T],
    batch: usize,
    rows: usize,
    cols: usize,
    out: &mut [T],
) {
    let per = rows * cols;
    // One task is a band of TILE output rows (TILE input columns) of one matrix.
    let band = TILE * rows;
    let run = |b: usize, band_i: usize, o: &mut [T]| {
        let c0 = band_i * TILE;
        let x_b = &x[b * per..(b + 1) * per];
        let width = o.len() / rows;
        // LOOP over row tiles of the input; each tile is read row by row, written column by column.
        let mut r0 = 0;
        while r0 < rows {
            let r1 = (r0 + TILE).min(rows);
            for c in 0..width {
                let o_row = &mut o[c * rows..(c + 1) * rows];
                for r in r0..r1 {
                    o_row[r] = x_b[r * cols + c0 + c];
                }
            }
            r0 = r1;
        }
    };
    if per * batch < PARALLEL_ELEMS {
        for (b, m) in out.chunks_mut(per).enumerate() {
            for (i, o) in m.chunks_mut(band).enumerate() {
                run(b, i, o);
            }
        }
        return;
    }
    // LOOP (parallel) over matrices, then over bands of one matrix.
    out.par_chunks_mut(per).enumerate().for_each(|(b, m)| {
        m.par_chunks_mut(band)
            .enumerate()
            .for_each(|(i, o)| run(b, i, o));
    });
}

/// The general case: walks the output in order, reading the input through permuted strides.
fn gather<T: Copy + Send + Sync>(x: &[T], dims: &[usize], order: &[usize], out: &mut [T]) {
    let rank = dims.len();
    let mut in_strides = vec![1usize; rank];
    for a in (0..rank.saturating_sub(1)).rev() {
        in_strides[a] = in_strides[a + 1] * dims[a + 1];
    }
    let out_dims: Vec<usize> = order.iter().map(|&p| dims[p]).collect();
    let src: Vec<usize> = order.iter().map(|&p| in_strides[p]).collect();
    let run = |(ci, o): (usize, &mut [T])| gather_range(x, &out_dims, &src, ci * GATHER_CHUNK, o);
    if out.len() < PARALLEL_ELEMS {
        run((0, out));
    } else {
        out.par_chunks_mut(GATHER_CHUNK).enumerate().for_each(run);
    }
}

/// Fills `o` with output elements `start..start + o.len()`, an odometer over the output index.
fn gather_range<T: Copy>(x: &[T], out_dims: &[usize], src: &[usize], start: usize, o: &mut [T]) {
    let rank = out_dims.len();
    let mut idx = vec![0usize; rank];
    let mut rem = start;
    for a in (0..rank).rev() {
        idx[a] = rem % out_dims[a];
        rem /= out_dims[a];
    }
    let inner = out_dims[rank - 1];
    let inner_stride = src[rank - 1];
    let mut pos = 0;
    while pos < o.len() {
        let base: usize = (0..rank - 1).map(|a| idx[a] * src[a]).sum();
        let from = idx[rank - 1];
        let len = (inner - from).min(o.len() - pos);
        // The innermost loop: one output row, a strided read.
        for (j, slot) in o[pos..pos + len].iter_mut().enumerate() {
            *slot = x[base + (from + j) * inner_stride];
        }
        pos += len;
        // Carry into the outer axes.
        idx[rank - 1] = 0;
        for a in (0..rank - 1).rev() {
            idx[a] += 1;
            if idx[a] < out_dims[a] {
                break;
            }
            idx[a] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simplify_merges_adjacent_axes() {
        // [2, 3, 4, 5] with perm [2, 3, 0, 1] is a 2-D transpose of [6, 20].
        assert_eq!(
            simplify(&[2, 3, 4, 5], &[2, 3, 0, 1]),
            (vec![6, 20], vec![1, 0])
        );
        // Unit axes vanish.
        assert_eq!(
            simplify(&[1, 4, 1, 5], &[3, 2, 1, 0]),
            (vec![4, 5], vec![1, 0])
        );
        // The identity is one axis.
        assert_eq!(simplify(&[2, 3, 4], &[0, 1, 2]), (vec![24], vec![0]));
    }
}
