//! conv2d (NHWC input, HWIO kernel, stride, SAME/VALID padding) as im2col + GEMM per block of output pixels, with an epilogue hook.
//!
//! The output pixels (flat over batch, row and column) are cut into blocks that run on
//! rayon. Each block gathers its input patches into a thread-local scratch matrix
//! `[pixels, KH*KW*Cin]` (im2col), multiplies it by the kernel seen as a
//! `[KH*KW*Cin, Cout]` matrix straight into its part of the output, and hands that part to
//! the epilogue while it is still in cache. Which kernel a shape runs on (the gather kernel
//! below, im2col + GEMM, or for deep kernels [`conv_plan`]'s patch GEMM split over output
//! channels) is `conv_plan::best_plan`'s choice, made from the shape alone.

use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::sync::{Arc, Mutex};

use super::conv_plan::{self, best_plan, Plan};
use super::gemm::{row_align, GemmElement};
use crate::dtype::Element;
use crate::exec::out_buf::OutBuf;

// The padding modes are shared with pooling, so they live with the kernels; `conv::Padding`
// is the path `#[graph]` code and the facade name them by.
pub use crate::kernels::padding::{Padding, SAME, VALID};

/// Target size in bytes of one block's im2col matrix: it should stay in L2 while the GEMM reads it.
pub const IM2COL_BLOCK_BYTES: usize = 1 << 17;

/// Target size in bytes of one block of output: it should stay in L2 until the epilogue has run.
pub const OUT_BLOCK_BYTES: usize = 1 << 18;

/// Pixels handed to one gather-GEMM call (the size of its stack table of row offsets): three
/// whole tiles of the 24-row AVX-512 kernel, twelve of the 6-row AVX2 one.
const GATHER_PIXELS: usize = 72;

/// Convolutions with fewer multiply-adds than this run on the calling thread.
pub const SEQUENTIAL_MACS: usize = if cfg!(miri) { 1 << 8 } else { 1 << 16 };

/// How many blocks each rayon thread should get at least, for load balance.
pub const BLOCKS_PER_THREAD: usize = 4;

/// The output height and width of a convolution, as TensorFlow computes them.
///
/// `None` if the stride is 0, the kernel is empty, or a VALID kernel is larger than the input.
pub fn conv2d_output_hw(
    h: usize,
    w: usize,
    kh: usize,
    kw: usize,
    stride: usize,
    padding: Padding,
) -> Option<(usize, usize)> {
    if stride == 0 || kh == 0 || kw == 0 {
        return None;
    }
    match padding {
        Padding::Same => Some((h.div_ceil(stride), w.div_ceil(stride))),
        Padding::Valid => {
            if kh > h || kw > w {
                return None;
            }
            Some(((h - kh) / stride + 1, (w - kw) / stride + 1))
        }
    }
}

/// Padding before the first row (or column): TensorFlow puts the odd pixel after.
fn pad_before(
    input: usize,
    output: usize,
    kernel: usize,
    stride: usize,
    padding: Padding,
) -> usize {
    match padding {
        Padding::Valid => 0,
        Padding::Same => ((output.saturating_sub(1)) * stride + kernel).saturating_sub(input) / 2,
    }
}

/// The geometry of one convolution, resolved once.
#[derive(Debug, Clone, Copy)]
pub(super) struct Geometry {
    h: usize,
    w: usize,
    cin: usize,
    kh: usize,
    kw: usize,
    pub(super) cout: usize,
    oh: usize,
    ow: usize,
    stride: usize,
    pad_top: usize,
    pad_left: usize,
}

impl Geometry {
    /// Columns of the im2col matrix: one patch.
    pub(super) fn patch(&self) -> usize {
        self.kh * self.kw * self.cin
    }

    /// One past the last output column whose patch lies inside the input horizontally (0 when
    /// none does).
    fn interior_end(&self) -> usize {
        match (self.w + self.pad_left).checked_sub(self.kw) {
            Some(last) => (last / self.stride + 1).min(self.ow),
            None => 0,
        }
    }

    /// Whether im2col is the identity (a 1x1 kernel at stride 1 without padding).
    pub(super) fn is_pointwise(&self) -> bool {
        self.kh == 1 && self.kw == 1 && self.stride == 1 && self.pad_top == 0 && self.pad_left == 0
    }
}

/// `out = conv2d(x, k)` with `x` `[N, H, W, Cin]`, `k` `[KH, KW, Cin, Cout]`, `out`
/// `[N, OH, OW, Cout]`, all row-major; then `epilogue(first_pixel, block)` on each finished
/// block of output pixels (`block` holds `pixels * Cout` elements, pixels counted flat over
/// `N, OH, OW`). Every output element is passed to the epilogue exactly once.
///
/// Panics if the shapes disagree or a slice has the wrong length (callers check first).
#[allow(clippy::too_many_arguments)]
pub fn conv2d_into<T: GemmElement, E>(
    x: &[T],
    x_shape: [usize; 4],
    k: &[T],
    k_shape: [usize; 4],
    stride: usize,
    padding: Padding,
    out: &mut [T],
    epilogue: E,
) where
    E: Fn(usize, &mut [T]) + Sync,
{
    conv2d_with(
        x,
        x_shape,
        k,
        k_shape,
        stride,
        padding,
        out,
        epilogue,
        Algorithm::Best,
    )
}

/// How [`conv2d_with`] computes a convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// The gather (implicit GEMM) kernel where this CPU has one, else im2col + GEMM: what
    /// [`conv2d_into`] runs.
    Best,
    /// im2col of each block of pixels into a scratch matrix, then the packed GEMM (for
    /// benchmarking the two against each other).
    Im2colGemm,
    /// The plan [`Algorithm::Best`] takes for a deep kernel ([`conv_plan`]): im2col of
    /// large blocks of pixels, then the GEMM split over output channels as well as pixels.
    /// The same values, bit for bit, as [`Algorithm::Im2colGemm`].
    PatchGemm,
}

/// [`conv2d_into`] with the algorithm chosen by the caller; the results agree to rounding.
#[allow(clippy::too_many_arguments)]
pub fn conv2d_with<T: GemmElement, E>(
    x: &[T],
    x_shape: [usize; 4],
    k: &[T],
    k_shape: [usize; 4],
    stride: usize,
    padding: Padding,
    out: &mut [T],
    epilogue: E,
    algorithm: Algorithm,
) where
    E: Fn(usize, &mut [T]) + Sync,
{
    let prepared = Prepared::new::<T>(x_shape, k_shape, stride, padding, algorithm);
    prepared.run(x, k, out, &epilogue, &|_: usize, _: &[T]| {});
}

/// [`conv2d_into`] into an output buffer that may be fresh memory ([`OutBuf`]): the gather
/// kernel stores every element once, so a fresh buffer is never zeroed first (zeroing W3's
/// 16 MiB result cost a pass over it each call); a reused buffer, or a convolution without
/// the gather kernel, goes through [`conv2d_into`]. Every element is initialised when it
/// returns, and the epilogue sees each one once, after the kernel wrote it.
///
/// Then `observe(first_element, block)` runs on each finished parallel block of the output
/// (after the epilogue, while the block is still in cache; `first_element` counts flat over
/// the whole output); the blocks cover the output once. A fused all-axes reduction of the
/// result records its partial sums there ([`crate::kernels::reduce_blocks::BlockLanes::record`])
/// instead of reading the result back from memory; other callers pass `|_, _| {}`.
///
/// Panics as [`conv2d_into`] does.
#[allow(clippy::too_many_arguments)]
pub fn conv2d_buf<T: GemmElement + Element, E, O>(
    x: &[T],
    x_shape: [usize; 4],
    k: &[T],
    k_shape: [usize; 4],
    stride: usize,
    padding: Padding,
    out: &mut OutBuf<T>,
    epilogue: E,
    observe: O,
) where
    E: Fn(usize, &mut [T]) + Sync,
    O: Fn(usize, &[T]) + Sync,
{
    let prepared = Prepared::new::<T>(x_shape, k_shape, stride, padding, Algorithm::Best);
    let cout = k_shape[3];
    let t = match &prepared.gather {
        Some(t) if !out.is_initialised() => t,
        _ => return prepared.run(x, k, out.initialise_mut(), &epilogue, &observe),
    };
    prepared.check(x, k, out.len());
    let g = &prepared.g;
    prepared.with_kernel(k, |k| {
        prepared.for_each_block::<T, _>(out.uninit_mut(), |p0, block| {
            conv_block_gather(x, k, g, t, p0, &mut *block, &epilogue);
            // SAFETY: `conv_block_gather` stored every element of the block.
            observe(p0 * cout, unsafe { assume_init(block) });
        })
    });
    // SAFETY: the blocks cover the buffer, and `conv_block_gather` stores every element of
    // its block.
    unsafe { out.assume_all_initialised() };
}

/// A convolution resolved once (its geometry and, with a gather kernel, its offset tables),
/// ready to compute any run of output pixels: [`conv2d_with`] hands it blocks of pixels, the
/// fused conv2d + pooling kernel ([`crate::linalg::conv_pool`]) the rows its pooling windows read.
pub(crate) struct Prepared {
    g: Geometry,
    /// Images in the batch.
    batch: usize,
    gather: Option<Arc<GatherTables>>,
    /// Whether the whole convolution runs on the patch GEMM's blocking ([`conv_plan`]);
    /// its blocks compute as the im2col path's do (`gather` is `None`).
    patch_gemm: bool,
}

impl Prepared {
    /// Resolves the convolution of an `x_shape` input by a `k_shape` kernel.
    ///
    /// Panics if the channel counts differ or the geometry has no output (callers check first).
    pub(crate) fn new<T: GemmElement>(
        x_shape: [usize; 4],
        k_shape: [usize; 4],
        stride: usize,
        padding: Padding,
        algorithm: Algorithm,
    ) -> Prepared {
        let [_, h, w, cin] = x_shape;
        let [kh, kw, kcin, cout] = k_shape;
        assert_eq!(cin, kcin, "conv2d_into: channel counts differ");
        let (oh, ow) =
            conv2d_output_hw(h, w, kh, kw, stride, padding).expect("conv2d_into: bad geometry");
        let g = Geometry {
            h,
            w,
            cin,
            kh,
            kw,
            cout,
            oh,
            ow,
            stride,
            pad_top: pad_before(h, oh, kh, stride, padding),
            pad_left: pad_before(w, ow, kw, stride, padding),
        };
        // Deep and wide kernels run on the im2col path's values whatever the CPU, so that
        // the choice, and with it every output's order of summation, depends on the shape
        // alone (see `conv_plan::best_plan`).
        let plan = match algorithm {
            Algorithm::Best => best_plan(&g, std::mem::size_of::<T>()),
            Algorithm::Im2colGemm => Plan::Im2col,
            Algorithm::PatchGemm => Plan::PatchGemm,
        };
        let patch_gemm = plan == Plan::PatchGemm;
        // With a gather kernel, interior patches are read in place through a table of offsets.
        let gather =
            (plan == Plan::Gather && T::has_gather_kernel(cout)).then(|| gather_tables(&g));
        Prepared {
            g,
            batch: x_shape[0],
            gather,
            patch_gemm,
        }
    }

    /// Runs `f` on the kernel as [`Prepared::compute`] reads it: for the gather path its rows
    /// reordered as the tables are, once per convolution, into a kernel buffer from the scratch pool
    /// (the blocks on every thread share it); `k` itself otherwise.
    pub(crate) fn with_kernel<T: GemmElement, R>(&self, k: &[T], f: impl FnOnce(&[T]) -> R) -> R {
        if self.gather.is_some() && self.g.patch() > 0 {
            T::with_kernel_scratch(k.len(), |kr| {
                reorder_kernel(k, &self.g, kr);
                f(kr)
            })
        } else {
            f(k)
        }
    }

    /// The whole convolution into the initialised `out`, in blocks (see [`conv2d_into`]),
    /// then `observe(first_element, block)` on each finished block (see [`conv2d_buf`]).
    fn run<T: GemmElement>(
        &self,
        x: &[T],
        k: &[T],
        out: &mut [T],
        epilogue: &(impl Fn(usize, &mut [T]) + Sync),
        observe: &(impl Fn(usize, &[T]) + Sync),
    ) {
        self.check(x, k, out.len());
        if self.patch_gemm {
            return conv_plan::run_patch_gemm(&self.g, x, k, out, epilogue, observe);
        }
        let cout = self.g.cout;
        self.with_kernel(k, |k| {
            self.for_each_block::<T, _>(out, |p0, block| {
                self.compute(x, k, p0, &mut *block, epilogue);
                observe(p0 * cout, block);
            })
        });
    }

    /// Panics unless `x`, `k` and an output of `out_len` elements match the shapes.
    fn check<T>(&self, x: &[T], k: &[T], out_len: usize) {
        let g = &self.g;
        let pixels = self.batch * g.oh * g.ow;
        assert!(
            x.len() == self.batch * g.h * g.w * g.cin
                && k.len() == g.patch() * g.cout
                && out_len == pixels * g.cout,
            "conv2d_into: slices do not match shapes"
        );
    }

    /// Runs `run(first_pixel, block)` over `out` cut into blocks of whole output pixels: on
    /// this thread for a small convolution, else in parallel blocks sized for the cache.
    fn for_each_block<T: GemmElement, S: Send>(
        &self,
        out: &mut [S],
        run: impl Fn(usize, &mut [S]) + Sync,
    ) {
        let g = &self.g;
        if out.is_empty() {
            return;
        }
        let pixels = out.len() / g.cout;
        if pixels.saturating_mul(g.patch()).saturating_mul(g.cout) < SEQUENTIAL_MACS {
            run(0, out);
            return;
        }
        let pb = pixels_per_block(
            pixels,
            self.scratch_per_pixel() + g.cout,
            std::mem::size_of::<S>(),
        );
        // Every thread's scratch, whichever blocks it gets, before the loop (see `ScratchPool`).
        T::reserve_scratch(rayon::current_num_threads(), self.block_scratch(pb));
        // LOOP 1 (parallel): over blocks of `pb` output pixels.
        out.par_chunks_mut(pb * g.cout)
            .enumerate()
            .for_each(|(bi, block)| run(bi * pb, block));
    }

    /// The output's height and width.
    pub(crate) fn out_hw(&self) -> (usize, usize) {
        (self.g.oh, self.g.ow)
    }

    /// Multiply-adds per output pixel.
    pub(crate) fn macs_per_pixel(&self) -> usize {
        self.g.patch().saturating_mul(self.g.cout)
    }

    /// Elements of [`GemmElement::with_scratch`] that [`Prepared::compute`] borrows for a
    /// block of `pixels` pixels: im2col rows for the whole block, for a run of border pixels
    /// of the gather path, or none.
    pub(crate) fn block_scratch(&self, pixels: usize) -> usize {
        let g = &self.g;
        if g.patch() == 0 || (self.gather.is_none() && g.is_pointwise()) {
            0
        } else if self.gather.is_some() {
            pixels.min(GATHER_PIXELS) * g.patch()
        } else {
            pixels * g.patch()
        }
    }

    /// Scratch elements a block needs per pixel besides its output (an im2col row, or none).
    pub(crate) fn scratch_per_pixel(&self) -> usize {
        if self.gather.is_some() {
            0
        } else {
            self.g.patch()
        }
    }

    /// Computes output pixels `p0 .. p0 + block.len() / Cout` (counted flat over N, OH, OW)
    /// into `block` (`k` as [`Prepared::with_kernel`] hands it), handing each finished run of
    /// them to `epilogue(first_pixel, run)` (the runs cover the block once, in order); the
    /// values do not depend on how the pixels are cut into blocks or runs.
    pub(crate) fn compute<T: GemmElement>(
        &self,
        x: &[T],
        k: &[T],
        p0: usize,
        block: &mut [T],
        mut epilogue: impl FnMut(usize, &mut [T]),
    ) {
        match &self.gather {
            Some(t) => {
                // SAFETY: `MaybeUninit<T>` has the layout of `T`, and the gather kernel only
                // stores initialised values through the view, so `block` stays initialised.
                let view = unsafe { &mut *(block as *mut [T] as *mut [MaybeUninit<T>]) };
                conv_block_gather(x, k, &self.g, t, p0, view, epilogue)
            }
            None => {
                conv_block(x, k, &self.g, p0, block);
                epilogue(p0, block);
            }
        }
    }
}

/// Output pixels per parallel block: a block's scratch and output (`per_pixel` elements a
/// pixel) fit `IM2COL_BLOCK_BYTES + OUT_BLOCK_BYTES`, and there are enough blocks to share.
fn pixels_per_block(pixels: usize, per_pixel: usize, elem: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    let by_cache = (IM2COL_BLOCK_BYTES + OUT_BLOCK_BYTES) / (per_pixel.max(1) * elem);
    let by_balance = pixels.div_ceil(threads * BLOCKS_PER_THREAD);
    let align = row_align();
    let pb = by_cache.min(by_balance).max(align);
    pb.div_ceil(align) * align
}

/// How many geometries' offset tables are kept.
const GATHER_CACHE_ENTRIES: usize = 16;

/// Offset tables by (kh, kw, w, cin), so a convolution run again (a `Session` in steady
/// state) allocates nothing.
#[allow(clippy::type_complexity)]
static GATHER_CACHE: Mutex<Vec<((usize, usize, usize, usize), Arc<GatherTables>)>> =
    Mutex::new(Vec::new());

/// The gather tables of a geometry, from the cache or built and cached.
fn gather_tables(g: &Geometry) -> Arc<GatherTables> {
    let key = (g.kh, g.kw, g.w, g.cin);
    let mut cache = GATHER_CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, t)) = cache.iter().find(|(k, _)| *k == key) {
        return Arc::clone(t);
    }
    let t = Arc::new(GatherTables::new(g));
    if cache.len() >= GATHER_CACHE_ENTRIES {
        cache.remove(0);
    }
    cache.push((key, Arc::clone(&t)));
    t
}

/// Offset tables of the gather path, built once per geometry.
struct GatherTables {
    /// Offset in `x` of each patch element from the patch's first element: `(i*W + j)*Cin + c`.
    in_place: Vec<usize>,
    /// `0..patch`: the columns of an im2col row.
    copied: Vec<usize>,
}

impl GatherTables {
    /// The columns in the gather path's order: kernel row, input channel, kernel column (the
    /// order [`GemmElement::conv_rows_kw3`] accumulates in, so every path of a convolution
    /// sums each output in one order).
    fn new(g: &Geometry) -> GatherTables {
        let mut in_place = Vec::with_capacity(g.patch());
        let mut copied = Vec::with_capacity(g.patch());
        for i in 0..g.kh {
            for c in 0..g.cin {
                for j in 0..g.kw {
                    in_place.push((i * g.w + j) * g.cin + c);
                    // An im2col row is laid out (kernel row, kernel column, channel).
                    copied.push((i * g.kw + j) * g.cin + c);
                }
            }
        }
        GatherTables { in_place, copied }
    }
}

/// Writes the kernel `k` (`[KH, KW, Cin, Cout]`) into `out` with its rows in the gather
/// path's order (kernel row, input channel, kernel column).
fn reorder_kernel<T: Copy>(k: &[T], g: &Geometry, out: &mut [T]) {
    let n = g.cout;
    if n == 0 {
        return;
    }
    let mut dst = out.chunks_exact_mut(n);
    for i in 0..g.kh {
        for c in 0..g.cin {
            for j in 0..g.kw {
                let src = ((i * g.kw + j) * g.cin + c) * n;
                if let Some(d) = dst.next() {
                    d.copy_from_slice(&k[src..src + n]);
                }
            }
        }
    }
}

/// An output pixel as (image, row, column), stepped without divisions.
#[derive(Clone, Copy)]
pub(super) struct Pixel {
    n: usize,
    oh: usize,
    ow: usize,
}

impl Pixel {
    /// Pixel `p`, counted flat over N, OH, OW.
    pub(super) fn at(g: &Geometry, p: usize) -> Pixel {
        Pixel {
            n: p / (g.ow * g.oh),
            oh: (p / g.ow) % g.oh,
            ow: p % g.ow,
        }
    }

    /// The next pixel in row-major order.
    #[inline]
    pub(super) fn step(&mut self, g: &Geometry) {
        self.ow += 1;
        if self.ow == g.ow {
            self.ow = 0;
            self.oh += 1;
            if self.oh == g.oh {
                self.oh = 0;
                self.n += 1;
            }
        }
    }

    /// `count` pixels further along the row; only the row's end may be reached.
    #[inline]
    fn advance_in_row(&mut self, g: &Geometry, count: usize) {
        debug_assert!(self.ow + count <= g.ow);
        self.ow += count - 1;
        self.step(g);
    }

    /// Where this pixel's patch starts in `x`, if the whole patch lies inside the input.
    #[inline]
    fn interior_origin(self, g: &Geometry) -> Option<usize> {
        let ih = (self.oh * g.stride).checked_sub(g.pad_top)?;
        let iw = (self.ow * g.stride).checked_sub(g.pad_left)?;
        (ih + g.kh <= g.h && iw + g.kw <= g.w).then(|| ((self.n * g.h + ih) * g.w + iw) * g.cin)
    }
}

/// One block on the gather kernel: runs of interior pixels read `x` in place, runs of
/// border pixels go through a small im2col scratch; `k` is the kernel reordered as the
/// tables are ([`Prepared::with_kernel`]). `epilogue(first_pixel, chunk)` runs on
/// each run as soon as it is computed, while it is still in L1 (a row of 512 pixels of 16
/// channels is 32 KiB).
#[allow(clippy::too_many_arguments)]
fn conv_block_gather<T: GemmElement>(
    x: &[T],
    k: &[T],
    g: &Geometry,
    t: &GatherTables,
    p0: usize,
    block: &mut [MaybeUninit<T>],
    mut epilogue: impl FnMut(usize, &mut [T]),
) {
    if g.patch() == 0 {
        for e in block.iter_mut() {
            e.write(T::ZERO);
        }
        // SAFETY: every element was written just above.
        epilogue(p0, unsafe { assume_init(block) });
        return;
    }
    let rows = block.len() / g.cout;
    let patch = g.patch();
    // Neighbouring output pixels of one row read patches this far apart in `x`.
    let step = g.stride * g.cin;
    let mr = row_align();
    let kw3 = g.kw == 3 && g.stride == 1;
    let mut offsets = [0usize; GATHER_PIXELS];
    let mut border = [Pixel { n: 0, oh: 0, ow: 0 }; GATHER_PIXELS];
    let mut px = Pixel::at(g, p0);
    let mut q = 0;
    // LOOP 2: over runs of pixels of one kind (interior or border), at most GATHER_PIXELS
    // long, except that the whole tiles of a row's interior go to the strided form at once.
    while q < rows {
        let start = q;
        let first_origin = px.interior_origin(g);
        if let Some(origin) = first_origin {
            let left = (g.interior_end() - px.ow).min(rows - q);
            let whole = left / mr * mr;
            if whole > 0 {
                let out = &mut block[q * g.cout..(q + whole) * g.cout];
                // Three kernel columns at stride 1: the tile that loads each input once for
                // its three outputs, then the strided form for what it leaves.
                let row_stride = g.w * g.cin;
                let done = if kw3 {
                    T::conv_rows_kw3(x, origin, row_stride, g.kh, g.cin, whole, k, g.cout, out)
                } else {
                    0
                };
                if done < whole {
                    let (o, r) = (origin + done * step, whole - done);
                    let out = &mut out[done * g.cout..];
                    T::gemm_gather_strided(x, o, step, r, &t.in_place, k, g.cout, out);
                }
                px.advance_in_row(g, whole);
                q += whole;
                // SAFETY: the strided GEMM stored every element of `out`.
                epilogue(p0 + start, unsafe { assume_init(out) });
                continue;
            }
        }
        let interior = first_origin.is_some();
        let mut cnt = 0;
        while q + cnt < rows && cnt < GATHER_PIXELS {
            match (interior, px.interior_origin(g)) {
                (true, Some(origin)) => offsets[cnt] = origin,
                (false, None) => {
                    border[cnt] = px;
                    offsets[cnt] = cnt * patch;
                }
                _ => break,
            }
            px.step(g);
            cnt += 1;
        }
        let out = &mut block[q * g.cout..(q + cnt) * g.cout];
        // LOOP 3 (in the micro-kernel): column panels, row tiles, the patch.
        if interior {
            gather_interior(x, k, g, t, &offsets[..cnt], step, out);
        } else {
            // The scratch is borrowed only here, so the epilogue below runs outside it.
            T::with_scratch(cnt * patch, |cols| {
                for (&b, col) in border[..cnt].iter().zip(cols.chunks_exact_mut(patch)) {
                    im2col_pixel(x, g, b, col);
                }
                T::gemm_gather(cols, &offsets[..cnt], &t.copied, k, g.cout, out);
            });
        }
        q += cnt;
        // SAFETY: the gather GEMM stored every element of `out`.
        epilogue(p0 + start, unsafe { assume_init(out) });
    }
}

/// The run `s` as initialised elements.
///
/// # Safety
/// Every element of `s` has been written.
#[inline]
unsafe fn assume_init<T>(s: &mut [MaybeUninit<T>]) -> &mut [T] {
    // SAFETY: `MaybeUninit<T>` has the layout of `T`, and the caller vouches that every
    // element is initialised.
    unsafe { &mut *(s as *mut [MaybeUninit<T>] as *mut [T]) }
}

/// The GEMM of a run of interior pixels (patch origins `offsets`), cut into the micro-kernel's
/// row tiles from the run's start: runs of tiles whose patches are `step` apart (pixels of one
/// output row) go through the strided form, the others (a tile that wraps to the next row)
/// through the offset table. Every pixel's value is the same either way; keeping whole tiles
/// across row ends matters for narrow images (MNIST's 26- and 11-pixel rows).
fn gather_interior<T: GemmElement>(
    x: &[T],
    k: &[T],
    g: &Geometry,
    t: &GatherTables,
    offsets: &[usize],
    step: usize,
    out: &mut [MaybeUninit<T>],
) {
    let (cnt, mr, n) = (offsets.len(), row_align(), g.cout);
    // Whether the tile at `s` is whole and continues the progression that starts at `from`.
    let affine_tile = |from: usize, s: usize| {
        s + mr <= cnt && (0..mr).all(|r| offsets[s + r] == offsets[from] + (s - from + r) * step)
    };
    let mut i = 0;
    while i < cnt {
        let start = i;
        if affine_tile(start, i) {
            while affine_tile(start, i) {
                i += mr;
            }
            let rows = i - start;
            let o = &mut out[start * n..i * n];
            T::gemm_gather_strided(x, offsets[start], step, rows, &t.in_place, k, n, o);
        } else {
            while i < cnt && !affine_tile(i, i) {
                i = (i + mr).min(cnt);
            }
            T::gemm_gather(
                x,
                &offsets[start..i],
                &t.in_place,
                k,
                n,
                &mut out[start * n..i * n],
            );
        }
    }
}

/// One block: im2col of pixels `p0..p0 + block.len() / Cout` into scratch, then the GEMM into `block`.
fn conv_block<T: GemmElement>(x: &[T], k: &[T], g: &Geometry, p0: usize, block: &mut [T]) {
    let rows = block.len() / g.cout;
    let patch = g.patch();
    if patch == 0 {
        // No input channels: every sum is empty.
        block.fill(T::ZERO);
        return;
    }
    if g.is_pointwise() {
        // The input rows are the patches already.
        T::gemm_block(
            rows,
            patch,
            g.cout,
            &x[p0 * patch..(p0 + rows) * patch],
            k,
            block,
        );
        return;
    }
    T::with_scratch(rows * patch, |cols| {
        // LOOP 2: over the block's pixels, gathering each patch.
        let mut px = Pixel::at(g, p0);
        for col in cols.chunks_exact_mut(patch) {
            im2col_pixel(x, g, px, col);
            px.step(g);
        }
        // LOOP 3 (inside the GEMM core): [rows, patch] x [patch, Cout].
        T::gemm_block(rows, patch, g.cout, cols, k, block);
    });
}

/// Writes the patch of output pixel `px` into `col`, zeros where it overhangs the input.
#[inline]
pub(super) fn im2col_pixel<T: GemmElement>(x: &[T], g: &Geometry, px: Pixel, col: &mut [T]) {
    let Pixel {
        n: n_i,
        oh: oh_i,
        ow: ow_i,
    } = px;
    let row_len = g.kw * g.cin;
    // Input column of the patch's first kernel column; may be "negative" (in the padding).
    let iw0 = (ow_i * g.stride) as isize - g.pad_left as isize;
    let whole_row = iw0 >= 0 && iw0 as usize + g.kw <= g.w;
    for (ki, dst) in col.chunks_exact_mut(row_len).enumerate() {
        let ih = (oh_i * g.stride + ki) as isize - g.pad_top as isize;
        if ih < 0 || ih as usize >= g.h {
            dst.fill(T::ZERO);
            continue;
        }
        let row = (n_i * g.h + ih as usize) * g.w;
        if whole_row {
            // The KW input pixels are adjacent in NHWC: one contiguous copy.
            let s = (row + iw0 as usize) * g.cin;
            dst.copy_from_slice(&x[s..s + row_len]);
            continue;
        }
        for (kj, d) in dst.chunks_exact_mut(g.cin).enumerate() {
            let iw = iw0 + kj as isize;
            if iw < 0 || iw as usize >= g.w {
                d.fill(T::ZERO);
            } else {
                let s = (row + iw as usize) * g.cin;
                d.copy_from_slice(&x[s..s + g.cin]);
            }
        }
    }
}
