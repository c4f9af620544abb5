//! Eager reductions (`reduce_sum reduce_mean reduce_max reduce_min`, `norm`) and `softmax`/`log_softmax`.

use super::IntoView;
use super::{flat, from_vec, standard};
use crate::dtype::{Float, Numeric};
use crate::error::Error;
use crate::exec::buffer;
use crate::kernels::math::FloatMath;
use crate::kernels::reduce::{norm_f32, norm_f64, reduce_into, same_type, ReduceKind};
use crate::kernels::softmax::softmax_into;
use ndarray::ArrayD;

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
    let sx = standard(&x);
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

/// The L2 norm over all elements, as a rank-0 array.
///
/// f32 squares accumulate in f64; f64 is scaled by the largest magnitude first: neither
/// overflows nor underflows. NaN propagates; otherwise any infinity gives infinity.
pub fn norm<'a, T: Float>(x: impl IntoView<'a, T>) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    let sx = standard(&x);
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
    let sx = standard(&x);
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
