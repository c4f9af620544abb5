//! Selection and assembly kernels: slicing (ndarray's `s!` and TF's `slice`/`strided_slice`),
//! `concat`, `tile`, `pad`, `gather`, `one_hot`, `argmax`/`argmin` and `range`.
//!
//! Every kernel writes each element of a row-major output it is handed (the buffers are not
//! zero-filled first), checks what depends on run-time values (indices, symbolic sizes) and
//! returns [`Error`] instead of panicking. Outputs are cut into rows along their last axis;
//! big outputs split their rows over rayon ([`crate::exec::parallel::for_each_chunk`]).

use crate::error::Error;
use crate::exec::parallel::for_each_chunk;

/// How one input axis of a slice is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisSlice {
    /// One index; the axis is dropped. Negative counts from the end (`-1` is the last).
    Index(i64),
    /// ndarray's `start..end;step`: negative bounds count from the end, `end: None` is the
    /// end of the axis, an end before the start is an empty range, a bound past the axis is
    /// an error. A negative step walks the range `start..end` backwards from its last element
    /// (`s![0..5;-2]` is 4, 2, 0), unlike NumPy.
    Range {
        start: i64,
        end: Option<i64>,
        step: i64,
    },
    /// TF's `strided_slice` (NumPy's `begin:end:stride`): negative bounds count from the end,
    /// bounds are clamped to the axis, a negative stride walks from `begin` down to `end`
    /// (exclusive).
    Strided { begin: i64, end: i64, stride: i64 },
}

/// Where one axis of a slice reads: its first index, its step, its count, whether it is kept.
#[derive(Debug, Clone, Copy)]
struct AxisPlan {
    first: usize,
    step: isize,
    count: usize,
    keep: bool,
}

#[cold]
#[inline(never)]
fn out_of_range(op: &'static str, what: &str, value: i64, axis: usize, len: usize) -> Error {
    Error::invalid(
        op,
        format!("{what} {value} is out of range for axis {axis} of size {len}"),
    )
}

/// An index counted from the end when negative, or `None` when it falls before the start.
fn from_end(value: i64, len: usize) -> Option<usize> {
    if value >= 0 {
        usize::try_from(value).ok()
    } else {
        let back = usize::try_from(value.unsigned_abs()).ok()?;
        len.checked_sub(back)
    }
}

fn plan_axis(op: &'static str, s: AxisSlice, axis: usize, len: usize) -> Result<AxisPlan, Error> {
    match s {
        AxisSlice::Index(i) => match from_end(i, len) {
            Some(at) if at < len => Ok(AxisPlan {
                first: at,
                step: 1,
                count: 1,
                keep: false,
            }),
            _ => Err(out_of_range(op, "index", i, axis, len)),
        },
        AxisSlice::Range { start, end, step } => {
            if step == 0 {
                return Err(Error::invalid(op, format!("the step of axis {axis} is 0")));
            }
            let first = match from_end(start, len) {
                Some(s) if s <= len => s,
                _ => return Err(out_of_range(op, "slice start", start, axis, len)),
            };
            let last = match end {
                None => len,
                Some(e) => match from_end(e, len) {
                    Some(e) if e <= len => e,
                    _ => return Err(out_of_range(op, "slice end", e, axis, len)),
                },
            };
            let m = last.saturating_sub(first);
            let abs = usize::try_from(step.unsigned_abs()).unwrap_or(usize::MAX);
            let count = m.div_ceil(abs);
            // With two or more elements |step| < len, so `step * stride` below cannot overflow;
            // with fewer the step is never used.
            let first = if step < 0 && m > 0 { last - 1 } else { first };
            let step = if count <= 1 { 1 } else { step as isize };
            Ok(AxisPlan {
                first,
                step,
                count,
                keep: true,
            })
        }
        AxisSlice::Strided { begin, end, stride } => {
            if stride == 0 {
                return Err(Error::invalid(
                    op,
                    format!("the stride of axis {axis} is 0"),
                ));
            }
            // In i128, so bounds and strides at the edge of i64 do not overflow.
            let n = len as i128;
            let norm = |v: i64| if v < 0 { v as i128 + n } else { v as i128 };
            let (b, e) = (norm(begin), norm(end));
            let abs = stride.unsigned_abs() as i128;
            let (b, count) = if stride > 0 {
                let (b, e) = (b.clamp(0, n), e.clamp(0, n));
                (b, if e > b { (e - b - 1) / abs + 1 } else { 0 })
            } else {
                let (b, e) = (b.clamp(-1, n - 1), e.clamp(-1, n - 1));
                (b, if b > e { (b - e - 1) / abs + 1 } else { 0 })
            };
            Ok(AxisPlan {
                first: if count == 0 { 0 } else { b as usize },
                // One element needs no step (and i64::MIN as a step would overflow below).
                step: if count <= 1 { 1 } else { stride as isize },
                count: count as usize,
                keep: true,
            })
        }
    }
}

fn plan_slice(
    op: &'static str,
    shape: &[usize],
    spec: &[AxisSlice],
) -> Result<Vec<AxisPlan>, Error> {
    if spec.len() > shape.len() {
        return Err(Error::invalid(
            op,
            format!(
                "{} axes are sliced but the input {shape:?} has rank {}",
                spec.len(),
                shape.len()
            ),
        ));
    }
    let full = AxisSlice::Range {
        start: 0,
        end: None,
        step: 1,
    };
    (0..shape.len())
        .map(|a| plan_axis(op, spec.get(a).copied().unwrap_or(full), a, shape[a]))
        .collect()
}

/// The shape of `x[spec]` for an input of `shape` (axes past `spec` are kept whole).
pub fn slice_shape(
    op: &'static str,
    shape: &[usize],
    spec: &[AxisSlice],
) -> Result<Vec<usize>, Error> {
    Ok(plan_slice(op, shape, spec)?
        .iter()
        .filter(|p| p.keep)
        .map(|p| p.count)
        .collect())
}

/// Row-major strides of `shape`.
fn strides_of(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * shape[k + 1];
    }
    s
}

/// The multi-index of row `row` of an output whose outer (all but last) axes are `outer`.
fn unravel(mut row: usize, outer: &[usize], idx: &mut [usize]) {
    for k in (0..outer.len()).rev() {
        let d = outer[k].max(1);
        idx[k] = row % d;
        row /= d;
    }
}

/// Steps a multi-index over `outer` to the next row.
fn advance(idx: &mut [usize], outer: &[usize]) {
    for k in (0..outer.len()).rev() {
        idx[k] += 1;
        if idx[k] < outer[k] {
            return;
        }
        idx[k] = 0;
    }
}

/// Calls `body(outer_index, row)` for every row (last axis) of `out` of `shape`, rows split
/// over rayon when the work (`work` units per element) is big. A rank-0 output is one row.
fn for_each_row<T: Send>(
    out: &mut [T],
    shape: &[usize],
    work: usize,
    body: impl Fn(&[usize], &mut [T]) + Sync,
) {
    if out.is_empty() {
        return;
    }
    let (outer, row_len) = match shape.split_last() {
        Some((&last, outer)) => (outer, last),
        None => (&[][..], 1),
    };
    for_each_chunk(
        out,
        row_len,
        row_len.saturating_mul(work),
        |first, chunk| {
            let mut idx = vec![0usize; outer.len()];
            unravel(first, outer, &mut idx);
            for row in chunk.chunks_exact_mut(row_len) {
                body(&idx, row);
                advance(&mut idx, outer);
            }
        },
    );
}

#[cold]
#[inline(never)]
fn compiled_for(op: &'static str, found: &[usize], compiled: &[usize], input: &[usize]) -> Error {
    Error::invalid(
        op,
        format!(
            "the input {input:?} gives a result of shape {found:?} but the graph was compiled for {compiled:?} (a bound assumes a symbolic dim is at least that large)"
        ),
    )
}

#[cold]
#[inline(never)]
fn wrong_len(op: &'static str, what: &str, found: usize, want: usize) -> Error {
    Error::invalid(
        op,
        format!("internal: {what} holds {found} elements, expected {want}"),
    )
}

fn check_len(op: &'static str, what: &str, found: usize, want: usize) -> Result<(), Error> {
    if found == want {
        Ok(())
    } else {
        Err(wrong_len(op, what, found, want))
    }
}

/// `out = x[spec]`: `x` row-major with `shape`, `out` of `out_shape` (the shape the caller
/// expects; a slice that gives another shape at run time is an error).
pub fn slice_into<T: Copy + Send + Sync>(
    op: &'static str,
    x: &[T],
    shape: &[usize],
    spec: &[AxisSlice],
    out_shape: &[usize],
    out: &mut [T],
) -> Result<(), Error> {
    check_len(op, "the input", x.len(), shape.iter().product())?;
    let plan = plan_slice(op, shape, spec)?;
    let found: Vec<usize> = plan.iter().filter(|p| p.keep).map(|p| p.count).collect();
    if found != out_shape {
        return Err(compiled_for(op, &found, out_shape, shape));
    }
    check_len(op, "the output", out.len(), found.iter().product())?;
    let in_strides = strides_of(shape);
    let mut base = 0isize;
    let mut strides = Vec::new();
    for (p, &s) in plan.iter().zip(&in_strides) {
        if p.count > 0 {
            base += (p.first * s) as isize;
        }
        if p.keep {
            strides.push(p.step * s as isize);
        }
    }
    if out.is_empty() {
        return Ok(());
    }
    let (last_stride, outer_strides) = match strides.split_last() {
        Some((&l, o)) => (l, o),
        None => (0, &[][..]),
    };
    for_each_row(out, &found, 1, |idx, row| {
        let mut at = base;
        for (i, s) in idx.iter().zip(outer_strides) {
            at += *i as isize * s;
        }
        if last_stride == 1 {
            let at = at as usize;
            row.copy_from_slice(&x[at..at + row.len()]);
        } else {
            for (j, o) in row.iter_mut().enumerate() {
                *o = x[(at + j as isize * last_stride) as usize];
            }
        }
    });
    Ok(())
}

/// `out = concat(parts, axis)`: each part row-major with its shape; all shapes agree except
/// along `axis`, and `out` holds their elements with the axis sizes summed.
pub fn concat_into<T: Copy + Send + Sync>(
    op: &'static str,
    parts: &[(&[T], &[usize])],
    axis: usize,
    out: &mut [T],
) -> Result<(), Error> {
    let Some(&(_, first)) = parts.first() else {
        return Err(Error::invalid(op, "needs at least one tensor"));
    };
    if axis >= first.len() {
        return Err(Error::invalid(
            op,
            format!("axis {axis} is out of range for rank {}", first.len()),
        ));
    }
    let mut total_axis = 0usize;
    for &(data, s) in parts {
        let same_rank = s.len() == first.len();
        let agree = same_rank
            && s.iter()
                .zip(first)
                .enumerate()
                .all(|(k, (a, b))| k == axis || a == b);
        if !agree {
            return Err(Error::shape(
                op,
                format!("shapes differ outside axis {axis}"),
                first,
                s,
                None,
            ));
        }
        check_len(op, "an operand", data.len(), s.iter().product())?;
        total_axis += s[axis];
    }
    let outer: usize = first[..axis].iter().product();
    let inner: usize = first[axis + 1..].iter().product();
    let unit = total_axis * inner;
    check_len(op, "the output", out.len(), outer * unit)?;
    if out.is_empty() {
        return Ok(());
    }
    for_each_chunk(out, unit, unit, |first_outer, chunk| {
        for (o, row) in chunk.chunks_exact_mut(unit).enumerate() {
            let o = first_outer + o;
            let mut at = 0;
            for &(data, s) in parts {
                let n = s[axis] * inner;
                row[at..at + n].copy_from_slice(&data[o * n..o * n + n]);
                at += n;
            }
        }
    });
    Ok(())
}

/// `out = tile(x, multiples)`: output axis `k` has `shape[k] * multiples[k]` elements.
pub fn tile_into<T: Copy + Send + Sync>(
    x: &[T],
    shape: &[usize],
    multiples: &[usize],
    out: &mut [T],
) -> Result<(), Error> {
    let op = "tile";
    if multiples.len() != shape.len() {
        return Err(Error::invalid(
            op,
            format!(
                "{} multiples for an input of rank {}",
                multiples.len(),
                shape.len()
            ),
        ));
    }
    check_len(op, "the input", x.len(), shape.iter().product())?;
    let out_shape: Vec<usize> = shape.iter().zip(multiples).map(|(a, b)| a * b).collect();
    check_len(op, "the output", out.len(), out_shape.iter().product())?;
    let strides = strides_of(shape);
    let rank = shape.len();
    for_each_row(out, &out_shape, 1, |idx, row| {
        let mut at = 0;
        for k in 0..idx.len() {
            at += (idx[k] % shape[k]) * strides[k];
        }
        if rank == 0 {
            row[0] = x[0];
            return;
        }
        let src = &x[at..at + shape[rank - 1]];
        for (dst, s) in row.chunks_exact_mut(src.len()).zip(std::iter::repeat(src)) {
            dst.copy_from_slice(s);
        }
    });
    Ok(())
}

/// `out = pad(x, paddings, value)` (constant mode): axis `k` gets `paddings[k].0` elements
/// of `value` before and `paddings[k].1` after.
pub fn pad_into<T: Copy + Send + Sync>(
    x: &[T],
    shape: &[usize],
    paddings: &[(usize, usize)],
    value: T,
    out: &mut [T],
) -> Result<(), Error> {
    let op = "pad";
    if paddings.len() != shape.len() {
        return Err(Error::invalid(
            op,
            format!(
                "{} paddings for an input of rank {}",
                paddings.len(),
                shape.len()
            ),
        ));
    }
    check_len(op, "the input", x.len(), shape.iter().product())?;
    let out_shape: Vec<usize> = shape
        .iter()
        .zip(paddings)
        .map(|(d, (b, a))| d + b + a)
        .collect();
    check_len(op, "the output", out.len(), out_shape.iter().product())?;
    let strides = strides_of(shape);
    let rank = shape.len();
    for_each_row(out, &out_shape, 1, |idx, row| {
        if rank == 0 {
            row[0] = x[0];
            return;
        }
        let mut at = 0;
        for k in 0..idx.len() {
            let (before, d) = (paddings[k].0, shape[k]);
            if idx[k] < before || idx[k] >= before + d {
                row.fill(value);
                return;
            }
            at += (idx[k] - before) * strides[k];
        }
        let (before, d) = (paddings[rank - 1].0, shape[rank - 1]);
        row[..before].fill(value);
        row[before..before + d].copy_from_slice(&x[at..at + d]);
        row[before + d..].fill(value);
    });
    Ok(())
}

/// An integer index type (`i32` or `i64`).
pub trait IndexElement: Copy + Send + Sync {
    fn to_i64(self) -> i64;
}

impl IndexElement for i32 {
    fn to_i64(self) -> i64 {
        self as i64
    }
}

impl IndexElement for i64 {
    fn to_i64(self) -> i64 {
        self
    }
}

/// `out = gather(x, indices, axis)`: the output shape is `shape[..axis] ++ indices' shape ++
/// shape[axis + 1..]`. An index outside `[0, shape[axis])` (negative ones included) is an
/// error, as TF's CPU kernel raises.
pub fn gather_into<T: Copy + Send + Sync, I: IndexElement>(
    x: &[T],
    shape: &[usize],
    indices: &[I],
    axis: usize,
    out: &mut [T],
) -> Result<(), Error> {
    let op = "gather";
    if axis >= shape.len() {
        return Err(Error::invalid(
            op,
            format!("axis {axis} is out of range for rank {}", shape.len()),
        ));
    }
    check_len(op, "the input", x.len(), shape.iter().product())?;
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
    check_len(op, "the output", out.len(), outer * indices.len() * inner)?;
    if out.is_empty() {
        return Ok(());
    }
    let n = indices.len();
    for_each_chunk(out, inner, inner, |first, chunk| {
        for (u, dst) in chunk.chunks_exact_mut(inner).enumerate() {
            let unit = first + u;
            let (o, k) = (unit / n, unit % n);
            let src = (o * len + indices[k].to_i64() as usize) * inner;
            dst.copy_from_slice(&x[src..src + inner]);
        }
    });
    Ok(())
}

/// `out = one_hot(indices, depth, on, off)`: one row of `depth` per index, `on` at the index
/// and `off` elsewhere; an index outside `[0, depth)` gives a row of `off` (TF's rule).
pub fn one_hot_into<T: Copy + Send + Sync, I: IndexElement>(
    indices: &[I],
    depth: usize,
    on: T,
    off: T,
    out: &mut [T],
) -> Result<(), Error> {
    check_len("one_hot", "the output", out.len(), indices.len() * depth)?;
    if out.is_empty() {
        return Ok(());
    }
    for_each_chunk(out, depth, depth, |first, chunk| {
        for (k, row) in chunk.chunks_exact_mut(depth).enumerate() {
            row.fill(off);
            let i = indices[first + k].to_i64();
            if i >= 0 && (i as u64) < depth as u64 {
                row[i as usize] = on;
            }
        }
    });
    Ok(())
}

/// `out = argmax(x, axis)` (or argmin when `min`): the index along `axis` of the largest
/// (smallest) element; ties take the first index, and a NaN wins over every number (the
/// first NaN is the result), as NumPy and PyTorch do. An empty axis is an error (TF).
pub fn arg_reduce_into<T: Copy + Send + Sync + PartialOrd>(
    x: &[T],
    shape: &[usize],
    axis: usize,
    min: bool,
    out: &mut [i64],
) -> Result<(), Error> {
    let op = if min { "argmin" } else { "argmax" };
    if axis >= shape.len() {
        return Err(Error::invalid(
            op,
            format!("axis {axis} is out of range for rank {}", shape.len()),
        ));
    }
    check_len(op, "the input", x.len(), shape.iter().product())?;
    let n = shape[axis];
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    check_len(op, "the output", out.len(), outer * inner)?;
    if out.is_empty() {
        return Ok(());
    }
    if n == 0 {
        return Err(Error::invalid(
            op,
            format!("axis {axis} of the input {shape:?} is empty"),
        ));
    }
    let unit = inner.max(1);
    for_each_chunk(out, unit, unit * n, |first, chunk| {
        for (u, dst) in chunk.chunks_exact_mut(unit).enumerate() {
            let o = first + u;
            for (i, d) in dst.iter_mut().enumerate() {
                let at = |j: usize| x[(o * n + j) * inner + i];
                let mut best = at(0);
                let mut best_j = 0usize;
                #[allow(clippy::eq_op)]
                let is_nan = |v: T| v != v;
                if !is_nan(best) {
                    for j in 1..n {
                        let v = at(j);
                        if is_nan(v) {
                            best_j = j;
                            break;
                        }
                        let better = if min { v < best } else { v > best };
                        if better {
                            best = v;
                            best_j = j;
                        }
                    }
                }
                *d = best_j as i64;
            }
        }
    });
    Ok(())
}

/// A value `range` can produce: `start + i * delta` in the element type.
pub trait RangeElement: Copy + Send + Sync {
    fn nth(start: Self, delta: Self, i: usize) -> Self;
    /// The number of elements of `range(start, limit, delta)` (TF's rule), or a message.
    fn count(start: Self, limit: Self, delta: Self) -> Result<usize, String>;
}

macro_rules! range_int {
    ($t:ty) => {
        impl RangeElement for $t {
            fn nth(start: $t, delta: $t, i: usize) -> $t {
                start.wrapping_add(delta.wrapping_mul(i as $t))
            }
            fn count(start: $t, limit: $t, delta: $t) -> Result<usize, String> {
                range_count(start as f64, limit as f64, delta as f64, |s, l, d| {
                    let (s, l, d) = (s as i128, l as i128, d as i128);
                    ((l - s).abs() + d.abs() - 1) / d.abs()
                })
            }
        }
    };
}

macro_rules! range_float {
    ($t:ty) => {
        impl RangeElement for $t {
            // Element 0 is `start` itself, as TF and NumPy give it: `-0.0 + 0.0 * delta`
            // would lose the sign of a zero start (and be NaN for an infinite delta).
            fn nth(start: $t, delta: $t, i: usize) -> $t {
                if i == 0 {
                    start
                } else {
                    start + (i as $t) * delta
                }
            }
            fn count(start: $t, limit: $t, delta: $t) -> Result<usize, String> {
                range_count(start as f64, limit as f64, delta as f64, |s, l, d| {
                    ((l - s) / d).abs().ceil() as i128
                })
            }
        }
    };
}

range_int!(i32);
range_int!(i64);
range_float!(f32);
range_float!(f64);

fn range_count(
    start: f64,
    limit: f64,
    delta: f64,
    n: impl Fn(f64, f64, f64) -> i128,
) -> Result<usize, String> {
    if delta == 0.0 {
        return Err("`delta` must not be 0".into());
    }
    if delta > 0.0 && start > limit {
        return Err(format!(
            "`start` ({start}) must be at most `limit` ({limit}) when `delta` is positive"
        ));
    }
    if delta < 0.0 && start < limit {
        return Err(format!(
            "`start` ({start}) must be at least `limit` ({limit}) when `delta` is negative"
        ));
    }
    if !(start.is_finite() && limit.is_finite() && delta.is_finite()) {
        return Err("`start`, `limit` and `delta` must be finite".into());
    }
    usize::try_from(n(start, limit, delta)).map_err(|_| "the range is too long".to_string())
}

/// `out[i] = start + i * delta` for every element of `out`.
pub fn range_into<T: RangeElement>(start: T, delta: T, out: &mut [T]) {
    for_each_chunk(out, 1, 1, |first, chunk| {
        for (k, o) in chunk.iter_mut().enumerate() {
            *o = T::nth(start, delta, first + k);
        }
    });
}

/// `constant`'s array form: its literal values (as many as `out` holds) copied into `out`.
pub fn values_into<T: Copy>(values: &[T], out: &mut [T]) {
    out.copy_from_slice(values);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: i64, end: Option<i64>, step: i64) -> AxisSlice {
        AxisSlice::Range { start, end, step }
    }

    #[test]
    fn negative_steps_follow_ndarray() {
        let x: Vec<i32> = (0..10).collect();
        let check = |spec: AxisSlice, want: &[i32]| {
            let shape = slice_shape("t", &[10], &[spec]).unwrap();
            let mut out = vec![0; shape[0]];
            slice_into("t", &x, &[10], &[spec], &shape, &mut out).unwrap();
            assert_eq!(out, want, "{spec:?}");
        };
        check(range(0, Some(5), -2), &[4, 2, 0]);
        check(range(0, None, -1), &[9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
        check(range(-3, None, 1), &[7, 8, 9]);
        check(range(5, Some(2), 1), &[]);
        check(
            AxisSlice::Strided {
                begin: 5,
                end: 1,
                stride: -2,
            },
            &[5, 3],
        );
        check(
            AxisSlice::Strided {
                begin: -1,
                end: -100,
                stride: -4,
            },
            &[9, 5, 1],
        );
    }

    #[test]
    fn out_of_range_is_an_error() {
        assert!(slice_shape("t", &[3], &[AxisSlice::Index(3)]).is_err());
        assert!(slice_shape("t", &[3], &[AxisSlice::Index(-4)]).is_err());
        assert!(slice_shape("t", &[3], &[range(0, Some(4), 1)]).is_err());
        assert!(slice_shape("t", &[3], &[range(0, None, 0)]).is_err());
        assert_eq!(
            slice_shape("t", &[3], &[AxisSlice::Index(-3)]).unwrap(),
            Vec::<usize>::new()
        );
    }

    #[test]
    fn bounds_and_steps_at_the_edges_of_i64_do_not_overflow() {
        let x: Vec<i32> = (0..10).collect();
        let edge = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX];
        for &a in &edge {
            for &b in &edge {
                for &st in &edge {
                    for spec in [
                        AxisSlice::Strided {
                            begin: a,
                            end: b,
                            stride: st,
                        },
                        range(a, Some(b), st),
                        range(a, None, st),
                        AxisSlice::Index(a),
                    ] {
                        if let Ok(shape) = slice_shape("t", &[10], &[spec]) {
                            let mut out = vec![0; shape.iter().product()];
                            slice_into("t", &x, &[10], &[spec], &shape, &mut out).unwrap();
                        }
                    }
                }
            }
        }
    }
}
