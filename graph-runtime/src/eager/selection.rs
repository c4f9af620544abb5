//! Eager selection and assembly: indexing with ndarray's `s!` semantics, `slice`, `strided_slice`, `concat`, `stack`, `split`, `tile`, `pad`, `expand_dims`, `squeeze`, `gather` (and its gradient), `one_hot`, `argmax`/`argmin`, `range`, on the same kernels as compiled graphs.

use ndarray::{ArrayD, ArrayViewD};

use super::IntoView;
use super::{flat, from_vec, standard, to_vec};
use crate::dtype::{Element, Numeric};
use crate::error::Error;
use crate::kernels::scatter::scatter_add_into;
use crate::kernels::selection::{
    arg_reduce_into, concat_into, gather_into, one_hot_into, pad_into, range_into, slice_into,
    slice_shape, tile_into, AxisSlice, IndexElement, RangeElement,
};

/// An axis that may count from the end (`-1` is the last) resolved against `rank` axes.
fn resolve_axis(op: &'static str, axis: isize, rank: usize) -> Result<usize, Error> {
    let r = rank as isize;
    if axis < -r || axis >= r {
        return Err(Error::invalid(
            op,
            format!("axis {axis} is out of range for rank {rank}"),
        ));
    }
    Ok(if axis < 0 {
        (axis + r) as usize
    } else {
        axis as usize
    })
}

/// An output buffer of `shape` for op `op` (every element of which the kernel writes), or the
/// error of a size that overflows or cannot be allocated.
fn buffer<T: Element>(op: &'static str, shape: &[usize]) -> Result<Vec<T>, Error> {
    crate::exec::buffer::zeroed_for(op, shape)
}

/// `x[s![...]]` with ndarray's semantics, one [`AxisSlice`] per leading axis (the rest are
/// kept whole); an index or bound out of range is an error, never a panic.
pub fn index<'a, T: Element>(
    x: impl IntoView<'a, T>,
    spec: &[AxisSlice],
) -> Result<ArrayD<T>, Error> {
    strided("index", x.into_view(), spec)
}

fn strided<T: Element>(
    op: &'static str,
    x: ArrayViewD<'_, T>,
    spec: &[AxisSlice],
) -> Result<ArrayD<T>, Error> {
    let shape = slice_shape(op, x.shape(), spec)?;
    let x = standard(op, &x)?;
    let mut out = buffer(op, &shape)?;
    slice_into(op, flat(&x), x.shape(), spec, &shape, &mut out)?;
    Ok(from_vec(&shape, out))
}

/// `x[spec]` checked against `compiled`, the shape the graph was compiled for (the eager form
/// `#[graph]` emits for `x[s![..]]`, `slice`, `strided_slice` and `split`; errors name `op`).
#[doc(hidden)]
pub fn slice_as<'a, T: Element>(
    op: &'static str,
    x: impl IntoView<'a, T>,
    spec: &[AxisSlice],
    compiled: &[usize],
) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    let x = standard(op, &x)?;
    let mut out = buffer(op, compiled)?;
    slice_into(op, flat(&x), x.shape(), spec, compiled, &mut out)?;
    Ok(from_vec(compiled, out))
}

/// TF's `slice(x, begin, size)`: `size[k] == -1` takes the rest of axis `k`; otherwise
/// `0 <= begin[k] <= begin[k] + size[k] <= shape[k]` (TF's check).
pub fn slice<'a, T: Element>(
    x: impl IntoView<'a, T>,
    begin: &[i64],
    size: &[i64],
) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    let shape = x.shape().to_vec();
    if begin.len() != shape.len() || size.len() != shape.len() {
        return Err(Error::invalid(
            "slice",
            format!(
                "`begin` and `size` need one entry per axis of {shape:?}, found {} and {}",
                begin.len(),
                size.len()
            ),
        ));
    }
    let mut spec = Vec::new();
    for (k, (&b, &s)) in begin.iter().zip(size).enumerate() {
        let d = shape[k] as i64;
        let end = if s == -1 { d } else { b.saturating_add(s) };
        if b < 0 || b > d || s < -1 || end > d {
            return Err(Error::invalid(
                "slice",
                format!("axis {k}: begin {b} and size {s} do not fit in size {d}"),
            ));
        }
        spec.push(AxisSlice::Range {
            start: b,
            end: Some(end),
            step: 1,
        });
    }
    strided("slice", x, &spec)
}

/// TF's `strided_slice(x, begin, end, strides)` without masks: NumPy's `begin:end:stride`
/// per axis (negative bounds count from the end, bounds are clamped to the axis).
pub fn strided_slice<'a, T: Element>(
    x: impl IntoView<'a, T>,
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    let n = begin.len();
    if end.len() != n || strides.len() != n || n > x.ndim() {
        return Err(Error::invalid(
            "strided_slice",
            format!(
                "`begin`, `end` and `strides` need the same length, at most the rank {}; found {}, {} and {}",
                x.ndim(),
                n,
                end.len(),
                strides.len()
            ),
        ));
    }
    let spec: Vec<AxisSlice> = (0..n)
        .map(|k| AxisSlice::Strided {
            begin: begin[k],
            end: end[k],
            stride: strides[k],
        })
        .collect();
    strided("strided_slice", x, &spec)
}

/// `concat(parts, axis)`: the parts joined along `axis` (negative counts from the end).
pub fn concat<T: Element>(parts: &[ArrayViewD<'_, T>], axis: isize) -> Result<ArrayD<T>, Error> {
    assemble("concat", parts, axis, false)
}

/// `stack(parts, axis)`: the parts (all of one shape) joined along a new axis `axis`.
pub fn stack<T: Element>(parts: &[ArrayViewD<'_, T>], axis: isize) -> Result<ArrayD<T>, Error> {
    assemble("stack", parts, axis, true)
}

fn assemble<T: Element>(
    op: &'static str,
    parts: &[ArrayViewD<'_, T>],
    axis: isize,
    new_axis: bool,
) -> Result<ArrayD<T>, Error> {
    let Some(first) = parts.first() else {
        return Err(Error::invalid(op, "needs at least one tensor"));
    };
    let rank = first.ndim() + usize::from(new_axis);
    let axis = resolve_axis(op, axis, rank)?;
    let std = parts
        .iter()
        .map(|p| standard(op, p))
        .collect::<Result<Vec<_>, Error>>()?;
    let mut shapes: Vec<Vec<usize>> = std.iter().map(|p| p.shape().to_vec()).collect();
    if new_axis {
        for s in &mut shapes {
            if s.as_slice() != first.shape() {
                return Err(Error::shape(
                    op,
                    "the tensors must have one shape",
                    first.shape(),
                    s,
                    None,
                ));
            }
            s.insert(axis, 1);
        }
    }
    let slices: Vec<(&[T], &[usize])> = std
        .iter()
        .zip(&shapes)
        .map(|(p, s)| (flat(p), s.as_slice()))
        .collect();
    let mut shape = shapes[0].clone();
    if !shapes.iter().all(|s| s.len() == shape.len()) {
        return Err(Error::shape(
            op,
            "ranks differ",
            first.shape(),
            &shapes[1],
            None,
        ));
    }
    shape[axis] = shapes
        .iter()
        .try_fold(0usize, |total, s| total.checked_add(s[axis]))
        .ok_or_else(|| Error::size_overflow(op, &shape, std::mem::size_of::<T>()))?;
    let mut out = buffer(op, &shape)?;
    concat_into(op, &slices, axis, &mut out)?;
    Ok(from_vec(&shape, out))
}

/// `split(x, n, axis)`: `n` equal pieces along `axis` (its size must divide by `n`).
pub fn split<'a, T: Element>(
    x: impl IntoView<'a, T>,
    n: usize,
    axis: isize,
) -> Result<Vec<ArrayD<T>>, Error> {
    let x = x.into_view();
    let axis = resolve_axis("split", axis, x.ndim())?;
    let d = x.shape()[axis];
    if n == 0 || d % n != 0 {
        return Err(Error::invalid(
            "split",
            format!("axis {axis} of size {d} does not split into {n} equal pieces"),
        ));
    }
    let piece = (d / n) as i64;
    (0..n as i64)
        .map(|k| {
            let mut spec = vec![
                AxisSlice::Range {
                    start: 0,
                    end: None,
                    step: 1
                };
                axis + 1
            ];
            spec[axis] = AxisSlice::Range {
                start: k * piece,
                end: Some((k + 1) * piece),
                step: 1,
            };
            strided("split", x.view(), &spec)
        })
        .collect()
}

/// `tile(x, multiples)`: axis `k` repeated `multiples[k]` times.
pub fn tile<'a, T: Element>(
    x: impl IntoView<'a, T>,
    multiples: &[usize],
) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    if multiples.len() != x.ndim() {
        return Err(Error::invalid(
            "tile",
            format!(
                "{} multiples for an input of rank {}",
                multiples.len(),
                x.ndim()
            ),
        ));
    }
    let shape = x
        .shape()
        .iter()
        .zip(multiples)
        .map(|(a, b)| a.checked_mul(*b))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| Error::invalid("tile", "the result is too large"))?;
    let x = standard("tile", &x)?;
    let mut out = buffer("tile", &shape)?;
    tile_into(flat(&x), x.shape(), multiples, &mut out)?;
    Ok(from_vec(&shape, out))
}

/// `pad(x, paddings, value)` in constant mode: `paddings[k] = [before, after]` for axis `k`.
pub fn pad<'a, T: Element>(
    x: impl IntoView<'a, T>,
    paddings: &[[usize; 2]],
    value: T,
) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    if paddings.len() != x.ndim() {
        return Err(Error::invalid(
            "pad",
            format!(
                "{} paddings for an input of rank {}",
                paddings.len(),
                x.ndim()
            ),
        ));
    }
    let pairs: Vec<(usize, usize)> = paddings.iter().map(|p| (p[0], p[1])).collect();
    let shape = x
        .shape()
        .iter()
        .zip(&pairs)
        .map(|(d, (b, a))| d.checked_add(*b)?.checked_add(*a))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| Error::size_overflow("pad", x.shape(), std::mem::size_of::<T>()))?;
    let x = standard("pad", &x)?;
    let mut out = buffer("pad", &shape)?;
    pad_into(flat(&x), x.shape(), &pairs, value, &mut out)?;
    Ok(from_vec(&shape, out))
}

/// `expand_dims(x, axis)`: a new axis of size 1 at `axis` (in `-rank-1..=rank`).
pub fn expand_dims<'a, T: Element>(
    x: impl IntoView<'a, T>,
    axis: isize,
) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    let axis = resolve_axis("expand_dims", axis, x.ndim() + 1)?;
    let mut shape = x.shape().to_vec();
    shape.insert(axis, 1);
    Ok(from_vec(&shape, to_vec("expand_dims", &x)?))
}

/// `squeeze(x)` drops every axis of size 1; `squeeze(x, Some(axes))` drops those axes, each
/// of which must have size 1.
pub fn squeeze<'a, T: Element>(
    x: impl IntoView<'a, T>,
    axes: Option<&[isize]>,
) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    let rank = x.ndim();
    let drop: Vec<usize> = match axes {
        None => (0..rank).filter(|&k| x.shape()[k] == 1).collect(),
        Some(axes) => {
            let mut v = Vec::new();
            for &a in axes {
                let a = resolve_axis("squeeze", a, rank)?;
                if x.shape()[a] != 1 {
                    return Err(Error::invalid(
                        "squeeze",
                        format!(
                            "axis {a} of {:?} has size {}, not 1",
                            x.shape(),
                            x.shape()[a]
                        ),
                    ));
                }
                v.push(a);
            }
            v
        }
    };
    let shape: Vec<usize> = (0..rank)
        .filter(|k| !drop.contains(k))
        .map(|k| x.shape()[k])
        .collect();
    Ok(from_vec(&shape, to_vec("squeeze", &x)?))
}

/// `gather(x, indices, axis)`: the slices of `x` along `axis` at `indices`; an index outside
/// `[0, size)` is an error (TF's CPU kernel).
pub fn gather<'a, 'b, T: Element, I: IndexElement + Element>(
    x: impl IntoView<'a, T>,
    indices: impl IntoView<'b, I>,
    axis: isize,
) -> Result<ArrayD<T>, Error> {
    let (x, ind) = (x.into_view(), indices.into_view());
    let axis = resolve_axis("gather", axis, x.ndim())?;
    let mut shape = x.shape()[..axis].to_vec();
    shape.extend_from_slice(ind.shape());
    shape.extend_from_slice(&x.shape()[axis + 1..]);
    let (x, ind) = (standard("gather", &x)?, standard("gather", &ind)?);
    let mut out = buffer("gather", &shape)?;
    gather_into(flat(&x), x.shape(), flat(&ind), axis, &mut out)?;
    Ok(from_vec(&shape, out))
}

/// The gradient of `gather(x, indices, axis)` with respect to an `x` of `x_shape`, given
/// `dy` of the gather's shape: `dy`'s slices added into zeros at their indices (TF's
/// `unsorted_segment_sum`); an index out of range is an error, as `gather`'s.
pub fn gather_grad<'a, 'b, T: Numeric, I: IndexElement + Element>(
    dy: impl IntoView<'a, T>,
    indices: impl IntoView<'b, I>,
    x_shape: &[usize],
    axis: isize,
) -> Result<ArrayD<T>, Error> {
    let op = "gather_grad";
    let (dy, ind) = (dy.into_view(), indices.into_view());
    let axis = resolve_axis(op, axis, x_shape.len())?;
    let mut want = x_shape[..axis].to_vec();
    want.extend_from_slice(ind.shape());
    want.extend_from_slice(&x_shape[axis + 1..]);
    if dy.shape() != want.as_slice() {
        return Err(Error::shape(
            op,
            format!(
                "the gradient must have the gather's shape {want:?} (params {x_shape:?}, axis {axis})"
            ),
            dy.shape(),
            ind.shape(),
            None,
        ));
    }
    let (dy, ind) = (standard(op, &dy)?, standard(op, &ind)?);
    let mut out = buffer(op, x_shape)?;
    scatter_add_into(flat(&dy), flat(&ind), x_shape, axis, &mut out)?;
    Ok(from_vec(x_shape, out))
}

/// `one_hot(indices, depth, on, off)`: a new last axis of `depth`; `on` at each index, `off`
/// elsewhere; an index outside `[0, depth)` gives a row of `off` (TF).
pub fn one_hot<'a, T: Element, I: IndexElement + Element>(
    indices: impl IntoView<'a, I>,
    depth: usize,
    on: T,
    off: T,
) -> Result<ArrayD<T>, Error> {
    let ind = indices.into_view();
    let mut shape = ind.shape().to_vec();
    shape.push(depth);
    let ind = standard("one_hot", &ind)?;
    let mut out = buffer("one_hot", &shape)?;
    one_hot_into(flat(&ind), depth, on, off, &mut out)?;
    Ok(from_vec(&shape, out))
}

fn arg_reduce<T: Element + PartialOrd>(
    x: ArrayViewD<'_, T>,
    axis: isize,
    min: bool,
) -> Result<ArrayD<i64>, Error> {
    let op = if min { "argmin" } else { "argmax" };
    let axis = resolve_axis(op, axis, x.ndim())?;
    let mut shape = x.shape().to_vec();
    shape.remove(axis);
    let x = standard(op, &x)?;
    let mut out = buffer(op, &shape)?;
    arg_reduce_into(flat(&x), x.shape(), axis, min, &mut out)?;
    Ok(from_vec(&shape, out))
}

/// `argmax(x, axis)`: i64 indices of the largest element along `axis`; ties take the first
/// index, the first NaN wins; an empty axis is an error.
pub fn argmax<'a, T: Element + PartialOrd>(
    x: impl IntoView<'a, T>,
    axis: isize,
) -> Result<ArrayD<i64>, Error> {
    arg_reduce(x.into_view(), axis, false)
}

/// `argmin(x, axis)`: as [`argmax`] for the smallest element.
pub fn argmin<'a, T: Element + PartialOrd>(
    x: impl IntoView<'a, T>,
    axis: isize,
) -> Result<ArrayD<i64>, Error> {
    arg_reduce(x.into_view(), axis, true)
}

/// `range(start, limit, delta)`: `start, start + delta, ...` up to `limit` (exclusive), TF's
/// rules: `delta != 0`, and `start <= limit` when `delta > 0` (`>=` when negative).
pub fn range<T: RangeElement + Element>(start: T, limit: T, delta: T) -> Result<ArrayD<T>, Error> {
    let n = T::count(start, limit, delta).map_err(|m| Error::invalid("range", m))?;
    let mut out = buffer("range", &[n])?;
    range_into(start, delta, &mut out);
    Ok(from_vec(&[n], out))
}

/// `range(0, n, 1)` of length `n` (the form `range(B)` of a symbolic dim compiles to).
pub fn range_n<T: RangeElement + Element>(
    start: T,
    delta: T,
    n: usize,
) -> Result<ArrayD<T>, Error> {
    let mut out = buffer("range", &[n])?;
    range_into(start, delta, &mut out);
    Ok(from_vec(&[n], out))
}
