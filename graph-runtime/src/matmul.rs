//! Batched matrix multiplication with a fused epilogue: row blocks of the output run in parallel, each GEMM'd single-threaded and then handed to the epilogue while still in cache.
//!
//! The GEMM core is our own packed GEMM for floats ([`packed`]: the BLIS loops around a
//! 24x16 f32 / 24x8 f64 AVX-512 or a 6x16 / 6x8 AVX2+FMA micro-kernel picked at run time,
//! or a portable one; its
//! packing buffers come from a pool, so steady-state products allocate nothing) and a small
//! blocked loop for integers. Parallelism is ours: the output rows of
//! every batch are cut into blocks ([`block_plan`]), the blocks run on rayon, and each block
//! is finished (GEMM, then epilogue) before the thread moves on, so a fused bias or
//! activation touches the block while it is still in L2. Short, wide products also split
//! each block into column panels that run in parallel before the block's epilogue.
//!
//! conv2d's f32 kernel lives here too ([`GemmElement::gemm_gather`]): the same AVX-512 or
//! AVX2+FMA micro-kernels with their left operand gathered through an offset table, so
//! input patches are read in place rather than copied.

use rayon::prelude::*;
use std::mem::MaybeUninit;

use crate::dtype::Numeric;

/// Below this many multiply-adds (`batch * m * k * n`) the whole product runs on the
/// calling thread: waking rayon costs more than the arithmetic.
pub const SEQUENTIAL_MACS: usize = 1 << 16;

/// A block of output rows should carry at least this many multiply-adds, so that the
/// GEMM core's fixed costs (packing the right operand) stay small next to the work.
pub const MIN_BLOCK_MACS: usize = 1 << 18;

/// A block of output rows holds at most this many elements (1 MiB of f32, half an L2), and
/// with several threads there are at least as many blocks as threads, in whole rounds of
/// them. Fewer blocks read `b` fewer times: with one thread, one block of W2's 256 x 512
/// output instead of four took 256x512x10 from 39 to 61 GFLOP/s and sgemm 256 from 98 to 133
/// (interleaved, p10). With several, each block packs its own slices of `b` into its
/// thread's L2 and uses them there at once; finer blocks for load balance (eight a thread
/// before) cost more than they balanced, each reading `b` again and serving fewer tiles from
/// each packed slice (Xeon with AVX-512, 2 threads: sgemm 1024 7.65 -> 6.25 ms, W2's
/// product 905 -> 672 µs).
pub const BLOCK_ELEMENTS: usize = 1 << 18;

/// Block row counts are rounded up to a multiple of this: the row count of the micro-kernel
/// this CPU runs for f64 products and convolutions (6 for the AVX2 tile, 24 for the tall
/// AVX-512 one, see [`crate::exec::cpu::avx512_tiles`]), so that no block ends in a short tile
/// except the last.
#[inline]
pub fn row_align() -> usize {
    if crate::exec::cpu::avx512_tiles() {
        24
    } else {
        6
    }
}

/// A right operand shared by many row blocks is packed once for all of them only up to this
/// size (or when several batches share it); a larger one is packed by each block into its
/// own thread's L2 (see [`matmul_into`]).
pub const PREPACK_MAX_BYTES: usize = 1 << 20;

/// Whether a `k x n` right operand of `T` is small enough to pre-pack once for every row
/// block ([`PREPACK_MAX_BYTES`]); a larger one is packed by each block.
#[inline]
fn prepackable<T>(k: usize, n: usize) -> bool {
    k.saturating_mul(n).saturating_mul(std::mem::size_of::<T>()) <= PREPACK_MAX_BYTES
}

/// The row count of the GEMM micro-kernel for `T` on this CPU: the wide 6-row AVX-512
/// tile for `f32`, else [`row_align`]'s.
#[inline]
pub fn gemm_row_align<T: 'static>() -> usize {
    if crate::exec::cpu::wide_tiles()
        && std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()
    {
        packed::wide::MR
    } else {
        row_align()
    }
}

/// A row block should be at least this tall: unless `b` was pre-packed for all blocks, the
/// GEMM core packs the whole right operand for every call, and the block's rows amortise that
/// copy; and each packed micro-panel of `b` serves `MIN_BLOCK_ROWS / MR` micro-kernel calls.
pub const MIN_BLOCK_ROWS: usize = 60;

/// A product whose `b` is too large to pre-pack ([`PREPACK_MAX_BYTES`]) and whose shared
/// dimension is at least [`DEEP_K`] gets row blocks at least this tall (when that still leaves
/// one a thread): each block packs all of `b` again, and the 1 MiB output cap of
/// [`BLOCK_ELEMENTS`] would cut sgemm 2048 into 16 blocks of 128 rows that re-read 16 MiB
/// each. On a Zen 4 with AVX-512 (2026-12-04, criterion, alternated x3): sgemm 2048 on 2
/// threads 103–111 ms with blocks of 128 rows, 86–89 ms with 512 (the `gemm` crate 89 ms);
/// on one thread 197–201 ms against 171–173; sgemm 1024 within the noise (11.2 ms either way).
pub const LARGE_B_MIN_ROWS: usize = 512;

/// The shared dimension from which [`LARGE_B_MIN_ROWS`] applies: every output element then
/// carries at least this many multiply-adds, so an epilogue that reads its block back from L3
/// rather than L2 costs next to nothing.
pub const DEEP_K: usize = 256;

/// When row blocks alone are too few to keep every thread busy, each is also split into
/// column panels of at least this many columns (a multiple of [`col_align`]).
pub const MIN_PANEL_COLS: usize = 64;

/// Column panel widths are rounded up to a multiple of this: the width of the packed
/// micro-panels of `b` (64 for the wide AVX-512 f32 tiles, 16 otherwise; a multiple of
/// every float kernel's width).
#[inline]
pub fn col_align() -> usize {
    if crate::exec::cpu::wide_tiles() {
        64
    } else {
        16
    }
}

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

    /// Runs `f` on this thread's scratch buffer of `Self`, grown to at least `len` elements.
    ///
    /// The buffer lives as long as the thread, so steady-state kernels (conv2d's im2col)
    /// allocate nothing. `f` must not call `with_scratch` again nor wait on rayon work
    /// (a stolen task on this thread could reach for the borrowed buffer).
    fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [Self]) -> R) -> R;

    /// Runs `f` on this thread's buffer for a reordered copy of a conv2d kernel, grown to at
    /// least `len` elements; a fresh vector instead if the buffer is in use (a nested call).
    fn with_kernel_scratch<R>(len: usize, f: impl FnOnce(&mut [Self]) -> R) -> R;

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

/// Implements the pre-packing methods of [`GemmElement`] on [`packed`].
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
            let len = packed::prepacked_len::<$t>(k, n);
            packed::with_prepacked::<$t, R>(len, |buf| {
                packed::prepack_b(k, n, b, buf);
                f(Some(PrepackedB {
                    data: buf,
                    k,
                    n_pad: len / k,
                }))
            })
        }

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
                packed::gemm_prepacked::<$t>(m, k, w, a, lda, b.data.as_ptr(), b.n_pad, j0, c, ldc)
            }
        }
    };
}

/// The first `len` elements of `buf`, grown with default values if it is shorter.
fn grown<T: Default + Clone>(buf: &mut Vec<T>, len: usize) -> &mut [T] {
    if buf.len() < len {
        buf.resize(len, T::default());
    }
    &mut buf[..len]
}

/// Implements [`GemmElement::with_scratch`] and [`GemmElement::with_kernel_scratch`] with thread-local vectors per type.
macro_rules! scratch_impl {
    ($t:ty) => {
        #[inline]
        fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [$t]) -> R) -> R {
            thread_local! {
                static SCRATCH: std::cell::RefCell<Vec<$t>> = const { std::cell::RefCell::new(Vec::new()) };
            }
            SCRATCH.with(|cell| f(grown(&mut cell.borrow_mut(), len)))
        }

        #[inline]
        fn with_kernel_scratch<R>(len: usize, f: impl FnOnce(&mut [$t]) -> R) -> R {
            thread_local! {
                static KERNEL: std::cell::RefCell<Vec<$t>> = const { std::cell::RefCell::new(Vec::new()) };
            }
            KERNEL.with(|cell| match cell.try_borrow_mut() {
                Ok(mut buf) => f(grown(&mut buf, len)),
                Err(_) => f(&mut vec![<$t>::default(); len]),
            })
        }
    };
}

impl GemmElement for f32 {
    scratch_impl!(f32);
    prepack_impl!(f32);

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
        unsafe { packed::gemm_bt::<f32>(m, k, n, a, lda, b, ldbt, c, ldc) }
    }

    #[inline]
    fn reserve_gemm(threads: usize) {
        packed::reserve::<f32>(threads)
    }

    #[inline]
    fn has_gather_kernel(n: usize) -> bool {
        gather_f32::supported(n)
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
        gather_f32::conv_rows_kw3(src, first, row_stride, kh, cin, pixels, b, n, out)
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
        gather_f32::gemm_gather(src, rows, cols, b, n, out)
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
        gather_f32::gemm_gather_strided(src, first, stride, rows, cols, b, n, out)
    }

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
        unsafe { packed::gemm::<f32>(m, k, n, a, lda, b, ldb, c, ldc) }
    }
}

impl GemmElement for f64 {
    scratch_impl!(f64);
    prepack_impl!(f64);

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
        unsafe { packed::gemm_bt::<f64>(m, k, n, a, lda, b, ldbt, c, ldc) }
    }

    #[inline]
    fn reserve_gemm(threads: usize) {
        packed::reserve::<f64>(threads)
    }

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
        unsafe { packed::gemm::<f64>(m, k, n, a, lda, b, ldb, c, ldc) }
    }
}

impl GemmElement for i32 {
    scratch_impl!(i32);

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

/// The sizes of a (batched) product `out[b] = a[b] * b[b]`, each operand row-major and contiguous.
#[derive(Debug, Clone, Copy)]
pub struct MatmulDims {
    pub batch: usize,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    /// Elements between two batches of `a` (`m * k`), or 0 to use one matrix for every batch.
    pub a_batch_stride: usize,
    /// Elements between two batches of `b` (`k * n`), or 0 to use one matrix for every batch.
    pub b_batch_stride: usize,
}

impl MatmulDims {
    /// An unbatched product `[m, k] x [k, n]`.
    pub fn single(m: usize, k: usize, n: usize) -> MatmulDims {
        MatmulDims {
            batch: 1,
            m,
            k,
            n,
            a_batch_stride: m * k,
            b_batch_stride: k * n,
        }
    }

    /// Multiply-adds of the whole product.
    pub fn macs(&self) -> usize {
        self.batch
            .saturating_mul(self.m)
            .saturating_mul(self.k)
            .saturating_mul(self.n)
    }
}

/// The epilogue that does nothing, for plain products.
#[inline(always)]
pub fn no_epilogue<T>(_: usize, _: usize, _: &mut [T]) {}

/// How the output of one batch is cut for the threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockPlan {
    /// Output rows per block; the epilogue sees one whole block.
    pub rows: usize,
    /// Columns per panel inside a block (`>= n` when blocks are not split); panels run in parallel.
    pub cols: usize,
}

/// Plans the blocks of a product of `batch` matrices `[m, k] x [k, n]` of `T`, whose rows
/// are aligned to the micro-kernel that will run ([`gemm_row_align`]).
pub fn block_plan<T: 'static>(m: usize, k: usize, n: usize, batch: usize) -> BlockPlan {
    let threads = rayon::current_num_threads().max(1);
    let per_row = k.max(1).saturating_mul(n.max(1));
    // Blocks only as many as keep each one's output in cache for the epilogue (each extra
    // block streams `b` from L3 once more), and with several threads at least one a thread.
    let for_cache = m.saturating_mul(n).div_ceil(BLOCK_ELEMENTS).max(1);
    let per_batch = if threads == 1 {
        for_cache
    } else if batch <= 1 {
        for_cache.div_ceil(threads) * threads
    } else {
        for_cache.max(threads.div_ceil(batch))
    };
    // Row blocks: as many as wanted, but tall and heavy enough to amortise packing `b`.
    let rows = m
        .div_ceil(per_batch)
        .max(MIN_BLOCK_ROWS)
        .max(MIN_BLOCK_MACS.div_ceil(per_row));
    // A large `b` is packed whole by every block: deep products take taller blocks, as
    // many as still give each thread one.
    let deep_rows = if !prepackable::<T>(k, n) && k >= DEEP_K {
        LARGE_B_MIN_ROWS.min(m.div_ceil(threads))
    } else {
        0
    };
    // Those blocks are at least one a thread, so they need no column panels.
    let per_batch = if deep_rows > rows { 1 } else { per_batch };
    let rows = rows.max(deep_rows);
    let align = gemm_row_align::<T>();
    let rows = (rows.div_ceil(align) * align).min(m.max(1));
    // Column panels make up for missing row blocks (only whole multiples of them: one row
    // block short of the wanted count is no reason to split every block), each still wide
    // and heavy enough.
    let block_macs = rows.saturating_mul(per_row);
    let panels = (per_batch / m.div_ceil(rows).max(1))
        .min(n / MIN_PANEL_COLS)
        .min(block_macs / MIN_BLOCK_MACS)
        .max(1);
    let col_align = col_align();
    let cols = n.div_ceil(panels).div_ceil(col_align) * col_align;
    BlockPlan {
        rows,
        cols: cols.max(n.min(col_align)),
    }
}

/// A raw pointer that may cross threads: the column panels of one block write disjoint columns.
#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);

// SAFETY: only used for disjoint writes, see `row_block`.
unsafe impl<T: Send> Send for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SendPtr<T> {}

impl<T> SendPtr<T> {
    /// The pointer (a method, so closures capture the whole wrapper).
    fn get(self) -> *mut T {
        self.0
    }
}

/// `out_blk[r, n] = a_rows[r, k] * b[k, n]`, split into column panels of `cols` that run in
/// parallel; `pb` is `b` pre-packed, if it was.
fn row_block<T: GemmElement>(
    a_rows: &[T],
    b: &[T],
    pb: Option<PrepackedB<'_, T>>,
    out_blk: &mut [T],
    k: usize,
    n: usize,
    cols: usize,
) {
    let r = out_blk.len() / n;
    assert!(a_rows.len() >= r * k && b.len() >= k * n && out_blk.len() == r * n);
    if cols >= n {
        match pb {
            // SAFETY: the slices hold r*k and r*n elements (asserted above).
            Some(pb) => unsafe {
                T::gemm_prepacked(r, k, n, a_rows.as_ptr(), k, pb, 0, out_blk.as_mut_ptr(), n)
            },
            None => T::gemm_block(r, k, n, a_rows, b, out_blk),
        }
        return;
    }
    let c = SendPtr(out_blk.as_mut_ptr());
    // LOOP 3 (parallel): over column panels of the block.
    (0..n.div_ceil(cols)).into_par_iter().for_each(|p| {
        let j0 = p * cols;
        let w = cols.min(n - j0);
        // SAFETY: the slices hold r*k, k*n and r*n elements (asserted above); panel p
        // reads columns j0..j0+w of `b` and is the only writer of those columns of `out_blk`.
        unsafe {
            match pb {
                Some(pb) => {
                    T::gemm_prepacked(r, k, w, a_rows.as_ptr(), k, pb, j0, c.get().add(j0), n)
                }
                None => T::gemm_strided(
                    r,
                    k,
                    w,
                    a_rows.as_ptr(),
                    k,
                    b.as_ptr().add(j0),
                    n,
                    c.get().add(j0),
                    n,
                ),
            }
        }
    });
}

/// `out[b] = a[b] * b[b]` for every batch `b`, then `epilogue(b, first_row, block)` on each
/// finished block of rows (`block` holds `rows * n` elements of batch `b`, starting at row
/// `first_row`). Every output element is passed to the epilogue exactly once.
///
/// Panics if a slice is shorter than `dims` says (the callers check shapes first).
pub fn matmul_into<T: GemmElement, E>(
    a: &[T],
    b: &[T],
    out: &mut [T],
    dims: MatmulDims,
    epilogue: E,
) where
    E: Fn(usize, usize, &mut [T]) + Sync,
{
    let MatmulDims { batch, m, k, n, .. } = dims;
    let a_len = operand_len(batch, dims.a_batch_stride, m * k);
    let b_len = operand_len(batch, dims.b_batch_stride, k * n);
    assert!(
        a.len() >= a_len && b.len() >= b_len && out.len() >= batch * m * n,
        "matmul_into: operands shorter than {dims:?}"
    );
    let out = &mut out[..batch * m * n];
    if out.is_empty() {
        return;
    }
    let a_of = |bi: usize| &a[bi * dims.a_batch_stride..][..m * k];
    let b_of = |bi: usize| &b[bi * dims.b_batch_stride..][..k * n];

    if dims.macs() < SEQUENTIAL_MACS {
        // Tiny product: one block per batch, on this thread.
        for (bi, out_b) in out.chunks_mut(m * n).enumerate() {
            T::gemm_block(m, k, n, a_of(bi), b_of(bi), out_b);
            epilogue(bi, 0, out_b);
        }
        return;
    }

    let plan = block_plan::<T>(m, k, n, batch);
    let rows = plan.rows;
    // One packing buffer per thread, made now if missing: the blocks then allocate nothing.
    T::reserve_gemm(rayon::current_num_threads());
    // With one `b` for more than two row blocks, pack it once for all of them when it is
    // small (a conv2d's filter: for two blocks, the extra pass and barrier cost about what the
    // second packing would) or shared by several batches. A large `b` (sgemm 1024, 2048) is
    // packed by each block slice by slice into its own thread's L2, where its tiles use it at
    // once: cheaper than reading a packed copy back from L3 (Xeon with AVX-512, 2 threads:
    // sgemm 1024 7.05 -> 6.59 ms, 2048 60.1 -> 55.8 ms).
    let shared_b = batch == 1 || dims.b_batch_stride == 0;
    let small_b = prepackable::<T>(k, n);
    if shared_b && batch * m.div_ceil(rows) > 2 && (small_b || batch > 1) {
        T::with_prepacked_b(k, n, b_of(0), |pb| {
            parallel_blocks(out, dims, plan, pb, &a_of, &b_of, &epilogue)
        })
    } else {
        parallel_blocks(out, dims, plan, None, &a_of, &b_of, &epilogue)
    }
}

/// The parallel loops of [`matmul_into`]; `pb` is the shared `b` pre-packed, if it was.
fn parallel_blocks<'a, T: GemmElement, E>(
    out: &mut [T],
    dims: MatmulDims,
    plan: BlockPlan,
    pb: Option<PrepackedB<'_, T>>,
    a_of: &(impl Fn(usize) -> &'a [T] + Sync),
    b_of: &(impl Fn(usize) -> &'a [T] + Sync),
    epilogue: &E,
) where
    E: Fn(usize, usize, &mut [T]) + Sync,
{
    let MatmulDims { m, k, n, .. } = dims;
    let rows = plan.rows;
    // LOOP 1 (parallel): over the batches.
    out.par_chunks_mut(m * n)
        .enumerate()
        .for_each(|(bi, out_b)| {
            let (a_b, b_b) = (a_of(bi), b_of(bi));
            // LOOP 2 (parallel): over blocks of `rows` output rows of this batch.
            out_b
                .par_chunks_mut(rows * n)
                .enumerate()
                .for_each(|(blk, out_blk)| {
                    let r0 = blk * rows;
                    let r = out_blk.len() / n;
                    // LOOP 3 (parallel, when planned) over column panels; LOOP 4 (inside the
                    // GEMM core, single-threaded): k panels, n panels, micro-kernels.
                    row_block(
                        &a_b[r0 * k..(r0 + r) * k],
                        b_b,
                        pb,
                        out_blk,
                        k,
                        n,
                        plan.cols,
                    );
                    // The block is still in cache: fuse the tail now.
                    epilogue(bi, r0, out_blk);
                });
        });
}

/// Elements an operand must hold: its last batch's offset plus one matrix.
fn operand_len(batch: usize, stride: usize, matrix: usize) -> usize {
    if batch == 0 {
        0
    } else {
        (batch - 1) * stride + matrix
    }
}

/// Runs `gather(table, out_rows)` over rows `rows` of a strided gather (row `r` at
/// `first + r * stride`) in chunks of at most 64, each with its offset table on the stack, so
/// the table form of a strided gather allocates nothing.
fn gather_rows_in_chunks<T>(
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

/// The float GEMM core: a BLIS-style packed GEMM whose packing buffers live in a
/// thread-local vector reused across calls, so steady-state products allocate nothing.
///
/// Loop structure (as in BLIS and `matrixmultiply`):
/// - LOOP 5: column blocks of `b` and `c`, `NC` wide;
/// - LOOP 4: the shared dimension in slices of `KC`; the `KC x NC` slice of `b` is packed
///   into `NR`-wide micro-panels (zero padded), the first slice overwrites `c`, the others
///   add to it;
/// - LOOP 3: row blocks of `a` and `c`, `MC` tall; the `MC x KC` block of `a` is packed into
///   `MR`-tall micro-panels (only when enough micro-panels of `b` reuse it: for narrow
///   products the micro-kernel reads `a` in place);
/// - LOOP 2: micro-panels of `b` (`NR` columns);
/// - LOOP 1: micro-panels of `a` (`MR` rows), one micro-kernel call per `MR x NR` tile.
///
/// On x86 with AVX-512 the micro-kernel is the 24x16 (f32) or 24x8 (f64) register tile of
/// [`avx512`], with AVX2+FMA the 6x16 or 6x8 tile of [`avx2`] (conv2d's gather GEMM runs
/// the same tiles); elsewhere a portable 4x8 tile. Both x86 tiles are one vector row of `b`
/// wide, so `b` is packed the same way for either, and both keep the micro-panel of `b`
/// (`KC x 16` f32, 16 KiB) in L1.
mod packed {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Mutex, MutexGuard};

    use crate::exec::cpu::{avx512_tiles, level, wide_tiles, Level};

    /// Shared-dimension slice: a micro-panel of `b` (`KC x NR`) stays in L1.
    pub const KC: usize = 256;
    /// Row block: the packed block of `a` (`MC x KC`) stays in L2.
    pub const MC: usize = 144;
    /// Column block: the packed slice of `b` (`KC x NC`) stays in L2/L3.
    pub const NC: usize = 1024;
    /// `a` is packed only when at least this many micro-panels of `b` reuse it.
    const PACK_A_MIN_PANELS: usize = 3;
    /// Packed buffers start on a cache line.
    const ALIGN_BYTES: usize = 64;

    /// Elements of one packing buffer of `T`: the largest packed slice of `b` (`KC x NC`)
    /// and block of `a` (`MC x KC`) of any kernel, each with room to start on a cache line.
    ///
    /// Every buffer has this fixed size, so any product can use any buffer.
    pub const fn pack_len<T>() -> usize {
        KC * NC + MC * KC + 2 * (ALIGN_BYTES / std::mem::size_of::<T>())
    }

    // Whole micro-panels fit the blocks of every kernel (24 x 16, 24 x 8, 6 x 16, 6 x 8, 4 x 8).
    const _: () = assert!(NC.is_multiple_of(16) && MC.is_multiple_of(24));

    /// A float the packed GEMM handles: arithmetic plus a process-wide pool of packing buffers.
    pub trait PackElem:
        Copy
        + Default
        + PartialEq
        + Send
        + Sync
        + std::ops::Add<Output = Self>
        + std::ops::Mul<Output = Self>
        + 'static
    {
        /// The free packing buffers of this type.
        fn pool() -> &'static Pool<Self>;

        /// The free buffers for pre-packed `b` matrices of this type.
        fn shared_pool() -> &'static Mutex<Vec<Vec<Self>>>;

        /// Columns of the packed micro-panels of `b` for a product of `n` columns on this
        /// CPU's micro-kernel.
        fn nr(n: usize) -> usize;

        /// Rows of `b` in each slice of the shared dimension for a product with `k` of
        /// them: slices of `b` are packed (and pre-packed by [`prepack_b`]) this deep.
        fn slice_kc(k: usize) -> usize;

        /// Packs the `kc x nc` slice at `b` (row stride `ldb`) into `nr`-wide micro-panels,
        /// as [`pack_b`] does, with this CPU's fastest moves.
        ///
        /// # Safety
        /// As for [`pack_b`].
        unsafe fn pack_slice(
            kc: usize,
            nc: usize,
            nr: usize,
            b: *const Self,
            ldb: usize,
            dst: &mut [Self],
        );

        /// Runs the product on the best micro-kernel for this CPU, `b` from `src`.
        ///
        /// # Safety
        /// As for [`gemm_prepacked`].
        #[allow(clippy::too_many_arguments)]
        unsafe fn dispatch_on(
            m: usize,
            k: usize,
            n: usize,
            a: *const Self,
            lda: usize,
            b: BSrc<Self>,
            c: *mut Self,
            ldc: usize,
        );
    }

    /// Packing buffers shared by all threads: a product pops one, packs into it, and pushes
    /// it back, so once the pool holds one buffer per concurrent product nothing is allocated.
    ///
    /// A pool rather than thread-local buffers because [`reserve`] can then provision every
    /// thread of a parallel product up front, from the calling thread: a single warm-up call
    /// suffices even if its blocks all ran on one thread.
    pub struct Pool<T> {
        free: Mutex<Vec<Box<[T]>>>,
        /// Buffers made so far (free or in use).
        made: AtomicUsize,
    }

    impl<T> Pool<T> {
        pub const fn new() -> Pool<T> {
            Pool {
                free: Mutex::new(Vec::new()),
                made: AtomicUsize::new(0),
            }
        }

        fn free(&self) -> MutexGuard<'_, Vec<Box<[T]>>> {
            // A panic elsewhere cannot leave the list inconsistent: ignore poisoning.
            self.free.lock().unwrap_or_else(|e| e.into_inner())
        }
    }

    /// A fresh zeroed buffer of [`pack_len`] elements.
    #[cold]
    fn new_buffer<T: PackElem>() -> Box<[T]> {
        T::pool().made.fetch_add(1, Ordering::Relaxed);
        vec![T::default(); pack_len::<T>()].into_boxed_slice()
    }

    /// Makes sure at least `count` packing buffers of `T` exist (and the free list can take
    /// them all back without growing): call before running `count` products at once.
    pub fn reserve<T: PackElem>(count: usize) {
        let pool = T::pool();
        if pool.made.load(Ordering::Relaxed) >= count {
            return;
        }
        let mut free = pool.free();
        let made = pool.made.load(Ordering::Relaxed);
        let missing = count.saturating_sub(made);
        // Room for every buffer, including those in use now, to come back.
        let room = (made + missing).saturating_sub(free.len());
        free.reserve(room);
        for _ in 0..missing {
            let buf = new_buffer::<T>();
            free.push(buf);
        }
    }

    /// Runs `f` on a packing buffer of [`pack_len`] elements borrowed from the pool.
    #[inline(always)]
    fn with_pack<T: PackElem, R>(f: impl FnOnce(&mut [T]) -> R) -> R {
        let pool = T::pool();
        let popped = pool.free().pop();
        let mut buf = popped.unwrap_or_else(new_buffer::<T>);
        let r = f(&mut buf);
        pool.free().push(buf);
        r
    }

    /// Implements [`PackElem`] for a float type: its two buffer pools, and dispatch to the
    /// AVX-512 micro-kernel `$avx512`, the AVX2+FMA one `$avx2` or the portable tile.
    macro_rules! pack_elem {
        ($t:ty, $avx2:ty, $avx512:ty $(, $wide:path)?) => {
            impl PackElem for $t {
                fn shared_pool() -> &'static Mutex<Vec<Vec<$t>>> {
                    static POOL: Mutex<Vec<Vec<$t>>> = Mutex::new(Vec::new());
                    &POOL
                }

                fn pool() -> &'static Pool<$t> {
                    static POOL: Pool<$t> = Pool::new();
                    &POOL
                }

                #[inline]
                fn nr(n: usize) -> usize {
                    let _ = n;
                    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
                    {
                        const _: () = assert!(<$avx2 as Kernel>::NR == <$avx512 as Kernel>::NR);
                        $(if wide_tiles() {
                            let _ = $wide;
                            return wide::panel(n);
                        })?
                        if level() >= Level::Avx2Fma {
                            return <$avx2 as Kernel>::NR;
                        }
                    }
                    PNR
                }

                #[inline]
                unsafe fn pack_slice(kc: usize, nc: usize, nr: usize, b: *const $t, ldb: usize, dst: &mut [$t]) {
                    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
                    $(if wide_tiles() && nr.is_multiple_of(16) {
                        let _ = $wide;
                        // SAFETY: `wide_tiles` vouches for AVX-512; forwarded contract.
                        return unsafe { wide::pack_b(kc, nc, nr, b, ldb, dst) };
                    })?
                    // SAFETY: forwarded contract.
                    unsafe { pack_b(kc, nc, nr, b, ldb, dst) }
                }

                #[inline]
                fn slice_kc(k: usize) -> usize {
                    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
                    $(if wide_tiles() {
                        let _ = $wide;
                        return wide::slice_kc(k);
                    })?
                    KC.min(k)
                }

                #[inline]
                unsafe fn dispatch_on(
                    m: usize,
                    k: usize,
                    n: usize,
                    a: *const $t,
                    lda: usize,
                    b: BSrc<$t>,
                    c: *mut $t,
                    ldc: usize,
                ) {
                    // The driver is compiled inside each kernel's instruction set, so the
                    // micro-kernel and the packing loops inline into it.
                    /// [`driver_on`] on the AVX-512 tile, compiled for AVX-512.
                    ///
                    /// # Safety
                    /// AVX-512 F/VL/BW/DQ present; otherwise as for [`gemm_prepacked`].
                    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
                    #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
                    #[allow(clippy::too_many_arguments)]
                    unsafe fn driver_avx512(
                        m: usize,
                        k: usize,
                        n: usize,
                        a: *const $t,
                        lda: usize,
                        b: BSrc<$t>,
                        c: *mut $t,
                        ldc: usize,
                    ) {
                        // SAFETY: forwarded contract.
                        unsafe { driver_on::<$avx512>(m, k, n, a, lda, b, c, ldc) }
                    }

                    /// [`driver_on`] on the AVX2 tile, compiled for AVX2+FMA.
                    ///
                    /// # Safety
                    /// AVX2 and FMA present; otherwise as for [`gemm_prepacked`].
                    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
                    #[target_feature(enable = "avx2,fma")]
                    #[allow(clippy::too_many_arguments)]
                    unsafe fn driver_avx2(
                        m: usize,
                        k: usize,
                        n: usize,
                        a: *const $t,
                        lda: usize,
                        b: BSrc<$t>,
                        c: *mut $t,
                        ldc: usize,
                    ) {
                        // SAFETY: forwarded contract.
                        unsafe { driver_on::<$avx2>(m, k, n, a, lda, b, c, ldc) }
                    }

                    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
                    $(if wide_tiles() {
                        // SAFETY: `wide_tiles` is true only at `Level::Avx512`, as below for
                        // the AVX-512 driver.
                        return unsafe { $wide(m, k, n, a, lda, b, c, ldc) };
                    })?
                    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
                    if avx512_tiles() {
                        // SAFETY: `avx512_tiles` is true only at `Level::Avx512`, which
                        // `cpu::detect` grants only after detecting AVX-512 F/VL/BW/DQ, AVX2
                        // and FMA; the caller vouches for the extents.
                        return unsafe { driver_avx512(m, k, n, a, lda, b, c, ldc) };
                    } else if level() >= Level::Avx2Fma {
                        // SAFETY: `Level::Avx2Fma` or above is granted only after detecting
                        // AVX2 and FMA; the caller vouches for the extents.
                        return unsafe { driver_avx2(m, k, n, a, lda, b, c, ldc) };
                    }
                    // SAFETY: the portable tile needs no CPU feature; the caller vouches
                    // for the extents.
                    unsafe { driver_on::<Portable<$t>>(m, k, n, a, lda, b, c, ldc) }
                }
            }
        };
    }

    pack_elem!(f32, avx2::F32x6x16, avx512::F32x24x16, wide::driver);
    pack_elem!(f64, avx2::F64x6x8, avx512::F64x24x8);
    /// `c[m, n] = a[m, k] * b[k, n]` (row-major, row strides `lda`, `ldb`, `ldc`); `k > 0`.
    ///
    /// # Safety
    /// As for [`super::GemmElement::gemm_strided`].
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub unsafe fn gemm<T: PackElem>(
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
        if m == 0 || n == 0 {
            return;
        }
        // SAFETY: forwarded contract.
        unsafe { T::dispatch_on(m, k, n, a, lda, BSrc::Raw(b, ldb), c, ldc) }
    }

    /// As [`gemm`] with `b` stored transposed (element `(p, j)` at `b + j * ldbt + p`).
    ///
    /// # Safety
    /// As for [`super::GemmElement::gemm_strided_bt`]; `k > 0`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub unsafe fn gemm_bt<T: PackElem>(
        m: usize,
        k: usize,
        n: usize,
        a: *const T,
        lda: usize,
        b: *const T,
        ldbt: usize,
        c: *mut T,
        ldc: usize,
    ) {
        if m == 0 || n == 0 {
            return;
        }
        // SAFETY: forwarded contract.
        unsafe { T::dispatch_on(m, k, n, a, lda, BSrc::Transposed(b, ldbt), c, ldc) }
    }

    /// Where a micro-kernel reads element `(r, p)` of its `MR x kc` left operand.
    pub trait ASrc<T>: Copy {
        /// # Safety
        /// `r < MR`, `p < kc`, within what the source was built for.
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
        #[inline(always)]
        unsafe fn at(self, r: usize, p: usize) -> *const T {
            // SAFETY: the caller keeps (r, p) inside the run, which lies inside the source.
            unsafe { self.base.add(r * RS + *self.cols.add(p)) }
        }

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
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    ptr as *const i8,
                )
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
        /// The panels hold `kc` steps; `c` is valid for `mr` rows of `nr` at stride `ldc`.
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
        /// As for [`Kernel::packed`], and `a` is valid for `mr` rows of `kc` at stride `lda`.
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
    unsafe fn row_ptrs<T, const MR: usize>(a: *const T, lda: usize, mr: usize) -> [*const T; MR] {
        // SAFETY: r.min(mr - 1) < mr, and rows below `mr` are inside `a` (the caller's contract).
        std::array::from_fn(|r| unsafe { a.add(r.min(mr - 1) * lda) })
    }

    /// Rounds `x` up to a multiple of `to`.
    #[inline(always)]
    fn round_up(x: usize, to: usize) -> usize {
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
        unsafe fn slice(
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
                BSrc::Packed { base, n_pad, j0 } => unsafe {
                    base.add(pc * n_pad + (j0 + jc) * kc)
                },
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

    /// Runs `f` on a buffer of at least `len` elements for a pre-packed `b`, borrowed from a
    /// pool of such buffers (grown, never shrunk: steady-state shapes allocate nothing).
    pub fn with_prepacked<T: PackElem, R>(len: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
        let pool = T::shared_pool();
        let popped = pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut buf = popped.unwrap_or_default();
        if buf.len() < len {
            buf = vec![T::default(); len];
        }
        let r = f(&mut buf[..len]);
        pool.lock().unwrap_or_else(|e| e.into_inner()).push(buf);
        r
    }

    /// `c[m, n] = a[m, k] * b`, `b` pre-packed by [`prepack_b`] for `n_pad` columns and the
    /// product's columns starting at packed column `j0` (a multiple of 16); `m, n, k > 0`.
    ///
    /// # Safety
    /// As for [`gemm`], with `b` holding [`prepacked_len`] elements for (`k`, `n_pad`) and
    /// `j0 + n <= n_pad`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_prepacked<T: PackElem>(
        m: usize,
        k: usize,
        n: usize,
        a: *const T,
        lda: usize,
        b: *const T,
        n_pad: usize,
        j0: usize,
        c: *mut T,
        ldc: usize,
    ) {
        if m == 0 || n == 0 {
            return;
        }
        let src = BSrc::Packed { base: b, n_pad, j0 };
        // SAFETY: forwarded contract.
        unsafe { T::dispatch_on(m, k, n, a, lda, src, c, ldc) }
    }

    /// The BLIS loops around micro-kernel `K` (see the module docs), `b` read from `b`'s
    /// source; `m, n, k > 0`.
    ///
    /// # Safety
    /// As for [`gemm`] / [`gemm_prepacked`].
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn driver_on<K: Kernel>(
        m: usize,
        k: usize,
        n: usize,
        a: *const K::T,
        lda: usize,
        b: BSrc<K::T>,
        c: *mut K::T,
        ldc: usize,
    ) {
        let (mr_max, nr_max) = (K::MR, K::NR);
        let kc_max = k.min(KC);
        let nc_max = round_up(n.min(NC), nr_max);
        let pack_a = m > mr_max && nc_max / nr_max >= PACK_A_MIN_PANELS;
        let mc_max = if pack_a {
            round_up(m.min(MC), mr_max)
        } else {
            0
        };
        debug_assert!(kc_max * nc_max <= KC * NC && mc_max * kc_max <= MC * KC);
        let align = ALIGN_BYTES / std::mem::size_of::<K::T>();
        with_pack::<K::T, _>(|buf| {
            let skip = buf.as_ptr().align_offset(ALIGN_BYTES).min(align);
            let (bp, rest) = buf[skip..].split_at_mut(KC * NC);
            let skip_a = rest.as_ptr().align_offset(ALIGN_BYTES).min(align);
            let ap = &mut rest[skip_a..];
            // LOOP 5: column blocks of NC.
            for jc in (0..n).step_by(NC) {
                let nc = NC.min(n - jc);
                // LOOP 4: slices of KC of the shared dimension.
                for pc in (0..k).step_by(KC) {
                    let kc = KC.min(k - pc);
                    let accumulate = pc > 0;
                    let pack = |src, ldb, bp: &mut [K::T]| {
                        // SAFETY: rows pc..pc+kc, columns jc..jc+nc of `b` are in bounds.
                        unsafe { pack_b(kc, nc, nr_max, src, ldb, bp) }
                    };
                    // SAFETY: rows pc..pc+kc, columns jc..jc+nc of `b` are in bounds; a
                    // pre-packed `b` has panels of NR (j0 by the caller's contract, jc of NC).
                    let b_slice = unsafe { b.slice(pc, kc, jc, nc, nr_max, bp, pack) };
                    // LOOP 3: row blocks of MC.
                    for ic in (0..m).step_by(MC) {
                        let mc = MC.min(m - ic);
                        // SAFETY: ic < m and pc < k: element (ic, pc) is inside `a`.
                        let a_blk = unsafe { a.add(ic * lda + pc) };
                        if pack_a {
                            // SAFETY: rows ic..ic+mc, columns pc..pc+kc of `a` are in bounds.
                            unsafe { pack_a_block(mc, kc, mr_max, a_blk, lda, ap) };
                        }
                        // LOOP 2: micro-panels of NR columns.
                        for jr in (0..nc).step_by(nr_max) {
                            let nr = nr_max.min(nc - jr);
                            // SAFETY: panel jr of the slice (packed above or before).
                            let b_panel = unsafe { b_slice.add(jr * kc) };
                            // LOOP 1: micro-panels of MR rows.
                            for ir in (0..mc).step_by(mr_max) {
                                let mr = mr_max.min(mc - ir);
                                // SAFETY: the tile (ic+ir.., jc+jr..) of `c` holds mr x nr
                                // elements; the panels were packed for kc steps above.
                                unsafe {
                                    let c_tile = c.add((ic + ir) * ldc + jc + jr);
                                    if pack_a {
                                        K::packed(
                                            kc,
                                            ap[ir * kc..].as_ptr(),
                                            b_panel,
                                            c_tile,
                                            ldc,
                                            mr,
                                            nr,
                                            accumulate,
                                        );
                                    } else {
                                        K::rows(
                                            kc,
                                            a_blk.add(ir * lda),
                                            lda,
                                            b_panel,
                                            c_tile,
                                            ldc,
                                            mr,
                                            nr,
                                            accumulate,
                                        );
                                    }
                                }
                            }
                        }
                    }
                }
            }
        })
    }

    /// Packs the `kc x nc` slice at `b` into `nr`-wide micro-panels (`p * nr + j`), zero padded.
    ///
    /// # Safety
    /// `b` is valid for `kc` rows of `nc` at stride `ldb`.
    #[inline]
    unsafe fn pack_b<T: PackElem>(
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
                    let src: [T; CH] = unsafe {
                        std::ptr::read_unaligned(b.add(p * ldb + q * CH) as *const [T; CH])
                    };
                    dst.copy_from_slice(&src);
                }
            }
            return;
        }
        for (p, row) in out.chunks_exact_mut(NR).enumerate() {
            // SAFETY: row p holds NR elements (the caller's contract).
            let src: [T; NR] =
                unsafe { std::ptr::read_unaligned(b.add(p * ldb) as *const [T; NR]) };
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
    unsafe fn pack_a_block<T: PackElem>(
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

    /// The portable micro-kernel: a 4x8 tile the compiler vectorises for the baseline ISA.
    pub struct Portable<T>(std::marker::PhantomData<T>);

    /// Rows of the portable tile.
    const PMR: usize = 4;
    /// Columns of the portable tile.
    const PNR: usize = 8;

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

    /// The AVX2+FMA register tiles: 6 rows by two vectors (16 f32 or 8 f64 columns) is 12
    /// accumulators, plus 2 for a row of `b` and 1 broadcast: 15 of the 16 AVX2 registers.
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    pub mod avx2 {
        #[cfg(target_arch = "x86")]
        use std::arch::x86::*;
        #[cfg(target_arch = "x86_64")]
        use std::arch::x86_64::*;

        use super::{row_ptrs, ASrc, Kernel, Packed, Rows};

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
                        _mm_prefetch::<_MM_HINT_T0>(
                            row.wrapping_add(nr.saturating_sub(1)).cast::<i8>(),
                        );
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
                            $tile::<2, _>(
                                kc,
                                Packed::<$t, MR>(a),
                                b,
                                $nr,
                                c,
                                ldc,
                                mr,
                                nr,
                                accumulate,
                            )
                        }
                    }

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
    }
    /// The AVX-512 register tiles: 24 rows by one vector (16 f32 or 8 f64 columns) is 24
    /// accumulators, plus 1 for a row of `b` and the broadcasts: 26 of the 32 zmm registers.
    ///
    /// One vector wide like the AVX2 tiles, so `b` packs the same and its micro-panel stays
    /// 16 KiB (L1); 24 rows load one vector of `b` per 24 FMAs (AVX2's 6 x 16 loads two per
    /// 12). Column tails are stored through a mask, not a stack tile. Each output element is
    /// the same chain of FMAs in the same order as in the AVX2 tiles, so both give the same bits.
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    pub mod avx512 {
        #[cfg(target_arch = "x86")]
        use std::arch::x86::*;
        #[cfg(target_arch = "x86_64")]
        use std::arch::x86_64::*;

        use super::{row_ptrs, ASrc, Kernel, Packed, Rows};

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
                            $tile::<MR, _>(
                                kc,
                                Packed::<$t, MR>(a),
                                b,
                                $nr,
                                c,
                                ldc,
                                mr,
                                nr,
                                accumulate,
                            )
                        }
                    }

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
    }

    /// The AVX-512 f32 driver of products: 6-row tiles up to four vectors (64 columns) wide,
    /// the shape the `gemm` crate runs on AVX-512 (its 64 x 6 tile, transposed).
    ///
    /// Each step of the 6 x 64 tile loads four vectors of `b` and broadcasts six values of
    /// `a` for 24 FMAs: 10 loads per 24 FMAs, where the 24 x 16 tile needs 25. The loops
    /// differ from BLIS's ([`driver_on`]) as the `gemm` crate's do: a slice of `b` (`kc x
    /// NB`, packed in 64-wide micro-panels, or narrower for a narrow `b`) stays in L2 and each
    /// tile of rows walks it along its columns, so the six rows of `a` (read in place) stay
    /// in L1 while `b` streams from L2. `k` is cut into equal slices up to 512 deep (W2's
    /// 784 is two of 392, not 256 + 256 + 256 + 16), and the step loop is unrolled four
    /// times (12% faster than not unrolled on the Xeon: the loop's own bookkeeping).
    ///
    /// Every output element is the same chain of FMAs in the same order whatever the
    /// column panel, row block or pre-packing, so results do not depend on the thread count.
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    pub mod wide {
        #[cfg(target_arch = "x86")]
        use std::arch::x86::*;
        #[cfg(target_arch = "x86_64")]
        use std::arch::x86_64::*;

        use super::{with_pack, ASrc, BSrc, Rows, ALIGN_BYTES};

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

        const _: () = assert!(KC * NB <= super::KC * super::NC && NB.is_multiple_of(NR));

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

        /// One step `p` of a tile: `acc[r][w] += a(r, p) * b[p * ps + 16 w ..][..16]`.
        ///
        /// # Safety
        /// AVX-512 F present; `(r, p)` inside `a` for `r < 6`, `W` vectors of row `p` inside `b`.
        #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
        #[inline]
        unsafe fn step<const W: usize, A: ASrc<f32>>(
            acc: &mut [[__m512; W]; MR],
            a: A,
            b: *const f32,
            ps: usize,
            p: usize,
        ) {
            // SAFETY: vector w < W of row p is inside the caller's panel.
            let bv: [__m512; W] =
                std::array::from_fn(|w| unsafe { _mm512_loadu_ps(b.add(p * ps + w * L)) });
            for (r, acc_r) in acc.iter_mut().enumerate() {
                // SAFETY: r < 6: (r, p) is inside the caller's rows of `a`.
                let av = _mm512_set1_ps(unsafe { *a.at(r, p) });
                for w in 0..W {
                    acc_r[w] = _mm512_fmadd_ps(av, bv[w], acc_r[w]);
                }
            }
        }

        /// `c[..mr, ..nr] (+)= a[6, kc] * b[kc, 16 W]`: `a` read through `A`, `b` the first
        /// `W` vectors of a packed micro-panel (row `p` at `b + p * ps`).
        ///
        /// # Safety
        /// AVX-512 F present; `a` valid for `kc` steps of 6 rows, the panel for `kc` rows of
        /// `ps >= 16 W`, `c` valid for `mr <= 6` rows of `16 (W - 1) < nr <= 16 W` at stride `ldc`.
        #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
        #[inline]
        #[allow(clippy::too_many_arguments)]
        unsafe fn tile<const W: usize, A: ASrc<f32>>(
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
            let mut acc = [[_mm512_setzero_ps(); W]; MR];
            let whole = kc / UNROLL * UNROLL;
            let mut p = 0;
            while p < whole {
                for u in 0..UNROLL {
                    // SAFETY: p + u < kc: inside the caller's operands.
                    unsafe { step::<W, A>(&mut acc, a, b, ps, p + u) };
                }
                p += UNROLL;
            }
            while p < kc {
                // SAFETY: as above.
                unsafe { step::<W, A>(&mut acc, a, b, ps, p) };
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

        /// Packs the `kc x nb` slice at `b` (row stride `ldb`) into micro-panels `ps` wide
        /// (`ps` a multiple of 16; panel `q` at `q * kc * ps`, row `p` of it at `+ p * ps`),
        /// zero padded, as [`super::pack_b`] does, row by row of `b` with 512-bit moves.
        ///
        /// # Safety
        /// AVX-512 F present; `b` valid for `kc` rows of `nb` at stride `ldb`; `dst` holds
        /// `kc * round_up(nb, ps)` elements.
        #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
        #[inline]
        pub unsafe fn pack_b(
            kc: usize,
            nb: usize,
            ps: usize,
            b: *const f32,
            ldb: usize,
            dst: &mut [f32],
        ) {
            let panels = nb.div_ceil(ps);
            assert!(ps.is_multiple_of(L) && dst.len() >= kc * panels * ps);
            let d = dst.as_mut_ptr();
            for p in 0..kc {
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
                                _mm512_maskz_loadu_ps(
                                    ((1u32 << lanes) - 1) as __mmask16,
                                    src.add(j),
                                )
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
        /// [`super::gemm_prepacked`].
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
                        // LOOP 3: tiles of 6 rows; their rows of `a` stay in L1.
                        for ir in (0..m).step_by(MR) {
                            let mr = MR.min(m - ir);
                            // `a` read in place; a short tile repeats its last row (never stored).
                            // SAFETY: rows ir..ir+mr, columns pc..pc+kc of `a` are in bounds.
                            let rows = Rows::<f32, MR>(std::array::from_fn(|r| unsafe {
                                a.add((ir + r.min(mr - 1)) * lda + pc)
                            }));
                            // LOOP 2: tiles of up to 64 columns, along the slice of `b`.
                            for jr in (0..nb).step_by(ps) {
                                let nr = ps.min(nb - jr);
                                // SAFETY: the tile (ir.., jc+jr..) of `c` holds mr x nr
                                // elements; the panel at jr of the slice holds kc steps of ps.
                                unsafe {
                                    let bt = b_slice.add(jr * kc);
                                    let ct = c.add(ir * ldc + jc + jr);
                                    match nr.div_ceil(L) {
                                        4 => tile::<4, _>(
                                            kc, rows, bt, ct, ps, ldc, mr, nr, accumulate,
                                        ),
                                        3 => tile::<3, _>(
                                            kc, rows, bt, ct, ps, ldc, mr, nr, accumulate,
                                        ),
                                        2 => tile::<2, _>(
                                            kc, rows, bt, ct, ps, ldc, mr, nr, accumulate,
                                        ),
                                        _ => tile::<1, _>(
                                            kc, rows, bt, ct, ps, ldc, mr, nr, accumulate,
                                        ),
                                    }
                                }
                            }
                        }
                    }
                }
            })
        }
    }
}

/// conv2d's f32 gather GEMM on the packed GEMM's AVX-512 or AVX2+FMA micro-kernel
/// ([`packed::avx512`], [`packed::avx2`]): the left operand is gathered through an offset
/// table, `b` is read in place.
mod gather_f32 {
    use crate::exec::cpu::{level, Level};
    use std::mem::MaybeUninit;

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
                super::packed::avx512::MR
            } else {
                super::packed::avx2::MR
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
        super::gather_rows_in_chunks(first, stride, done..rows, n, out, |table, out| {
            gemm_gather(src, table, cols, b, n, out)
        });
    }

    /// Pixels of one output row a [`conv_rows_kw3`] tile computes.
    const KW3_TILE: usize = 24;

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

    /// One tile of [`conv_rows_kw3`]: 24 output pixels x 16 channels in 24 zmm accumulators.
    /// For each kernel row and input channel the three weight vectors (kernel columns 0, 1,
    /// 2) stay in registers and each of the 26 input pixels the tile's patches cover is
    /// broadcast once for the (up to) three outputs it feeds: 26 loads for 72 FMAs, where the
    /// 24 x 16 tile does 24 for 24. Output `r` accumulates in the order (kernel row, channel,
    /// column), the order of the reordered kernel's rows.
    ///
    /// # Safety
    /// AVX-512 F present; `x` valid for `kh` rows (`row_stride` apart) of 26 pixels of `cin`;
    /// `b` for `3 * kh * cin` rows of 16 at stride `ldb`; `c` for 24 rows of 16 at stride `ldb`.
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
    unsafe fn tile_kw3(
        x: *const f32,
        row_stride: usize,
        kh: usize,
        cin: usize,
        b: *const f32,
        ldb: usize,
        c: *mut f32,
    ) {
        #[cfg(target_arch = "x86")]
        use std::arch::x86::*;
        #[cfg(target_arch = "x86_64")]
        use std::arch::x86_64::*;
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
        use super::packed::{avx2, avx512 as zmm, Strided};
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
                            zmm::tile_f32::<{ zmm::MR }, _>(
                                cols.len(),
                                a,
                                bp,
                                n,
                                o,
                                n,
                                mr,
                                16,
                                false,
                            );
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
        use super::packed::avx512::{tile_f32, MR};
        use super::packed::Gather;
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
            // A short tile repeats its last row; only `mr` rows are stored.
            let a = Gather::<f32, R> {
                rows: std::array::from_fn(|r| {
                    // SAFETY: the index is below src.len() (asserted by the caller).
                    unsafe { src.as_ptr().add(rows[r0 + r.min(mr - 1)]) }
                }),
                cols: cols.as_ptr(),
            };
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
        use super::packed::avx2::{tile_f32, MR};
        use super::packed::Gather;
        let mut j0 = 0;
        while j0 < n {
            let wide = n - j0 >= 16;
            let mut r0 = 0;
            while r0 < rows.len() {
                let mr = (rows.len() - r0).min(MR);
                // A short tile repeats its last row; only `mr` rows are stored.
                let a = Gather::<f32, MR> {
                    rows: std::array::from_fn(|r| {
                        // SAFETY: the index is below src.len() (asserted by the caller).
                        unsafe { src.as_ptr().add(rows[r0 + r.min(mr - 1)]) }
                    }),
                    cols: cols.as_ptr(),
                };
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
}
