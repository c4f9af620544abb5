//! Eager image ops: `resize` (TF 2's `tf.image.resize`, `NEAREST` and `BILINEAR`) and the adjoints its gradient calls.

use super::IntoView;
use super::{flat, from_vec, standard};
use crate::dtype::{CastTo, Element, Float, Numeric};
use crate::error::Error;
use crate::exec::buffer;
use crate::kernels::math::ElementaryMath;
use crate::kernels::resize::{
    resize_bilinear_grad_into, resize_bilinear_into, resize_nearest_grad_into, resize_nearest_into,
    ResizeMethod,
};
use ndarray::ArrayD;

/// `shape` (`[N, H, W, C]` or `[H, W, C]`) with its height and width replaced by `size`.
fn resized(op: &'static str, shape: &[usize], size: [usize; 2]) -> Result<Vec<usize>, Error> {
    let r = shape.len();
    if r != 3 && r != 4 {
        return Err(Error::invalid(
            op,
            format!("images must be rank 4 (NHWC) or 3 (HWC), found {shape:?}"),
        ));
    }
    let mut out = shape.to_vec();
    out[r - 3] = size[0];
    out[r - 2] = size[1];
    Ok(out)
}

/// TF 2's `tf.image.resize(x, size, method)` of float images (`[N, H, W, C]` or `[H, W, C]`),
/// half-pixel centres, no antialiasing; the result has `x`'s dtype.
pub fn resize<'a, T: Float + ElementaryMath + CastTo<T>>(
    x: impl IntoView<'a, T>,
    size: [usize; 2],
    method: ResizeMethod,
) -> Result<ArrayD<T>, Error> {
    match method {
        ResizeMethod::Nearest => resize_nearest(x, size),
        ResizeMethod::Bilinear => resize_bilinear(x, size),
    }
}

/// `resize(x, size, NEAREST)` of images of any element type.
pub fn resize_nearest<'a, T: Element>(
    x: impl IntoView<'a, T>,
    size: [usize; 2],
) -> Result<ArrayD<T>, Error> {
    let op = "resize";
    let x = x.into_view();
    let shape = resized(op, x.shape(), size)?;
    let sx = standard(op, &x)?;
    let mut out = buffer::zeroed_for(op, &shape)?;
    resize_nearest_into(flat(&sx), x.shape(), size, &mut out)?;
    Ok(from_vec(&shape, out))
}

/// `resize(x, size, BILINEAR)`: a result of the float type `O` (TF's f32 for f32 and
/// integer images; f64 for f64 images).
pub fn resize_bilinear<'a, T: CastTo<O>, O: Numeric + ElementaryMath>(
    x: impl IntoView<'a, T>,
    size: [usize; 2],
) -> Result<ArrayD<O>, Error> {
    let op = "resize";
    let x = x.into_view();
    let shape = resized(op, x.shape(), size)?;
    let sx = standard(op, &x)?;
    let mut out = buffer::zeroed_for(op, &shape)?;
    resize_bilinear_into(flat(&sx), x.shape(), size, &mut out)?;
    Ok(from_vec(&shape, out))
}

/// The gradient of `resize(x, .., method)` with respect to images of shape `x_shape`, given
/// `g`, the gradient of its result (TF's `ResizeNearestNeighborGrad` / `ResizeBilinearGrad`).
pub fn resize_grad<'a, T: Numeric + ElementaryMath>(
    g: impl IntoView<'a, T>,
    x_shape: &[usize],
    method: ResizeMethod,
) -> Result<ArrayD<T>, Error> {
    let op = "resize_grad";
    let g = g.into_view();
    let sg = standard(op, &g)?;
    let mut out = buffer::zeroed_for(op, x_shape)?;
    match method {
        ResizeMethod::Nearest => resize_nearest_grad_into(flat(&sg), g.shape(), x_shape, &mut out)?,
        ResizeMethod::Bilinear => {
            resize_bilinear_grad_into(flat(&sg), g.shape(), x_shape, &mut out)?
        }
    }
    Ok(from_vec(x_shape, out))
}
