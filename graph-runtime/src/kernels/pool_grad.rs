//! The gradients of max and average pooling (TF's `MaxPoolGrad`, `AvgPoolGrad`) over NHWC tensors, with the windows, strides and padding of [`crate::kernels::pool`].
//!
//! - Max pooling routes each window's gradient to the element it selected: the first maximum
//!   in row-major window order (ties go to the earliest element, as TF's `MaxPoolGrad`; a NaN
//!   is selected over numbers, the first NaN of the window).
//! - Average pooling spreads each window's gradient over the window's valid elements, divided
//!   by the count the forward op divided by (the whole window for `VALID`, the in-bounds
//!   elements for `SAME`).
//!
//! Max pooling picks each window's element for 16 channels at once (compares and blends over
//! the contiguous channels), then routes the gradient; windows that cannot overlap write each
//! element of `dx` once, with no zero fill first.
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
    match g.pool.kind {
        PoolKind::Max => max_rows(x, dy, g, r0, rows),
        PoolKind::Avg => avg_rows(dy, g, r0, rows),
    }
}

/// The output rows whose windows `[o * sh - pad, o * sh - pad + kh)` meet input rows `r0..r1`.
fn out_rows_reaching(g: &Grid, r0: usize, r1: usize) -> std::ops::Range<usize> {
    let (kh, sh) = (g.pool.ksize[0], g.pool.strides[0]);
    let lo = (r0 + g.pad_top + 1).saturating_sub(kh).div_ceil(sh);
    let hi = ((r1 - 1 + g.pad_top) / sh + 1).min(g.oh);
    lo..hi.max(lo)
}

/// Average pooling's rows: each window's gradient over its count, added onto its elements.
fn avg_rows<T: Numeric>(dy: &[T], g: &Grid, r0: usize, rows: &mut [T]) {
    rows.fill(T::ZERO);
    let (w, c) = (g.w, g.c);
    let r1 = r0 + rows.len() / (w * c);
    let [kh, kw] = g.pool.ksize;
    let [sh, sw] = g.pool.strides;
    for o in out_rows_reaching(g, r0, r1) {
        let (y0, y1) = Grid::span(o, g.h, kh, sh, g.pad_top);
        for j in 0..g.ow {
            let (x0, x1) = Grid::span(j, w, kw, sw, g.pad_left);
            if y0 >= y1 || x0 >= x1 {
                continue;
            }
            let gy = &dy[(o * g.ow + j) * c..][..c];
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

/// Channels whose windows [`max_window`] scans side by side: one AVX-512 register of f32.
const LANES: usize = 16;

/// Max pooling's rows, compiled for the best instruction set of this CPU (the selection's
/// compares and blends vectorise over [`LANES`] channels).
fn max_rows<T: Numeric>(x: &[T], dy: &[T], g: &Grid, r0: usize, rows: &mut [T]) {
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    {
        use crate::exec::cpu::{level, Level};
        /// # Safety
        /// The CPU must support AVX-512 F/VL/BW/DQ, AVX2 and FMA.
        #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
        unsafe fn avx512<T: Numeric>(x: &[T], dy: &[T], g: &Grid, r0: usize, rows: &mut [T]) {
            max_rows_body(x, dy, g, r0, rows)
        }
        /// # Safety
        /// The CPU must support AVX2 and FMA.
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<T: Numeric>(x: &[T], dy: &[T], g: &Grid, r0: usize, rows: &mut [T]) {
            max_rows_body(x, dy, g, r0, rows)
        }
        match level() {
            // SAFETY: `level()` reported these features on this CPU.
            Level::Avx512 => return unsafe { avx512(x, dy, g, r0, rows) },
            // SAFETY: as above.
            Level::Avx2Fma => return unsafe { avx2(x, dy, g, r0, rows) },
            Level::Baseline => {}
        }
    }
    max_rows_body(x, dy, g, r0, rows)
}

/// Max pooling's rows: each window's selection computed [`LANES`] channels at a time, then
/// its gradient routed to the selected elements of this block.
///
/// Windows that cannot overlap (strides at least the window) write every element of the
/// block once: the selected ones `0 + dy`, the rest zero, with no fill before. Overlapping
/// windows add onto a zeroed block, window by window in row-major output order, so an
/// element selected by several windows sums them in that order.
#[inline(always)]
fn max_rows_body<T: Numeric>(x: &[T], dy: &[T], g: &Grid, r0: usize, rows: &mut [T]) {
    let (w, c) = (g.w, g.c);
    let r1 = r0 + rows.len() / (w * c);
    let [kh, kw] = g.pool.ksize;
    let [sh, sw] = g.pool.strides;
    let disjoint = sh >= kh && sw >= kw;
    if disjoint {
        zero_uncovered(g, r0, rows);
    } else {
        rows.fill(T::ZERO);
    }
    for o in out_rows_reaching(g, r0, r1) {
        let (y0, y1) = Grid::span(o, g.h, kh, sh, g.pad_top);
        let (ya, yb) = (y0.max(r0), y1.min(r1));
        if y0 >= y1 || ya >= yb {
            continue;
        }
        for j in 0..g.ow {
            let (x0, x1) = Grid::span(j, w, kw, sw, g.pad_left);
            if x0 >= x1 {
                continue;
            }
            let win = Window {
                w,
                c,
                y0,
                y1,
                x0,
                x1,
                ya,
                yb,
                r0,
                disjoint,
            };
            let gy = &dy[(o * g.ow + j) * c..][..c];
            // Tap numbers as wide as the f32 lanes, unless a window has more taps than that.
            if (y1 - y0) * (x1 - x0) <= u32::MAX as usize {
                max_channels::<T, u32>(x, gy, &win, rows);
            } else {
                max_channels::<T, u64>(x, gy, &win, rows);
            }
        }
    }
}

/// Zeroes the elements of the block `rows` (input rows from `r0`) that no window covers,
/// when windows do not overlap: whole rows outside every window, and in the other rows the
/// columns between and after the windows.
#[inline(always)]
fn zero_uncovered<T: Numeric>(g: &Grid, r0: usize, rows: &mut [T]) {
    let (w, c) = (g.w, g.c);
    let [kh, kw] = g.pool.ksize;
    let [sh, sw] = g.pool.strides;
    for (i, row) in rows.chunks_exact_mut(w * c).enumerate() {
        // The only window that can hold row `r`: output row `(r + pad) / sh`.
        let t = r0 + i + g.pad_top;
        let o = t / sh;
        if o >= g.oh || t - o * sh >= kh {
            row.fill(T::ZERO);
            continue;
        }
        let mut done = 0;
        for j in 0..g.ow {
            let (x0, x1) = Grid::span(j, w, kw, sw, g.pad_left);
            if x0 >= x1 {
                continue;
            }
            row[done * c..x0 * c].fill(T::ZERO);
            done = x1;
        }
        row[done * c..].fill(T::ZERO);
    }
}

/// One window's extent: input rows `y0..y1`, columns `x0..x1` (in bounds), of which rows
/// `ya..yb` are in the block starting at input row `r0`.
struct Window {
    w: usize,
    c: usize,
    y0: usize,
    y1: usize,
    x0: usize,
    x1: usize,
    ya: usize,
    yb: usize,
    r0: usize,
    disjoint: bool,
}

/// A window's tap number, `t` for its `t`-th element in row-major order.
trait Tap: Copy + PartialEq + Default {
    fn of(t: usize) -> Self;
    fn get(self) -> usize;
}

impl Tap for u32 {
    #[inline(always)]
    fn of(t: usize) -> u32 {
        t as u32
    }
    #[inline(always)]
    fn get(self) -> usize {
        self as usize
    }
}

impl Tap for u64 {
    #[inline(always)]
    fn of(t: usize) -> u64 {
        t as u64
    }
    #[inline(always)]
    fn get(self) -> usize {
        self as usize
    }
}

/// Every channel of one window: [`LANES`] at a time, then one by one.
#[inline(always)]
fn max_channels<T: Numeric, I: Tap>(x: &[T], gy: &[T], win: &Window, rows: &mut [T]) {
    let mut ch = 0;
    while ch + LANES <= win.c {
        max_window::<T, I, LANES>(x, gy, win, ch, rows);
        ch += LANES;
    }
    while ch < win.c {
        max_window::<T, I, 1>(x, gy, win, ch, rows);
        ch += 1;
    }
}

/// Channels `ch..ch + N` of one window: the first maximum in row-major window order (a NaN
/// beats every number, the first NaN wins) for each channel side by side, then its gradient
/// `gy` routed to the block `rows`. Branch-free over the lanes, so the compares and blends
/// vectorise.
#[inline(always)]
#[allow(clippy::eq_op)]
fn max_window<T: Numeric, I: Tap, const N: usize>(
    x: &[T],
    gy: &[T],
    win: &Window,
    ch: usize,
    rows: &mut [T],
) {
    let (w, c) = (win.w, win.c);
    let mut best = *lanes_at::<T, N>(x, (win.y0 * w + win.x0) * c + ch);
    let mut sel = [I::default(); N];
    let mut t = 0usize;
    for y in win.y0..win.y1 {
        for xx in win.x0..win.x1 {
            let v = lanes_at::<T, N>(x, (y * w + xx) * c + ch);
            let tap = I::of(t);
            for l in 0..N {
                let (v, b) = (v[l], best[l]);
                let take = v > b || (v != v && b == b);
                best[l] = if take { v } else { b };
                sel[l] = if take { tap } else { sel[l] };
            }
            t += 1;
        }
    }
    let gy = lanes_at::<T, N>(gy, ch);
    let cols = win.x1 - win.x0;
    if win.disjoint {
        // Every element of the window in the block: `0 + dy` where selected, else zero.
        let mut routed = [T::ZERO; N];
        for l in 0..N {
            routed[l] = T::ZERO.add(gy[l]);
        }
        let mut t = (win.ya - win.y0) * cols;
        for y in win.ya..win.yb {
            for xx in win.x0..win.x1 {
                let at = ((y - win.r0) * w + xx) * c + ch;
                let dst: &mut [T; N] = rows[at..]
                    .first_chunk_mut::<N>()
                    .expect("the window lies inside the block");
                let tap = I::of(t);
                for l in 0..N {
                    dst[l] = if sel[l] == tap { routed[l] } else { T::ZERO };
                }
                t += 1;
            }
        }
    } else {
        for l in 0..N {
            let s = sel[l].get();
            let (y, xx) = (win.y0 + s / cols, win.x0 + s % cols);
            if (win.ya..win.yb).contains(&y) {
                let i = ((y - win.r0) * w + xx) * c + ch + l;
                rows[i] = rows[i].add(gy[l]);
            }
        }
    }
}

/// The `N` elements of `x` from `at`.
#[inline(always)]
fn lanes_at<T, const N: usize>(x: &[T], at: usize) -> &[T; N] {
    x[at..]
        .first_chunk::<N>()
        .expect("the window's channels lie inside the slice")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::padding::Padding;

    /// The gradient as plain loops: each window's cells in row-major order, its `dy` added
    /// to the first maximum (a NaN beats every number, the first NaN wins) or spread over
    /// the count; windows in row-major output order.
    fn reference<T: Numeric>(x: &[T], dy: &[T], shape: [usize; 4], pool: Pool2d) -> Vec<T> {
        let [n, h, w, c] = shape;
        let (oh, pt) = out_and_pad(h, pool.ksize[0], pool.strides[0], pool.padding).unwrap();
        let (ow, pl) = out_and_pad(w, pool.ksize[1], pool.strides[1], pool.padding).unwrap();
        let mut dx = vec![T::ZERO; n * h * w * c];
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
                                let best = cells
                                    .iter()
                                    .copied()
                                    .find(|&i| x[i].partial_cmp(&x[i]).is_none())
                                    .unwrap_or_else(|| {
                                        let mut best = cells[0];
                                        for &i in &cells {
                                            if x[i] > x[best] {
                                                best = i;
                                            }
                                        }
                                        best
                                    });
                                dx[best] = dx[best].add(d);
                            }
                            PoolKind::Avg => {
                                let count = T::from_f64(cells.len() as f64);
                                for &i in &cells {
                                    dx[i] = dx[i].add(d.div(count));
                                }
                            }
                        }
                    }
                }
            }
        }
        dx
    }

    /// `x` on a coarse grid (so windows hold ties), with a NaN every `nan_every` elements.
    fn inputs(shape: [usize; 4], pool: Pool2d, nan_every: usize) -> (Vec<f64>, Vec<f64>) {
        let [n, h, w, c] = shape;
        let (oh, _) = out_and_pad(h, pool.ksize[0], pool.strides[0], pool.padding).unwrap();
        let (ow, _) = out_and_pad(w, pool.ksize[1], pool.strides[1], pool.padding).unwrap();
        let x = (0..n * h * w * c)
            .map(|i| {
                if nan_every > 0 && i % nan_every == nan_every / 2 {
                    f64::NAN
                } else {
                    ((i * 7919) % 5) as f64
                }
            })
            .collect();
        let dy = (0..n * oh * ow * c)
            .map(|i| ((i * 104729) % 11) as f64 * 0.37 - 1.9)
            .collect();
        (x, dy)
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
                    let (x, dy) = inputs(shape, pool, 0);
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

    /// Max pooling over whole and partial runs of [`LANES`] channels, windows disjoint (with
    /// gaps between them and rows or columns no window covers), touching and overlapping,
    /// SAME and VALID, ties and NaN: the reference's bits (the same additions in the same
    /// order), in f64 and f32, on one thread and on the pool.
    #[test]
    fn max_lanes_match_the_windows_bit_for_bit() {
        for padding in [Padding::Same, Padding::Valid] {
            for (shape, ksize, strides) in [
                ([2, 26, 26, 32], [2, 2], [2, 2]),
                ([3, 11, 11, 64], [2, 2], [2, 2]),
                ([2, 9, 8, 17], [2, 2], [2, 2]),
                ([1, 10, 11, 33], [2, 2], [3, 3]),
                ([2, 7, 9, 16], [2, 3], [3, 2]),
                ([1, 9, 9, 40], [3, 3], [2, 2]),
                ([1, 8, 7, 19], [3, 3], [1, 1]),
                ([2, 5, 5, 1], [2, 2], [2, 2]),
                ([1, 3, 4, 15], [5, 5], [1, 1]),
                ([1, 40, 6, 48], [2, 2], [2, 2]),
            ] {
                if shape[1] < ksize[0] && padding == Padding::Valid {
                    continue;
                }
                let pool = Pool2d {
                    kind: PoolKind::Max,
                    ksize,
                    strides,
                    padding,
                };
                for nan_every in [0, 13, 3] {
                    let (x, dy) = inputs(shape, pool, nan_every);
                    let want = reference(&x, &dy, shape, pool);
                    let mut got = vec![f64::NAN; want.len()];
                    pool2d_grad_into(&x, &dy, shape, pool, &mut got);
                    let one = rayon::ThreadPoolBuilder::new()
                        .num_threads(1)
                        .build()
                        .unwrap();
                    let mut serial = vec![f64::NAN; want.len()];
                    one.install(|| pool2d_grad_into(&x, &dy, shape, pool, &mut serial));
                    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                    let dy32: Vec<f32> = dy.iter().map(|&v| v as f32).collect();
                    let want32 = reference(&x32, &dy32, shape, pool);
                    let mut got32 = vec![f32::NAN; want.len()];
                    pool2d_grad_into(&x32, &dy32, shape, pool, &mut got32);
                    for i in 0..want.len() {
                        let what = format!("{pool:?} {shape:?} NaN every {nan_every} [{i}]");
                        assert_eq!(got[i].to_bits(), want[i].to_bits(), "{what}");
                        assert_eq!(serial[i].to_bits(), want[i].to_bits(), "{what} serial");
                        assert_eq!(got32[i].to_bits(), want32[i].to_bits(), "{what} f32");
                    }
                }
            }
        }
    }

    #[test]
    fn a_negative_zero_gradient_lands_as_positive_zero() {
        // TF adds each window's gradient onto zeros: 0 + -0 is +0, selected or not.
        let pool = Pool2d {
            kind: PoolKind::Max,
            ksize: [2, 2],
            strides: [2, 2],
            padding: Padding::Valid,
        };
        let shape = [1, 2, 2, 16];
        let x: Vec<f32> = (0..64).map(|i| i as f32).collect();
        let dy = vec![-0.0f32; 16];
        let mut dx = vec![f32::NAN; 64];
        pool2d_grad_into(&x, &dy, shape, pool, &mut dx);
        assert!(dx.iter().all(|v| v.to_bits() == 0), "{dx:?}");
    }
}
