//! conv2d's f32 gather GEMM on the packed GEMM's AVX-512 or AVX2+FMA micro-kernel
//! (`avx512.rs`, `avx2.rs`): the left operand is gathered through an offset
//! table, `b` is read in place.

use std::mem::MaybeUninit;

#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
use super::avx512::{tile_kw3, KW3_TILE};
#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
use super::kernel::Gather;
use crate::exec::cpu::{level, Level};

/// Runs `gather(table, out_rows)` over rows `rows` of a strided gather (row `r` at
/// `first + r * stride`) in chunks of at most 64, each with its offset table on the stack, so
/// the table form of a strided gather allocates nothing.
pub(super) fn gather_rows_in_chunks<T>(
    first: usize,
    stride: usize,
    rows: std::ops::Range<usize>,
    n: usize,
    out: &mut [T],
    mut gather: impl FnMut(&[usize], &mut [T]),
) {
    const CHUNK: usize = 64;
    let mut table = [0usize; CHUNK];
    let mut r0 = rows.start;
    while r0 < rows.end {
        let cnt = (rows.end - r0).min(CHUNK);
        for (i, t) in table[..cnt].iter_mut().enumerate() {
            *t = first + (r0 + i) * stride;
        }
        gather(&table[..cnt], &mut out[r0 * n..(r0 + cnt) * n]);
        r0 += cnt;
    }
}

/// Column counts the kernel takes: whole 8-lane vectors.
pub fn supported(n: usize) -> bool {
    n > 0 && n.is_multiple_of(8) && level() >= Level::Avx2Fma
}

pub fn gemm_gather(
    src: &[f32],
    rows: &[usize],
    cols: &[usize],
    b: &[f32],
    n: usize,
    out: &mut [MaybeUninit<f32>],
) {
    let k = cols.len();
    // Validate every index once, so the kernel can read unchecked.
    let max_row = rows.iter().copied().max().unwrap_or(0);
    let max_col = cols.iter().copied().max().unwrap_or(0);
    assert!(
        supported(n)
            && out.len() >= rows.len() * n
            && b.len() >= k * n
            && (rows.is_empty() || k == 0 || max_row + max_col < src.len()),
        "gemm_gather: index out of range"
    );
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    // SAFETY: `supported` checked AVX2+FMA (and `avx512_tiles` AVX-512 for the AVX-512
    // driver); the assert above bounds every index.
    unsafe {
        if crate::exec::cpu::avx512_tiles() {
            driver_avx512(src, rows, cols, b, n, out)
        } else {
            driver(src, rows, cols, b, n, out)
        }
    }
}

/// [`gemm_gather`] for rows `first + r * stride`, `r < rows`: whole tiles of the AVX-512
/// tile read them at constant displacements (strides used by common convolutions are
/// compiled in), the rest goes through the table form. Each output element is the same
/// sum in the same order either way, so the bits do not depend on which form ran.
#[allow(clippy::too_many_arguments)]
pub fn gemm_gather_strided(
    src: &[f32],
    first: usize,
    stride: usize,
    rows: usize,
    cols: &[usize],
    b: &[f32],
    n: usize,
    out: &mut [MaybeUninit<f32>],
) {
    assert!(
        out.len() >= rows * n,
        "gemm_gather_strided: output too short"
    );
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    let done = {
        // The AVX-512 tile is 24 rows, the AVX2+FMA one 6; both take panels of 16 columns.
        let avx512 = crate::exec::cpu::avx512_tiles();
        let mr = if avx512 {
            super::avx512::MR
        } else {
            super::avx2::MR
        };
        let tiles = if supported(n) && n.is_multiple_of(16) {
            rows / mr
        } else {
            0
        };
        let k = cols.len();
        let max_col = cols.iter().copied().max().unwrap_or(0);
        let whole = tiles * mr;
        assert!(
            supported(n)
                && b.len() >= k * n
                && (whole == 0 || k == 0 || first + (whole - 1) * stride + max_col < src.len()),
            "gemm_gather_strided: index out of range"
        );
        if tiles == 0 {
            0
        } else {
            // SAFETY: `supported` checked AVX2+FMA and `avx512_tiles` AVX-512 for its
            // tile; the assert bounds every index of the whole tiles; `out` holds `rows`
            // rows of `n`.
            unsafe { strided_tiles(avx512, src, first, stride, tiles, cols, b, n, out) }
        }
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
    let done = 0;
    gather_rows_in_chunks(first, stride, done..rows, n, out, |table, out| {
        gemm_gather(src, table, cols, b, n, out)
    });
}

/// See [`super::GemmElement::conv_rows_kw3`]: whole tiles of 24 pixels on the AVX-512
/// tile, 0 elsewhere.
#[allow(clippy::too_many_arguments)]
pub fn conv_rows_kw3(
    src: &[f32],
    first: usize,
    row_stride: usize,
    kh: usize,
    cin: usize,
    pixels: usize,
    b: &[f32],
    n: usize,
    out: &mut [MaybeUninit<f32>],
) -> usize {
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    {
        let tiles = pixels / KW3_TILE;
        if tiles == 0
            || kh == 0
            || cin == 0
            || !n.is_multiple_of(16)
            || !supported(n)
            || !crate::exec::cpu::avx512_tiles()
        {
            return 0;
        }
        let done = tiles * KW3_TILE;
        // The last value read: kernel row kh - 1, input pixel done + 1, channel cin - 1.
        let last = first + (kh - 1) * row_stride + (done + 2) * cin - 1;
        assert!(
            last < src.len() && b.len() >= kh * cin * 3 * n && out.len() >= done * n,
            "conv_rows_kw3: index out of range"
        );
        for j0 in (0..n).step_by(16) {
            for t in 0..tiles {
                // SAFETY: AVX-512 checked by `avx512_tiles`; the assert bounds every
                // input index of the tiles, the 3 * kh * cin rows of `b` and the rows of
                // `out`.
                unsafe {
                    tile_kw3(
                        src.as_ptr().add(first + t * KW3_TILE * cin),
                        row_stride,
                        kh,
                        cin,
                        b.as_ptr().add(j0),
                        n,
                        out.as_mut_ptr().cast::<f32>().add(t * KW3_TILE * n + j0),
                    )
                }
            }
        }
        done
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
    {
        let _ = (src, first, row_stride, kh, cin, pixels, b, n, out);
        0
    }
}

/// `tiles` whole tiles of [`gemm_gather_strided`] (24 rows on the AVX-512 tile when
/// `avx512`, else 6 on the AVX2+FMA one), when the stride is one compiled in; returns the
/// rows done (0 for another stride).
///
/// # Safety
/// The tile's instruction set present, `n` a multiple of 16, every index of the tiles in
/// bounds.
#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
#[allow(clippy::too_many_arguments)]
unsafe fn strided_tiles(
    avx512: bool,
    src: &[f32],
    first: usize,
    stride: usize,
    tiles: usize,
    cols: &[usize],
    b: &[f32],
    n: usize,
    out: &mut [MaybeUninit<f32>],
) -> usize {
    use super::kernel::Strided;
    use super::{avx2, avx512 as zmm};
    /// The tiles for one compiled-in stride.
    ///
    /// # Safety
    /// As for `strided_tiles`, with `RS` the stride.
    #[allow(clippy::too_many_arguments)]
    unsafe fn run<const RS: usize>(
        avx512: bool,
        src: &[f32],
        first: usize,
        tiles: usize,
        cols: &[usize],
        b: &[f32],
        n: usize,
        out: &mut [MaybeUninit<f32>],
    ) {
        let mr = if avx512 { zmm::MR } else { avx2::MR };
        for j0 in (0..n).step_by(16) {
            for t in 0..tiles {
                let r0 = t * mr;
                // SAFETY: the caller's contract bounds every index read and written, and
                // vouches for the tile's instruction set.
                unsafe {
                    let a = Strided::<f32, RS> {
                        base: src.as_ptr().add(first + r0 * RS),
                        cols: cols.as_ptr(),
                    };
                    let o = out.as_mut_ptr().cast::<f32>().add(r0 * n + j0);
                    let bp = b.as_ptr().add(j0);
                    if avx512 {
                        zmm::tile_f32::<{ zmm::MR }, _>(cols.len(), a, bp, n, o, n, mr, 16, false);
                    } else {
                        avx2::tile_f32::<2, _>(cols.len(), a, bp, n, o, n, mr, 16, false);
                    }
                }
            }
        }
    }
    macro_rules! strides {
        ($($rs:literal)*) => {
            match stride {
                // SAFETY: forwarded contract, `RS` = `stride`.
                $($rs => unsafe { run::<$rs>(avx512, src, first, tiles, cols, b, n, out) },)*
                _ => return 0,
            }
        };
    }
    strides!(1 2 3 4 6 8 16 32 64 128 256);
    tiles * if avx512 { zmm::MR } else { avx2::MR }
}

/// The left operand of the tile of `R` rows at row `r0` of the table, `mr <= R` of them
/// real: a short tile repeats its last row (only `mr` rows are stored), so both drivers'
/// tiles read rows that exist.
///
/// # Safety
/// `1 <= mr`, `r0 + mr <= rows.len()`, and every index in `rows` is below `src.len()`.
#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
#[inline(always)]
unsafe fn gathered<const R: usize>(
    src: &[f32],
    rows: &[usize],
    cols: &[usize],
    r0: usize,
    mr: usize,
) -> Gather<f32, R> {
    Gather {
        rows: std::array::from_fn(|r| {
            // SAFETY: r0 + r.min(mr - 1) < r0 + mr, whose index is below src.len() (the
            // caller's contract).
            unsafe { src.as_ptr().add(rows[r0 + r.min(mr - 1)]) }
        }),
        cols: cols.as_ptr(),
    }
}

/// As [`driver`] on the AVX-512 tile: column panels of 16 (a last one of 8 through a
/// mask), tiles of 24 rows.
///
/// # Safety
/// AVX-512 present and every index in bounds (see `gemm_gather`).
#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
unsafe fn driver_avx512(
    src: &[f32],
    rows: &[usize],
    cols: &[usize],
    b: &[f32],
    n: usize,
    out: &mut [MaybeUninit<f32>],
) {
    use super::avx512::{tile_f32, MR};
    /// One tile of `R` rows (`mr <= R` of them real) at row `r0`, columns `j0..j0 + nr`.
    ///
    /// # Safety
    /// As for `driver_avx512`, with `r0 + mr <= rows.len()` and `j0 + nr <= n`.
    #[inline]
    unsafe fn tile<const R: usize>(
        src: &[f32],
        rows: &[usize],
        cols: &[usize],
        b: &[f32],
        n: usize,
        out: &mut [MaybeUninit<f32>],
        (r0, mr, j0, nr): (usize, usize, usize, usize),
    ) {
        // SAFETY: r0 + mr <= rows.len(), and every index is below src.len() (asserted by the
        // caller).
        let a = unsafe { gathered::<R>(src, rows, cols, r0, mr) };
        // SAFETY: as above; `out` holds rows.len() rows of n.
        unsafe {
            let o = out.as_mut_ptr().cast::<f32>().add(r0 * n + j0);
            tile_f32::<R, _>(cols.len(), a, b.as_ptr().add(j0), n, o, n, mr, nr, false);
        }
    }
    for j0 in (0..n).step_by(16) {
        let nr = (n - j0).min(16);
        let mut r0 = 0;
        while r0 < rows.len() {
            let mr = (rows.len() - r0).min(MR);
            // A short remainder (a row's last pixels, a conv's border pixels) runs on a
            // shorter tile instead of computing 24 rows for a few: each element is the
            // same chain of FMAs whatever the tile's height.
            let at = (r0, mr, j0, nr);
            // SAFETY: forwarded contract; r0 + mr <= rows.len(), j0 + nr <= n.
            unsafe {
                match mr {
                    0..=8 => tile::<8>(src, rows, cols, b, n, out, at),
                    9..=16 => tile::<16>(src, rows, cols, b, n, out, at),
                    _ => tile::<MR>(src, rows, cols, b, n, out, at),
                }
            }
            r0 += mr;
        }
    }
}

/// LOOP 2: column panels of 16 (then 8); LOOP 1: tiles of `MR` rows; the shared
/// dimension runs inside the micro-kernel.
///
/// # Safety
/// AVX2+FMA present and every index in bounds (see `gemm_gather`).
#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
unsafe fn driver(
    src: &[f32],
    rows: &[usize],
    cols: &[usize],
    b: &[f32],
    n: usize,
    out: &mut [MaybeUninit<f32>],
) {
    use super::avx2::{tile_f32, MR};
    let mut j0 = 0;
    while j0 < n {
        let wide = n - j0 >= 16;
        let mut r0 = 0;
        while r0 < rows.len() {
            let mr = (rows.len() - r0).min(MR);
            // SAFETY: r0 + mr <= rows.len(), and every index is below src.len() (asserted by
            // the caller).
            let a = unsafe { gathered::<MR>(src, rows, cols, r0, mr) };
            // SAFETY: as above; `out` holds rows.len() rows of n.
            unsafe {
                let o = out.as_mut_ptr().cast::<f32>().add(r0 * n + j0);
                let bp = b.as_ptr().add(j0);
                if wide {
                    tile_f32::<2, _>(cols.len(), a, bp, n, o, n, mr, 16, false);
                } else {
                    tile_f32::<1, _>(cols.len(), a, bp, n, o, n, mr, 8, false);
                }
            }
            r0 += mr;
        }
        j0 += if wide { 16 } else { 8 };
    }
}
