//! [`GemmElement`], the element types of the GEMM: `f32` and `f64` on the packed float core (`blis.rs`), `i32` and `i64` on a blocked loop of their own.

use std::mem::MaybeUninit;

use super::gather::{self, gather_rows_in_chunks};
use super::plan::col_align;
use super::scratch::ScratchPool;
use super::{blis, pack};
use crate::dtype::Numeric;

/// Element types the GEMM core handles: `f32`, `f64`, `i32`, `i64`.
pub trait GemmElement: Numeric {
    /// `c[m, n] = a[m, k] * b[k, n]`, single-threaded, each matrix row-major with its own
    /// row stride (`lda`, `ldb`, `ldc` elements) and contiguous rows.
    ///
    /// `c` is overwritten (never read); `k` may be zero, which gives zeros.
    ///
    /// # Safety
    /// The three pointers must be valid for the extents the sizes and strides describe, the
    /// elements of `c` must overlap neither `a` nor `b`, and no other thread may touch those
    /// elements of `c` during the call.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_strided(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        lda: usize,
        b: *const Self,
        ldb: usize,
        c: *mut Self,
        ldc: usize,
    );

    /// `out[m, n] = a[m, k] * b[k, n]`, all row-major and contiguous, single-threaded.
    ///
    /// `out` is overwritten (never read); `k` may be zero, which gives zeros.
    #[inline]
    fn gemm_block(m: usize, k: usize, n: usize, a: &[Self], b: &[Self], out: &mut [Self]) {
        check_block(m, k, n, a.len(), b.len(), out.len());
        // SAFETY: the slices hold m*k, k*n and m*n elements (checked above).
        unsafe { Self::gemm_strided(m, k, n, a.as_ptr(), k, b.as_ptr(), n, out.as_mut_ptr(), n) }
    }

    /// Provisions the GEMM core for `threads` single-threaded products running at once (the
    /// float cores make their packing buffers now), so that none allocates.
    #[inline]
    fn reserve_gemm(threads: usize) {
        let _ = threads;
    }

    /// `c[m, n] = a[m, k] * b[k, n]` where `b` is stored transposed: element `(p, j)` is at
    /// `b + j * ldbt + p` (an `[n, k]` matrix with row stride `ldbt`), so `matmul(a,
    /// transpose(b))` reads `b` in place; otherwise as [`gemm_strided`]. The float cores
    /// pack `b` from this layout into the same panels as a row-major `b`, so the result is
    /// bit-identical to transposing first; the default is a plain loop (exact for integers).
    ///
    /// # Safety
    /// As for [`gemm_strided`], with `b` valid for `n` rows of `k` at stride `ldbt`.
    ///
    /// [`gemm_strided`]: GemmElement::gemm_strided
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_strided_bt(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        lda: usize,
        b: *const Self,
        ldbt: usize,
        c: *mut Self,
        ldc: usize,
    ) {
        for i in 0..m {
            for j in 0..n {
                let mut acc = Self::ZERO;
                for p in 0..k {
                    // SAFETY: (i, p) of `a` and (p, j) of `b` are inside the caller's extents.
                    acc = acc.add(unsafe { (*a.add(i * lda + p)).mul(*b.add(j * ldbt + p)) });
                }
                // SAFETY: (i, j) of `c` is inside the caller's extents.
                unsafe { *c.add(i * ldc + j) = acc };
            }
        }
    }

    /// Packs `b` (`k x n`, contiguous) once for many [`gemm_prepacked`] calls and runs `f`
    /// on it, or runs `f(None)` if this type's GEMM core does not pre-pack.
    ///
    /// [`gemm_prepacked`]: GemmElement::gemm_prepacked
    #[inline]
    fn with_prepacked_b<R>(
        k: usize,
        n: usize,
        b: &[Self],
        f: impl FnOnce(Option<PrepackedB<'_, Self>>) -> R,
    ) -> R {
        let _ = (k, n, b);
        f(None)
    }

    /// `c[m, w] = a[m, k] * b[k, j0..j0 + w]` with `b` pre-packed ([`with_prepacked_b`]);
    /// `j0` is a multiple of [`col_align`]. Otherwise as [`gemm_strided`].
    ///
    /// # Safety
    /// As for [`gemm_strided`].
    ///
    /// [`with_prepacked_b`]: GemmElement::with_prepacked_b
    /// [`gemm_strided`]: GemmElement::gemm_strided
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_prepacked(
        m: usize,
        k: usize,
        w: usize,
        a: *const Self,
        lda: usize,
        b: PrepackedB<'_, Self>,
        j0: usize,
        c: *mut Self,
        ldc: usize,
    ) {
        let _ = (m, k, w, a, lda, b, j0, c, ldc);
        unreachable!("gemm_prepacked without pre-packing");
    }

    /// The pool of scratch buffers of `Self` for one use (see [`Scratch`]).
    fn scratch_pool(kind: Scratch) -> &'static ScratchPool<Self>;

    /// Runs `f` on `len` elements of a buffer from the [`Scratch::Cols`] pool, shared by
    /// all threads (conv2d's im2col rows, a transposed operand's block).
    ///
    /// Steady-state kernels allocate nothing as long as the thread that starts a parallel
    /// loop first calls [`reserve_scratch`](GemmElement::reserve_scratch) for it. `f` may
    /// nest another call (it gets another buffer).
    #[inline]
    fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [Self]) -> R) -> R {
        Self::scratch_pool(Scratch::Cols).with(len, f)
    }

    /// Provisions the [`Scratch::Cols`] pool for `threads` blocks at once, each borrowing at
    /// most `len` elements: call before a parallel loop whose blocks call
    /// [`with_scratch`](GemmElement::with_scratch).
    #[inline]
    fn reserve_scratch(threads: usize, len: usize) {
        Self::scratch_pool(Scratch::Cols).reserve(threads, len)
    }

    /// Runs `f` on `len` elements of a buffer for a reordered copy of a conv2d kernel
    /// ([`Scratch::Kernel`]), which the blocks on every thread then share.
    #[inline]
    fn with_kernel_scratch<R>(len: usize, f: impl FnOnce(&mut [Self]) -> R) -> R {
        Self::scratch_pool(Scratch::Kernel).with(len, f)
    }

    /// Output pixels `0..pixels` of a run along one output row of a stride-1 convolution
    /// with 3 kernel columns, into `out` (`pixels * n`, only written): pixel `r`'s patch
    /// starts at `src[first + r * cin]`, kernel row `i` of it `row_stride` further per row;
    /// `b` is the kernel reordered to (kernel row, input channel, kernel column) rows of `n`.
    /// Each input value is loaded once for the three outputs it meets along the row. Returns
    /// how many pixels it computed (whole tiles; 0 when this CPU has no such kernel); they
    /// hold the bits [`gemm_gather`](GemmElement::gemm_gather) gives with the same column
    /// order.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn conv_rows_kw3(
        src: &[Self],
        first: usize,
        row_stride: usize,
        kh: usize,
        cin: usize,
        pixels: usize,
        b: &[Self],
        n: usize,
        out: &mut [MaybeUninit<Self>],
    ) -> usize {
        let _ = (src, first, row_stride, kh, cin, pixels, b, n, out);
        0
    }

    /// Whether [`gemm_gather`](GemmElement::gemm_gather) has a fast kernel for `n` output columns on this CPU.
    #[inline]
    fn has_gather_kernel(n: usize) -> bool {
        let _ = n;
        false
    }

    /// `out[r, j] = sum_p src[rows[r] + cols[p]] * b[p, j]`: a GEMM whose left operand is
    /// gathered from `src` (row `r` starts at `rows[r]`, column `p` sits `cols[p]` further),
    /// so conv2d reads input patches in place instead of copying them (im2col). `out` (at
    /// least `rows.len() * n` elements) is only written, each of those elements once, so it
    /// may be fresh memory.
    ///
    /// [`gemm_gather`](GemmElement::gemm_gather) for rows at a constant stride: row `r`
    /// starts at `first + r * stride` (a run of interior conv2d pixels along one output row).
    /// The same values, bit for bit, as the table form; the f32 kernel reads each row at a
    /// constant displacement instead of loading a row pointer per element.
    ///
    /// Only called when [`has_gather_kernel`](GemmElement::has_gather_kernel) said yes.
    /// Panics if an index falls outside a slice.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn gemm_gather_strided(
        src: &[Self],
        first: usize,
        stride: usize,
        rows: usize,
        cols: &[usize],
        b: &[Self],
        n: usize,
        out: &mut [MaybeUninit<Self>],
    ) {
        gather_rows_in_chunks(first, stride, 0..rows, n, out, |table, out| {
            Self::gemm_gather(src, table, cols, b, n, out)
        })
    }

    /// Only called when [`has_gather_kernel`](GemmElement::has_gather_kernel) said yes.
    /// Panics if an index falls outside a slice.
    #[inline]
    fn gemm_gather(
        src: &[Self],
        rows: &[usize],
        cols: &[usize],
        b: &[Self],
        n: usize,
        out: &mut [MaybeUninit<Self>],
    ) {
        let _ = (src, rows, cols, b, n, out);
        unreachable!("gemm_gather without a kernel");
    }
}

/// A right operand packed whole for the float GEMM core (see [`GemmElement::with_prepacked_b`]).
#[derive(Debug, Clone, Copy)]
pub struct PrepackedB<'a, T> {
    data: &'a [T],
    k: usize,
    /// Packed columns (`n` rounded up to the micro-kernel's width).
    n_pad: usize,
}

/// Implements the pre-packing methods of [`GemmElement`] on the float core (`blis.rs`).
macro_rules! prepack_impl {
    ($t:ty) => {
        #[inline]
        fn with_prepacked_b<R>(
            k: usize,
            n: usize,
            b: &[$t],
            f: impl FnOnce(Option<PrepackedB<'_, $t>>) -> R,
        ) -> R {
            if k == 0 || n == 0 {
                return f(None);
            }
            let len = pack::prepacked_len::<$t>(k, n);
            blis::with_prepacked::<$t, R>(len, |buf| {
                pack::prepack_b(k, n, b, buf);
                f(Some(PrepackedB {
                    data: buf,
                    k,
                    n_pad: len / k,
                }))
            })
        }

        /// # Safety
        /// As for [`GemmElement::gemm_prepacked`]: `a` valid for `m` rows of `k` at stride
        /// `lda`, `c` for `m` rows of `w` at stride `ldc`, overlapping neither `a` nor the
        /// packed `b` and touched by no other thread during the call. `b` itself is checked:
        /// its depth must be `k`, and columns `j0..j0 + w` inside its packed width.
        #[inline]
        unsafe fn gemm_prepacked(
            m: usize,
            k: usize,
            w: usize,
            a: *const $t,
            lda: usize,
            b: PrepackedB<'_, $t>,
            j0: usize,
            c: *mut $t,
            ldc: usize,
        ) {
            assert!(k == b.k && j0 + w <= b.n_pad && j0.is_multiple_of(col_align()));
            // SAFETY: the caller vouches for `a` and `c`; `b` holds k x n_pad packed.
            unsafe {
                blis::gemm_prepacked::<$t>(m, k, w, a, lda, b.data.as_ptr(), b.n_pad, j0, c, ldc)
            }
        }
    };
}

/// What a pool of scratch buffers holds ([`GemmElement::scratch_pool`]): uses that nest
/// (conv2d's pooled bands compute their convolution rows with im2col scratch inside) take
/// different pools, so that reserving one provisions every nested level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scratch {
    /// Rows gathered for a GEMM: conv2d's im2col, a transposed left operand's block.
    Cols,
    /// A conv2d kernel reordered for the gather GEMM, once per convolution.
    Kernel,
    /// A band of convolution rows that a fused pooling reads.
    Band,
}

/// Implements [`GemmElement::scratch_pool`] with one static pool per use and type.
macro_rules! scratch_impl {
    ($t:ty) => {
        #[inline]
        fn scratch_pool(kind: Scratch) -> &'static ScratchPool<$t> {
            static COLS: ScratchPool<$t> = ScratchPool::new();
            static KERNEL: ScratchPool<$t> = ScratchPool::new();
            static BAND: ScratchPool<$t> = ScratchPool::new();
            match kind {
                Scratch::Cols => &COLS,
                Scratch::Kernel => &KERNEL,
                Scratch::Band => &BAND,
            }
        }
    };
}

impl GemmElement for f32 {
    scratch_impl!(f32);
    prepack_impl!(f32);

    /// # Safety
    /// As for [`GemmElement::gemm_strided_bt`]: `a` valid for `m` rows of `k` at stride
    /// `lda`, `b` for `n` rows of `k` at stride `ldbt`, `c` for `m` rows of `n` at stride
    /// `ldc`; `c` overlaps neither and no other thread touches it during the call.
    #[inline]
    unsafe fn gemm_strided_bt(
        m: usize,
        k: usize,
        n: usize,
        a: *const f32,
        lda: usize,
        b: *const f32,
        ldbt: usize,
        c: *mut f32,
        ldc: usize,
    ) {
        if k == 0 {
            // SAFETY: `c` is valid for m rows of n at stride ldc (the caller's contract).
            unsafe { zero_rows(m, n, c, ldc) };
            return;
        }
        // SAFETY: the caller vouches for the extents.
        unsafe { blis::gemm_bt::<f32>(m, k, n, a, lda, b, ldbt, c, ldc) }
    }

    #[inline]
    fn reserve_gemm(threads: usize) {
        blis::reserve::<f32>(threads)
    }

    #[inline]
    fn has_gather_kernel(n: usize) -> bool {
        gather::supported(n)
    }

    #[inline]
    fn conv_rows_kw3(
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
        gather::conv_rows_kw3(src, first, row_stride, kh, cin, pixels, b, n, out)
    }

    #[inline]
    fn gemm_gather(
        src: &[f32],
        rows: &[usize],
        cols: &[usize],
        b: &[f32],
        n: usize,
        out: &mut [MaybeUninit<f32>],
    ) {
        gather::gemm_gather(src, rows, cols, b, n, out)
    }

    #[inline]
    fn gemm_gather_strided(
        src: &[f32],
        first: usize,
        stride: usize,
        rows: usize,
        cols: &[usize],
        b: &[f32],
        n: usize,
        out: &mut [MaybeUninit<f32>],
    ) {
        gather::gemm_gather_strided(src, first, stride, rows, cols, b, n, out)
    }

    /// # Safety
    /// As for [`GemmElement::gemm_strided`]: `a` valid for `m` rows of `k` at stride `lda`,
    /// `b` for `k` rows of `n` at stride `ldb`, `c` for `m` rows of `n` at stride `ldc`; `c`
    /// overlaps neither and no other thread touches it during the call.
    #[inline]
    unsafe fn gemm_strided(
        m: usize,
        k: usize,
        n: usize,
        a: *const f32,
        lda: usize,
        b: *const f32,
        ldb: usize,
        c: *mut f32,
        ldc: usize,
    ) {
        if k == 0 {
            // SAFETY: `c` is valid for m rows of n at stride ldc (the caller's contract).
            unsafe { zero_rows(m, n, c, ldc) };
            return;
        }
        // SAFETY: the caller vouches for the extents.
        unsafe { blis::gemm::<f32>(m, k, n, a, lda, b, ldb, c, ldc) }
    }
}

impl GemmElement for f64 {
    scratch_impl!(f64);
    prepack_impl!(f64);

    /// # Safety
    /// As for [`GemmElement::gemm_strided_bt`]: `a` valid for `m` rows of `k` at stride
    /// `lda`, `b` for `n` rows of `k` at stride `ldbt`, `c` for `m` rows of `n` at stride
    /// `ldc`; `c` overlaps neither and no other thread touches it during the call.
    #[inline]
    unsafe fn gemm_strided_bt(
        m: usize,
        k: usize,
        n: usize,
        a: *const f64,
        lda: usize,
        b: *const f64,
        ldbt: usize,
        c: *mut f64,
        ldc: usize,
    ) {
        if k == 0 {
            // SAFETY: `c` is valid for m rows of n at stride ldc (the caller's contract).
            unsafe { zero_rows(m, n, c, ldc) };
            return;
        }
        // SAFETY: the caller vouches for the extents.
        unsafe { blis::gemm_bt::<f64>(m, k, n, a, lda, b, ldbt, c, ldc) }
    }

    #[inline]
    fn reserve_gemm(threads: usize) {
        blis::reserve::<f64>(threads)
    }

    /// # Safety
    /// As for [`GemmElement::gemm_strided`]: `a` valid for `m` rows of `k` at stride `lda`,
    /// `b` for `k` rows of `n` at stride `ldb`, `c` for `m` rows of `n` at stride `ldc`; `c`
    /// overlaps neither and no other thread touches it during the call.
    #[inline]
    unsafe fn gemm_strided(
        m: usize,
        k: usize,
        n: usize,
        a: *const f64,
        lda: usize,
        b: *const f64,
        ldb: usize,
        c: *mut f64,
        ldc: usize,
    ) {
        if k == 0 {
            // SAFETY: `c` is valid for m rows of n at stride ldc (the caller's contract).
            unsafe { zero_rows(m, n, c, ldc) };
            return;
        }
        // SAFETY: the caller vouches for the extents.
        unsafe { blis::gemm::<f64>(m, k, n, a, lda, b, ldb, c, ldc) }
    }
}

impl GemmElement for i32 {
    scratch_impl!(i32);

    /// # Safety
    /// As for [`GemmElement::gemm_strided`]: `a` valid for `m` rows of `k` at stride `lda`,
    /// `b` for `k` rows of `n` at stride `ldb`, `c` for `m` rows of `n` at stride `ldc`; `c`
    /// overlaps neither and no other thread touches it during the call.
    #[inline]
    unsafe fn gemm_strided(
        m: usize,
        k: usize,
        n: usize,
        a: *const i32,
        lda: usize,
        b: *const i32,
        ldb: usize,
        c: *mut i32,
        ldc: usize,
    ) {
        int_gemm_i32(m, k, n, a, lda, b, ldb, c, ldc);
    }
}

impl GemmElement for i64 {
    scratch_impl!(i64);

    /// # Safety
    /// As for [`GemmElement::gemm_strided`]: `a` valid for `m` rows of `k` at stride `lda`,
    /// `b` for `k` rows of `n` at stride `ldb`, `c` for `m` rows of `n` at stride `ldc`; `c`
    /// overlaps neither and no other thread touches it during the call.
    #[inline]
    unsafe fn gemm_strided(
        m: usize,
        k: usize,
        n: usize,
        a: *const i64,
        lda: usize,
        b: *const i64,
        ldb: usize,
        c: *mut i64,
        ldc: usize,
    ) {
        int_gemm_i64(m, k, n, a, lda, b, ldb, c, ldc);
    }
}

/// Writes zeros into `m` rows of `n` elements, `ldc` apart.
///
/// # Safety
/// As for [`GemmElement::gemm_strided`].
unsafe fn zero_rows<T: Numeric>(m: usize, n: usize, c: *mut T, ldc: usize) {
    for i in 0..m {
        // SAFETY: row i of `c` is valid for n elements (the caller's contract).
        unsafe { std::slice::from_raw_parts_mut(c.add(i * ldc), n) }.fill(T::ZERO);
    }
}

/// Panics (an internal bug, never a user error) if a block's slices are too short.
#[inline(always)]
fn check_block(m: usize, k: usize, n: usize, a: usize, b: usize, out: usize) {
    assert!(
        a >= m * k && b >= k * n && out >= m * n,
        "gemm block operands too short"
    );
}

/// Rows of `b` read per pass of the integer loop: a slab of `b` stays in L1/L2 across the rows of `a`.
const INT_K_BLOCK: usize = 128;

/// Integer GEMM with wrapping arithmetic: `c = a * b`, loop order k-block, i, k, j so
/// that the innermost loop is a contiguous axpy LLVM vectorises.
///
/// # Safety
/// As for [`GemmElement::gemm_strided`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn int_gemm_generic<T: Numeric>(
    m: usize,
    k: usize,
    n: usize,
    a: *const T,
    lda: usize,
    b: *const T,
    ldb: usize,
    c: *mut T,
    ldc: usize,
) {
    // SAFETY: `c` is valid for m rows of n at stride ldc (the caller's contract).
    unsafe { zero_rows(m, n, c, ldc) };
    let mut k0 = 0;
    while k0 < k {
        let k1 = (k0 + INT_K_BLOCK).min(k);
        for i in 0..m {
            // SAFETY: i < m, so row i of `a` holds k elements at a + i * lda (the caller's
            // contract).
            let a_row = unsafe { std::slice::from_raw_parts(a.add(i * lda), k) };
            // SAFETY: row i of `c` holds n elements at c + i * ldc, and no other reference
            // to it exists: `c` overlaps neither `a` nor `b` (the caller's contract).
            let c_row = unsafe { std::slice::from_raw_parts_mut(c.add(i * ldc), n) };
            for (p, &av) in a_row.iter().enumerate().take(k1).skip(k0) {
                // SAFETY: p < k, so row p of `b` holds n elements at b + p * ldb.
                let b_row = unsafe { std::slice::from_raw_parts(b.add(p * ldb), n) };
                for (o, &bv) in c_row.iter_mut().zip(b_row) {
                    *o = o.add(av.mul(bv));
                }
            }
        }
        k0 = k1;
    }
}

// The integer kernels take raw pointers: they are private, and their callers uphold
// `gemm_strided`'s contract.
crate::multiversion! {
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn int_gemm_i32(m: usize, k: usize, n: usize, a: *const i32, lda: usize, b: *const i32, ldb: usize, c: *mut i32, ldc: usize) {
        // SAFETY: see above.
        unsafe { int_gemm_generic(m, k, n, a, lda, b, ldb, c, ldc) }
    }
}

crate::multiversion! {
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn int_gemm_i64(m: usize, k: usize, n: usize, a: *const i64, lda: usize, b: *const i64, ldb: usize, c: *mut i64, ldc: usize) {
        // SAFETY: see above.
        unsafe { int_gemm_generic(m, k, n, a, lda, b, ldb, c, ldc) }
    }
}
