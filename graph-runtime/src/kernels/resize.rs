//! `tf.image.resize` as TensorFlow 2 computes it (`antialias=False`, half-pixel centres) over NHWC images, and the adjoints its gradient needs (TF's `ResizeBilinearGrad` and `ResizeNearestNeighborGrad`).
//!
//! Output pixel `y` of `out` reads input row `(y + 0.5) * in / out`: `NEAREST` takes the row at
//! the floor of that (TF's `HalfPixelScalerForNN`, in f32 as TF's), `BILINEAR` subtracts 0.5,
//! interpolates between the rows at its floor and ceiling (clamped to the image) with TF's
//! `top + (bottom - top) * lerp`, and the same along columns. Bilinear output is f32 for f32 and
//! integer images (as TF's) and f64 for f64 images (TF rounds those to f32): the coordinates
//! and weights are computed in the output type. The adjoints add each output gradient back to
//! the input pixels it was read from, with the same weights, batch by batch in a fixed order,
//! so results do not depend on the threads.

use crate::dtype::{CastTo, Element, Numeric};
use crate::error::Error;
use crate::exec::parallel::for_each_chunk;
use crate::kernels::math::ElementaryMath;

/// How `resize` samples: TF's `ResizeMethod.NEAREST_NEIGHBOR` and `ResizeMethod.BILINEAR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResizeMethod {
    Nearest,
    Bilinear,
}

/// `NEAREST`, as the `#[graph]` language writes it.
pub const NEAREST: ResizeMethod = ResizeMethod::Nearest;
/// `BILINEAR`, as the `#[graph]` language writes it.
pub const BILINEAR: ResizeMethod = ResizeMethod::Bilinear;

/// An image shape as `[N, H, W, C]` (a rank-3 `[H, W, C]` is one image), or the error.
fn nhwc(op: &'static str, shape: &[usize], len: usize) -> Result<[usize; 4], Error> {
    let s = match *shape {
        [n, h, w, c] => [n, h, w, c],
        [h, w, c] => [1, h, w, c],
        _ => {
            return Err(Error::invalid(
                op,
                format!("images must be rank 4 (NHWC) or 3 (HWC), found {shape:?}"),
            ))
        }
    };
    if s.iter().product::<usize>() != len {
        return Err(Error::invalid(
            op,
            format!("{len} elements for shape {shape:?}"),
        ));
    }
    Ok(s)
}

/// Checks a resize from `[_, h, w, _]` to `size`: both sides positive where there are images.
fn check_sizes(op: &'static str, input: [usize; 4], size: [usize; 2]) -> Result<(), Error> {
    let [n, h, w, c] = input;
    if n * c == 0 {
        return Ok(());
    }
    if size[0] == 0 || size[1] == 0 {
        return Err(Error::invalid(
            op,
            format!("the output size {size:?} must be positive"),
        ));
    }
    if h == 0 || w == 0 {
        return Err(Error::invalid(
            op,
            format!("the input images {input:?} must have a positive height and width"),
        ));
    }
    Ok(())
}

/// The input row (or column) each of `out` output rows reads with `NEAREST`: TF's
/// `min(floor((y + 0.5) * scale), in - 1)` with `scale = in / out`, all in f32.
fn nearest_sources(input: usize, out: usize) -> Vec<usize> {
    let scale = input as f32 / out as f32;
    (0..out)
        .map(|y| {
            let at = ((y as f32 + 0.5) * scale).floor() as i64;
            at.clamp(0, input as i64 - 1) as usize
        })
        .collect()
}

/// One output row's (or column's) bilinear sources: the rows below and above and the weight of the one above.
#[derive(Debug, Clone, Copy)]
struct Lerp<O> {
    lower: usize,
    upper: usize,
    lerp: O,
}

/// TF's `compute_interpolation_weights` with the half-pixel scaler, in `O`.
fn bilinear_sources<O: Numeric + ElementaryMath>(input: usize, out: usize) -> Vec<Lerp<O>> {
    let scale = O::from_f64(input as f64).div(O::from_f64(out as f64));
    let half = O::from_f64(0.5);
    (0..out)
        .map(|y| {
            let at = O::from_f64(y as f64).add(half).mul(scale).sub(half);
            let floor = at.floor_();
            Lerp {
                lower: (floor.to_f64() as i64).max(0) as usize,
                upper: (at.ceil_().to_f64() as i64).min(input as i64 - 1) as usize,
                lerp: at.sub(floor),
            }
        })
        .collect()
}

/// `NEAREST` resize of `x` (`[N, H, W, C]` or `[H, W, C]`) to `size = [h, w]` into `out`
/// (`[N, h, w, C]`), of any element type.
pub fn resize_nearest_into<T: Element>(
    x: &[T],
    shape: &[usize],
    size: [usize; 2],
    out: &mut [T],
) -> Result<(), Error> {
    let op = "resize";
    let [n, h, w, c] = nhwc(op, shape, x.len())?;
    check_sizes(op, [n, h, w, c], size)?;
    let [oh, ow] = size;
    check_out(op, out.len(), [n, oh, ow, c])?;
    if out.is_empty() {
        return Ok(());
    }
    let (ys, xs) = (nearest_sources(h, oh), nearest_sources(w, ow));
    let row = ow * c;
    for_each_chunk(out, row, row, |first, chunk| {
        for (r, o) in chunk.chunks_mut(row).enumerate() {
            let (b, y) = ((first + r) / oh, (first + r) % oh);
            let src = &x[(b * h + ys[y]) * w * c..(b * h + ys[y] + 1) * w * c];
            for (ox, &sx) in xs.iter().enumerate() {
                o[ox * c..(ox + 1) * c].copy_from_slice(&src[sx * c..(sx + 1) * c]);
            }
        }
    });
    Ok(())
}

/// `BILINEAR` resize of `x` (`[N, H, W, C]` or `[H, W, C]`) to `size = [h, w]` into `out`
/// (`[N, h, w, C]`) of the float type `O` (f32 for f32 and integer images, f64 for f64).
pub fn resize_bilinear_into<T: CastTo<O>, O: Numeric + ElementaryMath>(
    x: &[T],
    shape: &[usize],
    size: [usize; 2],
    out: &mut [O],
) -> Result<(), Error> {
    let op = "resize";
    let [n, h, w, c] = nhwc(op, shape, x.len())?;
    check_sizes(op, [n, h, w, c], size)?;
    let [oh, ow] = size;
    check_out(op, out.len(), [n, oh, ow, c])?;
    if out.is_empty() {
        return Ok(());
    }
    let ys: Vec<Lerp<O>> = bilinear_sources(h, oh);
    let xs: Vec<Lerp<O>> = bilinear_sources(w, ow);
    let row = ow * c;
    let at =
        |b: usize, yy: usize, xx: usize, ch: usize| x[((b * h + yy) * w + xx) * c + ch].cast_to();
    for_each_chunk(out, row, row * 4, |first, chunk| {
        for (r, o) in chunk.chunks_mut(row).enumerate() {
            let (b, y) = ((first + r) / oh, (first + r) % oh);
            let ly = ys[y];
            for (ox, lx) in xs.iter().enumerate() {
                for ch in 0..c {
                    let top_left = at(b, ly.lower, lx.lower, ch);
                    let top_right = at(b, ly.lower, lx.upper, ch);
                    let bottom_left = at(b, ly.upper, lx.lower, ch);
                    let bottom_right = at(b, ly.upper, lx.upper, ch);
                    let top = top_left.add(top_right.sub(top_left).mul(lx.lerp));
                    let bottom = bottom_left.add(bottom_right.sub(bottom_left).mul(lx.lerp));
                    o[ox * c + ch] = top.add(bottom.sub(top).mul(ly.lerp));
                }
            }
        }
    });
    Ok(())
}

/// The output's length must be the resized shape's.
fn check_out(op: &'static str, len: usize, shape: [usize; 4]) -> Result<(), Error> {
    if shape.iter().product::<usize>() != len {
        return Err(Error::invalid(
            op,
            format!("{len} output elements for the resized shape {shape:?}"),
        ));
    }
    Ok(())
}

/// The shapes of a resize's adjoint: the gradient `g` (`[N, h, w, C]`) and the input images
/// (`[N, H, W, C]`, or both rank 3), checked against each other.
fn grad_shapes(
    op: &'static str,
    g_shape: &[usize],
    g_len: usize,
    x_shape: &[usize],
    out_len: usize,
) -> Result<([usize; 4], [usize; 4]), Error> {
    let g = nhwc(op, g_shape, g_len)?;
    let x = nhwc(op, x_shape, out_len)?;
    if g_shape.len() != x_shape.len() || g[0] != x[0] || g[3] != x[3] {
        return Err(Error::invalid(
            op,
            format!("the gradient {g_shape:?} is not of a resize of images {x_shape:?}"),
        ));
    }
    check_sizes(op, x, [g[1], g[2]])?;
    Ok((g, x))
}

/// The adjoint of [`resize_nearest_into`]: `out` (the input images' shape `x_shape`) is zeros
/// with each element of `g` (the resized shape `g_shape`) added to the pixel it was read from.
pub fn resize_nearest_grad_into<T: Numeric>(
    g: &[T],
    g_shape: &[usize],
    x_shape: &[usize],
    out: &mut [T],
) -> Result<(), Error> {
    let op = "resize_grad";
    let ([_, oh, ow, c], [_, h, w, _]) = grad_shapes(op, g_shape, g.len(), x_shape, out.len())?;
    out.fill(T::ZERO);
    if out.is_empty() || g.is_empty() {
        return Ok(());
    }
    let (ys, xs) = (nearest_sources(h, oh), nearest_sources(w, ow));
    let image = h * w * c;
    for_each_chunk(out, image, oh * ow * c, |first, chunk| {
        for (i, o) in chunk.chunks_mut(image).enumerate() {
            let gi = &g[(first + i) * oh * ow * c..(first + i + 1) * oh * ow * c];
            for (y, &sy) in ys.iter().enumerate() {
                for (x, &sx) in xs.iter().enumerate() {
                    let (src, dst) = ((y * ow + x) * c, (sy * w + sx) * c);
                    for ch in 0..c {
                        o[dst + ch] = o[dst + ch].add(gi[src + ch]);
                    }
                }
            }
        }
    });
    Ok(())
}

/// The adjoint of [`resize_bilinear_into`] for float images (TF's `ResizeBilinearGrad`):
/// `out` (the input images' shape) is zeros with each element of `g` added to the four
/// pixels it interpolated, times their weights.
pub fn resize_bilinear_grad_into<O: Numeric + ElementaryMath>(
    g: &[O],
    g_shape: &[usize],
    x_shape: &[usize],
    out: &mut [O],
) -> Result<(), Error> {
    let op = "resize_grad";
    let ([_, oh, ow, c], [_, h, w, _]) = grad_shapes(op, g_shape, g.len(), x_shape, out.len())?;
    out.fill(O::ZERO);
    if out.is_empty() || g.is_empty() {
        return Ok(());
    }
    let ys: Vec<Lerp<O>> = bilinear_sources(h, oh);
    let xs: Vec<Lerp<O>> = bilinear_sources(w, ow);
    let image = h * w * c;
    for_each_chunk(out, image, oh * ow * c * 4, |first, chunk| {
        for (i, o) in chunk.chunks_mut(image).enumerate() {
            let gi = &g[(first + i) * oh * ow * c..(first + i + 1) * oh * ow * c];
            for (y, ly) in ys.iter().enumerate() {
                let inverse_y = O::ONE.sub(ly.lerp);
                for (x, lx) in xs.iter().enumerate() {
                    let inverse_x = O::ONE.sub(lx.lerp);
                    let pixel = |yy: usize, xx: usize| (yy * w + xx) * c;
                    let (tl, tr) = (pixel(ly.lower, lx.lower), pixel(ly.lower, lx.upper));
                    let (bl, br) = (pixel(ly.upper, lx.lower), pixel(ly.upper, lx.upper));
                    for ch in 0..c {
                        let d = gi[(y * ow + x) * c + ch];
                        // TF's order: `grad * inverse_y_lerp * inverse_x_lerp` and so on.
                        let (dt, db) = (d.mul(inverse_y), d.mul(ly.lerp));
                        o[tl + ch] = o[tl + ch].add(dt.mul(inverse_x));
                        o[tr + ch] = o[tr + ch].add(dt.mul(lx.lerp));
                        o[bl + ch] = o[bl + ch].add(db.mul(inverse_x));
                        o[br + ch] = o[br + ch].add(db.mul(lx.lerp));
                    }
                }
            }
        }
    });
    Ok(())
}
