//! The micro-kernel interface: [`Kernel`], the register tile a driver calls once per tile of the output, and [`ASrc`], where a tile reads its left operand from (packed, rows in place, gathered, strided).
//!
//! A new instruction set's tile is a type implementing [`Kernel`] in a file of its own
//! (`avx2.rs`, `avx512.rs`, `portable.rs`), dispatched to by `blis.rs`.

use super::blis::PackElem;

/// Where a micro-kernel reads element `(r, p)` of its `MR x kc` left operand.
pub trait ASrc<T>: Copy {
    /// The address of element `(r, p)`.
    ///
    /// # Safety
    /// `r < MR` and `p < kc`, where `MR` and `kc` are the rows and steps the source was built
    /// for: the address then lies inside the allocation the source reads.
    unsafe fn at(self, r: usize, p: usize) -> *const T;

    /// Hints that element `(r, p)` of the next tile, `r` counted from this tile's first
    /// row (so `MR <= r < 2 MR`), will be read soon. Only sources that know where the
    /// next tile lies prefetch; the hint never reads memory and cannot fault.
    ///
    /// # Safety
    /// `p < kc`.
    #[inline(always)]
    unsafe fn prefetch(self, r: usize, p: usize) {
        let _ = (r, p);
    }
}

/// A packed micro-panel of `a`: element `(r, p)` at `p * MR + r`.
#[derive(Clone, Copy)]
pub struct Packed<T, const MR: usize>(pub *const T);

impl<T: Copy, const MR: usize> ASrc<T> for Packed<T, MR> {
    /// # Safety
    /// As for [`ASrc::at`]: `r < MR` and `p < kc`, the panel holding `kc * MR` elements.
    #[inline(always)]
    unsafe fn at(self, r: usize, p: usize) -> *const T {
        // SAFETY: the caller keeps (r, p) inside the panel.
        unsafe { self.0.add(p * MR + r) }
    }
}

/// Rows of `a` read in place: element `(r, p)` at `rows[r] + p`.
#[derive(Clone, Copy)]
pub struct Rows<T, const MR: usize>(pub [*const T; MR]);

impl<T: Copy, const MR: usize> ASrc<T> for Rows<T, MR> {
    /// # Safety
    /// As for [`ASrc::at`]: `r < MR` and `p < kc`, row `r` holding at least `kc` elements.
    #[inline(always)]
    unsafe fn at(self, r: usize, p: usize) -> *const T {
        // SAFETY: the caller keeps (r, p) inside the rows.
        unsafe { self.0[r].add(p) }
    }
}

/// Rows gathered through an offset table (conv2d): element `(r, p)` at `rows[r] + cols[p]`.
#[derive(Clone, Copy)]
pub struct Gather<T, const MR: usize> {
    pub rows: [*const T; MR],
    pub cols: *const usize,
}

impl<T: Copy, const MR: usize> ASrc<T> for Gather<T, MR> {
    /// # Safety
    /// As for [`ASrc::at`]: `r < MR` and `p < kc`, the column table holding `kc` offsets and
    /// `rows[r] + cols[p]` lying inside the gathered source.
    #[inline(always)]
    unsafe fn at(self, r: usize, p: usize) -> *const T {
        // SAFETY: the caller keeps (r, p) inside the tables, which index inside the source.
        unsafe { self.rows[r].add(*self.cols.add(p)) }
    }
}

/// Rows at a constant stride `RS` through a column table (a run of interior conv2d
/// pixels): element `(r, p)` at `base + r * RS + cols[p]`, `r * RS` folding into each
/// load's displacement.
#[derive(Clone, Copy)]
pub struct Strided<T, const RS: usize> {
    pub base: *const T,
    pub cols: *const usize,
}

impl<T: Copy, const RS: usize> ASrc<T> for Strided<T, RS> {
    /// # Safety
    /// As for [`ASrc::at`]: `r` below the tile's rows and `p < kc`, the column table holding
    /// `kc` offsets and `base + r * RS + cols[p]` lying inside the source.
    #[inline(always)]
    unsafe fn at(self, r: usize, p: usize) -> *const T {
        // SAFETY: the caller keeps (r, p) inside the run, which lies inside the source.
        unsafe { self.base.add(r * RS + *self.cols.add(p)) }
    }

    /// # Safety
    /// As for [`ASrc::prefetch`]: `p < kc`, the column table holding `kc` offsets (`r` and
    /// the address it gives are free: a prefetch of any address neither reads nor faults).
    #[inline(always)]
    unsafe fn prefetch(self, r: usize, p: usize) {
        // The next tile of a run of pixels continues the progression; past the run's end
        // the address may lie outside the source, which a prefetch may name (it does not
        // fault), so the pointer is formed with wrapping arithmetic.
        // SAFETY: p < kc: inside the column table.
        let ptr = self
            .base
            .wrapping_add(r * RS + unsafe { *self.cols.add(p) });
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch has no architectural effect; SSE is part of x86_64.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(ptr as *const i8)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = ptr;
    }
}

/// A register-tile micro-kernel for the packed driver.
pub trait Kernel {
    type T: PackElem;
    /// Rows of the tile.
    const MR: usize;
    /// Columns of the tile (the packed micro-panel width of `b`).
    const NR: usize;

    /// `c[..mr, ..nr] (+)= a[MR, kc] * b[kc, NR]` with `a` packed (`p * MR + r`) and `b`
    /// packed (`p * NR + j`); adds to `c` when `accumulate`, else overwrites it.
    ///
    /// # Safety
    /// The CPU runs the kernel's instruction set; `a` holds `kc` steps of `MR` values and `b`
    /// `kc` steps of `NR` (both aligned for `T`); `mr <= MR`, `nr <= NR`, and `c` is valid for
    /// reads and writes of `mr` rows of `nr` at stride `ldc`, overlaps neither panel and is
    /// touched by no other thread during the call.
    #[allow(clippy::too_many_arguments)]
    unsafe fn packed(
        kc: usize,
        a: *const Self::T,
        b: *const Self::T,
        c: *mut Self::T,
        ldc: usize,
        mr: usize,
        nr: usize,
        accumulate: bool,
    );

    /// As [`Kernel::packed`] but `a`'s `mr` rows are read in place (`a + r * lda + p`).
    ///
    /// # Safety
    /// As for [`Kernel::packed`], with `1 <= mr` and `a` valid for `mr` rows of `kc` at
    /// stride `lda` in place of a packed panel.
    #[allow(clippy::too_many_arguments)]
    unsafe fn rows(
        kc: usize,
        a: *const Self::T,
        lda: usize,
        b: *const Self::T,
        c: *mut Self::T,
        ldc: usize,
        mr: usize,
        nr: usize,
        accumulate: bool,
    );
}

/// Row pointers of a tile read in place; a short tile repeats its last row (never stored).
///
/// # Safety
/// `1 <= mr <= MR`, and `a` is valid for `mr` rows at stride `lda`.
#[inline(always)]
pub(super) unsafe fn row_ptrs<T, const MR: usize>(
    a: *const T,
    lda: usize,
    mr: usize,
) -> [*const T; MR] {
    // SAFETY: r.min(mr - 1) < mr, and rows below `mr` are inside `a` (the caller's contract).
    std::array::from_fn(|r| unsafe { a.add(r.min(mr - 1) * lda) })
}
