//! The AVX-512 f32 driver of products: 6-row tiles up to four vectors (64 columns) wide,
//! the shape the `gemm` crate runs on AVX-512 (its 64 x 6 tile, transposed).
//!
//! Each step of the 6 x 64 tile loads four vectors of `b` and broadcasts six values of
//! `a` for 24 FMAs: 10 loads per 24 FMAs, where the 24 x 16 tile needs 25. The loops
//! differ from BLIS's (`blis.rs`) as the `gemm` crate's do: a slice of `b` (`kc x
//! NB`, packed in 64-wide micro-panels, or narrower for a narrow `b`) stays in L2 and each
//! tile of rows walks it along its columns, so the six rows of `a` (read in place) stay
//! in L1 while `b` streams from L2. `k` is cut into equal slices up to 512 deep (W2's
//! 784 is two of 392, not 256 + 256 + 256 + 16), and the step loop is unrolled four
//! times (12% faster than not unrolled on the Xeon: the loop's own bookkeeping).
//!
//! Every output element is the same chain of FMAs in the same order whatever the
//! column panel, row block or pre-packing, so results do not depend on the thread count.

#[cfg(target_arch = "x86")]
use std::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::blis::{with_pack, ALIGN_BYTES};
use super::kernel::{row_ptrs, ASrc, Rows};
use super::pack::BSrc;

/// Rows of the tile.
pub const MR: usize = 6;
/// Vectors of the widest tile.
const V: usize = 4;
/// Lanes of a vector.
const L: usize = 16;
/// Columns of the packed micro-panels of `b`: the widest tile's.
pub const NR: usize = V * L;
/// Deepest slice of the shared dimension: fewer passes over `c` than the BLIS
/// driver's `KC`; `k` is cut into equal slices no deeper than this.
pub const KC: usize = 512;
/// Columns of the slice of `b` kept in L2 (`KC x NB` f32 is 1 MiB).
pub const NB: usize = 512;

// (Miri, whose packing buffers are small, never runs this driver: `cpu::detect` gives it
// the portable level.)
const _: () =
    assert!((cfg!(miri) || KC * NB <= super::blis::KC * super::blis::NC) && NB.is_multiple_of(NR));

/// Columns of the packed micro-panels of `b` for a product of `n` columns: 64, or `n`
/// rounded up to whole vectors when narrower, so that a narrow `b` packs densely.
#[inline]
pub fn panel(n: usize) -> usize {
    if n >= NR {
        NR
    } else {
        n.div_ceil(L).max(1) * L
    }
}

/// Depth of the slices for a shared dimension of `k`: equal slices of at most `KC`.
#[inline]
pub fn slice_kc(k: usize) -> usize {
    k.div_ceil(k.div_ceil(KC).max(1)).max(1)
}

/// Steps of the shared dimension per turn of the tile's loop.
const UNROLL: usize = 4;

/// One step `p` of a tile of `R` rows: `acc[r][w] += a(r, p) * b[p * ps + 16 w ..][..16]`.
///
/// # Safety
/// AVX-512 F present; `(r, p)` inside `a` for `r < R`, `W` vectors of row `p` inside `b`.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
#[inline]
unsafe fn step<const W: usize, const R: usize, A: ASrc<f32>>(
    acc: &mut [[__m512; W]; R],
    a: A,
    b: *const f32,
    ps: usize,
    p: usize,
) {
    // SAFETY: vector w < W of row p is inside the caller's panel.
    let bv: [__m512; W] =
        std::array::from_fn(|w| unsafe { _mm512_loadu_ps(b.add(p * ps + w * L)) });
    for (r, acc_r) in acc.iter_mut().enumerate() {
        // SAFETY: r < R: (r, p) is inside the caller's rows of `a`.
        let av = _mm512_set1_ps(unsafe { *a.at(r, p) });
        for w in 0..W {
            acc_r[w] = _mm512_fmadd_ps(av, bv[w], acc_r[w]);
        }
    }
}

/// `c[..mr, ..nr] (+)= a[R, kc] * b[kc, 16 W]`: `a` read through `A`, `b` the first
/// `W` vectors of a packed micro-panel (row `p` at `b + p * ps`).
///
/// # Safety
/// AVX-512 F present; `a` valid for `kc` steps of `R <= 6` rows, the panel for `kc` rows of
/// `ps >= 16 W`, `c` valid for `mr <= R` rows of `16 (W - 1) < nr <= 16 W` at stride `ldc`.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn tile<const W: usize, const R: usize, A: ASrc<f32>>(
    kc: usize,
    a: A,
    b: *const f32,
    c: *mut f32,
    ps: usize,
    ldc: usize,
    mr: usize,
    nr: usize,
    accumulate: bool,
) {
    let mut acc = [[_mm512_setzero_ps(); W]; R];
    let whole = kc / UNROLL * UNROLL;
    let mut p = 0;
    while p < whole {
        for u in 0..UNROLL {
            // SAFETY: p + u < kc: inside the caller's operands.
            unsafe { step::<W, R, A>(&mut acc, a, b, ps, p + u) };
        }
        p += UNROLL;
    }
    while p < kc {
        // SAFETY: as above.
        unsafe { step::<W, R, A>(&mut acc, a, b, ps, p) };
        p += 1;
    }
    for (r, acc_r) in acc.iter().enumerate().take(mr) {
        for (w, &x) in acc_r.iter().enumerate() {
            let lanes = nr.saturating_sub(w * L).min(L);
            // SAFETY: r < mr and the first `lanes` columns of vector w are inside
            // row r of the caller's `c`; a masked load or store touches no other lane.
            unsafe {
                let dst = c.add(r * ldc + w * L);
                if lanes == L {
                    let x = if accumulate {
                        _mm512_add_ps(_mm512_loadu_ps(dst), x)
                    } else {
                        x
                    };
                    _mm512_storeu_ps(dst, x);
                } else if lanes > 0 {
                    let mask = ((1u32 << lanes) - 1) as __mmask16;
                    let x = if accumulate {
                        _mm512_add_ps(_mm512_maskz_loadu_ps(mask, dst), x)
                    } else {
                        x
                    };
                    _mm512_mask_storeu_ps(dst, mask, x);
                }
            }
        }
    }
}

/// [`tile`] on as many rows as the tile has: a short last tile (GPT-2's 128 rows end in
/// one of 2) does only its own rows' multiply-adds rather than 6 rows' with its last row
/// repeated. Each element's chain of FMAs is the same whatever the tile's height.
///
/// # Safety
/// As for [`tile`] with `R = mr.min(6)`, `1 <= mr`.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn tile_rows<const W: usize, A: ASrc<f32>>(
    kc: usize,
    a: A,
    b: *const f32,
    c: *mut f32,
    ps: usize,
    ldc: usize,
    mr: usize,
    nr: usize,
    accumulate: bool,
) {
    // SAFETY: the tile's height is `mr` (at most 6): the caller's contract for each.
    unsafe {
        match mr {
            1 => tile::<W, 1, A>(kc, a, b, c, ps, ldc, mr, nr, accumulate),
            2 => tile::<W, 2, A>(kc, a, b, c, ps, ldc, mr, nr, accumulate),
            3 => tile::<W, 3, A>(kc, a, b, c, ps, ldc, mr, nr, accumulate),
            4 => tile::<W, 4, A>(kc, a, b, c, ps, ldc, mr, nr, accumulate),
            5 => tile::<W, 5, A>(kc, a, b, c, ps, ldc, mr, nr, accumulate),
            _ => tile::<W, MR, A>(kc, a, b, c, ps, ldc, mr, nr, accumulate),
        }
    }
}

/// Rows of `b` that [`pack_b`] asks the memory for ahead of the row it copies: each row of a
/// slice lies on pages of its own, where the hardware's prefetchers start cold, so a slice
/// read from DRAM (a model's weights, read once a call) waited on every row.
const PACK_AHEAD: usize = 4;

/// A raw `b` spanning at least this many elements (`k` rows of its row stride) has its next
/// slice prefetched while the tiles run: 2 MiB of f32, a core's L2, above which `b` does not
/// stay in L2 from one call to the next (GPT-2's smallest weight, 768 x 768, is 2.25 MiB).
/// A smaller one (W2's 784 x 512) is usually still cached, and the prefetches would be
/// instructions for nothing.
const PREFETCH_MIN_ELEMENTS: usize = (2 << 20) / std::mem::size_of::<f32>();

/// Asks for the `nb` elements at `row` to be brought into L2 (a hint: it never faults and
/// changes no value).
///
/// # Safety
/// `row` valid for `nb > 0` elements.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
#[inline]
unsafe fn prefetch_row(row: *const f32, nb: usize) {
    let mut j = 0;
    while j < nb {
        // SAFETY: j < nb: inside the row.
        unsafe { _mm_prefetch::<_MM_HINT_T1>(row.add(j).cast::<i8>()) };
        j += L;
    }
    // The row's last line, when the row does not start on a line.
    // SAFETY: nb - 1 is inside the row.
    unsafe { _mm_prefetch::<_MM_HINT_T1>(row.add(nb - 1).cast::<i8>()) };
}

/// The slice of a raw `b` that follows the slice at (`pc`, `jc`) in the driver's loops
/// (the next slice of the shared dimension, else the first of the next column block), as
/// (first row, rows, first column, columns); `None` after the last.
#[inline]
fn next_slice(
    pc: usize,
    jc: usize,
    kc_max: usize,
    k: usize,
    n: usize,
) -> Option<(usize, usize, usize, usize)> {
    let (pc, jc) = if pc + kc_max < k {
        (pc + kc_max, jc)
    } else if jc + NB < n {
        (0, jc + NB)
    } else {
        return None;
    };
    Some((pc, kc_max.min(k - pc), jc, NB.min(n - jc)))
}

/// Packs the `kc x nb` slice at `b` (row stride `ldb`) into micro-panels `ps` wide
/// (`ps` a multiple of 16; panel `q` at `q * kc * ps`, row `p` of it at `+ p * ps`),
/// zero padded, as [`super::pack::pack_b`] does, row by row of `b` with 512-bit moves.
///
/// # Safety
/// AVX-512 F present; `b` valid for `kc` rows of `nb` at stride `ldb`; `dst` holds
/// `kc * round_up(nb, ps)` elements.
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
#[inline]
pub unsafe fn pack_b(kc: usize, nb: usize, ps: usize, b: *const f32, ldb: usize, dst: &mut [f32]) {
    let panels = nb.div_ceil(ps);
    assert!(ps.is_multiple_of(L) && dst.len() >= kc * panels * ps);
    let d = dst.as_mut_ptr();
    for p in 0..kc {
        if p + PACK_AHEAD < kc {
            // SAFETY: row p + PACK_AHEAD < kc of `b` holds nb elements.
            unsafe { prefetch_row(b.add((p + PACK_AHEAD) * ldb), nb) };
        }
        // SAFETY: row p < kc of `b` holds nb elements (the caller's contract).
        let src = unsafe { b.add(p * ldb) };
        for q in 0..panels {
            for v in 0..ps / L {
                let j = q * ps + v * L;
                let lanes = nb.saturating_sub(j).min(L);
                // SAFETY: the first `lanes` columns from j are inside row p (masked
                // lanes are not read); the panel element (q, p, v) is inside `dst`
                // (asserted above).
                unsafe {
                    let x = if lanes == L {
                        _mm512_loadu_ps(src.add(j))
                    } else {
                        _mm512_maskz_loadu_ps(((1u32 << lanes) - 1) as __mmask16, src.add(j))
                    };
                    _mm512_storeu_ps(d.add(q * kc * ps + p * ps + v * L), x);
                }
            }
        }
    }
}

/// The product `c[m, n] = a[m, k] * b` on the wide tiles; `m, n, k > 0`.
///
/// # Safety
/// AVX-512 F/VL/BW/DQ, AVX2 and FMA present; otherwise as for
/// [`super::blis::gemm_prepacked`].
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn driver(
    m: usize,
    k: usize,
    n: usize,
    a: *const f32,
    lda: usize,
    b: BSrc<f32>,
    c: *mut f32,
    ldc: usize,
) {
    let kc_max = slice_kc(k);
    let align = ALIGN_BYTES / std::mem::size_of::<f32>();
    with_pack::<f32, _>(|buf| {
        let skip = buf.as_ptr().align_offset(ALIGN_BYTES).min(align);
        // The packed panels' width: from the pre-packed layout, or made here.
        let ps = match b {
            BSrc::Packed { n_pad, .. } => panel(n_pad),
            _ => panel(n),
        };
        let bp = &mut buf[skip..][..KC * NB];
        // LOOP 5: column blocks of NB.
        for jc in (0..n).step_by(NB) {
            let nb = NB.min(n - jc);
            // LOOP 4: slices of the shared dimension.
            for pc in (0..k).step_by(kc_max) {
                let kc = kc_max.min(k - pc);
                let accumulate = pc > 0;
                let pack = |src, ldb, bp: &mut [f32]| {
                    // SAFETY: rows pc..pc+kc, columns jc..jc+nb of `b` are in bounds;
                    // this driver runs only with AVX-512.
                    unsafe { pack_b(kc, nb, ps, src, ldb, bp) }
                };
                // SAFETY: rows pc..pc+kc, columns jc..jc+nb of `b` are in bounds; a
                // pre-packed `b` was cut by `slice_kc` as here, in panels of `ps` (a
                // multiple of 64 at column j0 + jc).
                let b_slice = unsafe { b.slice(pc, kc, jc, nb, ps, bp, pack) };
                // While the tiles run on this slice, the next one of a raw `b` comes into
                // L2, a share of its rows before each tile: the packing then copies it from
                // there instead of waiting on DRAM (weights read once a call).
                let ahead = match b {
                    BSrc::Raw(src, ldb) if k * ldb >= PREFETCH_MIN_ELEMENTS => {
                        next_slice(pc, jc, kc_max, k, n).map(|(p, rows, j, w)| {
                            // SAFETY: the next slice's rows and columns are inside `b`.
                            (unsafe { src.add(p * ldb + j) }, ldb, rows, w)
                        })
                    }
                    _ => None,
                };
                let tiles = m.div_ceil(MR);
                // LOOP 3: tiles of 6 rows; their rows of `a` stay in L1.
                for ir in (0..m).step_by(MR) {
                    let mr = MR.min(m - ir);
                    if let Some((next, ldb, rows, w)) = ahead {
                        let t = ir / MR;
                        for p in t * rows / tiles..(t + 1) * rows / tiles {
                            // SAFETY: row p < rows of the next slice holds w elements.
                            unsafe { prefetch_row(next.add(p * ldb), w) };
                        }
                    }
                    // `a` read in place; a short tile reads only its own rows.
                    // SAFETY: 1 <= mr; rows ir..ir+mr, columns pc..pc+kc of `a` are in bounds.
                    let rows = Rows::<f32, MR>(unsafe { row_ptrs(a.add(ir * lda + pc), lda, mr) });
                    // LOOP 2: tiles of up to 64 columns, along the slice of `b`.
                    for jr in (0..nb).step_by(ps) {
                        let nr = ps.min(nb - jr);
                        // SAFETY: the tile (ir.., jc+jr..) of `c` holds mr x nr
                        // elements; the panel at jr of the slice holds kc steps of ps.
                        unsafe {
                            let bt = b_slice.add(jr * kc);
                            let ct = c.add(ir * ldc + jc + jr);
                            match nr.div_ceil(L) {
                                4 => {
                                    tile_rows::<4, _>(kc, rows, bt, ct, ps, ldc, mr, nr, accumulate)
                                }
                                3 => {
                                    tile_rows::<3, _>(kc, rows, bt, ct, ps, ldc, mr, nr, accumulate)
                                }
                                2 => {
                                    tile_rows::<2, _>(kc, rows, bt, ct, ps, ldc, mr, nr, accumulate)
                                }
                                _ => {
                                    tile_rows::<1, _>(kc, rows, bt, ct, ps, ldc, mr, nr, accumulate)
                                }
                            }
                        }
                    }
                }
            }
        }
    })
}
