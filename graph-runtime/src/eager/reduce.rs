//! Eager reductions (`reduce_sum reduce_mean reduce_max reduce_min reduce_prod`, `reduce_any`/`reduce_all`, `norm`), `softmax`/`log_softmax`, the running totals (`cumsum`, `cumprod`) and `top_k`.

use super::IntoView;
use super::{flat, from_vec, standard};
use crate::dtype::{Float, Numeric};
use crate::error::Error;
use crate::exec::buffer;
use crate::kernels::math::FloatMath;
use crate::kernels::reduce::{norm_f32, norm_f64, reduce_into, same_type, ReduceKind};
use crate::kernels::scan::{cumulative_into, ScanKind};
use crate::kernels::selection::IndexElement;
use crate::kernels::softmax::softmax_into;
use crate::kernels::top_k::{scatter_along_last_into, take_along_last_into, top_k_into};
use ndarray::{ArrayD, ArrayViewD};

/// Resolves one possibly negative axis against `rank`.
fn resolve_axis(op: &'static str, axis: isize, rank: usize) -> Result<usize, Error> {
    let r = rank as isize;
    if axis < -r || axis >= r {
        return Err(Error::invalid(
            op,
            format_args!("axis {axis} is out of range for a tensor of rank {rank}"),
        ));
    }
    Ok(if axis < 0 {
        (axis + r) as usize
    } else {
        axis as usize
    })
}

/// Resolves the axes of a reduction: `None` is every axis; the result is sorted and unique.
fn resolve_axes(
    op: &'static str,
    axes: Option<&[isize]>,
    rank: usize,
) -> Result<Vec<usize>, Error> {
    let Some(axes) = axes else {
        return Ok((0..rank).collect());
    };
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let r = resolve_axis(op, a, rank)?;
        if out.contains(&r) {
            return Err(Error::invalid(
                op,
                format_args!("axis {r} is repeated in {axes:?} (rank {rank})"),
            ));
        }
        out.push(r);
    }
    out.sort_unstable();
    Ok(out)
}

/// The shared body of the four reductions.
fn reduce<'a, T: Numeric>(
    op: &'static str,
    x: impl IntoView<'a, T>,
    axes: Option<&[isize]>,
    keep_dims: bool,
    kind: ReduceKind,
) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    let axes = resolve_axes(op, axes, x.ndim())?;
    let shape: Vec<usize> = x
        .shape()
        .iter()
        .enumerate()
        .filter_map(|(a, &d)| match (axes.contains(&a), keep_dims) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    let sx = standard(op, &x)?;
    let mut out = buffer::zeroed_for(op, &shape)?;
    reduce_into(flat(&sx), x.shape(), &axes, kind, &mut out);
    Ok(from_vec(&shape, out))
}

/// The sum over `axes` (`None`: all); negative axes count from the end; `keep_dims` keeps reduced axes as 1.
pub fn reduce_sum<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    axes: Option<&[isize]>,
    keep_dims: bool,
) -> Result<ArrayD<T>, Error> {
    reduce("reduce_sum", x, axes, keep_dims, ReduceKind::Sum)
}

/// The mean over `axes` (integers truncate; an empty float mean is NaN).
pub fn reduce_mean<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    axes: Option<&[isize]>,
    keep_dims: bool,
) -> Result<ArrayD<T>, Error> {
    reduce("reduce_mean", x, axes, keep_dims, ReduceKind::Mean)
}

/// The maximum over `axes` (NaN propagates; empty gives the lowest value).
pub fn reduce_max<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    axes: Option<&[isize]>,
    keep_dims: bool,
) -> Result<ArrayD<T>, Error> {
    reduce("reduce_max", x, axes, keep_dims, ReduceKind::Max)
}

/// The minimum over `axes` (NaN propagates; empty gives the highest value).
pub fn reduce_min<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    axes: Option<&[isize]>,
    keep_dims: bool,
) -> Result<ArrayD<T>, Error> {
    reduce("reduce_min", x, axes, keep_dims, ReduceKind::Min)
}

/// The product over `axes` (integers wrap; f32 multiplies in f64 and rounds once; empty gives 1).
pub fn reduce_prod<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    axes: Option<&[isize]>,
    keep_dims: bool,
) -> Result<ArrayD<T>, Error> {
    reduce("reduce_prod", x, axes, keep_dims, ReduceKind::Prod)
}

/// `x` as 0 and 1 (i32), in a buffer allocated fallibly (an error naming `op`).
fn bools_as_ints(op: &'static str, x: ArrayViewD<'_, bool>) -> Result<ArrayD<i32>, Error> {
    let mut data = buffer::with_capacity(op, x.len())?;
    data.extend(x.iter().map(|&b| i32::from(b)));
    Ok(from_vec(x.shape(), data))
}

/// Whether each element of `r` is positive, in a buffer allocated fallibly.
fn bools_of(op: &'static str, r: &ArrayD<i32>) -> Result<ArrayD<bool>, Error> {
    let mut data = buffer::with_capacity(op, r.len())?;
    data.extend(r.iter().map(|&v| v > 0));
    Ok(from_vec(r.shape(), data))
}

/// Whether any element over `axes` is true (false when empty).
pub fn reduce_any<'a>(
    x: impl IntoView<'a, bool>,
    axes: Option<&[isize]>,
    keep_dims: bool,
) -> Result<ArrayD<bool>, Error> {
    let ones = bools_as_ints("reduce_any", x.into_view())?;
    let r = reduce("reduce_any", &ones, axes, keep_dims, ReduceKind::Max)?;
    bools_of("reduce_any", &r)
}

/// Whether every element over `axes` is true (true when empty).
pub fn reduce_all<'a>(
    x: impl IntoView<'a, bool>,
    axes: Option<&[isize]>,
    keep_dims: bool,
) -> Result<ArrayD<bool>, Error> {
    let ones = bools_as_ints("reduce_all", x.into_view())?;
    let r = reduce("reduce_all", &ones, axes, keep_dims, ReduceKind::Min)?;
    bools_of("reduce_all", &r)
}

/// The shared body of `cumsum` and `cumprod`.
fn cumulative<'a, T: Numeric>(
    kind: ScanKind,
    x: impl IntoView<'a, T>,
    axis: isize,
    exclusive: bool,
    reverse: bool,
) -> Result<ArrayD<T>, Error> {
    let op = kind.name();
    let x = x.into_view();
    let axis = resolve_axis(op, axis, x.ndim())?;
    let sx = standard(op, &x)?;
    let mut out = buffer::zeroed(op, x.len())?;
    cumulative_into(
        flat(&sx),
        x.shape(),
        axis,
        kind,
        exclusive,
        reverse,
        &mut out,
    )?;
    Ok(from_vec(x.shape(), out))
}

/// TensorFlow's `cumsum`: the running sums along `axis`; `exclusive` leaves each element out
/// of its own sum (the first is 0), `reverse` sums from the end.
pub fn cumsum<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    axis: isize,
    exclusive: bool,
    reverse: bool,
) -> Result<ArrayD<T>, Error> {
    cumulative(ScanKind::Sum, x, axis, exclusive, reverse)
}

/// TensorFlow's `cumprod`: the running products along `axis` (the first is 1 when `exclusive`).
pub fn cumprod<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    axis: isize,
    exclusive: bool,
    reverse: bool,
) -> Result<ArrayD<T>, Error> {
    cumulative(ScanKind::Prod, x, axis, exclusive, reverse)
}

/// TensorFlow's `top_k`: the `k` largest elements of each row (the last axis) in order, and
/// their indices (`i32`); equal values by lower index, NaN above everything. `k` above the
/// last axis is an error.
pub fn top_k<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    k: usize,
) -> Result<(ArrayD<T>, ArrayD<i32>), Error> {
    let x = x.into_view();
    let indices = top_k_indices(x.view(), k)?;
    let values = take_along_last_axis(x, indices.view())?;
    Ok((values, indices))
}

/// The indices half of [`top_k`].
pub fn top_k_indices<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    k: usize,
) -> Result<ArrayD<i32>, Error> {
    let op = "top_k";
    let x = x.into_view();
    let mut shape = x.shape().to_vec();
    let Some(last) = shape.last_mut() else {
        return Err(Error::invalid(op, "the input must have rank 1 or more"));
    };
    *last = k;
    let sx = standard(op, &x)?;
    let mut out = buffer::zeroed_for(op, &shape)?;
    top_k_into(flat(&sx), x.shape(), k, &mut out)?;
    Ok(from_vec(&shape, out))
}

/// `out[.., j] = x[.., indices[.., j]]` along the last axis (NumPy's `take_along_axis`):
/// `top_k`'s values from its indices. `indices` has `x`'s shape but for the last axis.
pub fn take_along_last_axis<'a, 'b, T: Numeric, I: IndexElement + crate::dtype::Element>(
    x: impl IntoView<'a, T>,
    indices: impl IntoView<'b, I>,
) -> Result<ArrayD<T>, Error> {
    let op = "take_along_axis";
    let (x, ind) = (x.into_view(), indices.into_view());
    let (xs, is) = (x.shape(), ind.shape());
    if xs.is_empty() || xs.len() != is.len() || xs[..xs.len() - 1] != is[..is.len() - 1] {
        return Err(Error::invalid(
            op,
            format!("indices {is:?} do not match the input {xs:?} but for the last axis"),
        ));
    }
    let (sx, si) = (standard(op, &x)?, standard(op, &ind)?);
    let mut out = buffer::zeroed_for(op, is)?;
    take_along_last_into(flat(&sx), xs, flat(&si), &mut out)?;
    Ok(from_vec(is, out))
}

/// The adjoint of [`take_along_last_axis`]: zeros of `shape` with `g[.., j]` added at
/// `[.., indices[.., j]]` (`top_k`'s gradient).
pub fn scatter_along_last_axis<'a, 'b, T: Numeric, I: IndexElement + crate::dtype::Element>(
    g: impl IntoView<'a, T>,
    indices: impl IntoView<'b, I>,
    shape: &[usize],
) -> Result<ArrayD<T>, Error> {
    let op = "scatter_along_axis";
    let (g, ind) = (g.into_view(), indices.into_view());
    if g.shape() != ind.shape()
        || shape.is_empty()
        || g.ndim() != shape.len()
        || g.shape()[..g.ndim() - 1] != shape[..shape.len() - 1]
    {
        return Err(Error::invalid(
            op,
            format!(
                "gradient {:?} and indices {:?} do not match the shape {shape:?} but for the last axis",
                g.shape(),
                ind.shape()
            ),
        ));
    }
    let (sg, si) = (standard(op, &g)?, standard(op, &ind)?);
    let mut out = buffer::zeroed_for(op, shape)?;
    scatter_along_last_into(flat(&sg), flat(&si), shape, &mut out)?;
    Ok(from_vec(shape, out))
}

/// The L2 norm over all elements, as a rank-0 array.
///
/// f32 squares accumulate in f64; f64 is scaled by the largest magnitude first: neither
/// overflows nor underflows. NaN propagates; otherwise any infinity gives infinity.
pub fn norm<'a, T: Float>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    let sx = standard("norm", &x)?;
    let s = flat(&sx);
    let result = if let Some(s) = same_type::<T, f32>(s) {
        norm_f32(s) as f64
    } else if let Some(s) = same_type::<T, f64>(s) {
        norm_f64(s)
    } else {
        unreachable!("the float types are f32 and f64")
    };
    Ok(ArrayD::from_elem(ndarray::IxDyn(&[]), T::from_f64(result)))
}

/// The shared body of `softmax` and `log_softmax`.
fn softmax_op<'a, T: FloatMath>(
    op: &'static str,
    x: impl IntoView<'a, T>,
    axis: isize,
    log: bool,
) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    let axis = resolve_axis(op, axis, x.ndim())?;
    let sx = standard(op, &x)?;
    let mut out = buffer::zeroed(op, x.len())?;
    softmax_into(flat(&sx), x.shape(), axis, log, &mut out);
    Ok(from_vec(x.shape(), out))
}

/// `exp(x) / sum(exp(x))` along `axis` (negative counts from the end), computed stably.
pub fn softmax<'a, T: FloatMath>(x: impl IntoView<'a, T>, axis: isize) -> Result<ArrayD<T>, Error> {
    softmax_op("softmax", x, axis, false)
}

/// `x - log(sum(exp(x)))` along `axis`, computed stably.
pub fn log_softmax<'a, T: FloatMath>(
    x: impl IntoView<'a, T>,
    axis: isize,
) -> Result<ArrayD<T>, Error> {
    softmax_op("log_softmax", x, axis, true)
}
