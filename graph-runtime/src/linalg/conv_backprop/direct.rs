//! The filter gradient of convolutions with small kernels (at most [`DIRECT_PATCH`] elements per output channel, as conv1 of an image model: 3x3 over one channel) as direct loops: each chunk's output pixels times their input taps, on register tiles, where the GEMM's output would be narrower than one of its micro-panels.

use super::Geometry;
use crate::kernels::reduce::{same_type, same_type_mut};
use crate::linalg::gemm::GemmElement;

/// Kernels of at most this many elements per output channel (`KH * KW * C`) take the
/// filter gradient's direct loop ([`direct_filter_chunk`]) rather than a GEMM whose output
/// would be narrower than one of its micro-panels.
pub(super) const DIRECT_PATCH: usize = 16;

/// [`filter_chunk`] for f32 and f64 kernels of at most [`DIRECT_PATCH`] elements per output
/// channel, without the GEMM: `false` for other types.
///
/// Each element of the chunk's kernel is the GEMM's chain: from `+0`, one multiply-add per
/// output pixel in order, fused exactly where the GEMM's micro-kernels fuse it (AVX2+FMA
/// and AVX-512), so the bits are the GEMM path's (a chunk of at most `CHUNK_PIXELS.1`
/// pixels is one slice of the GEMM's shared dimension, one chain).
pub(super) fn direct_filter_chunk<T: GemmElement>(
    x: &[T],
    dy: &[T],
    g: &Geometry,
    p0: usize,
    p1: usize,
    first: bool,
    part: &mut [T],
) -> bool {
    if let (Some(x), Some(dy), Some(part)) = (
        same_type::<T, f32>(x),
        same_type::<T, f32>(dy),
        same_type_mut::<T, f32>(part),
    ) {
        direct_f32(x, dy, g, p0, p1, first, part);
        return true;
    }
    if let (Some(x), Some(dy), Some(part)) = (
        same_type::<T, f64>(x),
        same_type::<T, f64>(dy),
        same_type_mut::<T, f64>(part),
    ) {
        direct_f64(x, dy, g, p0, p1, first, part);
        return true;
    }
    false
}

/// Defines `$name(x, dy, g, p0, p1, first, part)`: [`direct_filter_chunk`] for `$t`, on
/// tiles of `$ob` output channels by `$q` kernel elements sized to each instruction set's
/// registers (AVX-512, then AVX2+FMA, fused; the portable loop unfused, as the GEMM).
macro_rules! direct_filter {
    ($name:ident, $t:ty, [$ob512:literal, $q512:literal], [$ob2:literal, $q2:literal], [$ob:literal, $q:literal]) => {
        #[allow(clippy::too_many_arguments)]
        fn $name(
            x: &[$t],
            dy: &[$t],
            g: &Geometry,
            p0: usize,
            p1: usize,
            first: bool,
            part: &mut [$t],
        ) {
            #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
            {
                use crate::exec::cpu::{level, Level};
                /// # Safety
                /// The CPU must support AVX-512 F/VL/BW/DQ, AVX2 and FMA.
                #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn avx512(
                    x: &[$t],
                    dy: &[$t],
                    g: &Geometry,
                    p0: usize,
                    p1: usize,
                    first: bool,
                    part: &mut [$t],
                ) {
                    direct_body::<$t, $ob512, $q512, true>(x, dy, g, p0, p1, first, part)
                }
                /// # Safety
                /// The CPU must support AVX2 and FMA.
                #[target_feature(enable = "avx2,fma")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn avx2(
                    x: &[$t],
                    dy: &[$t],
                    g: &Geometry,
                    p0: usize,
                    p1: usize,
                    first: bool,
                    part: &mut [$t],
                ) {
                    direct_body::<$t, $ob2, $q2, true>(x, dy, g, p0, p1, first, part)
                }
                match level() {
                    // SAFETY: `level()` reported these features on this CPU.
                    Level::Avx512 => return unsafe { avx512(x, dy, g, p0, p1, first, part) },
                    // SAFETY: as above.
                    Level::Avx2Fma => return unsafe { avx2(x, dy, g, p0, p1, first, part) },
                    Level::Baseline => {}
                }
            }
            direct_body::<$t, $ob, $q, false>(x, dy, g, p0, p1, first, part)
        }
    };
}

// Tiles: AVX-512 holds 9 x 2 vectors of accumulators, AVX2 6 x 2; the portable loop is unfused.
direct_filter!(direct_f32, f32, [32, 9], [16, 6], [8, 4]);
direct_filter!(direct_f64, f64, [16, 9], [8, 6], [4, 4]);

/// A float whose multiply-add can be fused: `d.fused(x, a)` is `d * x + a` rounded once.
trait Fused: GemmElement {
    fn fused(self, x: Self, a: Self) -> Self;
}

impl Fused for f32 {
    #[inline(always)]
    fn fused(self, x: f32, a: f32) -> f32 {
        self.mul_add(x, a)
    }
}

impl Fused for f64 {
    #[inline(always)]
    fn fused(self, x: f64, a: f64) -> f64 {
        self.mul_add(x, a)
    }
}

/// The loops of [`direct_filter_chunk`] on tiles of `OB` output channels by `Q` kernel
/// elements (the accumulators stay in registers), multiply-adds fused when `FMA`: the
/// chunk's im2col rows (padded to whole tiles with zeros, which only unused accumulators
/// read) in this thread's scratch, then for each tile one pass over the chunk's pixels.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn direct_body<F: Fused, const OB: usize, const Q: usize, const FMA: bool>(
    x: &[F],
    dy: &[F],
    g: &Geometry,
    p0: usize,
    p1: usize,
    first: bool,
    part: &mut [F],
) {
    let (patch, m, cnt) = (g.patch(), g.m, p1 - p0);
    let pp = patch.next_multiple_of(Q);
    F::with_scratch(cnt * pp, |cols| {
        let cols = &mut cols[..cnt * pp];
        fill_cols(x, g, p0, pp, cols);
        let dy = &dy[p0 * m..p1 * m];
        for o0 in (0..m).step_by(OB) {
            let on = OB.min(m - o0);
            for q0 in (0..patch).step_by(Q) {
                let mut acc = [[F::ZERO; OB]; Q];
                for (i, col) in cols.chunks_exact(pp).enumerate() {
                    let taps: &[F; Q] = col[q0..].first_chunk().expect("whole tiles of taps");
                    let row = &dy[i * m + o0..][..on];
                    let d: [F; OB] = match row.first_chunk::<OB>() {
                        Some(d) => *d,
                        None => {
                            let mut d = [F::ZERO; OB];
                            d[..on].copy_from_slice(row);
                            d
                        }
                    };
                    for (a, &t) in acc.iter_mut().zip(taps) {
                        for (a, &d) in a.iter_mut().zip(&d) {
                            *a = if FMA { d.fused(t, *a) } else { a.add(d.mul(t)) };
                        }
                    }
                }
                for (qi, a) in acc.iter().enumerate().take(patch - q0) {
                    for (l, &v) in a.iter().enumerate().take(on) {
                        let at = (o0 + l) * patch + q0 + qi;
                        part[at] = if first { v } else { part[at].add(v) };
                    }
                }
            }
        }
    });
}

/// The im2col rows of the output pixels from `p0` on into `cols` (rows of `pp`, each
/// padded with zeros after the window): the pixel's position stepped along, not divided
/// out; a kernel row whose taps all lie inside the input (contiguous in `x` without
/// dilation) copied as one run, element by element (a few elements: no call to `memcpy`).
#[inline(always)]
fn fill_cols<F: Fused>(x: &[F], g: &Geometry, p0: usize, pp: usize, cols: &mut [F]) {
    let (c, patch) = (g.c, g.patch());
    let tap_row = g.kw * c;
    let (mut img, mut oh, mut ow) = (p0 / (g.oh * g.ow), (p0 / g.ow) % g.oh, p0 % g.ow);
    for col in cols.chunks_exact_mut(pp) {
        let (taps, pad) = col.split_at_mut(patch);
        // The first tap column's input column, when the whole kernel row lies inside.
        let whole_row = (ow * g.stride)
            .checked_sub(g.pad_left)
            .filter(|&c0| g.dw == 1 && c0 + g.kw <= g.w);
        for (ki, dst) in taps.chunks_exact_mut(tap_row).enumerate() {
            let Some(r) = g.in_row(oh, ki) else {
                dst.fill(F::ZERO);
                continue;
            };
            let row = (img * g.h + r) * g.w;
            if let Some(c0) = whole_row {
                let src = &x[(row + c0) * c..][..tap_row];
                for (d, &v) in dst.iter_mut().zip(src) {
                    *d = v;
                }
                continue;
            }
            for (kj, d) in dst.chunks_exact_mut(c).enumerate() {
                match g.in_col(ow, kj) {
                    Some(cc) => {
                        for (d, &v) in d.iter_mut().zip(&x[(row + cc) * c..][..c]) {
                            *d = v;
                        }
                    }
                    None => d.fill(F::ZERO),
                }
            }
        }
        pad.fill(F::ZERO);
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

#[cfg(test)]
mod tests {
    use super::super::{gemm_filter_chunk, Geometry};
    use super::*;
    use crate::kernels::padding::Padding;
    use crate::linalg::conv_general::ConvGeneral;

    /// Deterministic values of mixed magnitude in [-1, 1), so the order of the operations
    /// shows in the bits.
    fn values(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * [1.0, 1e-3, 7.0][i % 3]
            })
            .collect()
    }

    /// The direct loop and the GEMM on the same chunks, first and later, give the same bits.
    fn check<T: GemmElement>(cast: fn(f64) -> T) {
        for (xs, ks, stride, padding) in [
            ([2, 28, 28, 1], [3, 3, 1, 32], 1, Padding::Valid),
            ([1, 9, 8, 1], [3, 3, 1, 7], 2, Padding::Same),
            ([1, 7, 9, 2], [2, 2, 2, 33], 1, Padding::Same),
            ([2, 6, 6, 4], [2, 2, 4, 70], 1, Padding::Valid),
            ([1, 5, 6, 1], [1, 3, 1, 16], 3, Padding::Same),
        ] {
            let p = ConvGeneral {
                stride,
                dilation: [1, 1],
                padding,
                depthwise: false,
            };
            let g = Geometry::new(xs, ks, p).unwrap();
            assert!(g.patch() <= DIRECT_PATCH);
            let x: Vec<T> = values(g.x_len(), 1).into_iter().map(cast).collect();
            let dy: Vec<T> = values(g.y_len(), 2).into_iter().map(cast).collect();
            let start: Vec<T> = values(g.k_len(), 3).into_iter().map(cast).collect();
            let pixels = g.pixels();
            // Chunks as the filter gradient cuts them: at most 256 pixels, one slice of the
            // GEMM's shared dimension.
            for (p0, p1) in [
                (0, pixels.min(256)),
                (pixels / 3, pixels.min(pixels / 3 + 200)),
                (1, 2),
            ] {
                if p0 >= p1 {
                    continue;
                }
                for first in [true, false] {
                    let (mut want, mut got) = (start.clone(), start.clone());
                    gemm_filter_chunk(&x, &dy, &g, p0, p1, first, &mut want);
                    assert!(direct_filter_chunk(&x, &dy, &g, p0, p1, first, &mut got));
                    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            a.to_f64().to_bits() == b.to_f64().to_bits(),
                            "{xs:?} {ks:?} {p0}..{p1} first {first} [{i}]: {a:?} != {b:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn direct_loops_give_the_gemms_bits() {
        check::<f32>(|v| v as f32);
        check::<f64>(|v| v);
    }
}
