//! The vectorised forward kernel of `depthwise_conv2d` (NHWC, kernel `[KH, KW, C, M]`), for f32 and f64, compiled once per instruction set.
//!
//! Output channels are contiguous in NHWC, and so is one tap's row of the kernel
//! (`k[di, dj, ..]` holds the weights of output channels `0..C * M` in order), so the kernel
//! works on blocks of output channels: a block of `L` channels of `P` neighbouring output
//! pixels of one row sits in registers while the taps are added in, one (fused, at the
//! AVX2 and AVX-512 levels) multiply-add per tap, and the block is stored once. The weights
//! of a tap are loaded once per block of pixels. With a channel multiplier `M > 1` output
//! channel `c * M + m` reads input channel `c`, so the block's inputs are gathered lane by
//! lane.
//!
//! Every output element is `0 + x·k` over the taps inside the input, in row-major tap order
//! (padding taps are skipped, as the portable loop of `conv_general.rs` does): the same
//! operations whatever the block, the chunking or the thread count, so a result depends
//! only on the instruction-set level (fused multiply-adds at AVX2 and AVX-512, a multiply
//! then an add at the baseline level).

use crate::dtype::Numeric;

/// The resolved geometry of one dilated or depthwise convolution.
#[derive(Debug, Clone, Copy)]
pub(super) struct ConvGeometry {
    pub h: usize,
    pub w: usize,
    /// Input channels.
    pub c: usize,
    pub kh: usize,
    pub kw: usize,
    /// The kernel's last axis: the channel multiplier `M` of a depthwise convolution, the
    /// output channels of a plain one.
    pub m: usize,
    pub oh: usize,
    pub ow: usize,
    pub stride: usize,
    pub dilation: [usize; 2],
    pub pad_top: usize,
    pub pad_left: usize,
}

impl ConvGeometry {
    /// Output channels per pixel of a depthwise convolution.
    fn f(&self) -> usize {
        self.c * self.m
    }
}

/// A float whose multiply-add the kernel can fuse.
trait MulAdd: Numeric {
    /// `a * b + acc`, rounded once when `FUSED`, twice otherwise.
    fn mul_add_acc<const FUSED: bool>(a: Self, b: Self, acc: Self) -> Self;
}

impl MulAdd for f32 {
    #[inline(always)]
    fn mul_add_acc<const FUSED: bool>(a: f32, b: f32, acc: f32) -> f32 {
        if FUSED {
            a.mul_add(b, acc)
        } else {
            acc + a * b
        }
    }
}

impl MulAdd for f64 {
    #[inline(always)]
    fn mul_add_acc<const FUSED: bool>(a: f64, b: f64, acc: f64) -> f64 {
        if FUSED {
            a.mul_add(b, acc)
        } else {
            acc + a * b
        }
    }
}

/// Output pixels `first..` of `out` (whole pixels of `C * M` channels, flat over
/// `N, OH, OW`): blocks of `P` pixels of one output row by `L` output channels, then a
/// block of `L / 2` channels and the last channels one by one.
#[inline(always)]
fn chunk_body<T: MulAdd, const L: usize, const H: usize, const P: usize, const FUSED: bool>(
    g: &ConvGeometry,
    x: &[T],
    k: &[T],
    first: usize,
    out: &mut [T],
) {
    let f = g.f();
    let pixels = out.len() / f;
    let mut q = 0;
    while q < pixels {
        let flat = first + q;
        let (b, rest) = (flat / (g.oh * g.ow), flat % (g.oh * g.ow));
        let (i, j) = (rest / g.ow, rest % g.ow);
        let run = (g.ow - j).min(pixels - q);
        let full = run / P * P;
        let row = &mut out[q * f..(q + run) * f];
        let (blocked, single) = row.split_at_mut(full * f);
        for (t, pix) in blocked.chunks_exact_mut(P * f).enumerate() {
            pixels_block::<T, L, H, P, FUSED>(g, x, k, b, i, j + t * P, pix);
        }
        for (t, pix) in single.chunks_exact_mut(f).enumerate() {
            pixels_block::<T, L, H, 1, FUSED>(g, x, k, b, i, j + full + t, pix);
        }
        q += run;
    }
}

/// `R` output pixels `(b, i, j..j + R)`, stored in `out` (`R * C * M` elements).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn pixels_block<T: MulAdd, const L: usize, const H: usize, const R: usize, const FUSED: bool>(
    g: &ConvGeometry,
    x: &[T],
    k: &[T],
    b: usize,
    i: usize,
    j: usize,
    out: &mut [T],
) {
    let f = g.f();
    let mut f0 = 0;
    while f0 + L <= f {
        channels_block::<T, L, R, FUSED>(g, x, k, b, i, j, f0, out);
        f0 += L;
    }
    if f0 + H <= f {
        channels_block::<T, H, R, FUSED>(g, x, k, b, i, j, f0, out);
        f0 += H;
    }
    while f0 < f {
        channels_block::<T, 1, R, FUSED>(g, x, k, b, i, j, f0, out);
        f0 += 1;
    }
}

/// Output channels `f0..f0 + W` of `R` output pixels `(b, i, j..j + R)`: the accumulators
/// stay in registers over all the taps.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn channels_block<T: MulAdd, const W: usize, const R: usize, const FUSED: bool>(
    g: &ConvGeometry,
    x: &[T],
    k: &[T],
    b: usize,
    i: usize,
    j: usize,
    f0: usize,
    out: &mut [T],
) {
    let f = g.f();
    let mut acc = [[T::ZERO; W]; R];
    for di in 0..g.kh {
        let y = (i * g.stride + di * g.dilation[0]).wrapping_sub(g.pad_top);
        if y >= g.h {
            // Above the input (the subtraction wrapped) or below it.
            continue;
        }
        let row = (b * g.h + y) * g.w;
        for dj in 0..g.kw {
            let tap = (di * g.kw + dj) * f + f0;
            let kv: &[T; W] = k[tap..tap + W].try_into().expect("W weights");
            for (t, acc_t) in acc.iter_mut().enumerate() {
                let xx = ((j + t) * g.stride + dj * g.dilation[1]).wrapping_sub(g.pad_left);
                if xx >= g.w {
                    continue;
                }
                let pixel = (row + xx) * g.c;
                if g.m == 1 {
                    let xv: &[T; W] = x[pixel + f0..pixel + f0 + W].try_into().expect("W inputs");
                    for l in 0..W {
                        acc_t[l] = T::mul_add_acc::<FUSED>(xv[l], kv[l], acc_t[l]);
                    }
                } else {
                    let src = &x[pixel..pixel + g.c];
                    for l in 0..W {
                        let v = src[(f0 + l) / g.m];
                        acc_t[l] = T::mul_add_acc::<FUSED>(v, kv[l], acc_t[l]);
                    }
                }
            }
        }
    }
    for (t, acc_t) in acc.iter().enumerate() {
        out[t * f + f0..t * f + f0 + W].copy_from_slice(acc_t);
    }
}

/// Defines `$name(g, x, k, first, out)`: [`chunk_body`] for `$t` at the best level this CPU
/// has, with blocks of `[L, L / 2, P]` per level (AVX-512, AVX2, baseline).
macro_rules! depthwise_kernel {
    ($name:ident, $t:ty, [$l512:literal, $h512:literal, $p512:literal], [$l2:literal, $h2:literal, $p2:literal], [$lb:literal, $hb:literal, $pb:literal]) => {
        /// The depthwise convolution of output pixels `first..` into `out` (see the module docs).
        pub(super) fn $name(g: &ConvGeometry, x: &[$t], k: &[$t], first: usize, out: &mut [$t]) {
            #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
            {
                use crate::exec::cpu::{level, Level};
                /// # Safety
                /// The CPU must support AVX-512 F/VL/BW/DQ, AVX2 and FMA.
                #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
                unsafe fn avx512(
                    g: &ConvGeometry,
                    x: &[$t],
                    k: &[$t],
                    first: usize,
                    out: &mut [$t],
                ) {
                    chunk_body::<$t, $l512, $h512, $p512, true>(g, x, k, first, out)
                }
                /// # Safety
                /// The CPU must support AVX2 and FMA.
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2(g: &ConvGeometry, x: &[$t], k: &[$t], first: usize, out: &mut [$t]) {
                    chunk_body::<$t, $l2, $h2, $p2, true>(g, x, k, first, out)
                }
                match level() {
                    // SAFETY: `level()` reported these features on this CPU.
                    Level::Avx512 => return unsafe { avx512(g, x, k, first, out) },
                    // SAFETY: as above.
                    Level::Avx2Fma => return unsafe { avx2(g, x, k, first, out) },
                    Level::Baseline => {}
                }
            }
            chunk_body::<$t, $lb, $hb, $pb, false>(g, x, k, first, out)
        }
    };
}

// Accumulators: AVX-512 holds 4 pixels x 2 registers of channels, AVX2 4 x 2, the baseline
// (SSE2, 16 registers) 4 x 2.
depthwise_kernel!(depthwise_f32, f32, [32, 16, 4], [16, 8, 4], [8, 4, 4]);
depthwise_kernel!(depthwise_f64, f64, [16, 8, 4], [8, 4, 4], [4, 2, 4]);
