//! The float GEMM core: a BLIS-style packed GEMM whose packing buffers live in a
//! thread-local vector reused across calls, so steady-state products allocate nothing.
//!
//! Loop structure (as in BLIS and `matrixmultiply`):
//! - LOOP 5: column blocks of `b` and `c`, `NC` wide;
//! - LOOP 4: the shared dimension in slices of `KC`; the `KC x NC` slice of `b` is packed
//!   into `NR`-wide micro-panels (zero padded), the first slice overwrites `c`, the others
//!   add to it;
//! - LOOP 3: row blocks of `a` and `c`, `MC` tall; the `MC x KC` block of `a` is packed into
//!   `MR`-tall micro-panels (only when enough micro-panels of `b` reuse it: for narrow
//!   products the micro-kernel reads `a` in place);
//! - LOOP 2: micro-panels of `b` (`NR` columns);
//! - LOOP 1: micro-panels of `a` (`MR` rows), one micro-kernel call per `MR x NR` tile.
//!
//! On x86 with AVX-512 the micro-kernel is the 24x16 (f32) or 24x8 (f64) register tile of
//! `avx512.rs`, with AVX2+FMA the 6x16 or 6x8 tile of `avx2.rs` (conv2d's gather GEMM runs
//! the same tiles); elsewhere a portable 4x8 tile. Both x86 tiles are one vector row of `b`
//! wide, so `b` is packed the same way for either, and both keep the micro-panel of `b`
//! (`KC x 16` f32, 16 KiB) in L1.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::kernel::Kernel;
use super::pack::{pack_a_block, pack_b, round_up, BSrc};
use super::portable::{Portable, PNR};
use super::scratch::ScratchPool;
#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
use super::{avx2, avx512, avx512_wide};
use crate::exec::cpu::{avx512_tiles, level, wide_tiles, Level};

/// Shared-dimension slice: a micro-panel of `b` (`KC x NR`) stays in L1. (Under Miri the
/// three blocks are small, so that a packing buffer is quick to make and small shapes cross
/// slice and block boundaries.)
pub const KC: usize = if cfg!(miri) { 16 } else { 256 };
/// Row block: the packed block of `a` (`MC x KC`) stays in L2.
pub const MC: usize = if cfg!(miri) { 24 } else { 144 };
/// Column block: the packed slice of `b` (`KC x NC`) stays in L2/L3.
pub const NC: usize = if cfg!(miri) { 32 } else { 1024 };
/// `a` is packed only when at least this many micro-panels of `b` reuse it.
const PACK_A_MIN_PANELS: usize = 3;
/// Packed buffers start on a cache line.
pub(super) const ALIGN_BYTES: usize = 64;

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
    fn shared_pool() -> &'static ScratchPool<Self>;

    /// Columns of the packed micro-panels of `b` for a product of `n` columns on this
    /// CPU's micro-kernel.
    fn nr(n: usize) -> usize;

    /// Rows of `b` in each slice of the shared dimension for a product with `k` of
    /// them: slices of `b` are packed (and pre-packed by [`prepack_b`](super::pack::prepack_b)) this deep.
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
pub(super) fn with_pack<T: PackElem, R>(f: impl FnOnce(&mut [T]) -> R) -> R {
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
            fn shared_pool() -> &'static ScratchPool<$t> {
                static POOL: ScratchPool<$t> = ScratchPool::new();
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
                        return avx512_wide::panel(n);
                    })?
                    if level() >= Level::Avx2Fma {
                        return <$avx2 as Kernel>::NR;
                    }
                }
                PNR
            }

            /// # Safety
            /// As for [`PackElem::pack_slice`]: `b` valid for `kc` rows of `nc` at stride
            /// `ldb`; `dst` holds the packed slice (`kc * round_up(nc, nr)` elements, which
            /// the packing loops check).
            #[inline]
            unsafe fn pack_slice(kc: usize, nc: usize, nr: usize, b: *const $t, ldb: usize, dst: &mut [$t]) {
                #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
                $(if wide_tiles() && nr.is_multiple_of(16) {
                    let _ = $wide;
                    // SAFETY: `wide_tiles` vouches for AVX-512; forwarded contract.
                    return unsafe { avx512_wide::pack_b(kc, nc, nr, b, ldb, dst) };
                })?
                // SAFETY: forwarded contract.
                unsafe { pack_b(kc, nc, nr, b, ldb, dst) }
            }

            #[inline]
            fn slice_kc(k: usize) -> usize {
                #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
                $(if wide_tiles() {
                    let _ = $wide;
                    return avx512_wide::slice_kc(k);
                })?
                KC.min(k)
            }

            /// # Safety
            /// As for [`PackElem::dispatch_on`]: `m, n, k > 0`; `a` valid for `m` rows of `k`
            /// at stride `lda`; `b` valid for `k` rows and `n` columns as its [`BSrc`] says
            /// (a pre-packed one packed by `prepack_b` for this CPU, with `j0 + n <= n_pad`);
            /// `c` valid for `m` rows of `n` at stride `ldc`, overlapping neither and touched
            /// by no other thread during the call.
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

pack_elem!(f32, avx2::F32x6x16, avx512::F32x24x16, avx512_wide::driver);
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

/// Runs `f` on a buffer of at least `len` elements for a pre-packed `b`, borrowed from a
/// pool of such buffers (grown, never shrunk: steady-state shapes allocate nothing).
pub fn with_prepacked<T: PackElem, R>(len: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
    T::shared_pool().with(len, f)
}

/// `c[m, n] = a[m, k] * b`, `b` pre-packed by [`prepack_b`](super::pack::prepack_b) for `n_pad` columns and the
/// product's columns starting at packed column `j0` (a multiple of 16); `m, n, k > 0`.
///
/// # Safety
/// As for [`gemm`], with `b` holding [`prepacked_len`](super::pack::prepacked_len) elements for (`k`, `n_pad`) and
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
