//! Reductions (`sum`, `mean`, `max`, `min`, `prod`) over any set of axes, parallel, with vectorised inner loops.
//!
//! The axes are first collapsed: size-1 axes are dropped and neighbouring axes of the same
//! kind (kept or reduced) merged. What remains is usually `[outer, reduced, inner]`
//! (any part possibly 1): all axes reduce one slice in fixed segments, trailing axes reduce
//! each row, and leading or middle axes accumulate whole rows into the output so the loop
//! runs along contiguous memory. Any other pattern is first transposed to put the reduced
//! axes last.
//!
//! Float reductions follow one accumulation order, the one the compiled kernels emitted by
//! `#[graph]` use (`graph-compiler`'s `reduction_code`), so eager and compiled results agree
//! bit for bit: [`LANES`] independent lanes (8 for 8-byte types) over chunks, the lanes of
//! every block of [`BLOCK_CHUNKS`] chunks folded in lane order into the accumulator, the
//! elements after the last whole chunk folded one by one. f32 sums and means accumulate in
//! f64 lanes and round once at the end, so `reduce_mean([3e38; 64])` is 3e38 and `reduce_sum` overflows only when the sum does
//! (f32 products too: `reduce_prod([1e30, 1e30, 1e-30])` is 1e30); `norm`
//! of f32 squares in f64, so it neither overflows nor underflows. An all-axes reduction is
//! cut into segments of [`SEGMENT`] elements whatever the thread count, and the segments'
//! partial results are folded in order, so the result does not depend on the threads either.
//! `Max`/`Min` propagate NaN. Empty reductions give `Sum` 0, `Mean` NaN (0 for integers),
//! `Max` the lowest value, `Min` the highest and `Prod` 1. A sum starts from +0, so the sum of `[-0.0]`
//! is +0 (as in TensorFlow).

use crate::dtype::Numeric;
use crate::exec::parallel::for_each_chunk;
use ndarray::{ArrayViewD, IxDyn};
use std::any::TypeId;

/// Which reduction to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceKind {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
}

/// Independent accumulators per slice, enough for one AVX-512 register of f32.
pub const LANES: usize = 16;
/// Chunks of lanes per block: a float reduction folds its lanes into the accumulator once per block.
pub const BLOCK_CHUNKS: usize = 64;
/// Elements per segment of an all-axes reduction (a multiple of every block size).
pub const SEGMENT: usize = 32 * 1024;

/// `x` as a slice of `U` when `T` is `U` (a run-time type check, so generic code can call concrete kernels).
#[inline(always)]
pub(crate) fn same_type<T: 'static, U: 'static>(x: &[T]) -> Option<&[U]> {
    if TypeId::of::<T>() == TypeId::of::<U>() {
        // SAFETY: `T` and `U` are the same type, so the layout and validity are identical.
        Some(unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<U>(), x.len()) })
    } else {
        None
    }
}

/// The mutable twin of [`same_type`].
#[inline(always)]
pub(crate) fn same_type_mut<T: 'static, U: 'static>(x: &mut [T]) -> Option<&mut [U]> {
    if TypeId::of::<T>() == TypeId::of::<U>() {
        // SAFETY: as in `same_type`; the borrow is moved into the result.
        Some(unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<U>(), x.len()) })
    } else {
        None
    }
}

/// The sum of `x` in [`LANES`] independent accumulators (wrapping for integers).
#[inline(always)]
fn lanes_sum<T: Numeric>(x: &[T]) -> T {
    let mut acc = [T::ZERO; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..LANES {
            acc[l] = acc[l].add(c[l]);
        }
    }
    for (l, &v) in rest.iter().enumerate() {
        acc[l] = acc[l].add(v);
    }
    // Pairwise folding of the lanes.
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for l in 0..width {
            acc[l] = acc[l].add(acc[l + width]);
        }
    }
    acc[0]
}

/// The maximum (`MAX`) or minimum of `x`, NaN if any element is NaN; the identity when empty.
#[inline(always)]
#[allow(clippy::eq_op)]
fn lanes_extreme<T: Numeric, const MAX: bool>(x: &[T]) -> T {
    let init = if MAX { T::LOWEST } else { T::HIGHEST };
    let mut acc = [init; LANES];
    let mut nan = [false; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    let step = |acc: &mut T, nan: &mut bool, v: T| {
        let better = if MAX { v > *acc } else { v < *acc };
        *acc = if better { v } else { *acc };
        *nan |= v != v;
    };
    for c in chunks {
        for l in 0..LANES {
            step(&mut acc[l], &mut nan[l], c[l]);
        }
    }
    for (l, &v) in rest.iter().enumerate() {
        step(&mut acc[l], &mut nan[l], v);
    }
    if nan.iter().any(|&n| n) {
        // Only floats compare unequal to themselves, and for them 0/0 is NaN.
        return T::ZERO.div(T::ZERO);
    }
    let mut r = acc[0];
    for &a in &acc[1..] {
        let better = if MAX { a > r } else { a < r };
        r = if better { a } else { r };
    }
    r
}

/// The accumulation loop every float reduction follows (see the module doc): lanes of
/// `$lane` over chunks, folded into `$acc` once per block of chunks, then the tail.
macro_rules! ordered {
    ($x:expr, $lanes:expr, $lane:ty, $acc:ty, $lane_init:expr, $init:expr, |$v:ident| $val:expr, |$a:ident, $b:ident| $lane_step:expr, |$t:ident, $w:ident| $fold:expr) => {{
        let x = $x;
        let n = x.len();
        let chunks = n / $lanes;
        let mut total: $acc = $init;
        let mut c0 = 0usize;
        while c0 < chunks {
            let c1 = if chunks - c0 > BLOCK_CHUNKS {
                c0 + BLOCK_CHUNKS
            } else {
                chunks
            };
            let mut acc: [$lane; $lanes] = [$lane_init; $lanes];
            for c in c0..c1 {
                let chunk = &x[c * $lanes..c * $lanes + $lanes];
                for j in 0..$lanes {
                    let $v = chunk[j];
                    let ($a, $b): ($lane, $lane) = (acc[j], $val);
                    acc[j] = $lane_step;
                }
            }
            for lane in acc {
                let ($t, $w) = (total, lane);
                total = $fold;
            }
            c0 = c1;
        }
        for &$v in &x[chunks * $lanes..] {
            let ($t, $w): ($acc, $lane) = (total, $val);
            total = $fold;
        }
        total
    }};
}

crate::multiversion! {
    /// The f32 sum in f64.
    pub fn sum_f32(x: &[f32]) -> f64 {
        ordered!(x, LANES, f64, f64, 0.0, 0.0, |v| v as f64, |a, b| a + b, |t, w| t + w)
    }
}
crate::multiversion! {
    /// The sum of the f32 values squared in f64 (the f32 `norm` before its square root).
    pub fn sum_squares_f32(x: &[f32]) -> f64 {
        ordered!(x, LANES, f64, f64, 0.0, 0.0, |v| v as f64 * v as f64, |a, b| a + b, |t, w| t + w)
    }
}
crate::multiversion! {
    /// The f64 sum.
    pub fn sum_f64(x: &[f64]) -> f64 {
        ordered!(x, LANES / 2, f64, f64, 0.0, 0.0, |v| v, |a, b| a + b, |t, w| t + w)
    }
}
crate::multiversion! {
    /// The f32 product in f64.
    pub fn prod_f32(x: &[f32]) -> f64 {
        ordered!(x, LANES, f64, f64, 1.0, 1.0, |v| v as f64, |a, b| a * b, |t, w| t * w)
    }
}
crate::multiversion! {
    /// The f64 product.
    pub fn prod_f64(x: &[f64]) -> f64 {
        ordered!(x, LANES / 2, f64, f64, 1.0, 1.0, |v| v, |a, b| a * b, |t, w| t * w)
    }
}
crate::multiversion! {
    pub fn max_f32(x: &[f32]) -> f32 {
        ordered!(x, LANES, f32, f32, f32::NEG_INFINITY, f32::NEG_INFINITY, |v| v, |a, b| Numeric::maximum(a, b), |t, w| Numeric::maximum(t, w))
    }
}
crate::multiversion! {
    pub fn min_f32(x: &[f32]) -> f32 {
        ordered!(x, LANES, f32, f32, f32::INFINITY, f32::INFINITY, |v| v, |a, b| Numeric::minimum(a, b), |t, w| Numeric::minimum(t, w))
    }
}
crate::multiversion! {
    pub fn max_f64(x: &[f64]) -> f64 {
        ordered!(x, LANES / 2, f64, f64, f64::NEG_INFINITY, f64::NEG_INFINITY, |v| v, |a, b| Numeric::maximum(a, b), |t, w| Numeric::maximum(t, w))
    }
}
crate::multiversion! {
    pub fn min_f64(x: &[f64]) -> f64 {
        ordered!(x, LANES / 2, f64, f64, f64::INFINITY, f64::INFINITY, |v| v, |a, b| Numeric::minimum(a, b), |t, w| Numeric::minimum(t, w))
    }
}

/// Maps `body` over the [`SEGMENT`]s of `0..n` and folds the partial results in order
/// (the first partial is the start); the segments run in parallel when there are several.
///
/// The cut depends only on `n`, so the result does not depend on the thread count; the
/// compiled all-axes reductions use it too.
pub fn segments<A: Send, F, C>(n: usize, body: F, combine: C) -> A
where
    F: Fn(std::ops::Range<usize>) -> A + Sync,
    C: Fn(A, A) -> A + Sync,
{
    let count = n.div_ceil(SEGMENT).max(1);
    let range = |s: usize| s * SEGMENT..((s + 1) * SEGMENT).min(n);
    if count == 1 {
        return body(0..n);
    }
    let parts: Vec<A> = if rayon::current_num_threads() > 1 {
        use rayon::prelude::*;
        (0..count).into_par_iter().map(|s| body(range(s))).collect()
    } else {
        (0..count).map(|s| body(range(s))).collect()
    };
    let mut parts = parts.into_iter();
    let first = parts.next().expect("several segments");
    parts.fold(first, combine)
}

/// The L2 norm of f32 values: the squares summed in f64 (they neither overflow nor
/// underflow there), one square root, one rounding. The compiled `norm` fuses the same loop.
pub fn norm_f32(x: &[f32]) -> f32 {
    segments(x.len(), |r| sum_squares_f32(&x[r]), |a, b| a + b).sqrt() as f32
}

/// The L2 norm of f64 values, scaled by the largest magnitude so the squares neither
/// overflow nor underflow; NaN if any element is NaN, else infinity if any is infinite.
/// The compiled `norm` of f64 calls this.
pub fn norm_f64(x: &[f64]) -> f64 {
    let big = segments(
        x.len(),
        |r| {
            x[r].iter()
                .fold(0.0f64, |m, &v| Numeric::maximum(m, v.abs()))
        },
        <f64 as Numeric>::maximum,
    );
    if big == 0.0 || !big.is_finite() {
        return big;
    }
    let squares = segments(
        x.len(),
        |r| x[r].iter().fold(0.0f64, |t, &v| t + (v / big) * (v / big)),
        |a, b| a + b,
    );
    big * squares.sqrt()
}

/// A float reduction's accumulator: f64 for f32 and f64 (an f32 max or min is exact in f64).
fn to_acc<T: Numeric>(v: T) -> f64 {
    v.to_f64()
}

/// The sum (for `Sum` and `Mean`), maximum or minimum of one contiguous slice, before any
/// division, in the accumulator type: f64 for floats, the element type otherwise.
fn reduce_slice<T: Numeric>(kind: ReduceKind, x: &[T]) -> Acc<T> {
    if let Some(s) = same_type::<T, f32>(x) {
        return Acc::Float(match kind {
            ReduceKind::Sum | ReduceKind::Mean => sum_f32(s),
            ReduceKind::Max => to_acc(max_f32(s)),
            ReduceKind::Min => to_acc(min_f32(s)),
            ReduceKind::Prod => prod_f32(s),
        });
    }
    if let Some(s) = same_type::<T, f64>(x) {
        return Acc::Float(match kind {
            ReduceKind::Sum | ReduceKind::Mean => sum_f64(s),
            ReduceKind::Max => max_f64(s),
            ReduceKind::Min => min_f64(s),
            ReduceKind::Prod => prod_f64(s),
        });
    }
    Acc::Int(match kind {
        ReduceKind::Sum | ReduceKind::Mean => lanes_sum(x),
        ReduceKind::Max => lanes_extreme::<T, true>(x),
        ReduceKind::Min => lanes_extreme::<T, false>(x),
        // Wrapping products are exact modulo 2^bits: any order gives the same result.
        ReduceKind::Prod => x.iter().fold(T::ONE, |a, &v| a.mul(v)),
    })
}

/// A partial result: f64 for float elements, the element type for integers.
#[derive(Clone, Copy)]
enum Acc<T> {
    Float(f64),
    Int(T),
}

impl<T: Numeric> Acc<T> {
    /// The accumulator of a reduction over nothing.
    fn identity(kind: ReduceKind) -> Acc<T> {
        if is_float::<T>() {
            Acc::Float(match kind {
                ReduceKind::Sum | ReduceKind::Mean => 0.0,
                ReduceKind::Max => T::LOWEST.to_f64(),
                ReduceKind::Min => T::HIGHEST.to_f64(),
                ReduceKind::Prod => 1.0,
            })
        } else {
            Acc::Int(identity(kind))
        }
    }

    /// Folds one more element in.
    fn push(self, kind: ReduceKind, v: T) -> Acc<T> {
        match self {
            Acc::Float(a) => Acc::Float(combine(kind, a, v.to_f64())),
            Acc::Int(a) => Acc::Int(combine(kind, a, v)),
        }
    }

    /// Folds two partial results.
    fn join(self, kind: ReduceKind, o: Acc<T>) -> Acc<T> {
        match (self, o) {
            (Acc::Float(a), Acc::Float(b)) => Acc::Float(combine(kind, a, b)),
            (Acc::Int(a), Acc::Int(b)) => Acc::Int(combine(kind, a, b)),
            _ => unreachable!("partials of one reduction have one type"),
        }
    }

    /// The final value over `count` elements: the mean's division in f64 for floats, then one rounding.
    fn finish(self, kind: ReduceKind, count: usize) -> T {
        match self {
            Acc::Float(a) => T::from_f64(match kind {
                ReduceKind::Mean => a / count as f64,
                _ => a,
            }),
            Acc::Int(a) => finish(kind, a, count),
        }
    }
}

fn is_float<T: 'static>() -> bool {
    TypeId::of::<T>() == TypeId::of::<f32>() || TypeId::of::<T>() == TypeId::of::<f64>()
}

/// The identity a reduction starts from.
fn identity<T: Numeric>(kind: ReduceKind) -> T {
    match kind {
        ReduceKind::Sum | ReduceKind::Mean => T::ZERO,
        ReduceKind::Max => T::LOWEST,
        ReduceKind::Min => T::HIGHEST,
        ReduceKind::Prod => T::ONE,
    }
}

/// Folds one more value into a partial result.
#[inline(always)]
fn combine<T: Numeric>(kind: ReduceKind, acc: T, v: T) -> T {
    match kind {
        ReduceKind::Sum | ReduceKind::Mean => acc.add(v),
        ReduceKind::Max => acc.maximum(v),
        ReduceKind::Min => acc.minimum(v),
        ReduceKind::Prod => acc.mul(v),
    }
}

/// Turns a partial result over `count` elements into the final value (the division of `Mean`).
#[inline(always)]
fn finish<T: Numeric>(kind: ReduceKind, acc: T, count: usize) -> T {
    match kind {
        ReduceKind::Mean => acc.div(T::from_f64(count as f64)),
        _ => acc,
    }
}

/// Reduces row-major `x` of `shape` over `axes` (sorted, unique, in range) into `out`, whose
/// length is the product of the kept dims.
pub fn reduce_into<T: Numeric>(
    x: &[T],
    shape: &[usize],
    axes: &[usize],
    kind: ReduceKind,
    out: &mut [T],
) {
    // Collapse to groups of (kept?, size), dropping size-1 axes; on the stack up to
    // `STACK_RANK` axes, so that a compiled graph's reduction allocates nothing.
    const STACK_RANK: usize = 16;
    let mut on_stack = [(false, 0usize); STACK_RANK];
    let mut on_heap = Vec::new();
    let mut len = 0;
    for (axis, &d) in shape.iter().enumerate() {
        if d == 1 {
            continue;
        }
        let reduced = axes.contains(&axis);
        let groups: &mut [(bool, usize)] = if shape.len() <= STACK_RANK {
            &mut on_stack[..]
        } else {
            if on_heap.len() < shape.len() {
                on_heap.resize(shape.len(), (false, 0));
            }
            &mut on_heap[..]
        };
        match groups[..len].last_mut() {
            Some((r, size)) if *r == reduced => *size *= d,
            _ => {
                groups[len] = (reduced, d);
                len += 1;
            }
        }
    }
    let groups: &[(bool, usize)] = if shape.len() <= STACK_RANK {
        &on_stack[..len]
    } else {
        &on_heap[..len]
    };
    let count: usize = groups.iter().filter(|g| g.0).map(|g| g.1).product();
    let reduced_groups = groups.iter().filter(|g| g.0).count();
    if reduced_groups == 0 {
        // Nothing to reduce (or only size-1 axes): each output is one input element.
        // (Folded into the identity as the kernels do: a sum of one -0.0 is +0.)
        for_each_chunk(out, 1, 1, |first, chunk| {
            for (o, &v) in chunk.iter_mut().zip(&x[first..]) {
                *o = Acc::identity(kind).push(kind, v).finish(kind, 1);
            }
        });
        return;
    }
    if reduced_groups > 1 {
        reduce_transposed(x, shape, axes, kind, out);
        return;
    }
    let at = groups.iter().position(|g| g.0).expect("one reduced group");
    let outer: usize = groups[..at].iter().map(|g| g.1).product();
    let inner: usize = groups[at + 1..].iter().map(|g| g.1).product();
    if outer == 1 && inner == 1 {
        let acc = segments(
            x.len(),
            |r| reduce_slice(kind, &x[r]),
            |a, b| a.join(kind, b),
        );
        out[0] = acc.finish(kind, count);
    } else if inner == 1 {
        reduce_rows(x, count, kind, out);
    } else {
        reduce_columns(x, count, inner, kind, out);
    }
}

/// Trailing axes: `out[i]` reduces the contiguous row `x[i * len..(i + 1) * len]`.
fn reduce_rows<T: Numeric>(x: &[T], len: usize, kind: ReduceKind, out: &mut [T]) {
    for_each_chunk(out, 1, len, |first, chunk| {
        for (i, o) in chunk.iter_mut().enumerate() {
            let row = &x[(first + i) * len..(first + i + 1) * len];
            *o = reduce_slice(kind, row).finish(kind, len);
        }
    });
}

/// Leading or middle axes: `x` is `[outer, red, inner]` and each output row of `inner`
/// accumulates `red` contiguous input rows, so the inner loop runs along memory.
///
/// Every column folds its rows one by one in order (floats in f64, rounded once at the
/// end), so the work is cut between threads along the columns only, in runs of whole
/// cache lines ([`COLUMN_RUN`] columns) so that no two threads read one line.
fn reduce_columns<T: Numeric>(x: &[T], red: usize, inner: usize, kind: ReduceKind, out: &mut [T]) {
    let units = out.len();
    let per_chunk = crate::exec::parallel::units_per_chunk(units, red);
    let chunk = if per_chunk >= units {
        units
    } else {
        per_chunk.next_multiple_of(COLUMN_RUN).min(units)
    };
    let body = |first: usize, chunk: &mut [T]| {
        // The chunk covers output positions first..first + len, possibly across outer blocks.
        let mut pos = first;
        let end = first + chunk.len();
        while pos < end {
            let o = pos / inner;
            let j0 = pos % inner;
            let j1 = inner.min(j0 + (end - pos));
            let seg = &mut chunk[pos - first..pos - first + (j1 - j0)];
            let rows = &x[o * red * inner..(o + 1) * red * inner];
            if is_float::<T>() {
                float_columns(rows, red, inner, j0, kind, seg);
            } else {
                seg.fill(identity(kind));
                for r in 0..red {
                    let row = &rows[r * inner + j0..r * inner + j1];
                    for (acc, &v) in seg.iter_mut().zip(row) {
                        *acc = combine(kind, *acc, v);
                    }
                }
                for acc in seg.iter_mut() {
                    *acc = finish(kind, *acc, red);
                }
            }
            pos += j1 - j0;
        }
    };
    if chunk >= units || units == 0 {
        body(0, out);
    } else {
        use rayon::prelude::*;
        out.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(i, c)| body(i * chunk, c));
    }
}

/// Columns of a column reduction that one thread takes at least together: 64 bytes of f32.
const COLUMN_RUN: usize = 16;

/// Columns `j0..j0 + out.len()` of the float column reduction of `rows` (`red` rows of
/// `inner`), into `out`: each column folded in f64 row by row from the identity, a stack
/// buffer of columns at a time, then finished (the mean's division in f64) and rounded once.
fn float_columns<T: Numeric>(
    rows: &[T],
    red: usize,
    inner: usize,
    j0: usize,
    kind: ReduceKind,
    out: &mut [T],
) {
    /// The fold of one kind, compiled for the best instruction set of this CPU.
    fn run<T: Numeric, const K: u8>(
        rows: &[T],
        red: usize,
        inner: usize,
        j0: usize,
        out: &mut [T],
    ) {
        #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
        {
            use crate::exec::cpu::{level, Level};
            /// # Safety
            /// The CPU must support AVX-512 F/VL/BW/DQ, AVX2 and FMA.
            #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
            unsafe fn avx512<T: Numeric, const K: u8>(
                rows: &[T],
                red: usize,
                inner: usize,
                j0: usize,
                out: &mut [T],
            ) {
                float_columns_body::<T, K>(rows, red, inner, j0, out)
            }
            /// # Safety
            /// The CPU must support AVX2 and FMA.
            #[target_feature(enable = "avx2,fma")]
            unsafe fn avx2<T: Numeric, const K: u8>(
                rows: &[T],
                red: usize,
                inner: usize,
                j0: usize,
                out: &mut [T],
            ) {
                float_columns_body::<T, K>(rows, red, inner, j0, out)
            }
            match level() {
                // SAFETY: `level()` reported these features on this CPU.
                Level::Avx512 => return unsafe { avx512::<T, K>(rows, red, inner, j0, out) },
                // SAFETY: as above.
                Level::Avx2Fma => return unsafe { avx2::<T, K>(rows, red, inner, j0, out) },
                Level::Baseline => {}
            }
        }
        float_columns_body::<T, K>(rows, red, inner, j0, out)
    }
    match kind {
        ReduceKind::Sum => run::<T, SUM>(rows, red, inner, j0, out),
        ReduceKind::Mean => run::<T, MEAN>(rows, red, inner, j0, out),
        ReduceKind::Max => run::<T, MAX>(rows, red, inner, j0, out),
        ReduceKind::Min => run::<T, MIN>(rows, red, inner, j0, out),
        ReduceKind::Prod => run::<T, PROD>(rows, red, inner, j0, out),
    }
}

/// [`ReduceKind`] as a const parameter of [`float_columns_body`].
const SUM: u8 = 0;
const MEAN: u8 = 1;
const MAX: u8 = 2;
const MIN: u8 = 3;
const PROD: u8 = 4;

/// The loops of [`float_columns`] for the kind `K`, inlined into each instruction set's copy.
#[inline(always)]
fn float_columns_body<T: Numeric, const K: u8>(
    rows: &[T],
    red: usize,
    inner: usize,
    j0: usize,
    out: &mut [T],
) {
    const COLUMNS: usize = 256;
    let init = match K {
        SUM | MEAN => 0.0,
        MAX => T::LOWEST.to_f64(),
        MIN => T::HIGHEST.to_f64(),
        _ => 1.0,
    };
    for (piece, cols) in out.chunks_mut(COLUMNS).enumerate() {
        let c0 = j0 + piece * COLUMNS;
        let mut acc = [init; COLUMNS];
        let acc = &mut acc[..cols.len()];
        for r in 0..red {
            let row = &rows[r * inner + c0..][..acc.len()];
            for (a, &v) in acc.iter_mut().zip(row) {
                *a = column_step::<K>(*a, v.to_f64());
            }
        }
        for (o, &a) in cols.iter_mut().zip(acc.iter()) {
            *o = T::from_f64(if K == MEAN { a / red as f64 } else { a });
        }
    }
}

/// One more element `v` folded into a column's accumulator `a`, for the kind `K`.
#[inline(always)]
fn column_step<const K: u8>(a: f64, v: f64) -> f64 {
    match K {
        SUM | MEAN => a + v,
        MAX => Numeric::maximum(a, v),
        MIN => Numeric::minimum(a, v),
        _ => a * v,
    }
}

/// Any other pattern: copy `x` with the reduced axes moved last, then reduce rows.
fn reduce_transposed<T: Numeric>(
    x: &[T],
    shape: &[usize],
    axes: &[usize],
    kind: ReduceKind,
    out: &mut [T],
) {
    let view =
        ArrayViewD::from_shape(IxDyn(shape), x).expect("x holds exactly the elements of its shape");
    let mut perm: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    perm.extend_from_slice(axes);
    let moved = view.permuted_axes(IxDyn(&perm));
    let moved = moved.as_standard_layout();
    let len: usize = axes.iter().map(|&a| shape[a]).product();
    reduce_rows(
        moved.as_slice().expect("standard layout is contiguous"),
        len,
        kind,
        out,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of mixed magnitude (so the order of the additions shows in the bits), with a
    /// NaN at `nan` if given.
    fn values(n: usize, nan: Option<usize>) -> Vec<f32> {
        let mut s = 0x2545_f491u32;
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                let u = (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
                if Some(i) == nan {
                    f32::NAN
                } else {
                    u * [1.0, 1e-7, 3e3, 0.3, 2.5][i % 5]
                }
            })
            .collect()
    }

    /// Each column of `[outer, red, inner]` folded in f64 row by row, as plain loops.
    fn reference(x: &[f32], outer: usize, red: usize, inner: usize, kind: ReduceKind) -> Vec<f32> {
        let mut out = Vec::new();
        for o in 0..outer {
            for j in 0..inner {
                let mut a: f64 = match kind {
                    ReduceKind::Sum | ReduceKind::Mean => 0.0,
                    ReduceKind::Max => f32::MIN as f64,
                    ReduceKind::Min => f32::MAX as f64,
                    ReduceKind::Prod => 1.0,
                };
                for r in 0..red {
                    let v = x[(o * red + r) * inner + j] as f64;
                    a = match kind {
                        ReduceKind::Sum | ReduceKind::Mean => a + v,
                        ReduceKind::Max if a.is_nan() || v.is_nan() => f64::NAN,
                        ReduceKind::Max => a.max(v),
                        ReduceKind::Min if a.is_nan() || v.is_nan() => f64::NAN,
                        ReduceKind::Min => a.min(v),
                        ReduceKind::Prod => a * v,
                    };
                }
                if kind == ReduceKind::Mean {
                    a /= red as f64;
                }
                out.push(a as f32);
            }
        }
        out
    }

    /// Column reductions of f32 (leading and middle axes), every kind, column counts around
    /// the runs of lanes and of threads, on the pool and on one thread: the reference's bits.
    #[test]
    fn column_reductions_fold_each_column_in_row_order() {
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        for (outer, red, inner) in [
            (1, 43264, 32),
            (1, 7744, 64),
            (1, 1000, 17),
            (3, 700, 33),
            (2, 5, 300),
            (1, 2, 1023),
            (4, 1, 7),
        ] {
            for nan in [None, Some(red * inner / 2 + 1)] {
                let x = values(outer * red * inner, nan);
                for kind in [
                    ReduceKind::Sum,
                    ReduceKind::Mean,
                    ReduceKind::Max,
                    ReduceKind::Min,
                    ReduceKind::Prod,
                ] {
                    let want = reference(&x, outer, red, inner, kind);
                    let shape = [outer, red, inner];
                    let axes: &[usize] = if outer == 1 { &[0, 1] } else { &[1] };
                    let mut got = vec![f32::NAN; want.len()];
                    reduce_into(&x, &shape, axes, kind, &mut got);
                    let mut serial = vec![f32::NAN; want.len()];
                    one.install(|| reduce_into(&x, &shape, axes, kind, &mut serial));
                    for (i, w) in want.iter().enumerate() {
                        let what = format!("{kind:?} [{outer}, {red}, {inner}] {nan:?} [{i}]");
                        assert_eq!(got[i].to_bits(), w.to_bits(), "{what}: {} vs {w}", got[i]);
                        assert_eq!(serial[i].to_bits(), w.to_bits(), "{what} serial");
                    }
                }
            }
        }
    }
}
