//! 2-D max and average pooling over NHWC tensors with TensorFlow's semantics (`tf.nn.max_pool2d`, `tf.nn.avg_pool2d`): the kernel compiled graphs and the eager ops call.
//!
//! Output size and padding follow TF: `SAME` gives `ceil(in / stride)` with
//! `pad_total = max((out - 1) * stride + k - in, 0)` split `pad_total / 2` before and the
//! rest after; `VALID` gives `(in - k + stride) / stride` truncated (`(in - k) / stride + 1`
//! when the window fits; 0 when it does not but the stride covers the gap; negative is an
//! error, as TF says "computed output size would be negative"). Padded positions are never read: max pooling takes the maximum of the valid
//! elements of the window (NaN propagates, as `maximum`), average pooling divides the sum of
//! the valid elements by their count, as TF does. Each output element folds its window in
//! row-major order, so the result does not depend on the thread count.

use super::padding::Padding;
use crate::dtype::Numeric;
use crate::error::Error;
use crate::exec::parallel::for_each_chunk;

/// Which reduction a pooling window computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolKind {
    Max,
    Avg,
}

impl PoolKind {
    /// The op name (`max_pool2d`, `avg_pool2d`).
    pub fn name(self) -> &'static str {
        match self {
            PoolKind::Max => "max_pool2d",
            PoolKind::Avg => "avg_pool2d",
        }
    }
}

/// The window of a pooling op: its size and strides (rows, columns) and padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pool2d {
    pub kind: PoolKind,
    pub ksize: [usize; 2],
    pub strides: [usize; 2],
    pub padding: Padding,
}

/// Output size and padding before, along one spatial axis of size `len`, or `None` when
/// TF's `VALID` size would be negative (or a size or stride is zero).
pub fn out_and_pad(
    len: usize,
    k: usize,
    stride: usize,
    padding: Padding,
) -> Option<(usize, usize)> {
    if k == 0 || stride == 0 {
        return None;
    }
    match padding {
        Padding::Same => {
            let out = len.div_ceil(stride);
            let total = (out.saturating_sub(1) * stride + k).saturating_sub(len);
            Some((out, total / 2))
        }
        // TF's formula, `(in - k + stride) / stride` truncated, negative being an error: a
        // window larger than the input gives an empty output when the stride covers the gap.
        Padding::Valid => {
            let t = len as i128 - k as i128 + stride as i128;
            let out = t / stride as i128;
            (out >= 0).then_some((out as usize, 0))
        }
    }
}

/// Pools `x` (`[n, h, w, c]`, row-major) into `out` (`[n, oh, ow, c]`), rows of the output
/// in parallel.
///
/// Panics if the window does not fit (the callers check first: the macro at compile time,
/// the eager ops with an `Err`) or a slice is shorter than the shapes say.
pub fn pool2d_into<T: Numeric>(x: &[T], shape: [usize; 4], pool: Pool2d, out: &mut [T]) {
    let [n, h, w, c] = shape;
    let (oh, pt) = out_and_pad(h, pool.ksize[0], pool.strides[0], pool.padding)
        .expect("pool2d window fits the input rows");
    let (ow, pl) = out_and_pad(w, pool.ksize[1], pool.strides[1], pool.padding)
        .expect("pool2d window fits the input columns");
    assert!(x.len() >= n * h * w * c && out.len() >= n * oh * ow * c);
    let out = &mut out[..n * oh * ow * c];
    let row_len = ow * c;
    let image = h * w * c;
    let window = Window {
        w,
        c,
        pad_top: pt,
        pad_left: pl,
    };
    // One unit is one output row (all columns and channels): `kh * kw` reads per element.
    let work = row_len * pool.ksize[0] * pool.ksize[1];
    for_each_chunk(out, row_len, work, |first, chunk| {
        if row_len == 0 {
            return;
        }
        for (r, orow) in chunk.chunks_mut(row_len).enumerate() {
            let (b, i) = ((first + r) / oh, (first + r) % oh);
            pool_row(&x[b * image..][..image], 0, h, window, pool, i, orow);
        }
    });
}

/// Where a pooling window sits in its input: the input's width and channels, and the padding
/// before the first row and column.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    pub w: usize,
    pub c: usize,
    pub pad_top: usize,
    pub pad_left: usize,
}

/// Pools output row `i` of one image into `orow` (`ow * c` elements). `src` holds input rows
/// `first_row..` of that image (`w * c` elements each) and must cover every row the windows of
/// row `i` read that lies in `0..h`.
///
/// Each element folds its window in row-major order: the one order every caller shares, so
/// the fused conv2d + pooling kernel and this op agree bit for bit.
pub(crate) fn pool_row<T: Numeric>(
    src: &[T],
    first_row: usize,
    h: usize,
    win: Window,
    pool: Pool2d,
    i: usize,
    orow: &mut [T],
) {
    let Window { w, c, .. } = win;
    let [kh, kw] = pool.ksize;
    let [sh, sw] = pool.strides;
    // The window's valid rows: [y0, y1) of the input.
    let top = (i * sh) as isize - win.pad_top as isize;
    let y0 = top.max(0) as usize;
    let y1 = ((top + kh as isize).max(0) as usize).min(h);
    for (j, cell) in orow.chunks_exact_mut(c.max(1)).enumerate() {
        if c == 0 {
            break;
        }
        let left = (j * sw) as isize - win.pad_left as isize;
        let x0 = left.max(0) as usize;
        let x1 = ((left + kw as isize).max(0) as usize).min(w);
        let init = match pool.kind {
            PoolKind::Max => T::LOWEST,
            PoolKind::Avg => T::ZERO,
        };
        cell.fill(init);
        for y in y0..y1 {
            for xx in x0..x1 {
                let from = &src[((y - first_row) * w + xx) * c..][..c];
                match pool.kind {
                    PoolKind::Max => {
                        for (o, &v) in cell.iter_mut().zip(from) {
                            *o = o.maximum(v);
                        }
                    }
                    PoolKind::Avg => {
                        for (o, &v) in cell.iter_mut().zip(from) {
                            *o = o.add(v);
                        }
                    }
                }
            }
        }
        if pool.kind == PoolKind::Avg {
            let count = T::from_f64(((y1 - y0) * (x1 - x0)) as f64);
            for o in cell.iter_mut() {
                *o = o.div(count);
            }
        }
    }
}

/// The rows of the input the windows of output rows `rows` read, clipped to `0..h`
/// (empty when they all lie in the padding).
pub(crate) fn input_rows(
    rows: std::ops::Range<usize>,
    h: usize,
    k: usize,
    stride: usize,
    pad_top: usize,
) -> std::ops::Range<usize> {
    if rows.is_empty() {
        return 0..0;
    }
    let lo = (rows.start * stride).saturating_sub(pad_top).min(h);
    let hi = ((rows.end - 1) * stride + k).saturating_sub(pad_top).min(h);
    lo..hi.max(lo)
}

/// The output shape of a pooling op over an input of shape `sx`, or the error the eager ops
/// return (rank, window or stride of zero, a `VALID` window larger than the input).
pub fn output_shape(sx: &[usize], pool: Pool2d) -> Result<[usize; 4], Error> {
    let op = pool.kind.name();
    if sx.len() != 4 {
        return Err(Error::invalid(
            op,
            format!("the input must have rank 4 [N, H, W, C], found shape {sx:?}"),
        ));
    }
    if pool.ksize.contains(&0) || pool.strides.contains(&0) {
        return Err(Error::invalid(
            op,
            format!(
                "window sizes and strides must be at least 1, found ksize {:?} and strides {:?}",
                pool.ksize, pool.strides
            ),
        ));
    }
    let mut out = [sx[0], 0, 0, sx[3]];
    for axis in 0..2 {
        let len = sx[axis + 1];
        match out_and_pad(len, pool.ksize[axis], pool.strides[axis], pool.padding) {
            Some((o, _)) => out[axis + 1] = o,
            None => {
                return Err(Error::invalid(
                    op,
                    format!(
                        "the VALID window {:?} is larger than the input {sx:?} (axis {})",
                        pool.ksize,
                        axis + 1
                    ),
                ))
            }
        }
    }
    Ok(out)
}
