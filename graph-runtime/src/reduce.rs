//! Reductions (`sum`, `mean`, `max`, `min`) over any set of axes, parallel, with vectorised inner loops.
//!
//! The axes are first collapsed: size-1 axes are dropped and neighbouring axes of the same
//! kind (kept or reduced) merged. What remains is usually `[outer, reduced, inner]`
//! (any part possibly 1): all axes reduce one slice with a parallel map-reduce, trailing
//! axes reduce each row, and leading or middle axes accumulate whole rows into the output
//! so the loop runs along contiguous memory. Any other pattern is first transposed to put
//! the reduced axes last.
//!
//! Float sums accumulate in 16 independent lanes, so they vectorise; f32 sums add each
//! block of 4096 lane sums into an f64, which keeps 4M-element sums accurate to about 1e-7.
//! `Max`/`Min` propagate NaN. Empty reductions give `Sum` 0, `Mean` NaN (0 for integers),
//! `Max` the lowest value and `Min` the highest.

use crate::dtype::Numeric;
use crate::parallel::{for_each_chunk, map_reduce};
use ndarray::{ArrayViewD, IxDyn};
use std::any::TypeId;

/// Which reduction to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceKind {
    Sum,
    Mean,
    Max,
    Min,
}

/// Independent accumulators per slice, enough for one AVX-512 register of f32.
const LANES: usize = 16;
/// Elements per f32 block whose lane sums are added into an f64 total.
const F32_BLOCK: usize = 4096;

/// `x` as a slice of `U` when `T` is `U` (a run-time type check, so generic code can call concrete kernels).
#[inline(always)]
pub(crate) fn same_type<T: 'static, U: 'static>(x: &[T]) -> Option<&[U]> {
    if TypeId::of::<T>() == TypeId::of::<U>() {
        // SAFETY: `T` and `U` are the same type, so the layout and validity are identical.
        Some(unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<U>(), x.len()) })
    } else {
        None
    }
}

/// The mutable twin of [`same_type`].
#[inline(always)]
pub(crate) fn same_type_mut<T: 'static, U: 'static>(x: &mut [T]) -> Option<&mut [U]> {
    if TypeId::of::<T>() == TypeId::of::<U>() {
        // SAFETY: as in `same_type`; the borrow is moved into the result.
        Some(unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<U>(), x.len()) })
    } else {
        None
    }
}

/// The sum of `x` in [`LANES`] independent accumulators (wrapping for integers).
#[inline(always)]
fn lanes_sum<T: Numeric>(x: &[T]) -> T {
    let mut acc = [T::ZERO; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..LANES {
            acc[l] = acc[l].add(c[l]);
        }
    }
    for (l, &v) in rest.iter().enumerate() {
        acc[l] = acc[l].add(v);
    }
    // Pairwise folding of the lanes.
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for l in 0..width {
            acc[l] = acc[l].add(acc[l + width]);
        }
    }
    acc[0]
}

/// The maximum (`MAX`) or minimum of `x`, NaN if any element is NaN; the identity when empty.
#[inline(always)]
#[allow(clippy::eq_op)]
fn lanes_extreme<T: Numeric, const MAX: bool>(x: &[T]) -> T {
    let init = if MAX { T::LOWEST } else { T::HIGHEST };
    let mut acc = [init; LANES];
    let mut nan = [false; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    let step = |acc: &mut T, nan: &mut bool, v: T| {
        let better = if MAX { v > *acc } else { v < *acc };
        *acc = if better { v } else { *acc };
        *nan |= v != v;
    };
    for c in chunks {
        for l in 0..LANES {
            step(&mut acc[l], &mut nan[l], c[l]);
        }
    }
    for (l, &v) in rest.iter().enumerate() {
        step(&mut acc[l], &mut nan[l], v);
    }
    if nan.iter().any(|&n| n) {
        // Only floats compare unequal to themselves, and for them 0/0 is NaN.
        return T::ZERO.div(T::ZERO);
    }
    let mut r = acc[0];
    for &a in &acc[1..] {
        let better = if MAX { a > r } else { a < r };
        r = if better { a } else { r };
    }
    r
}

crate::multiversion! {
    /// The f32 sum with f64 block totals.
    fn sum_f32(x: &[f32]) -> f64 {
        let mut total = 0.0f64;
        for block in x.chunks(F32_BLOCK) {
            total += lanes_sum(block) as f64;
        }
        total
    }
}
crate::multiversion! {
    fn sum_f64(x: &[f64]) -> f64 {
        lanes_sum(x)
    }
}
crate::multiversion! {
    fn max_f32(x: &[f32]) -> f32 {
        lanes_extreme::<f32, true>(x)
    }
}
crate::multiversion! {
    fn min_f32(x: &[f32]) -> f32 {
        lanes_extreme::<f32, false>(x)
    }
}
crate::multiversion! {
    fn max_f64(x: &[f64]) -> f64 {
        lanes_extreme::<f64, true>(x)
    }
}
crate::multiversion! {
    fn min_f64(x: &[f64]) -> f64 {
        lanes_extreme::<f64, false>(x)
    }
}

/// The sum (for `Sum` and `Mean`), maximum or minimum of one contiguous slice, before any division.
fn reduce_slice<T: Numeric>(kind: ReduceKind, x: &[T]) -> T {
    match kind {
        ReduceKind::Sum | ReduceKind::Mean => {
            if let Some(s) = same_type::<T, f32>(x) {
                T::from_f64(sum_f32(s))
            } else if let Some(s) = same_type::<T, f64>(x) {
                T::from_f64(sum_f64(s))
            } else {
                lanes_sum(x)
            }
        }
        ReduceKind::Max => {
            if let Some(s) = same_type::<T, f32>(x) {
                T::from_f64(max_f32(s) as f64)
            } else if let Some(s) = same_type::<T, f64>(x) {
                T::from_f64(max_f64(s))
            } else {
                lanes_extreme::<T, true>(x)
            }
        }
        ReduceKind::Min => {
            if let Some(s) = same_type::<T, f32>(x) {
                T::from_f64(min_f32(s) as f64)
            } else if let Some(s) = same_type::<T, f64>(x) {
                T::from_f64(min_f64(s))
            } else {
                lanes_extreme::<T, false>(x)
            }
        }
    }
}

/// The identity a reduction starts from.
fn identity<T: Numeric>(kind: ReduceKind) -> T {
    match kind {
        ReduceKind::Sum | ReduceKind::Mean => T::ZERO,
        ReduceKind::Max => T::LOWEST,
        ReduceKind::Min => T::HIGHEST,
    }
}

/// Folds one more value into a partial result.
#[inline(always)]
fn combine<T: Numeric>(kind: ReduceKind, acc: T, v: T) -> T {
    match kind {
        ReduceKind::Sum | ReduceKind::Mean => acc.add(v),
        ReduceKind::Max => acc.maximum(v),
        ReduceKind::Min => acc.minimum(v),
    }
}

/// Turns a partial result over `count` elements into the final value (the division of `Mean`).
#[inline(always)]
fn finish<T: Numeric>(kind: ReduceKind, acc: T, count: usize) -> T {
    match kind {
        ReduceKind::Mean => acc.div(T::from_f64(count as f64)),
        _ => acc,
    }
}

/// Reduces row-major `x` of `shape` over `axes` (sorted, unique, in range) into `out`, whose
/// length is the product of the kept dims.
pub fn reduce_into<T: Numeric>(
    x: &[T],
    shape: &[usize],
    axes: &[usize],
    kind: ReduceKind,
    out: &mut [T],
) {
    // Collapse to groups of (kept?, size), dropping size-1 axes.
    let mut groups: Vec<(bool, usize)> = Vec::new();
    for (axis, &d) in shape.iter().enumerate() {
        if d == 1 {
            continue;
        }
        let reduced = axes.contains(&axis);
        match groups.last_mut() {
            Some((r, size)) if *r == reduced => *size *= d,
            _ => groups.push((reduced, d)),
        }
    }
    let count: usize = groups.iter().filter(|g| g.0).map(|g| g.1).product();
    let reduced_groups = groups.iter().filter(|g| g.0).count();
    if reduced_groups == 0 {
        // Nothing to reduce (or only size-1 axes): each output is one input element.
        for_each_chunk(out, 1, 1, |first, chunk| {
            for (o, &v) in chunk.iter_mut().zip(&x[first..]) {
                *o = finish(kind, v, 1);
            }
        });
        return;
    }
    if reduced_groups > 1 {
        reduce_transposed(x, shape, axes, kind, out);
        return;
    }
    let at = groups.iter().position(|g| g.0).expect("one reduced group");
    let outer: usize = groups[..at].iter().map(|g| g.1).product();
    let inner: usize = groups[at + 1..].iter().map(|g| g.1).product();
    if outer == 1 && inner == 1 {
        let acc = map_reduce(
            x.len(),
            1,
            |r| reduce_slice(kind, &x[r]),
            |a, b| combine(kind, a, b),
        );
        out[0] = finish(kind, acc, count);
    } else if inner == 1 {
        reduce_rows(x, count, kind, out);
    } else {
        reduce_columns(x, count, inner, kind, out);
    }
}

/// Trailing axes: `out[i]` reduces the contiguous row `x[i * len..(i + 1) * len]`.
fn reduce_rows<T: Numeric>(x: &[T], len: usize, kind: ReduceKind, out: &mut [T]) {
    for_each_chunk(out, 1, len, |first, chunk| {
        for (i, o) in chunk.iter_mut().enumerate() {
            let row = &x[(first + i) * len..(first + i + 1) * len];
            *o = finish(kind, reduce_slice(kind, row), len);
        }
    });
}

/// Leading or middle axes: `x` is `[outer, red, inner]` and each output row of `inner`
/// accumulates `red` contiguous input rows, so the inner loop runs along memory.
fn reduce_columns<T: Numeric>(x: &[T], red: usize, inner: usize, kind: ReduceKind, out: &mut [T]) {
    for_each_chunk(out, 1, red, |first, chunk| {
        // The chunk covers output positions first..first + len, possibly across outer blocks.
        let mut pos = first;
        let end = first + chunk.len();
        while pos < end {
            let o = pos / inner;
            let j0 = pos % inner;
            let j1 = inner.min(j0 + (end - pos));
            let seg = &mut chunk[pos - first..pos - first + (j1 - j0)];
            seg.fill(identity(kind));
            for r in 0..red {
                let row = &x[(o * red + r) * inner + j0..(o * red + r) * inner + j1];
                for (acc, &v) in seg.iter_mut().zip(row) {
                    *acc = combine(kind, *acc, v);
                }
            }
            for acc in seg.iter_mut() {
                *acc = finish(kind, *acc, red);
            }
            pos += j1 - j0;
        }
    });
}

/// Any other pattern: copy `x` with the reduced axes moved last, then reduce rows.
fn reduce_transposed<T: Numeric>(
    x: &[T],
    shape: &[usize],
    axes: &[usize],
    kind: ReduceKind,
    out: &mut [T],
) {
    let view =
        ArrayViewD::from_shape(IxDyn(shape), x).expect("x holds exactly the elements of its shape");
    let mut perm: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    perm.extend_from_slice(axes);
    let moved = view.permuted_axes(IxDyn(&perm));
    let moved = moved.as_standard_layout();
    let len: usize = axes.iter().map(|&a| shape[a]).product();
    reduce_rows(
        moved.as_slice().expect("standard layout is contiguous"),
        len,
        kind,
        out,
    );
}
