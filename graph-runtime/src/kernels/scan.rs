//! Cumulative sums and products along one axis (`cumsum`, and the `cumprod` of `reduce_prod`'s gradient), TensorFlow's `exclusive` and `reverse` included.
//!
//! The tensor is seen as `[outer, len, inner]` around the axis: each output row of `inner`
//! elements is the previous row combined with the input row, so the inner loop runs along
//! memory and vectorises. The rows follow one order (first to last, or last to first when
//! `reverse`), so a result does not depend on the threads; the slabs of `outer` run in
//! parallel. A sum starts from +0 (TF's: the cumsum of `[-0.0]` is `[+0.0]`). Integers wrap.

use crate::dtype::Numeric;
use crate::error::Error;
use crate::exec::parallel::for_each_chunk;

/// Which running total: sums or products.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScanKind {
    Sum,
    Prod,
}

impl ScanKind {
    /// The op's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            ScanKind::Sum => "cumsum",
            ScanKind::Prod => "cumprod",
        }
    }
}

/// The running totals of row-major `x` of `shape` along `axis` into `out` (of `x`'s length):
/// `out[.., k, ..]` combines `x[.., 0..=k, ..]` (`0..k` when `exclusive`, so the first is 0
/// for sums and 1 for products; `k..` and `k + 1..` when `reverse`). An axis out of range or
/// a length that is not the shape's is an error.
pub fn cumulative_into<T: Numeric>(
    x: &[T],
    shape: &[usize],
    axis: usize,
    kind: ScanKind,
    exclusive: bool,
    reverse: bool,
    out: &mut [T],
) -> Result<(), Error> {
    let op = kind.name();
    if axis >= shape.len() {
        return Err(Error::invalid(
            op,
            format!("axis {axis} is out of range for shape {shape:?}"),
        ));
    }
    let count: usize = shape.iter().product();
    if x.len() != count || out.len() != count {
        return Err(Error::invalid(
            op,
            format!(
                "{} input and {} output elements for shape {shape:?}",
                x.len(),
                out.len()
            ),
        ));
    }
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let slab = len * inner;
    if slab == 0 {
        return Ok(());
    }
    for_each_chunk(out, slab, slab, |first, chunk| {
        for (s, out_slab) in chunk.chunks_mut(slab).enumerate() {
            let at = (first + s) * slab;
            let x_slab = &x[at..at + slab];
            match kind {
                ScanKind::Sum => {
                    scan_slab::<T, false>(x_slab, out_slab, len, inner, exclusive, reverse)
                }
                ScanKind::Prod => {
                    scan_slab::<T, true>(x_slab, out_slab, len, inner, exclusive, reverse)
                }
            }
        }
    });
    Ok(())
}

/// One `[len, inner]` slab: row `k` of `out` is row `k - 1` of `out` combined (a product
/// when `PROD`, else a sum) with a row of `x`.
fn scan_slab<T: Numeric, const PROD: bool>(
    x: &[T],
    out: &mut [T],
    len: usize,
    inner: usize,
    exclusive: bool,
    reverse: bool,
) {
    let identity = if PROD { T::ONE } else { T::ZERO };
    let row = |k: usize| if reverse { len - 1 - k } else { k };
    // The first row: the identity, or the identity combined with the first input row (a sum
    // starts from +0, as TF's: the cumsum of [-0.0] is [+0.0]).
    let r0 = row(0) * inner;
    if exclusive {
        out[r0..r0 + inner].fill(identity);
    } else {
        for (o, &v) in out[r0..r0 + inner].iter_mut().zip(&x[r0..r0 + inner]) {
            *o = if PROD {
                identity.mul(v)
            } else {
                identity.add(v)
            };
        }
    }
    for k in 1..len {
        let (prev, cur) = (row(k - 1) * inner, row(k) * inner);
        // The input row added to the running total: the previous one when exclusive.
        let src = if exclusive { prev } else { cur };
        let xs = &x[src..src + inner];
        // `prev` and `cur` are different rows of `out`: split it between them.
        let (before, after) = out.split_at_mut(prev.max(cur));
        let (p, c) = if prev < cur {
            (&before[prev..prev + inner], &mut after[..inner])
        } else {
            (&after[..inner], &mut before[cur..cur + inner])
        };
        for ((o, &a), &v) in c.iter_mut().zip(p).zip(xs) {
            *o = if PROD { a.mul(v) } else { a.add(v) };
        }
    }
}
