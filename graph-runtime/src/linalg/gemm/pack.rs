//! Packing the float core's operands into micro-panels (`b` raw, transposed or whole ahead of time, `a` by row blocks), and where a driver finds each slice of `b` ([`BSrc`]).

use super::blis::PackElem;

/// Rounds `x` up to a multiple of `to`.
#[inline(always)]
pub(super) fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

/// Where the driver finds `b`.
#[derive(Clone, Copy)]
pub enum BSrc<T> {
    /// Row-major at `b` with row stride `ldb`: packed slice by slice.
    Raw(*const T, usize),
    /// Stored transposed at `b` (element `(p, j)` at `b + j * ldbt + p`): packed slice by
    /// slice into the same panels as [`BSrc::Raw`].
    Transposed(*const T, usize),
    /// Already packed whole by [`prepack_b`] (`n_pad` columns); the product's column 0 is
    /// packed column `j0` (a multiple of the kernel's `NR`).
    Packed {
        base: *const T,
        n_pad: usize,
        j0: usize,
    },
}

impl<T: PackElem> BSrc<T> {
    /// Rows `pc..pc + kc` by columns `jc..jc + w` of `b` as panels `ps` wide: packed into
    /// `bp` (a raw `b` by `pack_raw(src, ldb, bp)`, a transposed one by
    /// [`pack_b_transposed`]), or found in place in a pre-packed `b`. Both drivers take
    /// their slices of `b` here.
    ///
    /// # Safety
    /// The rows and columns lie inside `b`; `bp` holds the packed slice; a pre-packed `b`
    /// was packed with the same slicing of the shared dimension and panel width, and its
    /// panel of column `j0 + jc` starts there (`j0 + jc` a multiple of `ps`, below `n_pad`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) unsafe fn slice(
        self,
        pc: usize,
        kc: usize,
        jc: usize,
        w: usize,
        ps: usize,
        bp: &mut [T],
        pack_raw: impl FnOnce(*const T, usize, &mut [T]),
    ) -> *const T {
        match self {
            BSrc::Raw(b, ldb) => {
                // SAFETY: element (pc, jc) of `b` is in bounds (the caller's contract).
                pack_raw(unsafe { b.add(pc * ldb + jc) }, ldb, bp);
                bp.as_ptr()
            }
            BSrc::Transposed(b, ldbt) => {
                // SAFETY: columns jc..jc+w (rows of the stored matrix), rows pc..pc+kc of
                // `b` are in bounds.
                unsafe { pack_b_transposed(kc, w, ps, b.add(jc * ldbt + pc), ldbt, bp) };
                bp.as_ptr()
            }
            // SAFETY: `prepack_b`'s layout puts slice pc (rows pc..pc+kc) at pc * n_pad
            // and, inside it, the panel of column j0 + jc at (j0 + jc) * kc, in bounds.
            BSrc::Packed { base, n_pad, j0 } => unsafe { base.add(pc * n_pad + (j0 + jc) * kc) },
        }
    }
}

/// Elements of `b` (`k x n`) packed whole for this CPU's kernel.
pub fn prepacked_len<T: PackElem>(k: usize, n: usize) -> usize {
    k * round_up(n, T::nr(n))
}

/// Packs all of `b` (`k x n`, row stride `n`) for this CPU's kernel into `dst`
/// ([`prepacked_len`] elements): slice `pc` (of `KC` rows) starts at `pc * n_pad`, and
/// inside it micro-panel `q` at `q * NR * kc`. Slices are packed in parallel.
pub fn prepack_b<T: PackElem>(k: usize, n: usize, b: &[T], dst: &mut [T]) {
    use rayon::prelude::*;
    let nr = T::nr(n);
    let n_pad = round_up(n, nr);
    assert!(b.len() >= k * n && dst.len() >= k * n_pad);
    let kc_max = T::slice_kc(k);
    let pack = |(s, out): (usize, &mut [T])| {
        let pc = s * kc_max;
        let kc = kc_max.min(k - pc);
        // SAFETY: rows pc..pc+kc of `b` are in bounds (asserted above).
        unsafe { T::pack_slice(kc, n, nr, b.as_ptr().add(pc * n), n, out) };
    };
    let slices = &mut dst[..k * n_pad];
    if k * n >= 1 << 16 {
        slices
            .par_chunks_mut(kc_max * n_pad)
            .enumerate()
            .for_each(pack);
    } else {
        slices.chunks_mut(kc_max * n_pad).enumerate().for_each(pack);
    }
}

/// Packs the `kc x nc` slice at `b` into `nr`-wide micro-panels (`p * nr + j`), zero padded.
///
/// # Safety
/// `b` is valid for `kc` rows of `nc` at stride `ldb`.
#[inline]
pub(super) unsafe fn pack_b<T: PackElem>(
    kc: usize,
    nc: usize,
    nr: usize,
    b: *const T,
    ldb: usize,
    dst: &mut [T],
) {
    for (panel, j0) in (0..nc).step_by(nr).enumerate() {
        let w = nr.min(nc - j0);
        let out = &mut dst[panel * kc * nr..][..kc * nr];
        match (w == nr, nr) {
            // Whole panels of the x86 tiles' widths: fixed-size row copies, which compile
            // to vector moves (a `copy_from_slice` of a run-time length is a memmove
            // call per 64-byte row: 11% of W2's time).
            // SAFETY: w == 16, so columns j0..j0+16 of all kc rows are inside the slice
            // (the caller's contract), and `out` holds kc rows of 16.
            (true, 16) => unsafe { pack_b_rows::<T, 16>(b.add(j0), ldb, out) },
            // SAFETY: as above with 8 columns.
            (true, 8) => unsafe { pack_b_rows::<T, 8>(b.add(j0), ldb, out) },
            // SAFETY: as above with 64, 48 or 32 columns.
            (true, 64) => unsafe { pack_b_rows::<T, 64>(b.add(j0), ldb, out) },
            // SAFETY: as above.
            (true, 48) => unsafe { pack_b_rows::<T, 48>(b.add(j0), ldb, out) },
            // SAFETY: as above.
            (true, 32) => unsafe { pack_b_rows::<T, 32>(b.add(j0), ldb, out) },
            _ => {
                for (p, row) in out.chunks_exact_mut(nr).enumerate() {
                    // SAFETY: p < kc and j0 + w <= nc: row p, columns j0..j0+w of the
                    // slice are inside it (the caller's contract).
                    let src = unsafe { std::slice::from_raw_parts(b.add(p * ldb + j0), w) };
                    row[..w].copy_from_slice(src);
                    row[w..].fill(T::default());
                }
            }
        }
    }
}

/// Copies rows of `NR` elements at `b` (stride `ldb`) into `out`, one after the other.
///
/// # Safety
/// `b` is valid for `out.len() / NR` rows of `NR` at stride `ldb`.
#[inline(always)]
unsafe fn pack_b_rows<T: PackElem, const NR: usize>(b: *const T, ldb: usize, out: &mut [T]) {
    // Rows wider than 16 are copied 16 at a time: a copy of 64 bytes compiles to vector
    // moves, a copy of 128 or more to a memmove call (7% of W2's time with 64-wide panels).
    const CH: usize = 16;
    if NR > CH && NR.is_multiple_of(CH) {
        for (p, row) in out.chunks_exact_mut(NR).enumerate() {
            for (q, dst) in row.chunks_exact_mut(CH).enumerate() {
                // SAFETY: row p holds NR elements (the caller's contract), q * CH + CH <= NR.
                let src: [T; CH] =
                    unsafe { std::ptr::read_unaligned(b.add(p * ldb + q * CH) as *const [T; CH]) };
                dst.copy_from_slice(&src);
            }
        }
        return;
    }
    for (p, row) in out.chunks_exact_mut(NR).enumerate() {
        // SAFETY: row p holds NR elements (the caller's contract).
        let src: [T; NR] = unsafe { std::ptr::read_unaligned(b.add(p * ldb) as *const [T; NR]) };
        row.copy_from_slice(&src);
    }
}

/// As [`pack_b`] for a slice stored transposed: element `(p, j)` at `b + j * ldbt + p`.
///
/// # Safety
/// `b` is valid for `nc` rows of `kc` at stride `ldbt`.
#[inline]
unsafe fn pack_b_transposed<T: PackElem>(
    kc: usize,
    nc: usize,
    nr: usize,
    b: *const T,
    ldbt: usize,
    dst: &mut [T],
) {
    for (panel, j0) in (0..nc).step_by(nr).enumerate() {
        let w = nr.min(nc - j0);
        let out = &mut dst[panel * kc * nr..][..kc * nr];
        for j in 0..nr {
            if j < w {
                // SAFETY: stored row j0+j, elements 0..kc of the slice are in bounds.
                let src = unsafe { std::slice::from_raw_parts(b.add((j0 + j) * ldbt), kc) };
                for (p, &v) in src.iter().enumerate() {
                    out[p * nr + j] = v;
                }
            } else {
                for p in 0..kc {
                    out[p * nr + j] = T::default();
                }
            }
        }
    }
}

/// Packs the `mc x kc` block at `a` into `mr`-tall micro-panels (`p * mr + r`), zero padded.
///
/// # Safety
/// `a` is valid for `mc` rows of `kc` at stride `lda`.
#[inline]
pub(super) unsafe fn pack_a_block<T: PackElem>(
    mc: usize,
    kc: usize,
    mr: usize,
    a: *const T,
    lda: usize,
    dst: &mut [T],
) {
    for (panel, i0) in (0..mc).step_by(mr).enumerate() {
        let h = mr.min(mc - i0);
        let out = &mut dst[panel * kc * mr..][..kc * mr];
        if h == mr {
            // A whole panel: step by step, so the writes are contiguous.
            // SAFETY: rows i0..i0+mr, columns 0..kc of the block are in bounds.
            unsafe {
                match mr {
                    6 => pack_a_panel::<T, 6>(kc, a.add(i0 * lda), lda, out),
                    24 => pack_a_panel::<T, 24>(kc, a.add(i0 * lda), lda, out),
                    _ => pack_a_panel_any(kc, mr, mr, a.add(i0 * lda), lda, out),
                }
            }
        } else {
            // SAFETY: rows i0..i0+h, columns 0..kc of the block are in bounds.
            unsafe { pack_a_panel_any(kc, mr, h, a.add(i0 * lda), lda, out) }
        }
    }
}

/// Packs `MR` whole rows of `kc` at `a` (stride `lda`) into `out` as `p * MR + r`.
///
/// # Safety
/// `a` is valid for `MR` rows of `kc` at stride `lda`; `out` holds `kc * MR`.
#[inline(always)]
unsafe fn pack_a_panel<T: PackElem, const MR: usize>(
    kc: usize,
    a: *const T,
    lda: usize,
    out: &mut [T],
) {
    // SAFETY: row r < MR, column p < kc is in bounds (the caller's contract).
    let rows: [*const T; MR] = std::array::from_fn(|r| unsafe { a.add(r * lda) });
    for (p, dst) in out.chunks_exact_mut(MR).take(kc).enumerate() {
        for (d, row) in dst.iter_mut().zip(&rows) {
            // SAFETY: as above.
            *d = unsafe { *row.add(p) };
        }
    }
}

/// Packs the first `h` of `mr` rows (zeros for the rest) into `out` as `p * mr + r`.
///
/// # Safety
/// `a` is valid for `h` rows of `kc` at stride `lda`; `out` holds `kc * mr`.
unsafe fn pack_a_panel_any<T: PackElem>(
    kc: usize,
    mr: usize,
    h: usize,
    a: *const T,
    lda: usize,
    out: &mut [T],
) {
    for (p, dst) in out.chunks_exact_mut(mr).take(kc).enumerate() {
        for (r, d) in dst.iter_mut().enumerate() {
            *d = if r < h {
                // SAFETY: row r < h, column p < kc is in bounds (the caller's contract).
                unsafe { *a.add(r * lda + p) }
            } else {
                T::default()
            };
        }
    }
}
