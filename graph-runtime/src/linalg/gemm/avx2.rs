//! The AVX2+FMA register tiles: 6 rows by two vectors (16 f32 or 8 f64 columns) is 12
//! accumulators, plus 2 for a row of `b` and 1 broadcast: 15 of the 16 AVX2 registers.

#[cfg(target_arch = "x86")]
use std::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::kernel::{row_ptrs, ASrc, Kernel, Packed, Rows};

/// Rows of the tile.
pub const MR: usize = 6;

/// Defines `$name::<V, A>(kc, a, b, ldb, c, ldc, mr, nr, accumulate)`: `c[..mr, ..nr]
/// (+)= a[MR, kc] * b[kc, V vectors]`, `a` read through `A`, row `p` of `b` at `b + p * ldb`.
macro_rules! tile_kernel {
    ($name:ident, $t:ty, $lanes:expr, $zero:ident, $load:ident, $store:ident, $bcast:ident, $fma:ident, $add:ident) => {
        /// # Safety
        /// AVX2+FMA present; `a` and `b` valid for `kc` steps (all `MR` rows and
        /// `V` vectors); `c` valid for `mr` rows of `nr <= V * lanes` at stride `ldc`.
        #[target_feature(enable = "avx2,fma")]
        #[inline]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $name<const V: usize, A: ASrc<$t>>(
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
            // The stack tile of a column tail holds two vectors a row.
            const { assert!(V <= 2) };
            // Ask for the tile's rows of `c` now: the loop below hides their
            // latency, where the loads of `accumulate` (and the stores) would wait
            // on them at the end (a fifth of sgemm 1024's time on a Zen 3).
            for r in 0..mr {
                let row = c.wrapping_add(r * ldc);
                _mm_prefetch::<_MM_HINT_T0>(row.cast::<i8>());
                _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(nr.saturating_sub(1)).cast::<i8>());
            }
            let mut acc = [[$zero(); V]; MR];
            for p in 0..kc {
                let mut bv = [$zero(); V];
                for (v, slot) in bv.iter_mut().enumerate() {
                    // SAFETY: p < kc and v < V: vector v of step p of `b` is inside
                    // the caller's panel; unaligned loads need no alignment.
                    *slot = unsafe { $load(b.add(p * ldb + $lanes * v)) };
                }
                for (r, acc_r) in acc.iter_mut().enumerate() {
                    // SAFETY: r < MR and p < kc: inside the source of `a`.
                    let av = $bcast(unsafe { &*a.at(r, p) });
                    for v in 0..V {
                        acc_r[v] = $fma(av, bv[v], acc_r[v]);
                    }
                }
            }
            if nr == V * $lanes {
                // Whole vectors: store straight into `c`.
                for (r, acc_r) in acc.iter().enumerate().take(mr) {
                    for (v, &x) in acc_r.iter().enumerate() {
                        // SAFETY: r < mr and vector v covers columns up to
                        // (v + 1) * lanes <= nr of row r: inside the caller's `c`.
                        unsafe {
                            let dst = c.add(r * ldc + $lanes * v);
                            let x = if accumulate { $add($load(dst), x) } else { x };
                            $store(dst, x);
                        }
                    }
                }
            } else {
                // A column tail: through a stack tile.
                let mut tile = [[0.0 as $t; 2 * $lanes]; MR];
                for (row, acc_r) in tile.iter_mut().zip(&acc) {
                    for (v, &x) in acc_r.iter().enumerate() {
                        // SAFETY: v < V <= 2: vector v is inside the row of two.
                        unsafe { $store(row.as_mut_ptr().add($lanes * v), x) };
                    }
                }
                for (r, row) in tile.iter().enumerate().take(mr) {
                    // SAFETY: r < mr: row r of the caller's `c` holds nr elements,
                    // which nothing else references during the call.
                    let dst = unsafe { std::slice::from_raw_parts_mut(c.add(r * ldc), nr) };
                    for (o, &x) in dst.iter_mut().zip(row) {
                        *o = if accumulate { *o + x } else { x };
                    }
                }
            }
        }
    };
}

tile_kernel!(
    tile_f32,
    f32,
    8,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_broadcast_ss,
    _mm256_fmadd_ps,
    _mm256_add_ps
);
tile_kernel!(
    tile_f64,
    f64,
    4,
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_broadcast_sd,
    _mm256_fmadd_pd,
    _mm256_add_pd
);

/// f32: 6 x 16.
pub struct F32x6x16;
/// f64: 6 x 8.
pub struct F64x6x8;

/// Implements [`Kernel`] for a tile type on its tile function.
macro_rules! kernel_impl {
    ($k:ty, $t:ty, $nr:expr, $tile:ident) => {
        impl Kernel for $k {
            type T = $t;
            const MR: usize = MR;
            const NR: usize = $nr;

            /// # Safety
            /// As for [`Kernel::packed`] (`MR = 6`, `NR` 16 for f32 and 8 for f64), on a CPU
            /// with AVX2 and FMA (`level()` at least `Level::Avx2Fma`).
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
                // SAFETY: forwarded contract; the dispatcher checked AVX2+FMA.
                unsafe {
                    $tile::<2, _>(kc, Packed::<$t, MR>(a), b, $nr, c, ldc, mr, nr, accumulate)
                }
            }

            /// # Safety
            /// As for [`Kernel::rows`] (`MR = 6`, `NR` 16 for f32 and 8 for f64), on a CPU
            /// with AVX2 and FMA (`level()` at least `Level::Avx2Fma`).
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
                // SAFETY: forwarded contract; the dispatcher checked AVX2+FMA.
                unsafe {
                    let a = Rows::<$t, MR>(row_ptrs(a, lda, mr));
                    $tile::<2, _>(kc, a, b, $nr, c, ldc, mr, nr, accumulate)
                }
            }
        }
    };
}

kernel_impl!(F32x6x16, f32, 16, tile_f32);
kernel_impl!(F64x6x8, f64, 8, tile_f64);
