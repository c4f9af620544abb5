//! `conv2d` with `dilations` and `depthwise_conv2d` on NHWC tensors with TensorFlow's semantics: a direct kernel (which compiled graphs and the eager ops call), apart from conv.rs's im2col/GEMM path for plain convolutions.
//!
//! A dilation `d` spaces the kernel's taps `d` apart, so the window spans
//! `(k - 1) * d + 1` input pixels; SAME and VALID sizes and padding use that span exactly as
//! TF does (`SAME`: `ceil(in / stride)` outputs, `pad_total = max((out - 1) * stride + span -
//! in, 0)`, `pad_total / 2` before; `VALID`: `(in - span) / stride + 1`). A depthwise kernel
//! `[KH, KW, C, M]` convolves each input channel `c` with its own `M` filters: output
//! channel `c * M + m` (TF's layout). Each output pixel sums its taps in row-major order
//! (rows, columns, input channels), so the result does not depend on the thread count.
//! f32 and f64 depthwise convolutions run the vectorised kernel of `depthwise.rs`
//! (fused multiply-adds at the AVX2 and AVX-512 levels); the loops here serve the rest.

use crate::dtype::Numeric;
use crate::error::Error;
use crate::exec::parallel::for_each_chunk;
use crate::kernels::padding::Padding;
use crate::kernels::reduce::{same_type, same_type_mut};

use super::depthwise::{depthwise_f32, depthwise_f64, ConvGeometry};

/// The parameters of a dilated or depthwise convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvGeneral {
    pub stride: usize,
    /// Spacing of the kernel taps along rows and columns (1 is a plain convolution).
    pub dilation: [usize; 2],
    pub padding: Padding,
    /// `k` is `[KH, KW, C, M]` applied per channel (output `C * M` channels).
    pub depthwise: bool,
}

impl ConvGeneral {
    fn name(&self) -> &'static str {
        if self.depthwise {
            "depthwise_conv2d"
        } else {
            "conv2d"
        }
    }
}

/// Output size and padding before along one axis of size `len`, for `k` taps `d` apart, or
/// `None` when a VALID window does not fit (or a size is zero).
pub fn out_and_pad(
    len: usize,
    k: usize,
    d: usize,
    stride: usize,
    padding: Padding,
) -> Option<(usize, usize)> {
    if k == 0 || d == 0 || stride == 0 {
        return None;
    }
    let span = (k - 1).checked_mul(d)?.checked_add(1)?;
    match padding {
        Padding::Same => {
            let out = len.div_ceil(stride);
            let total = (out.saturating_sub(1) * stride + span).saturating_sub(len);
            Some((out, total / 2))
        }
        Padding::Valid => (span <= len).then(|| ((len - span) / stride + 1, 0)),
    }
}

/// The output shape, or the error the eager ops return.
pub fn output_shape(sx: &[usize], sk: &[usize], p: ConvGeneral) -> Result<[usize; 4], Error> {
    let op = p.name();
    if sx.len() != 4 || sk.len() != 4 {
        return Err(Error::shape(
            op,
            "the input must be rank 4 [N, H, W, C] and the kernel rank 4 [KH, KW, C, F]",
            sx,
            sk,
            None,
        ));
    }
    if sx[3] != sk[2] {
        return Err(Error::shape(
            op,
            format!(
                "input channels differ: axis 3 of the input is {} but axis 2 of the kernel is {}",
                sx[3], sk[2]
            ),
            sx,
            sk,
            Some(3),
        ));
    }
    if p.stride == 0 || p.dilation.contains(&0) {
        return Err(Error::invalid(
            op,
            format!(
                "stride and dilations must be at least 1, found stride {} and dilations {:?}",
                p.stride, p.dilation
            ),
        ));
    }
    let mut out = [sx[0], 0, 0, 0];
    for axis in 0..2 {
        match out_and_pad(
            sx[axis + 1],
            sk[axis],
            p.dilation[axis],
            p.stride,
            p.padding,
        ) {
            Some((o, _)) => out[axis + 1] = o,
            None => {
                return Err(Error::shape(
                    op,
                    format!(
                        "the VALID window (kernel {} with dilation {}) is larger than the input",
                        sk[axis], p.dilation[axis]
                    ),
                    sx,
                    sk,
                    Some(axis + 1),
                ))
            }
        }
    }
    out[3] = if p.depthwise { sk[2] * sk[3] } else { sk[3] };
    Ok(out)
}

/// `out = conv(x, k)` (`x` `[N, H, W, C]`, `k` `[KH, KW, C, F]`, both row-major), then
/// `epilogue(first_pixel, block)` on each finished block of output pixels, as
/// [`crate::linalg::conv::conv2d_into`] does; pixels in parallel.
///
/// Panics if the shapes disagree or a slice is too short (the callers check first).
#[allow(clippy::too_many_arguments)]
pub fn conv_general_into<T: Numeric, E>(
    x: &[T],
    x_shape: [usize; 4],
    k: &[T],
    k_shape: [usize; 4],
    p: ConvGeneral,
    out: &mut [T],
    epilogue: E,
) where
    E: Fn(usize, &mut [T]) + Sync,
{
    let [n, h, w, c] = x_shape;
    let [kh, kw, kc, m] = k_shape;
    assert_eq!(c, kc, "conv channels");
    let (oh, pt) =
        out_and_pad(h, kh, p.dilation[0], p.stride, p.padding).expect("conv window fits");
    let (ow, pl) =
        out_and_pad(w, kw, p.dilation[1], p.stride, p.padding).expect("conv window fits");
    let f = if p.depthwise { c * m } else { m };
    assert!(x.len() >= n * h * w * c && k.len() >= kh * kw * c * m);
    let out = &mut out[..n * oh * ow * f];
    let g = ConvGeometry {
        h,
        w,
        c,
        kh,
        kw,
        m,
        oh,
        ow,
        stride: p.stride,
        dilation: p.dilation,
        pad_top: pt,
        pad_left: pl,
    };
    for_each_chunk(out, f.max(1), kh * kw * c * m.max(1), |first, chunk| {
        if f == 0 {
            return;
        }
        if !(p.depthwise && vectorised_depthwise(&g, x, k, first, chunk)) {
            direct_pixels(&g, p.depthwise, x, k, first, chunk);
        }
        epilogue(first, chunk);
    });
}

/// Runs [`super::depthwise`]'s kernel on output pixels `first..` when `T` is f32 or f64;
/// `false` (nothing written) for other types.
fn vectorised_depthwise<T: Numeric>(
    g: &ConvGeometry,
    x: &[T],
    k: &[T],
    first: usize,
    out: &mut [T],
) -> bool {
    if let (Some(x), Some(k), Some(o)) = (
        same_type::<T, f32>(x),
        same_type::<T, f32>(k),
        same_type_mut::<T, f32>(out),
    ) {
        depthwise_f32(g, x, k, first, o);
        true
    } else if let (Some(x), Some(k), Some(o)) = (
        same_type::<T, f64>(x),
        same_type::<T, f64>(k),
        same_type_mut::<T, f64>(out),
    ) {
        depthwise_f64(g, x, k, first, o);
        true
    } else {
        false
    }
}

/// Output pixels `first..` of a dilated convolution (kernel `[KH, KW, C, M]`, `M` output
/// channels) or of a depthwise one of another type than f32 and f64, tap by tap.
fn direct_pixels<T: Numeric>(
    g: &ConvGeometry,
    depthwise: bool,
    x: &[T],
    k: &[T],
    first: usize,
    chunk: &mut [T],
) {
    let ConvGeometry {
        h,
        w,
        c,
        kh,
        kw,
        m,
        oh,
        ow,
        stride: s,
        dilation: [dh, dw],
        pad_top: pt,
        pad_left: pl,
    } = *g;
    let f = if depthwise { c * m } else { m };
    for (q, pix) in chunk.chunks_mut(f).enumerate() {
        let flat = first + q;
        let (b, rest) = (flat / (oh * ow), flat % (oh * ow));
        let (i, j) = (rest / ow, rest % ow);
        pix.fill(T::ZERO);
        for di in 0..kh {
            let y = (i * s + di * dh) as isize - pt as isize;
            if y < 0 || y >= h as isize {
                continue;
            }
            for dj in 0..kw {
                let xx = (j * s + dj * dw) as isize - pl as isize;
                if xx < 0 || xx >= w as isize {
                    continue;
                }
                let src = &x[((b * h + y as usize) * w + xx as usize) * c..][..c];
                let taps = &k[(di * kw + dj) * c * m..][..c * m];
                if depthwise {
                    // Output channel ch * m + mm reads input channel ch.
                    for (ch, &v) in src.iter().enumerate() {
                        let o = &mut pix[ch * m..(ch + 1) * m];
                        for (acc, &t) in o.iter_mut().zip(&taps[ch * m..(ch + 1) * m]) {
                            *acc = acc.add(v.mul(t));
                        }
                    }
                } else {
                    for (ch, &v) in src.iter().enumerate() {
                        for (acc, &t) in pix.iter_mut().zip(&taps[ch * m..(ch + 1) * m]) {
                            *acc = acc.add(v.mul(t));
                        }
                    }
                }
            }
        }
    }
}
