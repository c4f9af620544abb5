//! conv2d's plan for deep kernels (ResNet's later stages: few output pixels, many channels, long patches): im2col of large blocks of pixels, then the GEMM split over output channels as well as pixels, so that every thread is busy and the kernel is read once per block instead of once per short run of pixels.
//!
//! The gather path of [`crate::linalg::conv`] cuts a block of output pixels into runs of one
//! kind (interior or border) and multiplies each run by the whole kernel, read in place. A
//! kernel that fits in L2 does not mind; a 3x3 kernel of 512 input and 512 output channels is
//! 9.4 MB, and ResNet-18's 7x7 maps at batch 1 have runs of one to five pixels, so that layer
//! streamed its kernel from memory some twenty times a call and ran at a tenth of the GEMM's
//! speed (see `docs/bench/models-large.md`). Here, for a kernel of at least
//! [`DEEP_KERNEL_BYTES`], the output pixels are cut into few blocks ([`patch_plan`]): each
//! block gathers its patches into one scratch matrix and runs the packed GEMM on it, whose
//! loops pack each slice of the kernel once for every row of the block. When there are fewer
//! blocks than threads (batch 1), each block's GEMM is split into column panels (output
//! channels) that run in parallel, each reading only its share of the kernel.
//!
//! Values: a block computes exactly what the im2col path ([`Algorithm::Im2colGemm`]) computes,
//! patch columns in (kernel row, kernel column, channel) order through
//! [`GemmElement::gemm_strided`], whose every output element is one chain of multiply-adds in
//! an order fixed by the shape, whatever the rows and columns of the call. So the results do
//! not depend on the blocks, the panels or the thread count. They differ in the last bits from
//! the gather path's (which sums kernel row, channel, kernel column), which is why the plan is
//! chosen from the shape alone (`best_plan`) and every entry point (the compiled kernels, the
//! fused pooling, the eager API) chooses the same.
//!
//! [`Algorithm::Im2colGemm`]: crate::linalg::conv::Algorithm::Im2colGemm

use rayon::prelude::*;

use super::conv::{im2col_pixel, Geometry, Pixel, SEQUENTIAL_MACS};
use super::gemm::{col_align, gemm_row_align, GemmElement};

/// A kernel matrix (`KH*KW*Cin x Cout`) of at least this many bytes runs on the patch GEMM:
/// past half of the 2 MiB L2 the gather path's in-place reads of it come from L3 or memory.
/// ResNet-18's stage-3 and stage-4 3x3 kernels (1.2 to 9.4 MB) take it, stage 2's (0.3 and
/// 0.6 MB) and every small CNN's do not.
pub const DEEP_KERNEL_BYTES: usize = 1 << 20;

/// Largest im2col matrix of one block, in bytes: fewer, taller blocks pack each slice of the
/// kernel fewer times, and the GEMM reads the matrix one slice of columns at a time, so it
/// need not fit in L2.
pub const PATCH_BLOCK_BYTES: usize = 1 << 22;

/// A patch of at least this many elements, with at least [`WIDE_COUT`] output channels,
/// runs on the im2col path rather than the gather kernel, though its kernel is not deep:
/// the packed GEMM's tiles beat the gather tile there (ResNet-18's stage 1 and 2 3x3
/// convolutions, 576 and 1152 deep: the gather kernel ran the 28x28x128 one at a third of
/// the im2col path's speed, see `docs/bench/models-large.md`). The small CNNs' (W3's and
/// W7's, patches of 27 to 288) keep the gather kernel, which spares them the copy.
pub const WIDE_PATCH: usize = 512;

/// See [`WIDE_PATCH`].
pub const WIDE_COUT: usize = 64;

/// How a convolution is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Plan {
    /// The gather kernel where this CPU has one, else [`Plan::Im2col`].
    Gather,
    /// im2col of blocks of pixels sized for L2, then the GEMM.
    Im2col,
    /// im2col of large blocks, then the GEMM split over pixels and output channels
    /// ([`run_patch_gemm`]); the same values as [`Plan::Im2col`].
    PatchGemm,
}

/// The plan [`Algorithm::Best`](crate::linalg::conv::Algorithm::Best) takes for geometry
/// `g` on elements of `elem` bytes: from the shape alone, never the thread count or the CPU
/// (the gather path's and the im2col path's sums differ in order, and the compiled, fused
/// and eager paths must agree bit for bit).
pub(super) fn best_plan(g: &Geometry, elem: usize) -> Plan {
    let patch = g.patch();
    if patch > 0 && patch.saturating_mul(g.cout).saturating_mul(elem) >= DEEP_KERNEL_BYTES {
        Plan::PatchGemm
    } else if patch >= WIDE_PATCH && g.cout >= WIDE_COUT {
        Plan::Im2col
    } else {
        Plan::Gather
    }
}

/// How the output of a patch GEMM is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchPlan {
    /// Output pixels per block (the last may be shorter); the blocks run in parallel.
    pub rows: usize,
    /// Output channels per column panel (`>= n` when blocks are not split); the panels of a
    /// block run in parallel, then the block's epilogue.
    pub cols: usize,
}

/// Plans the blocks of a patch GEMM with `pixels` output pixels, `patch` elements a patch of
/// `elem` bytes, `n` output channels, on `threads` threads whose GEMM tiles are `row_align`
/// rows and `col_align` columns.
///
/// Blocks keep their im2col matrix under [`PATCH_BLOCK_BYTES`], in whole rounds of `threads`.
/// When that leaves fewer blocks than threads, the larger operand is split: the kernel (column
/// panels, each thread packing only its part) when there are fewer pixels than channels, the
/// pixels otherwise.
pub fn patch_plan(
    pixels: usize,
    patch: usize,
    n: usize,
    elem: usize,
    threads: usize,
    (row_align, col_align): (usize, usize),
) -> PatchPlan {
    let threads = threads.max(1);
    let by_cache = pixels
        .saturating_mul(patch)
        .saturating_mul(elem)
        .div_ceil(PATCH_BLOCK_BYTES)
        .max(1);
    let most_panels = (n / col_align.max(1)).max(1);
    let (blocks, panels) = if by_cache >= threads {
        (by_cache.div_ceil(threads) * threads, 1)
    } else if pixels < n && most_panels >= threads / by_cache {
        (by_cache, threads / by_cache)
    } else {
        (threads, 1)
    };
    let row_align = row_align.max(1);
    let rows = pixels.div_ceil(blocks).div_ceil(row_align) * row_align;
    let cols = n.div_ceil(panels).div_ceil(col_align.max(1)) * col_align.max(1);
    PatchPlan {
        rows: rows.clamp(1, pixels.max(1)),
        cols: cols.max(1),
    }
}

/// A pointer to a block's output that the parallel column panels share, each writing only its
/// own columns.
#[derive(Clone, Copy)]
struct Shared<T>(*mut T);

// SAFETY: the panels that share the pointer write disjoint columns of the block, and the block
// outlives the parallel loop over them.
unsafe impl<T: Send> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// The element `offset` past the start (a method, so that a closure captures the whole
    /// `Shared`, not its raw pointer).
    ///
    /// # Safety
    /// `offset` is inside the block.
    unsafe fn at(self, offset: usize) -> *mut T {
        // SAFETY: the caller keeps `offset` inside the block.
        unsafe { self.0.add(offset) }
    }
}

/// The whole convolution of geometry `g` into `out` (`[pixels, Cout]`, initialised) on the
/// patch GEMM: blocks of [`patch_plan`] in parallel, then `epilogue(first_pixel, block)` and
/// `observe(first_element, block)` on each finished block, as
/// [`crate::linalg::conv::conv2d_buf`] promises them. The caller has checked the slices'
/// lengths.
pub(super) fn run_patch_gemm<T: GemmElement>(
    g: &Geometry,
    x: &[T],
    k: &[T],
    out: &mut [T],
    epilogue: &(impl Fn(usize, &mut [T]) + Sync),
    observe: &(impl Fn(usize, &[T]) + Sync),
) {
    let (n, patch) = (g.cout, g.patch());
    if out.is_empty() {
        return;
    }
    let pixels = out.len() / n;
    if pixels.saturating_mul(patch).saturating_mul(n) < SEQUENTIAL_MACS {
        patch_block(g, x, k, 0, out, n);
        epilogue(0, out);
        observe(0, out);
        return;
    }
    let threads = rayon::current_num_threads().max(1);
    let plan = patch_plan(
        pixels,
        patch,
        n,
        std::mem::size_of::<T>(),
        threads,
        (gemm_row_align::<T>(), col_align()),
    );
    // Every thread's im2col matrix and GEMM packing buffer, before the loop (see
    // `ScratchPool`): at most one block a thread borrows a matrix at a time.
    T::reserve_scratch(threads, block_scratch(g, plan.rows));
    T::reserve_gemm(threads);
    // LOOP 1 (parallel): over blocks of `plan.rows` output pixels.
    out.par_chunks_mut(plan.rows * n)
        .enumerate()
        .for_each(|(bi, block)| {
            let p0 = bi * plan.rows;
            patch_block(g, x, k, p0, block, plan.cols);
            epilogue(p0, block);
            observe(p0 * n, block);
        });
}

/// Scratch elements a block of `rows` pixels borrows: its im2col matrix, or none when the
/// input rows are the patches already.
fn block_scratch(g: &Geometry, rows: usize) -> usize {
    if g.is_pointwise() {
        0
    } else {
        rows * g.patch()
    }
}

/// Pixels `p0..p0 + block.len() / Cout` into `block`: their patches gathered into scratch (or
/// read in place for a pointwise kernel), then the GEMM by the kernel `k`, in column panels of
/// `cols` that run in parallel when `cols` is narrower than the output.
fn patch_block<T: GemmElement>(
    g: &Geometry,
    x: &[T],
    k: &[T],
    p0: usize,
    block: &mut [T],
    cols: usize,
) {
    let (n, patch) = (g.cout, g.patch());
    let rows = block.len() / n;
    if patch == 0 {
        // No input channels: every sum is empty.
        block.fill(T::ZERO);
        return;
    }
    if g.is_pointwise() {
        return gemm_panels(
            rows,
            patch,
            n,
            &x[p0 * patch..(p0 + rows) * patch],
            k,
            block,
            cols,
        );
    }
    T::with_scratch(rows * patch, |a| {
        // LOOP 2: over the block's pixels, gathering each patch.
        let mut px = Pixel::at(g, p0);
        for row in a.chunks_exact_mut(patch) {
            im2col_pixel(x, g, px, row);
            px.step(g);
        }
        gemm_panels(rows, patch, n, a, k, block, cols);
    });
}

/// `c[m, n] = a[m, k] * b[k, n]` (contiguous, row-major), in column panels of `cols` on
/// rayon when that is narrower than `n`; each element's value is the same either way.
fn gemm_panels<T: GemmElement>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    b: &[T],
    c: &mut [T],
    cols: usize,
) {
    if cols >= n {
        return T::gemm_block(m, k, n, a, b, c);
    }
    assert!(
        a.len() >= m * k && b.len() >= k * n && c.len() >= m * n,
        "gemm_panels: operands too short"
    );
    let out = Shared(c.as_mut_ptr());
    // LOOP 3 (parallel): over column panels; the GEMM core runs the rest.
    (0..n.div_ceil(cols)).into_par_iter().for_each(|panel| {
        let j0 = panel * cols;
        let w = cols.min(n - j0);
        // SAFETY: `a` holds m rows of k, `b` k rows of n and `c` m rows of n (asserted
        // above); this panel's columns j0..j0 + w lie inside them, and no other panel writes
        // them.
        unsafe { T::gemm_strided(m, k, w, a.as_ptr(), k, b.as_ptr().add(j0), n, out.at(j0), n) }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const TILES: (usize, usize) = (6, 64);

    #[test]
    fn batch_one_splits_the_kernel_between_the_threads() {
        // ResNet-18's stage 4 at batch 1: 49 pixels, 4608-deep patches, 512 channels.
        let plan = patch_plan(49, 4608, 512, 4, 2, TILES);
        assert_eq!(
            plan,
            PatchPlan {
                rows: 49,
                cols: 256
            }
        );
        // Stage 3: 196 pixels, 256 channels.
        let plan = patch_plan(196, 2304, 256, 4, 2, TILES);
        assert_eq!(
            plan,
            PatchPlan {
                rows: 196,
                cols: 128
            }
        );
    }

    #[test]
    fn many_pixels_split_into_rounds_of_blocks() {
        // Stage 3 at batch 8: 1568 pixels of 9 KiB patches, 14 MiB of im2col in all.
        let plan = patch_plan(1568, 2304, 256, 4, 2, TILES);
        assert_eq!(plan.cols, 256);
        assert_eq!(1568usize.div_ceil(plan.rows), 4);
        assert!(plan.rows * 2304 * 4 <= PATCH_BLOCK_BYTES);
        // More pixels than channels and one block's worth: the pixels are split.
        let plan = patch_plan(300, 512, 256, 4, 2, TILES);
        assert_eq!(
            plan,
            PatchPlan {
                rows: 150,
                cols: 256
            }
        );
    }

    #[test]
    fn narrow_outputs_and_one_thread_are_not_split() {
        let plan = patch_plan(7, 4608, 64, 4, 2, TILES);
        assert_eq!(plan.cols, 64);
        let plan = patch_plan(49, 4608, 512, 4, 1, TILES);
        assert_eq!(
            plan,
            PatchPlan {
                rows: 49,
                cols: 512
            }
        );
        // Degenerate sizes still give positive blocks.
        let plan = patch_plan(0, 0, 0, 4, 2, TILES);
        assert!(plan.rows >= 1 && plan.cols >= 1);
    }
}
