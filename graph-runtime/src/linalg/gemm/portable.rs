//! The portable micro-kernel: a 4x8 tile the compiler vectorises for the baseline instruction set, wherever neither x86 tile runs.

use super::blis::PackElem;
use super::kernel::{row_ptrs, ASrc, Kernel, Packed, Rows};

/// The portable micro-kernel: a 4x8 tile the compiler vectorises for the baseline ISA.
pub struct Portable<T>(std::marker::PhantomData<T>);

/// Rows of the portable tile.
const PMR: usize = 4;
/// Columns of the portable tile.
pub(super) const PNR: usize = 8;

/// The portable tile over any source of `a`.
///
/// # Safety
/// As for [`Kernel::packed`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn portable_tile<T: PackElem, A: ASrc<T>>(
    kc: usize,
    a: A,
    b: *const T,
    c: *mut T,
    ldc: usize,
    mr: usize,
    nr: usize,
    accumulate: bool,
) {
    let mut acc = [[T::default(); PNR]; PMR];
    for p in 0..kc {
        // SAFETY: p < kc, so step p of the packed `b` panel (PNR elements at p * PNR) is
        // in bounds; `[T; PNR]` has the alignment of `T`, which `b` has.
        let bv: [T; PNR] = unsafe { *(b.add(p * PNR) as *const [T; PNR]) };
        for (r, acc_r) in acc.iter_mut().enumerate() {
            // SAFETY: r < PMR and p < kc: inside the source (the caller's contract).
            let av = unsafe { *a.at(r, p) };
            for (o, &bj) in acc_r.iter_mut().zip(&bv) {
                *o = *o + av * bj;
            }
        }
    }
    for (r, acc_r) in acc.iter().enumerate().take(mr) {
        // SAFETY: row r < mr of the tile holds nr elements.
        let row = unsafe { std::slice::from_raw_parts_mut(c.add(r * ldc), nr) };
        for (o, &v) in row.iter_mut().zip(acc_r) {
            *o = if accumulate { *o + v } else { v };
        }
    }
}

impl<T: PackElem> Kernel for Portable<T> {
    type T = T;
    const MR: usize = PMR;
    const NR: usize = PNR;

    /// # Safety
    /// As for [`Kernel::packed`], with `MR = 4` and `NR = 8`; no CPU feature is needed.
    #[inline]
    unsafe fn packed(
        kc: usize,
        a: *const T,
        b: *const T,
        c: *mut T,
        ldc: usize,
        mr: usize,
        nr: usize,
        accumulate: bool,
    ) {
        let a = Packed::<T, PMR>(a);
        // SAFETY: forwarded contract.
        unsafe { portable_tile(kc, a, b, c, ldc, mr, nr, accumulate) }
    }

    /// # Safety
    /// As for [`Kernel::rows`], with `MR = 4` and `NR = 8`; no CPU feature is needed.
    #[inline]
    unsafe fn rows(
        kc: usize,
        a: *const T,
        lda: usize,
        b: *const T,
        c: *mut T,
        ldc: usize,
        mr: usize,
        nr: usize,
        accumulate: bool,
    ) {
        // SAFETY: forwarded contract.
        unsafe {
            let a = Rows::<T, PMR>(row_ptrs(a, lda, mr));
            portable_tile(kc, a, b, c, ldc, mr, nr, accumulate)
        }
    }
}
