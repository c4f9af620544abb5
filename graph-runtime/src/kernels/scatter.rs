//! Scatter-add along an axis, the gradient of `gather` with respect to its params (TF's `unsorted_segment_sum` of the gradient's slices by index).
//!
//! `out[.., indices[j], ..] += dy[.., j, ..]` into zeros of the params' shape. Rows of the
//! output run in parallel: each block of rows scans the indices and adds the slices that land
//! in it, in index order, so every element sums its slices in the same order whatever the
//! blocks (the result does not depend on the thread count) and no two threads write one row.

use super::selection::IndexElement;
use crate::dtype::Numeric;
use crate::error::Error;
use crate::exec::parallel::for_each_chunk;

/// `out = zeros(shape)`, then `out[o, indices[j], i] += dy[o, j, i]` for every `o` of the
/// axes before `axis`, every index `j` (flat over the indices' shape) and every `i` of the
/// axes after it: the gradient of `gather(x, indices, axis)` for `x` of `shape`. An index
/// outside `[0, shape[axis])` (negative ones included) is an error, as `gather`'s.
pub fn scatter_add_into<T: Numeric, I: IndexElement>(
    dy: &[T],
    indices: &[I],
    shape: &[usize],
    axis: usize,
    out: &mut [T],
) -> Result<(), Error> {
    let op = "gather_grad";
    if axis >= shape.len() {
        return Err(Error::invalid(
            op,
            format!("axis {axis} is out of range for rank {}", shape.len()),
        ));
    }
    let len = shape[axis];
    for (k, &i) in indices.iter().enumerate() {
        let i = i.to_i64();
        if i < 0 || i as u64 >= len as u64 {
            return Err(Error::invalid(
                op,
                format!("indices[{k}] = {i} is not in [0, {len}) (axis {axis})"),
            ));
        }
    }
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let n = indices.len();
    let want = |what: &str, got: usize, need: usize| {
        if got == need {
            Ok(())
        } else {
            Err(Error::invalid(
                op,
                format!("{what} has {got} elements, the shapes need {need}"),
            ))
        }
    };
    want("the gradient", dy.len(), outer * n * inner)?;
    want("the output", out.len(), outer * len * inner)?;
    if out.is_empty() {
        return Ok(());
    }
    // One unit is one output row of `inner`; a block scans the indices once per outer index.
    let work = inner + n.div_ceil(len.max(1)) * inner;
    for_each_chunk(out, inner, work, |first, chunk| {
        chunk.fill(T::ZERO);
        let rows = chunk.len() / inner;
        let (lo, hi) = (first, first + rows);
        for o in lo / len..hi.div_ceil(len) {
            for (j, &i) in indices.iter().enumerate() {
                let row = o * len + i.to_i64() as usize;
                if row < lo || row >= hi {
                    continue;
                }
                let src = &dy[(o * n + j) * inner..][..inner];
                let dst = &mut chunk[(row - lo) * inner..][..inner];
                for (d, &s) in dst.iter_mut().zip(src) {
                    *d = d.add(s);
                }
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_repeated_indices_and_rejects_bad_ones() {
        // params [2, 3, 2], axis 1, indices [2, 0, 2, 2]: dy [2, 4, 2].
        let dy: Vec<f64> = (0..16).map(|v| v as f64).collect();
        let mut out = vec![f64::NAN; 12];
        scatter_add_into(&dy, &[2i64, 0, 2, 2], &[2, 3, 2], 1, &mut out).unwrap();
        assert_eq!(
            out,
            [2.0, 3.0, 0.0, 0.0, 10.0, 13.0, 10.0, 11.0, 0.0, 0.0, 34.0, 37.0]
        );
        let e = scatter_add_into(&dy[..4], &[3i32, 0], &[3, 2], 0, &mut out[..6]);
        assert!(e.is_err());
        let e = scatter_add_into(&dy[..4], &[-1i32, 0], &[3, 2], 0, &mut out[..6]);
        assert!(e.is_err());
        // No indices: zeros.
        let mut z = vec![f64::NAN; 6];
        scatter_add_into::<f64, i32>(&[], &[], &[3, 2], 0, &mut z).unwrap();
        assert_eq!(z, [0.0; 6]);
    }
}
