//! conv2d fused with the max or average pooling that reads it: each band of pooled rows computes the convolution rows its windows read into a scratch buffer, runs the conv's epilogue there and pools them, so the convolution's output is never written to memory.
//!
//! This is the kernel `max_pool2d(relu(conv2d(x, k, ..) + b), ..)` compiles to (TF's
//! Conv → BiasAdd → Relu → MaxPool, the core of every small CNN). Pooled rows are cut into
//! bands, per image, that run on rayon. A band needs convolution rows `r0..r1` (the rows its
//! windows overlap, clipped to the output); it computes them with the same blocks of
//! micro-kernel calls as [`crate::linalg::conv::conv2d_into`] (a pixel's value does not depend on the
//! block it is computed in), hands them to the epilogue with their flat pixel index, exactly
//! as the unfused kernel does, and pools them with [`crate::kernels::pool`]'s row routine. Results are
//! therefore bit for bit those of conv2d, then the epilogue, then the pooling op. Rows no
//! window reads (the last rows of a `VALID` pooling that does not tile the input) are never
//! computed; rows shared by two bands' windows (a stride smaller than the window) are
//! computed by both.

use rayon::prelude::*;

use super::conv::{
    Algorithm, Padding, Prepared, BLOCKS_PER_THREAD, OUT_BLOCK_BYTES, SEQUENTIAL_MACS,
};
use super::gemm::{GemmElement, Scratch};
use crate::kernels::pool::{input_rows, out_and_pad, pool_row, Pool2d, Window};

/// The output shape `[N, PH, PW, Cout]` of the fused kernel, or `None` when the convolution
/// or the pooling has no valid geometry (the callers check shapes before calling).
pub fn conv2d_pool_shape(
    x_shape: [usize; 4],
    k_shape: [usize; 4],
    stride: usize,
    padding: Padding,
    pool: Pool2d,
) -> Option<[usize; 4]> {
    let [n, h, w, _] = x_shape;
    let [kh, kw, _, cout] = k_shape;
    let (oh, ow) = crate::linalg::conv::conv2d_output_hw(h, w, kh, kw, stride, padding)?;
    let (ph, _) = out_and_pad(oh, pool.ksize[0], pool.strides[0], pool.padding)?;
    let (pw, _) = out_and_pad(ow, pool.ksize[1], pool.strides[1], pool.padding)?;
    Some([n, ph, pw, cout])
}

/// `out = pool(epilogue(conv2d(x, k)))` with `x` `[N, H, W, Cin]`, `k` `[KH, KW, Cin, Cout]`
/// and `out` `[N, PH, PW, Cout]`, all row-major. `epilogue(first_pixel, block)` is called as
/// [`crate::linalg::conv::conv2d_into`] calls it: on blocks of whole convolution pixels (`Cout`
/// elements each), `first_pixel` counted flat over `N, OH, OW`, rewriting them in place. It
/// must compute each element from that element and the pixel index alone (it sees some
/// convolution rows twice when pooling windows overlap, and never sees rows no window reads).
///
/// Panics if the shapes disagree or a slice has the wrong length (callers check first).
#[allow(clippy::too_many_arguments)]
pub fn conv2d_pool_into<T: GemmElement + 'static, E>(
    x: &[T],
    x_shape: [usize; 4],
    k: &[T],
    k_shape: [usize; 4],
    stride: usize,
    padding: Padding,
    pool: Pool2d,
    out: &mut [T],
    epilogue: E,
) where
    E: Fn(usize, &mut [T]) + Sync,
{
    let [n, h, w, cin] = x_shape;
    let cout = k_shape[3];
    let conv = Prepared::new::<T>(x_shape, k_shape, stride, padding, Algorithm::Best);
    let (oh, ow) = conv.out_hw();
    let (ph, pad_top) = out_and_pad(oh, pool.ksize[0], pool.strides[0], pool.padding)
        .expect("conv2d_pool_into: the pooling window fits the convolution's rows");
    let (pw, pad_left) = out_and_pad(ow, pool.ksize[1], pool.strides[1], pool.padding)
        .expect("conv2d_pool_into: the pooling window fits the convolution's columns");
    assert!(
        x.len() == n * h * w * cin
            && k.len() == k_shape.iter().product::<usize>()
            && out.len() == n * ph * pw * cout,
        "conv2d_pool_into: slices do not match shapes"
    );
    if out.is_empty() {
        return;
    }
    let window = Window {
        w: ow,
        c: cout,
        pad_top,
        pad_left,
    };
    let [kh, sh] = [pool.ksize[0], pool.strides[0]];
    let conv_row = ow * cout;
    let pooled_row = pw * cout;
    // Pooled rows per band: the band's convolution rows fit the output block size the conv
    // kernel uses, and there are enough bands to share among the threads.
    let elem = std::mem::size_of::<T>();
    let rows_fitting = (OUT_BLOCK_BYTES / (conv_row * elem).max(1)).max(kh);
    let by_cache = ((rows_fitting - kh) / sh.max(1) + 1).max(1);
    let threads = rayon::current_num_threads().max(1);
    let by_balance = (n * ph).div_ceil(threads * BLOCKS_PER_THREAD).max(1);
    let band = by_cache.min(by_balance).min(ph);

    // Every thread's scratch for the longest band (its convolution rows and their im2col
    // rows), whichever bands it gets, before the bands run (see `ScratchPool`).
    let band_rows = ((band - 1) * sh + kh).min(oh);
    T::scratch_pool(Scratch::Band).reserve(threads, band_rows * conv_row);
    T::reserve_scratch(threads, conv.block_scratch(band_rows * ow));
    // The kernel as the conv blocks read it, made once for all bands.
    conv.with_kernel(k, |k| {
        // One band: pooled rows `i0..i0 + out_band.len() / pooled_row` of image `b`.
        let run_band = |b: usize, i0: usize, out_band: &mut [T]| {
            let i1 = i0 + out_band.len() / pooled_row;
            let rows = input_rows(i0..i1, oh, kh, sh, pad_top);
            T::scratch_pool(Scratch::Band).with(rows.len() * conv_row, |scratch| {
                if !scratch.is_empty() {
                    let p0 = (b * oh + rows.start) * ow;
                    conv.compute(x, k, p0, scratch, &epilogue);
                }
                for (i, orow) in (i0..i1).zip(out_band.chunks_exact_mut(pooled_row)) {
                    pool_row(scratch, rows.start, oh, window, pool, i, orow);
                }
            });
        };

        let macs = (n * oh * ow).saturating_mul(conv.macs_per_pixel());
        if macs < SEQUENTIAL_MACS {
            for (b, image) in out.chunks_mut(ph * pooled_row).enumerate() {
                for (j, out_band) in image.chunks_mut(band * pooled_row).enumerate() {
                    run_band(b, j * band, out_band);
                }
            }
            return;
        }
        // LOOP 1 (parallel): over images; LOOP 2 (parallel): over bands of pooled rows.
        out.par_chunks_mut(ph * pooled_row)
            .enumerate()
            .for_each(|(b, image)| {
                image
                    .par_chunks_mut(band * pooled_row)
                    .enumerate()
                    .for_each(|(j, out_band)| run_band(b, j * band, out_band));
            });
    });
}
