//! Numerically stable `softmax` and `log_softmax` along any axis, parallel over rows, in three passes.
//!
//! Each slice along the axis is shifted by its maximum before `exp`, so no input overflows.
//! The passes are: the maximum; `exp(x - max)` (written to the output for softmax) and its
//! sum; then the scale by `1 / sum` (or `x - max - ln(sum)` for log-softmax). Along the last
//! axis each row is contiguous; along another axis `[outer, n, inner]` the passes run over
//! whole rows of `inner` elements, so every loop still walks contiguous memory.

use super::math::FloatMath;
use super::reduce::{same_type, same_type_mut};
use crate::exec::parallel::for_each_chunk;

/// Work units per element (one `exp` plus a few cheap operations).
const SOFTMAX_WORK: usize = 12;
/// Independent accumulators of the row sum, so the loop vectorises.
const LANES: usize = 8;

/// The largest element of `xr` that is not NaN (`T::LOWEST` when there is none), in
/// [`LANES`] running maxima so that the loop vectorises (one running maximum was a chain of
/// scalar compares, a third of the kernel's time on GPT-2's 128-wide rows). Which of `+0`
/// and `-0` it returns when both are the largest may differ from one running maximum; the
/// softmax does not depend on it (`x - 0` and `x + 0` are equal for every `x`, as are
/// `e^(+0)` and `e^(-0)`).
#[inline(always)]
fn row_max<T: FloatMath>(xr: &[T]) -> T {
    let mut acc = [T::LOWEST; LANES];
    let chunks = xr.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..LANES {
            acc[l] = if c[l] > acc[l] { c[l] } else { acc[l] };
        }
    }
    for (l, &v) in rest.iter().enumerate() {
        acc[l] = if v > acc[l] { v } else { acc[l] };
    }
    acc.iter()
        .fold(T::LOWEST, |m, &v| if v > m { v } else { m })
}

/// Softmax of each contiguous row of `n` elements.
#[inline(always)]
fn last_axis<T: FloatMath>(x: &[T], out: &mut [T], n: usize, log: bool) {
    for (xr, or) in x.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
        let m = row_max(xr);
        let mut acc = [T::ZERO; LANES];
        let chunks = xr.chunks_exact(LANES);
        let rest = chunks.remainder();
        if log {
            for c in chunks {
                for l in 0..LANES {
                    acc[l] = acc[l].add(c[l].sub(m).exp_());
                }
            }
            for (l, &v) in rest.iter().enumerate() {
                acc[l] = acc[l].add(v.sub(m).exp_());
            }
        } else {
            let ochunks = or.chunks_exact_mut(LANES);
            for (c, o) in chunks.zip(ochunks) {
                for l in 0..LANES {
                    let e = c[l].sub(m).exp_();
                    o[l] = e;
                    acc[l] = acc[l].add(e);
                }
            }
            let done = n - rest.len();
            for (l, (&v, o)) in rest.iter().zip(&mut or[done..]).enumerate() {
                let e = v.sub(m).exp_();
                *o = e;
                acc[l] = acc[l].add(e);
            }
        }
        let sum = acc.iter().fold(T::ZERO, |a, &b| a.add(b));
        if log {
            let shift = m.add(sum.log_());
            for (o, &v) in or.iter_mut().zip(xr) {
                *o = v.sub(shift);
            }
        } else {
            let scale = T::ONE.div(sum);
            for o in or.iter_mut() {
                *o = o.mul(scale);
            }
        }
    }
}

/// Softmax along the middle axis of blocks `[n, inner]`, row by row.
#[inline(always)]
fn middle_axis<T: FloatMath>(x: &[T], out: &mut [T], n: usize, inner: usize, log: bool) {
    let mut m = vec![T::LOWEST; inner];
    let mut sum = vec![T::ZERO; inner];
    for (xb, ob) in x
        .chunks_exact(n * inner)
        .zip(out.chunks_exact_mut(n * inner))
    {
        m.fill(T::LOWEST);
        sum.fill(T::ZERO);
        for xr in xb.chunks_exact(inner) {
            for (m, &v) in m.iter_mut().zip(xr) {
                *m = if v > *m { v } else { *m };
            }
        }
        for (xr, or) in xb.chunks_exact(inner).zip(ob.chunks_exact_mut(inner)) {
            for (((o, s), &v), &m) in or.iter_mut().zip(sum.iter_mut()).zip(xr).zip(&m) {
                let e = v.sub(m).exp_();
                *o = e;
                *s = s.add(e);
            }
        }
        if log {
            for (m, s) in m.iter_mut().zip(&sum) {
                *m = m.add(s.log_());
            }
            for (xr, or) in xb.chunks_exact(inner).zip(ob.chunks_exact_mut(inner)) {
                for ((o, &v), &shift) in or.iter_mut().zip(xr).zip(&m) {
                    *o = v.sub(shift);
                }
            }
        } else {
            for s in sum.iter_mut() {
                *s = T::ONE.div(*s);
            }
            for or in ob.chunks_exact_mut(inner) {
                for (o, &scale) in or.iter_mut().zip(&sum) {
                    *o = o.mul(scale);
                }
            }
        }
    }
}

macro_rules! dispatched {
    ($t:ty, $last:ident, $middle:ident) => {
        crate::multiversion! {
            fn $last(x: &[$t], out: &mut [$t], n: usize, log: bool) {
                last_axis(x, out, n, log)
            }
        }
        crate::multiversion! {
            fn $middle(x: &[$t], out: &mut [$t], n: usize, inner: usize, log: bool) {
                middle_axis(x, out, n, inner, log)
            }
        }
    };
}
dispatched!(f32, last_f32, middle_f32);
dispatched!(f64, last_f64, middle_f64);

/// One chunk of whole blocks `[n, inner]`, through the kernel compiled for the best CPU level.
fn blocks<T: FloatMath>(x: &[T], out: &mut [T], n: usize, inner: usize, log: bool) {
    if let (Some(x), Some(out)) = (same_type::<T, f32>(x), same_type_mut::<T, f32>(&mut *out)) {
        return if inner == 1 {
            last_f32(x, out, n, log)
        } else {
            middle_f32(x, out, n, inner, log)
        };
    }
    if let (Some(x), Some(out)) = (same_type::<T, f64>(x), same_type_mut::<T, f64>(&mut *out)) {
        return if inner == 1 {
            last_f64(x, out, n, log)
        } else {
            middle_f64(x, out, n, inner, log)
        };
    }
    if inner == 1 {
        last_axis(x, out, n, log)
    } else {
        middle_axis(x, out, n, inner, log)
    }
}

/// Writes `softmax(x)` (or `log_softmax` when `log`) along `axis` of row-major `x` of `shape` into `out`.
pub fn softmax_into<T: FloatMath>(x: &[T], shape: &[usize], axis: usize, log: bool, out: &mut [T]) {
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let block = n * inner;
    if block == 0 {
        return;
    }
    for_each_chunk(out, block, block * SOFTMAX_WORK, |first, chunk| {
        let x = &x[first * block..first * block + chunk.len()];
        blocks(x, chunk, n, inner, log);
    });
}
