//! Eager neural-net ops: the convolutions, `bias_add` and pooling, and the gradients of the convolutions and pooling, over ndarray operands, on the same kernels as compiled graphs.

use ndarray::{ArrayD, ArrayViewD};
use rayon::prelude::*;

use super::IntoView;
use super::{flat, from_vec, standard};
use crate::dtype::{Float, Numeric};
use crate::error::Error;
use crate::exec::buffer;
use crate::kernels::pool::{pool2d_into, Pool2d, PoolKind};
use crate::kernels::pool_grad::pool2d_grad_into;
use crate::linalg::conv::{conv2d_into, conv2d_output_hw, Padding};
use crate::linalg::conv_backprop;
use crate::linalg::conv_general::{self, conv_general_into, ConvGeneral};
use crate::linalg::gemm::GemmElement;

/// `bias_add` splits its rows over rayon above this many elements.
pub const BIAS_PARALLEL_ELEMS: usize = 1 << 15;

/// Rows of `bias_add` per parallel task hold at least this many elements.
const BIAS_CHUNK_ELEMS: usize = 1 << 13;

/// `conv2d(x, k, stride, padding)`: `x` `[N, H, W, Cin]`, `k` `[KH, KW, Cin, Cout]`, result `[N, OH, OW, Cout]`.
pub fn conv2d<'a, T: GemmElement>(
    x: impl IntoView<'a, T>,
    k: impl IntoView<'a, T>,
    stride: usize,
    padding: Padding,
) -> Result<ArrayD<T>, Error> {
    let (x, k) = (x.into_view(), k.into_view());
    let (sx, sk) = (x.shape(), k.shape());
    if sx.len() != 4 {
        return Err(Error::shape(
            "conv2d",
            format!(
                "the input must have rank 4 [N, H, W, Cin], found rank {}",
                sx.len()
            ),
            sx,
            sk,
            None,
        ));
    }
    if sk.len() != 4 {
        return Err(Error::shape(
            "conv2d",
            format!(
                "the kernel must have rank 4 [KH, KW, Cin, Cout], found rank {}",
                sk.len()
            ),
            sx,
            sk,
            None,
        ));
    }
    if sx[3] != sk[2] {
        return Err(Error::shape(
            "conv2d",
            format!(
                "input channels differ: axis 3 of the input is {} but axis 2 of the kernel is {}",
                sx[3], sk[2]
            ),
            sx,
            sk,
            Some(3),
        ));
    }
    if stride == 0 {
        return Err(Error::invalid("conv2d", "the stride must be at least 1"));
    }
    let Some((oh, ow)) = conv2d_output_hw(sx[1], sx[2], sk[0], sk[1], stride, padding) else {
        let axis = if sk[0] == 0 || sk[0] > sx[1] { 1 } else { 2 };
        return Err(Error::shape(
            "conv2d",
            "the kernel is empty or larger than the input under VALID padding",
            sx,
            sk,
            Some(axis),
        ));
    };
    let x_shape = [sx[0], sx[1], sx[2], sx[3]];
    let k_shape = [sk[0], sk[1], sk[2], sk[3]];
    let (x, k) = (standard("conv2d", &x)?, standard("conv2d", &k)?);
    let out_shape = [x_shape[0], oh, ow, k_shape[3]];
    let mut out = buffer::zeroed_for("conv2d", &out_shape)?;
    conv2d_into(
        flat(&x),
        x_shape,
        flat(&k),
        k_shape,
        stride,
        padding,
        &mut out,
        |_, _| {},
    );
    Ok(from_vec(&out_shape, out))
}

/// `bias_add(x, b)`: adds the vector `b` along the last axis of `x`.
pub fn bias_add<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    b: impl IntoView<'a, T>,
) -> Result<ArrayD<T>, Error> {
    let (x, b) = (x.into_view(), b.into_view());
    let (sx, sb) = (x.shape(), b.shape());
    if sb.len() != 1 {
        return Err(Error::shape(
            "bias_add",
            format!("the bias must have rank 1, found rank {}", sb.len()),
            sx,
            sb,
            None,
        ));
    }
    let last = sx.len().checked_sub(1);
    let channels = last.map(|a| sx[a]);
    if channels != Some(sb[0]) {
        return Err(Error::shape(
            "bias_add",
            format!(
                "the bias has {} elements but the last axis of the input has {}",
                sb[0],
                channels.map_or_else(|| "none (rank 0)".to_string(), |c| c.to_string())
            ),
            sx,
            sb,
            last,
        ));
    }
    let shape = sx.to_vec();
    let x = standard("bias_add", &x)?;
    let mut out = buffer::copied("bias_add", flat(&x))?;
    let b = standard("bias_add", &b)?;
    let b = flat(&b);
    let c = b.len();
    if c == 0 || out.is_empty() {
        return Ok(from_vec(&shape, out));
    }
    let add_rows = |rows: &mut [T]| {
        for row in rows.chunks_exact_mut(c) {
            for (o, &v) in row.iter_mut().zip(b) {
                *o = o.add(v);
            }
        }
    };
    if out.len() < BIAS_PARALLEL_ELEMS {
        add_rows(&mut out);
    } else {
        let rows_per_task = BIAS_CHUNK_ELEMS.div_ceil(c);
        out.par_chunks_mut(rows_per_task * c).for_each(add_rows);
    }
    Ok(from_vec(&shape, out))
}

/// The eager form of a pooling op: checks, then the kernel of compiled graphs.
fn pool_eager<'a, T: Numeric>(x: impl IntoView<'a, T>, pool: Pool2d) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    let shape = crate::kernels::pool::output_shape(x.shape(), pool)?;
    let op = pool.kind.name();
    let xs = standard(op, &x)?;
    let data = flat(&xs);
    let mut out = buffer::zeroed_for(op, &shape)?;
    let sx = [x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]];
    pool2d_into(data, sx, pool, &mut out);
    Ok(from_vec(&shape, out))
}

/// `max_pool2d(x, ksize, strides, padding)` on an NHWC tensor, `ksize` and `strides` as
/// `[rows, columns]` (TF's `tf.nn.max_pool2d`).
pub fn max_pool2d<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    ksize: [usize; 2],
    strides: [usize; 2],
    padding: Padding,
) -> Result<ArrayD<T>, Error> {
    let kind = PoolKind::Max;
    pool_eager(
        x,
        Pool2d {
            kind,
            ksize,
            strides,
            padding,
        },
    )
}

/// `avg_pool2d(x, ksize, strides, padding)` on an NHWC tensor: the mean of each window's
/// valid (unpadded) elements (TF's `tf.nn.avg_pool2d`).
pub fn avg_pool2d<'a, T: Float>(
    x: impl IntoView<'a, T>,
    ksize: [usize; 2],
    strides: [usize; 2],
    padding: Padding,
) -> Result<ArrayD<T>, Error> {
    let kind = PoolKind::Avg;
    pool_eager(
        x,
        Pool2d {
            kind,
            ksize,
            strides,
            padding,
        },
    )
}

/// The eager form of a dilated or depthwise convolution: checks, then the kernel of compiled
/// graphs.
fn conv_eager<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    k: impl IntoView<'a, T>,
    p: ConvGeneral,
) -> Result<ArrayD<T>, Error> {
    let (x, k) = (x.into_view(), k.into_view());
    let shape = conv_general::output_shape(x.shape(), k.shape(), p)?;
    let op = if p.depthwise {
        "depthwise_conv2d"
    } else {
        "conv2d"
    };
    let (xs, ks) = (standard(op, &x)?, standard(op, &k)?);
    let four = |s: &[usize]| [s[0], s[1], s[2], s[3]];
    let mut out = buffer::zeroed_for(op, &shape)?;
    conv_general_into(
        flat(&xs),
        four(x.shape()),
        flat(&ks),
        four(k.shape()),
        p,
        &mut out,
        |_, _| {},
    );
    Ok(from_vec(&shape, out))
}

/// `conv2d(x, k, stride, padding, dilations)`: TF's `tf.nn.conv2d` with `dilations`
/// (`[rows, columns]`), NHWC input, HWIO kernel.
pub fn conv2d_dilated<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    k: impl IntoView<'a, T>,
    stride: usize,
    padding: Padding,
    dilation: [usize; 2],
) -> Result<ArrayD<T>, Error> {
    let p = ConvGeneral {
        stride,
        dilation,
        padding,
        depthwise: false,
    };
    conv_eager(x, k, p)
}

/// `depthwise_conv2d(x, k, stride, padding [, dilations])`: TF's `tf.nn.depthwise_conv2d`,
/// NHWC input, `[KH, KW, C, M]` kernel, output channel `c * M + m`.
pub fn depthwise_conv2d<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    k: impl IntoView<'a, T>,
    stride: usize,
    padding: Padding,
    dilation: [usize; 2],
) -> Result<ArrayD<T>, Error> {
    let p = ConvGeneral {
        stride,
        dilation,
        padding,
        depthwise: true,
    };
    conv_eager(x, k, p)
}

/// The eager form of a convolution's input gradient: checks, then the kernel of compiled graphs.
#[allow(clippy::too_many_arguments)]
fn backprop_input_eager<'a, T: GemmElement>(
    op: &'static str,
    dy: impl IntoView<'a, T>,
    k: impl IntoView<'a, T>,
    x_shape: &[usize],
    p: ConvGeneral,
) -> Result<ArrayD<T>, Error> {
    let (dy, k) = (dy.into_view(), k.into_view());
    let (dys, ks) = (standard(op, &dy)?, standard(op, &k)?);
    let dx = conv_backprop::backprop_input_vec(
        op,
        flat(&dys),
        dy.shape(),
        flat(&ks),
        k.shape(),
        x_shape,
        p,
    )?;
    Ok(from_vec(x_shape, dx))
}

/// The eager form of a convolution's filter gradient: checks, then the kernel of compiled graphs.
fn backprop_filter_eager<'a, T: GemmElement>(
    op: &'static str,
    x: impl IntoView<'a, T>,
    dy: impl IntoView<'a, T>,
    k_shape: &[usize],
    p: ConvGeneral,
) -> Result<ArrayD<T>, Error> {
    let (x, dy) = (x.into_view(), dy.into_view());
    let (xs, dys) = (standard(op, &x)?, standard(op, &dy)?);
    let dk = conv_backprop::backprop_filter_vec(
        op,
        flat(&xs),
        x.shape(),
        flat(&dys),
        dy.shape(),
        k_shape,
        p,
    )?;
    Ok(from_vec(k_shape, dk))
}

/// TF's `tf.nn.conv2d_backprop_input`: the gradient of `conv2d(x, k, stride, padding,
/// dilations)` with respect to an `x` of `x_shape`, given `dy` of the convolution's output
/// shape and the HWIO kernel `k`.
pub fn conv2d_backprop_input<'a, T: GemmElement>(
    dy: impl IntoView<'a, T>,
    k: impl IntoView<'a, T>,
    x_shape: &[usize],
    stride: usize,
    padding: Padding,
    dilation: [usize; 2],
) -> Result<ArrayD<T>, Error> {
    let p = ConvGeneral {
        stride,
        dilation,
        padding,
        depthwise: false,
    };
    backprop_input_eager("conv2d_backprop_input", dy, k, x_shape, p)
}

/// TF's `tf.nn.conv2d_backprop_filter`: the gradient of `conv2d(x, k, stride, padding,
/// dilations)` with respect to a kernel of `k_shape`, given `x` and `dy` of the convolution's
/// output shape.
pub fn conv2d_backprop_filter<'a, T: GemmElement>(
    x: impl IntoView<'a, T>,
    dy: impl IntoView<'a, T>,
    k_shape: &[usize],
    stride: usize,
    padding: Padding,
    dilation: [usize; 2],
) -> Result<ArrayD<T>, Error> {
    let p = ConvGeneral {
        stride,
        dilation,
        padding,
        depthwise: false,
    };
    backprop_filter_eager("conv2d_backprop_filter", x, dy, k_shape, p)
}

/// TF's `tf.nn.depthwise_conv2d_backprop_input`: the gradient of `depthwise_conv2d` with
/// respect to an `x` of `x_shape`, given `dy` and the `[KH, KW, C, M]` kernel.
pub fn depthwise_conv2d_backprop_input<'a, T: GemmElement>(
    dy: impl IntoView<'a, T>,
    k: impl IntoView<'a, T>,
    x_shape: &[usize],
    stride: usize,
    padding: Padding,
    dilation: [usize; 2],
) -> Result<ArrayD<T>, Error> {
    let p = ConvGeneral {
        stride,
        dilation,
        padding,
        depthwise: true,
    };
    backprop_input_eager("depthwise_conv2d_backprop_input", dy, k, x_shape, p)
}

/// TF's `tf.nn.depthwise_conv2d_backprop_filter`: the gradient of `depthwise_conv2d` with
/// respect to a kernel of `k_shape`, given `x` and `dy`.
pub fn depthwise_conv2d_backprop_filter<'a, T: GemmElement>(
    x: impl IntoView<'a, T>,
    dy: impl IntoView<'a, T>,
    k_shape: &[usize],
    stride: usize,
    padding: Padding,
    dilation: [usize; 2],
) -> Result<ArrayD<T>, Error> {
    let p = ConvGeneral {
        stride,
        dilation,
        padding,
        depthwise: true,
    };
    backprop_filter_eager("depthwise_conv2d_backprop_filter", x, dy, k_shape, p)
}

/// TF's `tf.nn.conv2d_transpose(x, k, output_shape, strides, padding)`: the input gradient
/// of the `conv2d` that maps `output_shape` to `x`'s shape, with filters `k`
/// `[KH, KW, out, in]` (`in` is `x`'s channels, `out` the result's).
pub fn conv2d_transpose<'a, T: GemmElement>(
    x: impl IntoView<'a, T>,
    k: impl IntoView<'a, T>,
    output_shape: &[usize],
    stride: usize,
    padding: Padding,
) -> Result<ArrayD<T>, Error> {
    let p = ConvGeneral {
        stride,
        dilation: [1, 1],
        padding,
        depthwise: false,
    };
    backprop_input_eager("conv2d_transpose", x, k, output_shape, p)
}

/// The gradient of a pooling op with respect to its input `x_shape`, given `dy` (and `x`
/// itself for max pooling): checks, then the kernel of compiled graphs.
fn pool_grad_eager<T: Numeric>(
    x: Option<ArrayViewD<'_, T>>,
    dy: ArrayViewD<'_, T>,
    x_shape: &[usize],
    pool: Pool2d,
) -> Result<ArrayD<T>, Error> {
    let op = match pool.kind {
        PoolKind::Max => "max_pool2d_grad",
        PoolKind::Avg => "avg_pool2d_grad",
    };
    let y = crate::kernels::pool::output_shape(x_shape, pool)?;
    if dy.shape() != y {
        return Err(Error::shape(
            op,
            format!(
                "the gradient must have the pooling's output shape {y:?} (input {x_shape:?}), found {:?}",
                dy.shape()
            ),
            x_shape,
            dy.shape(),
            None,
        ));
    }
    let dys = standard(op, &dy)?;
    let xs = x.as_ref().map(|x| standard(op, x)).transpose()?;
    let xdata: &[T] = match &xs {
        Some(x) => flat(x),
        None => &[],
    };
    let mut out = buffer::zeroed_for(op, x_shape)?;
    let shape = [x_shape[0], x_shape[1], x_shape[2], x_shape[3]];
    pool2d_grad_into(xdata, flat(&dys), shape, pool, &mut out);
    Ok(from_vec(x_shape, out))
}

/// TF's `MaxPoolGrad`: the gradient of `max_pool2d(x, ksize, strides, padding)` with respect
/// to `x`, given `dy`: each window's gradient goes to its first maximum (row-major order).
pub fn max_pool2d_grad<'a, T: Numeric>(
    x: impl IntoView<'a, T>,
    dy: impl IntoView<'a, T>,
    ksize: [usize; 2],
    strides: [usize; 2],
    padding: Padding,
) -> Result<ArrayD<T>, Error> {
    let (x, dy) = (x.into_view(), dy.into_view());
    let shape = x.shape().to_vec();
    let pool = Pool2d {
        kind: PoolKind::Max,
        ksize,
        strides,
        padding,
    };
    pool_grad_eager(Some(x), dy, &shape, pool)
}

/// TF's `AvgPoolGrad`: the gradient of `avg_pool2d` with respect to an input of `x_shape`,
/// given `dy`: each window's gradient spread over its valid elements, divided by their count.
pub fn avg_pool2d_grad<'a, T: Float>(
    dy: impl IntoView<'a, T>,
    x_shape: &[usize],
    ksize: [usize; 2],
    strides: [usize; 2],
    padding: Padding,
) -> Result<ArrayD<T>, Error> {
    let pool = Pool2d {
        kind: PoolKind::Avg,
        ksize,
        strides,
        padding,
    };
    pool_grad_eager(None, dy.into_view(), x_shape, pool)
}
