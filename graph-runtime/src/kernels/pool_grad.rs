//! The gradients of max and average pooling (TF's `MaxPoolGrad`, `AvgPoolGrad`) over NHWC tensors, with the windows, strides and padding of [`crate::kernels::pool`].
//!
//! - Max pooling routes each window's gradient to the element it selected: the first maximum
//!   in row-major window order (ties go to the earliest element, as TF's `MaxPoolGrad`; a NaN
//!   is selected over numbers, the first NaN of the window).
//! - Average pooling spreads each window's gradient over the window's valid elements, divided
//!   by the count the forward op divided by (the whole window for `VALID`, the in-bounds
//!   elements for `SAME`).
//!
//! Windows overlap when the stride is smaller than the window, so the kernel runs over blocks
//! of input rows: each block walks the output rows whose windows reach it and adds only onto
//! its own rows (no two threads write one element, none waits). Every element sums its
//! windows in row-major output order whatever the blocks, so the result does not depend on
//! the thread count.

use super::pool::{out_and_pad, Pool2d, PoolKind};
use crate::dtype::Numeric;
use crate::exec::parallel::for_each_chunk;

/// Calls `body(image, first_row, rows)` on the rows of `chunk` cut at image boundaries:
/// `chunk` holds whole rows of `row_len` elements of images of `h` rows each, flat from row
/// `first` of the batch.
pub(crate) fn for_each_image_rows<T>(
    h: usize,
    row_len: usize,
    first: usize,
    chunk: &mut [T],
    mut body: impl FnMut(usize, usize, &mut [T]),
) {
    if row_len == 0 || h == 0 {
        return;
    }
    let mut row = first;
    let mut rest = chunk;
    while !rest.is_empty() {
        let (img, r0) = (row / h, row % h);
        let rows = (h - r0).min(rest.len() / row_len);
        let (seg, tail) = std::mem::take(&mut rest).split_at_mut(rows * row_len);
        body(img, r0, seg);
        rest = tail;
        row += rows;
    }
}

/// `dx`: the gradient of `pool(x)` (`x` of `shape` `[n, h, w, c]`, row-major) given `dy`
/// (the pooling's output shape), into `dx` (every element written); blocks of input rows in
/// parallel. `x` is read only by max pooling (pass `&[]` for average pooling).
///
/// Panics if the window does not fit or a slice is shorter than the shapes say (the callers
/// check first).
pub fn pool2d_grad_into<T: Numeric>(
    x: &[T],
    dy: &[T],
    shape: [usize; 4],
    pool: Pool2d,
    dx: &mut [T],
) {
    let [n, h, w, c] = shape;
    let (oh, pad_top) = out_and_pad(h, pool.ksize[0], pool.strides[0], pool.padding)
        .expect("pool2d_grad window fits the input rows");
    let (ow, pad_left) = out_and_pad(w, pool.ksize[1], pool.strides[1], pool.padding)
        .expect("pool2d_grad window fits the input columns");
    let len = n * h * w * c;
    assert!(
        dy.len() >= n * oh * ow * c
            && dx.len() >= len
            && (pool.kind == PoolKind::Avg || x.len() >= len),
        "pool2d_grad: slices do not match the shapes"
    );
    let dx = &mut dx[..len];
    let row_len = w * c;
    if dx.is_empty() {
        return;
    }
    let g = Grid {
        h,
        w,
        c,
        oh,
        ow,
        pad_top,
        pad_left,
        pool,
    };
    let work = row_len * pool.ksize[0] * pool.ksize[1];
    for_each_chunk(dx, row_len, work, |first, chunk| {
        for_each_image_rows(h, row_len, first, chunk, |img, r0, rows| {
            let image = h * w * c;
            let x_img = match pool.kind {
                PoolKind::Max => &x[img * image..][..image],
                PoolKind::Avg => &[][..],
            };
            let dy_img = &dy[img * oh * ow * c..][..oh * ow * c];
            grad_rows(x_img, dy_img, &g, r0, rows);
        });
    });
}

/// One pooling's sizes: the input's, the output's, the padding before, the window.
#[derive(Debug, Clone, Copy)]
struct Grid {
    h: usize,
    w: usize,
    c: usize,
    oh: usize,
    ow: usize,
    pad_top: usize,
    pad_left: usize,
    pool: Pool2d,
}

impl Grid {
    /// The valid input range `[lo, hi)` of the window at output index `o` along an axis of
    /// `len` with window `k`, stride `s` and padding `pad` before.
    fn span(o: usize, len: usize, k: usize, s: usize, pad: usize) -> (usize, usize) {
        let start = (o * s) as isize - pad as isize;
        let lo = start.max(0) as usize;
        let hi = ((start + k as isize).max(0) as usize).min(len);
        (lo.min(hi), hi)
    }
}

/// Input rows `r0..` of one image (`rows` holds whole rows of `W * C`): every output row
/// whose windows reach them, its gradient added onto the rows of this block.
fn grad_rows<T: Numeric>(x: &[T], dy: &[T], g: &Grid, r0: usize, rows: &mut [T]) {
    rows.fill(T::ZERO);
    let (w, c) = (g.w, g.c);
    let r1 = r0 + rows.len() / (w * c);
    let [kh, kw] = g.pool.ksize;
    let [sh, sw] = g.pool.strides;
    // Output rows whose windows `[o * sh - pad, o * sh - pad + kh)` meet `r0..r1`.
    let lo = (r0 + g.pad_top + 1).saturating_sub(kh).div_ceil(sh);
    let hi = ((r1 - 1 + g.pad_top) / sh + 1).min(g.oh);
    for o in lo..hi {
        let (y0, y1) = Grid::span(o, g.h, kh, sh, g.pad_top);
        if y0 >= y1 {
            continue;
        }
        for j in 0..g.ow {
            let (x0, x1) = Grid::span(j, w, kw, sw, g.pad_left);
            if x0 >= x1 {
                continue;
            }
            let gy = &dy[(o * g.ow + j) * c..][..c];
            match g.pool.kind {
                PoolKind::Max => {
                    for (ch, &d) in gy.iter().enumerate() {
                        let at = |y: usize, xx: usize| (y * w + xx) * c + ch;
                        let (mut best, mut sel) = (x[at(y0, x0)], (y0, x0));
                        for y in y0..y1 {
                            for xx in x0..x1 {
                                let v = x[at(y, xx)];
                                // The first maximum; a NaN beats every number.
                                #[allow(clippy::eq_op)]
                                let nan_over_number = v != v && best == best;
                                if v > best || nan_over_number {
                                    best = v;
                                    sel = (y, xx);
                                }
                            }
                        }
                        if (r0..r1).contains(&sel.0) {
                            let i = ((sel.0 - r0) * w + sel.1) * c + ch;
                            rows[i] = rows[i].add(d);
                        }
                    }
                }
                PoolKind::Avg => {
                    let count = T::from_f64(((y1 - y0) * (x1 - x0)) as f64);
                    for y in y0.max(r0)..y1.min(r1) {
                        for xx in x0..x1 {
                            let dst = &mut rows[((y - r0) * w + xx) * c..][..c];
                            for (d, &v) in dst.iter_mut().zip(gy) {
                                *d = d.add(v.div(count));
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::padding::Padding;

    fn reference(x: &[f64], dy: &[f64], shape: [usize; 4], pool: Pool2d) -> Vec<f64> {
        let [n, h, w, c] = shape;
        let (oh, pt) = out_and_pad(h, pool.ksize[0], pool.strides[0], pool.padding).unwrap();
        let (ow, pl) = out_and_pad(w, pool.ksize[1], pool.strides[1], pool.padding).unwrap();
        let mut dx = vec![0.0; n * h * w * c];
        for b in 0..n {
            for o in 0..oh {
                for j in 0..ow {
                    for ch in 0..c {
                        let mut cells = Vec::new();
                        for di in 0..pool.ksize[0] {
                            for dj in 0..pool.ksize[1] {
                                let y = (o * pool.strides[0] + di) as isize - pt as isize;
                                let xx = (j * pool.strides[1] + dj) as isize - pl as isize;
                                if y >= 0 && xx >= 0 && (y as usize) < h && (xx as usize) < w {
                                    cells.push(((b * h + y as usize) * w + xx as usize) * c + ch);
                                }
                            }
                        }
                        let d = dy[((b * oh + o) * ow + j) * c + ch];
                        match pool.kind {
                            PoolKind::Max => {
                                let mut best = cells[0];
                                for &i in &cells {
                                    if x[i] > x[best] {
                                        best = i;
                                    }
                                }
                                dx[best] += d;
                            }
                            PoolKind::Avg => {
                                for &i in &cells {
                                    dx[i] += d / cells.len() as f64;
                                }
                            }
                        }
                    }
                }
            }
        }
        dx
    }

    #[test]
    fn matches_the_windows() {
        for kind in [PoolKind::Max, PoolKind::Avg] {
            for padding in [Padding::Same, Padding::Valid] {
                for (shape, ksize, strides) in [
                    ([2, 7, 6, 3], [2, 2], [2, 2]),
                    ([1, 7, 7, 2], [3, 3], [1, 1]),
                    ([1, 9, 5, 4], [3, 2], [2, 1]),
                    ([1, 1, 1, 1], [1, 1], [1, 1]),
                    ([0, 4, 4, 2], [2, 2], [2, 2]),
                    ([2, 64, 33, 5], [3, 3], [2, 2]),
                ] {
                    let pool = Pool2d {
                        kind,
                        ksize,
                        strides,
                        padding,
                    };
                    let [n, h, w, c] = shape;
                    let (oh, _) = out_and_pad(h, ksize[0], strides[0], padding).unwrap();
                    let (ow, _) = out_and_pad(w, ksize[1], strides[1], padding).unwrap();
                    // Ties: values on a coarse grid.
                    let x: Vec<f64> = (0..n * h * w * c)
                        .map(|i| ((i * 7919) % 5) as f64)
                        .collect();
                    let dy: Vec<f64> = (0..n * oh * ow * c)
                        .map(|i| ((i * 104729) % 11) as f64 - 5.0)
                        .collect();
                    let want = reference(&x, &dy, shape, pool);
                    let mut got = vec![f64::NAN; want.len()];
                    pool2d_grad_into(&x, &dy, shape, pool, &mut got);
                    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (a - b).abs() < 1e-12,
                            "{pool:?} {shape:?} [{i}]: {a} != {b}"
                        );
                    }
                }
            }
        }
    }
}
