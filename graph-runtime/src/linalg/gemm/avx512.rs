//! The AVX-512 register tiles: 24 rows by one vector (16 f32 or 8 f64 columns) is 24
//! accumulators, plus 1 for a row of `b` and the broadcasts: 26 of the 32 zmm registers.
//!
//! One vector wide like the AVX2 tiles, so `b` packs the same and its micro-panel stays
//! 16 KiB (L1); 24 rows load one vector of `b` per 24 FMAs (AVX2's 6 x 16 loads two per
//! 12). Column tails are stored through a mask, not a stack tile. Each output element is
//! the same chain of FMAs in the same order as in the AVX2 tiles, so both give the same bits.
//!
//! conv2d's 3-wide tile ([`tile_kw3`]) lives here too: 24 pixels of one output row in the
//! same registers, each input value broadcast once for the three outputs it feeds.

#[cfg(target_arch = "x86")]
use std::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::kernel::{row_ptrs, ASrc, Kernel, Packed, Rows};

/// Rows of the tile.
pub const MR: usize = 24;

/// Defines `$name::<R, A>(kc, a, b, ldb, c, ldc, mr, nr, accumulate)`: `c[..mr, ..nr]
/// (+)= a[R, kc] * b[kc, lanes]`, `a` read through `A`, row `p` of `b` at `b + p * ldb`.
macro_rules! tile_kernel {
    ($name:ident, $t:ty, $lanes:expr, $mask:ty, $zero:ident, $load:ident, $store:ident, $maskz_load:ident, $mask_store:ident, $set1:ident, $fma:ident, $add:ident) => {
        /// # Safety
        /// AVX-512 F/VL/BW/DQ present; `a` and `b` valid for `kc` steps (all `R`
        /// rows, one vector); `c` valid for `mr <= R` rows of `nr <= lanes` at stride `ldc`.
        #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
        #[inline]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $name<const R: usize, A: ASrc<$t>>(
            kc: usize,
            a: A,
            b: *const $t,
            ldb: usize,
            c: *mut $t,
            ldc: usize,
            mr: usize,
            nr: usize,
            accumulate: bool,
        ) {
            let mut acc = [$zero(); R];
            // The row of the next tile whose line this step prefetches: over R
            // steps every row's, so the next tile's input is in L1 when it starts.
            let mut ahead = 0;
            for p in 0..kc {
                // SAFETY: p < kc: the vector of step p of `b` is inside the caller's
                // panel; unaligned loads need no alignment.
                let bv = unsafe { $load(b.add(p * ldb)) };
                // SAFETY: p < kc.
                unsafe { a.prefetch(R + ahead, p) };
                ahead = if ahead + 1 == R { 0 } else { ahead + 1 };
                for (r, acc_r) in acc.iter_mut().enumerate() {
                    // SAFETY: r < R and p < kc: inside the source of `a`.
                    let av = unsafe { *a.at(r, p) };
                    *acc_r = $fma($set1(av), bv, *acc_r);
                }
            }
            // Whole vectors, or the first `nr` lanes.
            let lanes: $mask = if nr >= $lanes {
                <$mask>::MAX
            } else {
                ((1u32 << nr) - 1) as $mask
            };
            for (r, &x) in acc.iter().enumerate().take(mr) {
                // SAFETY: r < mr: row r of the caller's `c` holds nr elements, a
                // whole vector when the mask is full; otherwise the masked load and
                // store touch only the first nr lanes (masked-off lanes are not
                // accessed and cannot fault).
                unsafe {
                    let dst = c.add(r * ldc);
                    if lanes == <$mask>::MAX {
                        let x = if accumulate { $add($load(dst), x) } else { x };
                        $store(dst, x);
                    } else {
                        let x = if accumulate {
                            $add($maskz_load(lanes, dst), x)
                        } else {
                            x
                        };
                        $mask_store(dst, lanes, x);
                    }
                }
            }
        }
    };
}

tile_kernel!(
    tile_f32,
    f32,
    16,
    __mmask16,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_maskz_loadu_ps,
    _mm512_mask_storeu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_add_ps
);
tile_kernel!(
    tile_f64,
    f64,
    8,
    __mmask8,
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_maskz_loadu_pd,
    _mm512_mask_storeu_pd,
    _mm512_set1_pd,
    _mm512_fmadd_pd,
    _mm512_add_pd
);

/// f32: 24 x 16.
pub struct F32x24x16;
/// f64: 24 x 8.
pub struct F64x24x8;

/// Implements [`Kernel`] for a tile type on its tile function.
macro_rules! kernel_impl {
    ($k:ty, $t:ty, $nr:expr, $tile:ident) => {
        impl Kernel for $k {
            type T = $t;
            const MR: usize = MR;
            const NR: usize = $nr;

            /// # Safety
            /// As for [`Kernel::packed`] (`MR = 24`, `NR` 16 for f32 and 8 for f64), on a CPU
            /// with AVX-512 F/VL/BW/DQ, AVX2 and FMA
            /// (`level()` is `Level::Avx512`).
            #[inline]
            unsafe fn packed(
                kc: usize,
                a: *const $t,
                b: *const $t,
                c: *mut $t,
                ldc: usize,
                mr: usize,
                nr: usize,
                accumulate: bool,
            ) {
                // SAFETY: forwarded contract; the dispatcher checked AVX-512.
                unsafe {
                    $tile::<MR, _>(kc, Packed::<$t, MR>(a), b, $nr, c, ldc, mr, nr, accumulate)
                }
            }

            /// # Safety
            /// As for [`Kernel::rows`] (`MR = 24`, `NR` 16 for f32 and 8 for f64), on a CPU
            /// with AVX-512 F/VL/BW/DQ, AVX2 and FMA
            /// (`level()` is `Level::Avx512`).
            #[inline]
            unsafe fn rows(
                kc: usize,
                a: *const $t,
                lda: usize,
                b: *const $t,
                c: *mut $t,
                ldc: usize,
                mr: usize,
                nr: usize,
                accumulate: bool,
            ) {
                // SAFETY: forwarded contract; the dispatcher checked AVX-512.
                unsafe {
                    let a = Rows::<$t, MR>(row_ptrs(a, lda, mr));
                    $tile::<MR, _>(kc, a, b, $nr, c, ldc, mr, nr, accumulate)
                }
            }
        }
    };
}

kernel_impl!(F32x24x16, f32, 16, tile_f32);
kernel_impl!(F64x24x8, f64, 8, tile_f64);

/// Pixels of one output row a [`tile_kw3`] computes.
pub(super) const KW3_TILE: usize = 24;

/// One tile of [`conv_rows_kw3`](super::gather::conv_rows_kw3): 24 output pixels x 16 channels in 24 zmm accumulators.
/// For each kernel row and input channel the three weight vectors (kernel columns 0, 1,
/// 2) stay in registers and each of the 26 input pixels the tile's patches cover is
/// broadcast once for the (up to) three outputs it feeds: 26 loads for 72 FMAs, where the
/// 24 x 16 tile does 24 for 24. Output `r` accumulates in the order (kernel row, channel,
/// column), the order of the reordered kernel's rows.
///
/// # Safety
/// AVX-512 F present; `x` valid for `kh` rows (`row_stride` apart) of 26 pixels of `cin`;
/// `b` for `3 * kh * cin` rows of 16 at stride `ldb`; `c` for 24 rows of 16 at stride `ldb`.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
pub(super) unsafe fn tile_kw3(
    x: *const f32,
    row_stride: usize,
    kh: usize,
    cin: usize,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
) {
    let mut a = [_mm512_setzero_ps(); KW3_TILE];
    // SAFETY: the caller's contract bounds every pointer formed and read below (26
    // pixels of `kh` rows, `3 * kh * cin` rows of `b`, 24 rows of `c`).
    unsafe {
        for i in 0..kh {
            for ci in 0..cin {
                // The tile's 26 input pixels, one after the other.
                let mut px = x.add(i * row_stride + ci);
                let w = b.add((i * cin + ci) * 3 * ldb);
                let w0 = _mm512_loadu_ps(w);
                let w1 = _mm512_loadu_ps(w.add(ldb));
                let w2 = _mm512_loadu_ps(w.add(2 * ldb));
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[0] = _mm512_fmadd_ps(x, w0, a[0]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[1] = _mm512_fmadd_ps(x, w0, a[1]);
                a[0] = _mm512_fmadd_ps(x, w1, a[0]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[2] = _mm512_fmadd_ps(x, w0, a[2]);
                a[1] = _mm512_fmadd_ps(x, w1, a[1]);
                a[0] = _mm512_fmadd_ps(x, w2, a[0]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[3] = _mm512_fmadd_ps(x, w0, a[3]);
                a[2] = _mm512_fmadd_ps(x, w1, a[2]);
                a[1] = _mm512_fmadd_ps(x, w2, a[1]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[4] = _mm512_fmadd_ps(x, w0, a[4]);
                a[3] = _mm512_fmadd_ps(x, w1, a[3]);
                a[2] = _mm512_fmadd_ps(x, w2, a[2]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[5] = _mm512_fmadd_ps(x, w0, a[5]);
                a[4] = _mm512_fmadd_ps(x, w1, a[4]);
                a[3] = _mm512_fmadd_ps(x, w2, a[3]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[6] = _mm512_fmadd_ps(x, w0, a[6]);
                a[5] = _mm512_fmadd_ps(x, w1, a[5]);
                a[4] = _mm512_fmadd_ps(x, w2, a[4]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[7] = _mm512_fmadd_ps(x, w0, a[7]);
                a[6] = _mm512_fmadd_ps(x, w1, a[6]);
                a[5] = _mm512_fmadd_ps(x, w2, a[5]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[8] = _mm512_fmadd_ps(x, w0, a[8]);
                a[7] = _mm512_fmadd_ps(x, w1, a[7]);
                a[6] = _mm512_fmadd_ps(x, w2, a[6]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[9] = _mm512_fmadd_ps(x, w0, a[9]);
                a[8] = _mm512_fmadd_ps(x, w1, a[8]);
                a[7] = _mm512_fmadd_ps(x, w2, a[7]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[10] = _mm512_fmadd_ps(x, w0, a[10]);
                a[9] = _mm512_fmadd_ps(x, w1, a[9]);
                a[8] = _mm512_fmadd_ps(x, w2, a[8]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[11] = _mm512_fmadd_ps(x, w0, a[11]);
                a[10] = _mm512_fmadd_ps(x, w1, a[10]);
                a[9] = _mm512_fmadd_ps(x, w2, a[9]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[12] = _mm512_fmadd_ps(x, w0, a[12]);
                a[11] = _mm512_fmadd_ps(x, w1, a[11]);
                a[10] = _mm512_fmadd_ps(x, w2, a[10]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[13] = _mm512_fmadd_ps(x, w0, a[13]);
                a[12] = _mm512_fmadd_ps(x, w1, a[12]);
                a[11] = _mm512_fmadd_ps(x, w2, a[11]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[14] = _mm512_fmadd_ps(x, w0, a[14]);
                a[13] = _mm512_fmadd_ps(x, w1, a[13]);
                a[12] = _mm512_fmadd_ps(x, w2, a[12]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[15] = _mm512_fmadd_ps(x, w0, a[15]);
                a[14] = _mm512_fmadd_ps(x, w1, a[14]);
                a[13] = _mm512_fmadd_ps(x, w2, a[13]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[16] = _mm512_fmadd_ps(x, w0, a[16]);
                a[15] = _mm512_fmadd_ps(x, w1, a[15]);
                a[14] = _mm512_fmadd_ps(x, w2, a[14]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[17] = _mm512_fmadd_ps(x, w0, a[17]);
                a[16] = _mm512_fmadd_ps(x, w1, a[16]);
                a[15] = _mm512_fmadd_ps(x, w2, a[15]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[18] = _mm512_fmadd_ps(x, w0, a[18]);
                a[17] = _mm512_fmadd_ps(x, w1, a[17]);
                a[16] = _mm512_fmadd_ps(x, w2, a[16]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[19] = _mm512_fmadd_ps(x, w0, a[19]);
                a[18] = _mm512_fmadd_ps(x, w1, a[18]);
                a[17] = _mm512_fmadd_ps(x, w2, a[17]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[20] = _mm512_fmadd_ps(x, w0, a[20]);
                a[19] = _mm512_fmadd_ps(x, w1, a[19]);
                a[18] = _mm512_fmadd_ps(x, w2, a[18]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[21] = _mm512_fmadd_ps(x, w0, a[21]);
                a[20] = _mm512_fmadd_ps(x, w1, a[20]);
                a[19] = _mm512_fmadd_ps(x, w2, a[19]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[22] = _mm512_fmadd_ps(x, w0, a[22]);
                a[21] = _mm512_fmadd_ps(x, w1, a[21]);
                a[20] = _mm512_fmadd_ps(x, w2, a[20]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[23] = _mm512_fmadd_ps(x, w0, a[23]);
                a[22] = _mm512_fmadd_ps(x, w1, a[22]);
                a[21] = _mm512_fmadd_ps(x, w2, a[21]);
                let x = _mm512_set1_ps(*px);
                px = px.add(cin);
                a[23] = _mm512_fmadd_ps(x, w1, a[23]);
                a[22] = _mm512_fmadd_ps(x, w2, a[22]);
                let x = _mm512_set1_ps(*px);
                a[23] = _mm512_fmadd_ps(x, w2, a[23]);
            }
        }
        for (r, &v) in a.iter().enumerate() {
            _mm512_storeu_ps(c.add(r * ldb), v);
        }
    }
}
