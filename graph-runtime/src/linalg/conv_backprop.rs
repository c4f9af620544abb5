//! The gradients of the convolutions, TF's `Conv2DBackpropInput` / `Conv2DBackpropFilter` and their depthwise twins: NHWC tensors, HWIO kernels (`[KH, KW, C, M]` depthwise), stride, SAME/VALID padding and dilation, as the forward ops of [`crate::linalg::conv`] and [`crate::linalg::conv_general`].
//!
//! A convolution `y = conv(x, k)` is `y = im2col(x) · k` with the kernel seen as a
//! `[KH*KW*C, F]` matrix, so its two gradients are products on the GEMM:
//!
//! - the input gradient `dx = col2im(dy · kᵀ)`: each block of input rows multiplies the `dy`
//!   rows whose windows reach it by `kᵀ` (packed once for all blocks), then scatters the
//!   patches back onto its own rows only (a window straddling two blocks is multiplied by
//!   both, so no two threads write one element and none waits);
//! - the filter gradient `dk = im2col(x)ᵀ · dy`: a reduction over output pixels, cut into
//!   fixed chunks (their im2col rows and their `dy` rows transposed in a thread's scratch,
//!   then one GEMM; for kernels of at most 16 elements per output channel a direct loop with
//!   the GEMM's bits, `direct.rs`), summed per group of chunks into a partial kernel, the
//!   partials summed in order at the end.
//!
//! The depthwise pair is per channel, not a product: the input gradient gathers each input
//! pixel's taps, the filter gradient sums per-pixel products into partial kernels; both are
//! loops over the contiguous channels, which vectorise.
//!
//! Every element is summed in an order fixed by the geometry alone (the output pixels in
//! row-major order, then the taps; the chunks and groups are sized from the shapes, never from
//! the thread count), so compiled graphs and the eager ops agree bit for bit, on any pool.

mod direct;

use rayon::prelude::*;

use super::conv::IM2COL_BLOCK_BYTES;
use super::conv_general::{out_and_pad, ConvGeneral};
use super::gemm::{GemmElement, PrepackedB};
use crate::dtype::Numeric;
use crate::error::Error;
use crate::exec::parallel::{for_each_chunk, PARALLEL_CUTOFF};
use crate::kernels::pool_grad::for_each_image_rows;

/// The filter gradient sums at most this many partial kernels (one per group of chunks).
const MAX_PARTIALS: usize = 16;

/// A group of chunks of the filter gradient carries at least this many multiply-adds, so a
/// small reduction is not cut into partials it does not need.
const MIN_PARTIAL_MACS: usize = 1 << 18;

/// Output pixels of one chunk of the filter gradient, at least and at most: its im2col rows
/// are the GEMM's shared dimension, which should fill a slice of the packed core (and not
/// exceed one: `direct.rs` repeats a product of one slice).
const CHUNK_PIXELS: (usize, usize) = (64, 256);

/// Output pixels of one chunk of the depthwise filter gradient.
const DEPTHWISE_CHUNK_PIXELS: usize = 256;

/// One convolution's geometry, resolved once (sizes as in TF: `x [N, H, W, C]`,
/// `k [KH, KW, C, M]`, `y [N, OH, OW, F]` with `F = M`, or `C * M` depthwise).
#[derive(Debug, Clone, Copy)]
struct Geometry {
    n: usize,
    h: usize,
    w: usize,
    c: usize,
    kh: usize,
    kw: usize,
    m: usize,
    oh: usize,
    ow: usize,
    stride: usize,
    dh: usize,
    dw: usize,
    pad_top: usize,
    pad_left: usize,
    depthwise: bool,
}

impl Geometry {
    /// The geometry of `conv(x, k)` for these shapes, or `None` when it has none (a channel
    /// mismatch, a zero stride or dilation, a VALID window larger than the input).
    fn new(x_shape: [usize; 4], k_shape: [usize; 4], p: ConvGeneral) -> Option<Geometry> {
        let [n, h, w, c] = x_shape;
        let [kh, kw, kc, m] = k_shape;
        if kc != c {
            return None;
        }
        let (oh, pad_top) = out_and_pad(h, kh, p.dilation[0], p.stride, p.padding)?;
        let (ow, pad_left) = out_and_pad(w, kw, p.dilation[1], p.stride, p.padding)?;
        Some(Geometry {
            n,
            h,
            w,
            c,
            kh,
            kw,
            m,
            oh,
            ow,
            stride: p.stride,
            dh: p.dilation[0],
            dw: p.dilation[1],
            pad_top,
            pad_left,
            depthwise: p.depthwise,
        })
    }

    /// Output channels.
    fn f(&self) -> usize {
        if self.depthwise {
            self.c * self.m
        } else {
            self.m
        }
    }

    /// Columns of an im2col row: one window.
    fn patch(&self) -> usize {
        self.kh * self.kw * self.c
    }

    fn x_len(&self) -> usize {
        self.n * self.h * self.w * self.c
    }

    fn k_len(&self) -> usize {
        self.patch() * self.m
    }

    fn y_len(&self) -> usize {
        self.pixels() * self.f()
    }

    /// Output pixels, flat over N, OH, OW.
    fn pixels(&self) -> usize {
        self.n * self.oh * self.ow
    }

    /// Multiply-adds of the forward convolution per output pixel.
    fn macs_per_pixel(&self) -> usize {
        self.kh * self.kw * self.c * self.m
    }

    /// The input row of tap row `ki` of output row `oh`, if it lies inside the input.
    #[inline]
    fn in_row(&self, oh: usize, ki: usize) -> Option<usize> {
        (oh * self.stride + ki * self.dh)
            .checked_sub(self.pad_top)
            .filter(|&r| r < self.h)
    }

    /// The input column of tap column `kj` of output column `ow`, if it lies inside the input.
    #[inline]
    fn in_col(&self, ow: usize, kj: usize) -> Option<usize> {
        (ow * self.stride + kj * self.dw)
            .checked_sub(self.pad_left)
            .filter(|&c| c < self.w)
    }

    /// Output rows the input gradient multiplies by `kᵀ` in one product, at most: as many as
    /// fit twice conv2d's im2col block.
    fn out_rows_per_product<T>(&self) -> usize {
        let per_out_row = self.ow * self.patch() * std::mem::size_of::<T>();
        (2 * IM2COL_BLOCK_BYTES / per_out_row.max(1)).max(1)
    }

    /// The output rows whose windows reach input rows `r0..r1`.
    fn out_rows_reaching(&self, r0: usize, r1: usize) -> std::ops::Range<usize> {
        let reach = (self.kh - 1) * self.dh;
        let lo = (r0 + self.pad_top)
            .saturating_sub(reach)
            .div_ceil(self.stride);
        let hi = ((r1 - 1 + self.pad_top) / self.stride + 1).min(self.oh);
        lo..hi.max(lo)
    }
}

/// The shape checks of the eager backprop ops: `x_shape` and `k_shape` rank 4 with the
/// channels agreeing, the geometry valid, and `dy_shape` the forward op's output shape.
pub fn check_shapes(
    op: &'static str,
    x_shape: &[usize],
    k_shape: &[usize],
    dy_shape: &[usize],
    p: ConvGeneral,
) -> Result<(), Error> {
    let y = super::conv_general::output_shape(x_shape, k_shape, p).map_err(|e| match e {
        Error::Shape {
            message,
            left,
            right,
            axis,
            ..
        } => Error::Shape {
            op,
            message,
            left,
            right,
            axis,
        },
        Error::InvalidArgument { message, .. } => Error::invalid(op, message),
        other => other,
    })?;
    if dy_shape != y {
        return Err(Error::shape(
            op,
            format!(
                "the gradient must have the convolution's output shape {y:?} (input {x_shape:?}, kernel {k_shape:?}), found {dy_shape:?}"
            ),
            x_shape,
            dy_shape,
            None,
        ));
    }
    Ok(())
}

/// The four dims of a rank-4 shape the callers checked.
fn four(s: &[usize]) -> [usize; 4] {
    [s[0], s[1], s[2], s[3]]
}

/// `dx = dconv(x, k)/dx · dy`: the gradient of `y = conv(x, k)` with respect to `x`, for `x`
/// of `x_shape` (`dy` has `y`'s shape, `k` `k_shape`), into `dx` (every element written).
/// Input rows in parallel. `p.depthwise` selects `depthwise_conv2d`'s gradient.
///
/// Panics if the geometry is invalid or a slice is shorter than the shapes say (the callers
/// check first: the macro at compile time, [`check_shapes`] for the eager ops).
pub fn conv2d_backprop_input_into<T: GemmElement>(
    dy: &[T],
    k: &[T],
    x_shape: [usize; 4],
    k_shape: [usize; 4],
    p: ConvGeneral,
    dx: &mut [T],
) {
    let g = Geometry::new(x_shape, k_shape, p).expect("conv2d_backprop_input: bad geometry");
    assert!(
        dy.len() >= g.y_len() && k.len() >= g.k_len() && dx.len() >= g.x_len(),
        "conv2d_backprop_input: slices do not match the shapes"
    );
    let dx = &mut dx[..g.x_len()];
    let row_len = g.w * g.c;
    if dx.is_empty() {
        return;
    }
    // Multiply-adds per input row: the forward's, spread over the input rows.
    let macs = g.pixels().saturating_mul(g.macs_per_pixel());
    let work = (macs / (g.n * g.h)).max(row_len);
    let mut run = |kt: Option<PrepackedB<'_, T>>| {
        for_each_chunk(dx, row_len, work, |first, chunk| {
            for_each_image_rows(g.h, row_len, first, chunk, |img, r0, rows| {
                if g.depthwise {
                    depthwise_input_rows(dy, k, &g, img, r0, rows);
                } else {
                    input_rows(dy, k, kt, &g, img, r0, rows);
                }
            });
        })
    };
    let (patch, m) = (g.patch(), g.m);
    if g.depthwise || patch == 0 || m == 0 {
        return run(None);
    }
    // Every thread's scratch and GEMM packing buffers, whichever blocks it gets, before the
    // blocks run (see `ScratchPool`): a steady-state call then allocates nothing.
    let threads = rayon::current_num_threads().max(1);
    T::reserve_scratch(
        threads,
        g.out_rows_per_product::<T>().min(g.oh) * g.ow * patch,
    );
    T::reserve_gemm(threads);
    // The GEMM's right operand `kᵀ` (`[M, patch]`) packed once for every block, rather than
    // packed from `k` read transposed by each block's product: the same products, the same
    // bits (a product's chains do not depend on how its right operand was packed).
    T::with_kernel_scratch(patch * m, |kt| {
        for (q, row) in k[..patch * m].chunks_exact(m).enumerate() {
            for (o, &v) in row.iter().enumerate() {
                kt[o * patch + q] = v;
            }
        }
        T::with_prepacked_b(m, patch, kt, run)
    });
}

/// Input rows `r0..` of image `img` (`rows` holds whole rows of `W * C`): the `dy` rows whose
/// windows reach them times `kᵀ` (a GEMM into a scratch buffer, a few output rows at a
/// time), each patch added back onto the rows of this block it covers.
fn input_rows<T: GemmElement>(
    dy: &[T],
    k: &[T],
    kt: Option<PrepackedB<'_, T>>,
    g: &Geometry,
    img: usize,
    r0: usize,
    rows: &mut [T],
) {
    rows.fill(T::ZERO);
    let row_len = g.w * g.c;
    let r1 = r0 + rows.len() / row_len;
    let (patch, m) = (g.patch(), g.m);
    if m == 0 || g.ow == 0 {
        return;
    }
    let reach = g.out_rows_reaching(r0, r1);
    // Output rows per product, in equal runs (11 rows are one product of 11, not 10 and 1);
    // the order of the additions onto `dx` is the output pixels' whatever the runs.
    let most = g.out_rows_per_product::<T>();
    let runs = reach.len().div_ceil(most).max(1);
    let step = reach.len().div_ceil(runs).max(1);
    let mut o0 = reach.start;
    // LOOP 1: over runs of `step` output rows.
    while o0 < reach.end {
        let o1 = (o0 + step).min(reach.end);
        let pixels = (o1 - o0) * g.ow;
        let a = &dy[(img * g.oh + o0) * g.ow * m..][..pixels * m];
        T::with_scratch(pixels * patch, |cols| {
            let cols = &mut cols[..pixels * patch];
            // LOOP 2 (the GEMM): cols[p, (i, j, c)] = sum_o dy[p, o] * k[(i, j, c), o], the
            // kernel pre-packed transposed, or read as the transposed right operand.
            // SAFETY: `a` holds `pixels` rows of `m`, `k` holds `patch` rows of `m` (checked
            // by the caller) and `kt` is `kᵀ` packed, `cols` is `pixels` rows of `patch` and
            // borrowed exclusively.
            unsafe {
                match kt {
                    Some(kt) => T::gemm_prepacked(
                        pixels,
                        m,
                        patch,
                        a.as_ptr(),
                        m,
                        kt,
                        0,
                        cols.as_mut_ptr(),
                        patch,
                    ),
                    None => T::gemm_strided_bt(
                        pixels,
                        m,
                        patch,
                        a.as_ptr(),
                        m,
                        k.as_ptr(),
                        m,
                        cols.as_mut_ptr(),
                        patch,
                    ),
                }
            };
            // LOOP 3: col2im onto this block's rows. A kernel row whose taps all lie inside
            // the input (contiguous in `dx` without dilation) is added as one run; each
            // element still sums the output pixels in order.
            let tap_row = g.kw * g.c;
            for (q, col) in cols.chunks_exact(patch).enumerate() {
                let (oh, ow) = (o0 + q / g.ow, q % g.ow);
                let whole_row = (ow * g.stride)
                    .checked_sub(g.pad_left)
                    .filter(|&c0| g.dw == 1 && c0 + g.kw <= g.w);
                for ki in 0..g.kh {
                    let Some(r) = g.in_row(oh, ki).filter(|r| (r0..r1).contains(r)) else {
                        continue;
                    };
                    let dst_row = &mut rows[(r - r0) * row_len..][..row_len];
                    if let Some(c0) = whole_row {
                        let src = &col[ki * tap_row..][..tap_row];
                        let dst = &mut dst_row[c0 * g.c..][..tap_row];
                        for (d, &s) in dst.iter_mut().zip(src) {
                            *d = d.add(s);
                        }
                        continue;
                    }
                    for kj in 0..g.kw {
                        let Some(cc) = g.in_col(ow, kj) else { continue };
                        let src = &col[(ki * g.kw + kj) * g.c..][..g.c];
                        let dst = &mut dst_row[cc * g.c..][..g.c];
                        for (d, &s) in dst.iter_mut().zip(src) {
                            *d = d.add(s);
                        }
                    }
                }
            }
        });
        o0 = o1;
    }
}

/// Input rows `r0..` of image `img` of the depthwise input gradient: each input pixel sums,
/// tap by tap, the output pixel that read it times the tap, per channel.
fn depthwise_input_rows<T: Numeric>(
    dy: &[T],
    k: &[T],
    g: &Geometry,
    img: usize,
    r0: usize,
    rows: &mut [T],
) {
    let (c, m, f) = (g.c, g.m, g.f());
    let s = g.stride;
    rows.fill(T::ZERO);
    if c == 0 || m == 0 {
        return;
    }
    for (r, row) in rows.chunks_exact_mut(g.w * c).enumerate() {
        let ih = r0 + r;
        for ki in 0..g.kh {
            // The output row reading input row `ih` at tap row `ki`: `oh * s + ki * dh - pad = ih`.
            let Some(t) = (ih + g.pad_top).checked_sub(ki * g.dh) else {
                continue;
            };
            if t % s != 0 || t / s >= g.oh {
                continue;
            }
            let oh = t / s;
            for (iw, px) in row.chunks_exact_mut(c).enumerate() {
                for kj in 0..g.kw {
                    let Some(u) = (iw + g.pad_left).checked_sub(kj * g.dw) else {
                        continue;
                    };
                    if u % s != 0 || u / s >= g.ow {
                        continue;
                    }
                    let gy = &dy[((img * g.oh + oh) * g.ow + u / s) * f..][..f];
                    let taps = &k[(ki * g.kw + kj) * f..][..f];
                    if m == 1 {
                        for ((d, &a), &b) in px.iter_mut().zip(gy).zip(taps) {
                            *d = d.add(a.mul(b));
                        }
                    } else {
                        for (ch, d) in px.iter_mut().enumerate() {
                            let mut acc = *d;
                            for (&a, &b) in gy[ch * m..][..m].iter().zip(&taps[ch * m..][..m]) {
                                acc = acc.add(a.mul(b));
                            }
                            *d = acc;
                        }
                    }
                }
            }
        }
    }
}

/// How the filter gradient's reduction over output pixels is cut: chunks of `chunk`
/// pixels, `per_group` consecutive chunks a group, one partial kernel a group. Depends on the
/// shapes only.
#[derive(Debug, Clone, Copy)]
struct Reduction {
    pixels: usize,
    chunk: usize,
    per_group: usize,
    groups: usize,
}

impl Reduction {
    fn new(pixels: usize, chunk: usize, macs_per_pixel: usize) -> Reduction {
        let chunk = chunk.max(1);
        let chunks = pixels.div_ceil(chunk).max(1);
        let by_work = (pixels.saturating_mul(macs_per_pixel) / MIN_PARTIAL_MACS).max(1);
        let groups = chunks.min(MAX_PARTIALS).min(by_work);
        let per_group = chunks.div_ceil(groups);
        Reduction {
            pixels,
            chunk,
            per_group,
            groups: chunks.div_ceil(per_group),
        }
    }

    /// The pixel ranges of group `gi`'s chunks, in order.
    fn chunks_of(&self, gi: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let first = gi * self.per_group;
        (first..first + self.per_group)
            .map(|ci| (ci * self.chunk, ((ci + 1) * self.chunk).min(self.pixels)))
            .filter(|(a, b)| a < b)
    }
}

/// `dk = dconv(x, k)/dk · dy`: the gradient of `y = conv(x, k)` with respect to a kernel of
/// `k_shape`, for `x` of `x_shape` (`dy` has `y`'s shape), into `dk` (every element
/// written). Groups of output pixels in parallel, each into a partial kernel; the partials
/// are summed in order. `p.depthwise` selects `depthwise_conv2d`'s gradient.
///
/// Panics as [`conv2d_backprop_input_into`] does.
pub fn conv2d_backprop_filter_into<T: GemmElement>(
    x: &[T],
    dy: &[T],
    x_shape: [usize; 4],
    k_shape: [usize; 4],
    p: ConvGeneral,
    dk: &mut [T],
) {
    let g = Geometry::new(x_shape, k_shape, p).expect("conv2d_backprop_filter: bad geometry");
    assert!(
        x.len() >= g.x_len() && dy.len() >= g.y_len() && dk.len() >= g.k_len(),
        "conv2d_backprop_filter: slices do not match the shapes"
    );
    let dk = &mut dk[..g.k_len()];
    let pixels = g.pixels();
    if dk.is_empty() {
        return;
    }
    if pixels == 0 {
        dk.fill(T::ZERO);
        return;
    }
    let chunk = if g.depthwise {
        DEPTHWISE_CHUNK_PIXELS
    } else {
        let by_cache = 2 * IM2COL_BLOCK_BYTES / (g.patch() * std::mem::size_of::<T>()).max(1);
        by_cache.clamp(CHUNK_PIXELS.0, CHUNK_PIXELS.1)
    };
    let red = Reduction::new(pixels, chunk, g.macs_per_pixel());
    let len = dk.len();
    let parallel = red.groups > 1 && pixels.saturating_mul(g.macs_per_pixel()) >= PARALLEL_CUTOFF;
    if parallel && !g.depthwise {
        // Every thread's scratch (a chunk's im2col rows, its `dy` rows transposed and a
        // product, or the direct loop's rows padded to whole tiles) and GEMM packing
        // buffers, whichever groups it gets, before the groups run (see `ScratchPool`).
        let (patch, m) = (g.patch(), g.m);
        let gemm_need = chunk * patch + m * chunk + m * patch;
        let direct_need = chunk * (patch + direct::DIRECT_PATCH);
        let threads = rayon::current_num_threads().max(1);
        T::reserve_scratch(threads, gemm_need.max(direct_need));
        T::reserve_gemm(threads);
    }
    // A partial per group: `[M, KH*KW*C]` (the GEMM's output, kernel transposed) for a plain
    // convolution, the kernel's own layout for a depthwise one; borrowed from the pool of
    // kernel-sized scratch, so that a steady-state call allocates nothing.
    T::with_kernel_scratch(red.groups * len, |partials| {
        let run = |(gi, part): (usize, &mut [T])| {
            if g.depthwise {
                // The depthwise chunks add onto their partial; a plain one's first chunk
                // writes it.
                part.fill(T::ZERO);
            }
            for (ci, (p0, p1)) in red.chunks_of(gi).enumerate() {
                if g.depthwise {
                    depthwise_filter_chunk(x, dy, &g, p0, p1, part);
                } else {
                    filter_chunk(x, dy, &g, p0, p1, ci == 0, part);
                }
            }
        };
        if parallel {
            partials.par_chunks_mut(len).enumerate().for_each(run);
        } else {
            partials.chunks_mut(len).enumerate().for_each(run);
        }
        sum_partials(partials, &g, red.groups, dk);
    });
}

/// `dk` from the filter gradient's partial kernels (`groups` of `dk.len()` each): the
/// partials summed in group order into the first one, element by element over their own
/// layout (contiguous, in parallel), then that one written to `dk` (transposed back for a
/// plain convolution). Each element gets the same additions in the same order as a sum
/// taken element by element in `dk`'s layout.
fn sum_partials<T: GemmElement>(partials: &mut [T], g: &Geometry, groups: usize, dk: &mut [T]) {
    let len = dk.len();
    let (sum, rest) = partials[..groups * len].split_at_mut(len);
    let rest = &*rest;
    if groups > 1 {
        for_each_chunk(sum, 1, groups, |first, run| {
            for gi in 0..groups - 1 {
                let other = &rest[gi * len + first..][..run.len()];
                for (a, &b) in run.iter_mut().zip(other) {
                    *a = a.add(b);
                }
            }
        });
    }
    if g.depthwise {
        dk.copy_from_slice(sum);
        return;
    }
    // `sum` is `[M, patch]`, `dk` `[patch, M]`: blocks of 16 x 16 so both sides stay in cache.
    let (patch, m) = (g.patch(), g.m);
    const BLOCK: usize = 16;
    for q0 in (0..patch).step_by(BLOCK) {
        let q1 = (q0 + BLOCK).min(patch);
        for o0 in (0..m).step_by(BLOCK) {
            let o1 = (o0 + BLOCK).min(m);
            for q in q0..q1 {
                let row = &mut dk[q * m..][o0..o1];
                for (d, o) in row.iter_mut().zip(o0..o1) {
                    *d = sum[o * patch + q];
                }
            }
        }
    }
}

/// Output pixels `p0..p1` of a plain convolution's filter gradient, `dyᵀ · cols`
/// (`[M, patch]`, `cols` their im2col rows) into `part` (the group's first chunk) or added
/// to it: a direct loop for small float kernels, the GEMM otherwise (the same bits).
fn filter_chunk<T: GemmElement>(
    x: &[T],
    dy: &[T],
    g: &Geometry,
    p0: usize,
    p1: usize,
    first: bool,
    part: &mut [T],
) {
    if g.patch() <= direct::DIRECT_PATCH
        && direct::direct_filter_chunk(x, dy, g, p0, p1, first, part)
    {
        return;
    }
    gemm_filter_chunk(x, dy, g, p0, p1, first, part);
}

/// [`filter_chunk`] on the GEMM: the pixels' im2col rows and their `dy` rows transposed
/// into a scratch buffer, then one product.
fn gemm_filter_chunk<T: GemmElement>(
    x: &[T],
    dy: &[T],
    g: &Geometry,
    p0: usize,
    p1: usize,
    first: bool,
    part: &mut [T],
) {
    let (patch, m, cnt) = (g.patch(), g.m, p1 - p0);
    T::with_scratch(cnt * patch + m * cnt + m * patch, |scratch| {
        let (cols, rest) = scratch.split_at_mut(cnt * patch);
        let (dyt, rest) = rest.split_at_mut(m * cnt);
        let tmp = &mut rest[..m * patch];
        im2col_rows(x, g, p0, cols);
        // `dyt` is `dy`'s rows of this chunk transposed, 16 pixels at a time so that the
        // 16 rows read stay in cache while each of `dyt`'s rows gets a contiguous run.
        const BLOCK: usize = 16;
        let rows = &dy[p0 * m..p1 * m];
        for q0 in (0..cnt).step_by(BLOCK) {
            let q1 = (q0 + BLOCK).min(cnt);
            for o in 0..m {
                let dst = &mut dyt[o * cnt + q0..o * cnt + q1];
                for (d, q) in dst.iter_mut().zip(q0..q1) {
                    *d = rows[q * m + o];
                }
            }
        }
        let out: &mut [T] = if first { &mut *part } else { &mut *tmp };
        // SAFETY: `dyt` is `m` rows of `cnt`, `cols` `cnt` rows of `patch`, `out` `m` rows
        // of `patch` (the partial holds `patch * m`), all exclusively borrowed here.
        unsafe {
            T::gemm_strided(
                m,
                cnt,
                patch,
                dyt.as_ptr(),
                cnt,
                cols.as_ptr(),
                patch,
                out.as_mut_ptr(),
                patch,
            )
        };
        if !first {
            for (a, &b) in part.iter_mut().zip(tmp.iter()) {
                *a = a.add(b);
            }
        }
    });
}

/// Writes the windows of the output pixels from `p0` on (flat over N, OH, OW) into `cols`,
/// one row of `patch` a pixel, laid out (kernel row, kernel column, channel), zeros where a
/// window overhangs the input. The pixel's position is stepped along, not divided out, and
/// a kernel row whose taps all lie inside the input (contiguous in `x` without dilation) is
/// one copy.
fn im2col_rows<T: Numeric>(x: &[T], g: &Geometry, p0: usize, cols: &mut [T]) {
    let (c, patch) = (g.c, g.patch());
    if patch == 0 {
        return;
    }
    let tap_row = g.kw * c;
    let (mut img, mut oh, mut ow) = (p0 / (g.oh * g.ow), (p0 / g.ow) % g.oh, p0 % g.ow);
    for col in cols.chunks_exact_mut(patch) {
        // The first tap column's input column, when the whole kernel row lies inside.
        let whole_row = (ow * g.stride)
            .checked_sub(g.pad_left)
            .filter(|&c0| g.dw == 1 && c0 + g.kw <= g.w);
        for (ki, dst) in col.chunks_exact_mut(tap_row).enumerate() {
            let Some(r) = g.in_row(oh, ki) else {
                dst.fill(T::ZERO);
                continue;
            };
            let row = (img * g.h + r) * g.w;
            if let Some(c0) = whole_row {
                dst.copy_from_slice(&x[(row + c0) * c..][..tap_row]);
                continue;
            }
            for (kj, d) in dst.chunks_exact_mut(c).enumerate() {
                match g.in_col(ow, kj) {
                    Some(cc) => d.copy_from_slice(&x[(row + cc) * c..][..c]),
                    None => d.fill(T::ZERO),
                }
            }
        }
        ow += 1;
        if ow == g.ow {
            ow = 0;
            oh += 1;
            if oh == g.oh {
                oh = 0;
                img += 1;
            }
        }
    }
}

/// Output pixels `p0..p1` of the depthwise filter gradient, added to `part` (the kernel's
/// layout): each pixel's `dy` times the input under each tap, per channel.
fn depthwise_filter_chunk<T: Numeric>(
    x: &[T],
    dy: &[T],
    g: &Geometry,
    p0: usize,
    p1: usize,
    part: &mut [T],
) {
    let (c, m, f) = (g.c, g.m, g.f());
    if f == 0 {
        return;
    }
    for p in p0..p1 {
        let (img, oh, ow) = (p / (g.oh * g.ow), (p / g.ow) % g.oh, p % g.ow);
        let gy = &dy[p * f..][..f];
        for ki in 0..g.kh {
            let Some(r) = g.in_row(oh, ki) else { continue };
            for kj in 0..g.kw {
                let Some(cc) = g.in_col(ow, kj) else { continue };
                let xs = &x[((img * g.h + r) * g.w + cc) * c..][..c];
                let acc = &mut part[(ki * g.kw + kj) * f..][..f];
                if m == 1 {
                    for ((a, &d), &v) in acc.iter_mut().zip(gy).zip(xs) {
                        *a = a.add(d.mul(v));
                    }
                } else {
                    for (ch, &v) in xs.iter().enumerate() {
                        for (a, &d) in acc[ch * m..][..m].iter_mut().zip(&gy[ch * m..][..m]) {
                            *a = a.add(d.mul(v));
                        }
                    }
                }
            }
        }
    }
}

/// The eager-facing entry of the input gradient: checks, then [`conv2d_backprop_input_into`]
/// into a fresh buffer of `x_shape`.
pub fn backprop_input_vec<T: GemmElement>(
    op: &'static str,
    dy: &[T],
    dy_shape: &[usize],
    k: &[T],
    k_shape: &[usize],
    x_shape: &[usize],
    p: ConvGeneral,
) -> Result<Vec<T>, Error> {
    check_shapes(op, x_shape, k_shape, dy_shape, p)?;
    let mut dx = crate::exec::buffer::zeroed_for(op, x_shape)?;
    conv2d_backprop_input_into(dy, k, four(x_shape), four(k_shape), p, &mut dx);
    Ok(dx)
}

/// The eager-facing entry of the filter gradient: checks, then
/// [`conv2d_backprop_filter_into`] into a fresh buffer of `k_shape`.
pub fn backprop_filter_vec<T: GemmElement>(
    op: &'static str,
    x: &[T],
    x_shape: &[usize],
    dy: &[T],
    dy_shape: &[usize],
    k_shape: &[usize],
    p: ConvGeneral,
) -> Result<Vec<T>, Error> {
    check_shapes(op, x_shape, k_shape, dy_shape, p)?;
    let mut dk = crate::exec::buffer::zeroed_for(op, k_shape)?;
    conv2d_backprop_filter_into(x, dy, four(x_shape), four(k_shape), p, &mut dk);
    Ok(dk)
}

#[cfg(test)]
mod tests;
