//! `top_k` over the last axis (TensorFlow's `tf.math.top_k`, sorted), and the gather and scatter along the last axis that give its values and their gradient.
//!
//! The order is total: larger values first, NaN above everything (as `reduce_max` lets NaN
//! win), equal values (`-0` and `+0` included) by lower index. So the indices do not depend
//! on the selection algorithm or the threads, and compiled and eager runs agree. Rows run in
//! parallel.

use super::selection::IndexElement;
use crate::dtype::{Element, Numeric};
use crate::error::Error;
use crate::exec::parallel::for_each_chunk;
use std::cmp::Ordering;

/// Whether element `i` of value `a` ranks before element `j` of value `b` (`Less`).
#[inline(always)]
#[allow(clippy::eq_op)]
fn rank<T: Numeric>(a: T, i: u32, b: T, j: u32) -> Ordering {
    // Only NaN compares unequal to itself.
    let by_value = match (a != a, b != b) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => {
            if a > b {
                Ordering::Less
            } else if a < b {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        }
    };
    by_value.then(i.cmp(&j))
}

/// The last axis of `shape` and the number of rows before it, or the error for a rank-0 shape
/// or a length that is not the shape's.
fn rows_of(op: &'static str, shape: &[usize], len: usize) -> Result<(usize, usize), Error> {
    let Some(&n) = shape.last() else {
        return Err(Error::invalid(op, "the input must have rank 1 or more"));
    };
    if shape.iter().product::<usize>() != len {
        return Err(Error::invalid(
            op,
            format!("{len} elements for shape {shape:?}"),
        ));
    }
    Ok((n, len.checked_div(n).unwrap_or(0)))
}

/// The indices (`i32`, TF's default) of the `k` largest elements of each row of `x` (the
/// last axis of `shape`), in order: `out` is `[rows, k]`. A `k` above the last axis, or a last
/// axis beyond `i32`, is an error (TF's "input must have at least k columns").
pub fn top_k_into<T: Numeric>(
    x: &[T],
    shape: &[usize],
    k: usize,
    out: &mut [i32],
) -> Result<(), Error> {
    let op = "top_k";
    let (n, rows) = rows_of(op, shape, x.len())?;
    if k > n {
        return Err(Error::invalid(
            op,
            format!("k = {k} is larger than the last axis of the input {shape:?} ({n})"),
        ));
    }
    if n > i32::MAX as usize + 1 {
        return Err(Error::invalid(
            op,
            format!("the last axis ({n}) has indices beyond i32"),
        ));
    }
    if out.len() != rows * k {
        return Err(Error::invalid(
            op,
            format!("{} output elements for {rows} rows of {k}", out.len()),
        ));
    }
    if k == 0 {
        return Ok(());
    }
    for_each_chunk(out, k, n, |first, chunk| {
        let mut order: Vec<u32> = Vec::with_capacity(n);
        for (r, o) in chunk.chunks_mut(k).enumerate() {
            let row = &x[(first + r) * n..(first + r + 1) * n];
            let cmp = |&i: &u32, &j: &u32| rank(row[i as usize], i, row[j as usize], j);
            order.clear();
            order.extend(0..n as u32);
            if k < n {
                order.select_nth_unstable_by(k - 1, cmp);
            }
            let best = &mut order[..k];
            best.sort_unstable_by(cmp);
            for (o, &i) in o.iter_mut().zip(best.iter()) {
                *o = i as i32;
            }
        }
    });
    Ok(())
}

/// Checks that every index is in `[0, n)`.
fn check_indices<I: IndexElement>(op: &'static str, indices: &[I], n: usize) -> Result<(), Error> {
    for (at, &i) in indices.iter().enumerate() {
        let i = i.to_i64();
        if i < 0 || i as u64 >= n as u64 {
            return Err(Error::invalid(
                op,
                format!("indices[{at}] = {i} is not in [0, {n})"),
            ));
        }
    }
    Ok(())
}

/// `out[r, j] = x[r, indices[r, j]]` over the rows of `x` (the last axis of `shape`):
/// `top_k`'s values. `indices` and `out` are `[rows, k]`; an index outside the row is an error.
pub fn take_along_last_into<T: Element, I: IndexElement>(
    x: &[T],
    shape: &[usize],
    indices: &[I],
    out: &mut [T],
) -> Result<(), Error> {
    let op = "take_along_axis";
    let (n, rows) = rows_of(op, shape, x.len())?;
    if out.len() != indices.len() || rows == 0 && !out.is_empty() {
        return Err(Error::invalid(
            op,
            format!(
                "{} indices and {} outputs for {rows} rows",
                indices.len(),
                out.len()
            ),
        ));
    }
    if out.is_empty() {
        return Ok(());
    }
    let k = out.len() / rows;
    if k * rows != out.len() {
        return Err(Error::invalid(
            op,
            format!("{} outputs are not whole rows of {rows}", out.len()),
        ));
    }
    check_indices(op, indices, n)?;
    for_each_chunk(out, k, k, |first, chunk| {
        for (r, o) in chunk.chunks_mut(k).enumerate() {
            let row = &x[(first + r) * n..(first + r + 1) * n];
            let ind = &indices[(first + r) * k..(first + r + 1) * k];
            for (o, &i) in o.iter_mut().zip(ind) {
                *o = row[i.to_i64() as usize];
            }
        }
    });
    Ok(())
}

/// The adjoint of [`take_along_last_into`]: `out` (of `shape`) is zeros with
/// `out[r, indices[r, j]] += g[r, j]` (`top_k`'s gradient; an index repeated in a row sums).
pub fn scatter_along_last_into<T: Numeric, I: IndexElement>(
    g: &[T],
    indices: &[I],
    shape: &[usize],
    out: &mut [T],
) -> Result<(), Error> {
    let op = "scatter_along_axis";
    let (n, rows) = rows_of(op, shape, out.len())?;
    if g.len() != indices.len() || (rows == 0 && !g.is_empty()) {
        return Err(Error::invalid(
            op,
            format!(
                "{} gradients and {} indices for {rows} rows",
                g.len(),
                indices.len()
            ),
        ));
    }
    out.fill(T::ZERO);
    if g.is_empty() || out.is_empty() {
        return Ok(());
    }
    let k = g.len() / rows;
    if k * rows != g.len() {
        return Err(Error::invalid(
            op,
            format!("{} gradients are not whole rows of {rows}", g.len()),
        ));
    }
    check_indices(op, indices, n)?;
    for_each_chunk(out, n, k, |first, chunk| {
        for (r, o) in chunk.chunks_mut(n).enumerate() {
            let gs = &g[(first + r) * k..(first + r + 1) * k];
            let ind = &indices[(first + r) * k..(first + r + 1) * k];
            for (&v, &i) in gs.iter().zip(ind) {
                let at = i.to_i64() as usize;
                o[at] = o[at].add(v);
            }
        }
    });
    Ok(())
}
