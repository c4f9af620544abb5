//! NumPy broadcasting and the parallel elementwise kernels (unary, binary, ternary) behind the eager ops and compiled graphs.
//!
//! Every kernel reads contiguous row-major operands and writes a contiguous row-major
//! output. The layout is decided once, outside the loops: each operand gets strides in the
//! output's index space (0 on broadcast axes), size-1 axes are dropped and adjacent axes
//! that every operand walks contiguously are merged. What is left is a few runs along the
//! innermost axis, where each operand either advances by one element or repeats one value,
//! so the same inner loops serve equal shapes, a scalar operand, a bias `[C]` against
//! `[N, C]` and a column `[N, 1]` against `[N, C]`.

use super::math::{FloatMath, MathFn};
use crate::error::Error;
use crate::exec::parallel::for_each_chunk;

/// Work units per element of a cheap elementwise op, for [`for_each_chunk`].
const CHEAP_WORK: usize = 1;
/// Work units per element of a transcendental function.
const MATH_WORK: usize = 8;

/// The shape two operands broadcast to under NumPy rules (align trailing axes; a 1 repeats).
///
/// The error names `op`, both shapes and the axis of the result where they clash.
pub fn broadcast_shapes(op: &'static str, a: &[usize], b: &[usize]) -> Result<Vec<usize>, Error> {
    let rank = a.len().max(b.len());
    let mut out = Vec::with_capacity(rank);
    for axis in 0..rank {
        let da = dim_at(a, axis, rank);
        let db = dim_at(b, axis, rank);
        let d = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::shape(
                op,
                format_args!("shapes cannot be broadcast together ({da} != {db})"),
                a,
                b,
                Some(axis),
            ));
        };
        out.push(d);
    }
    Ok(out)
}

/// The size of `shape` at result axis `axis` of a rank-`rank` broadcast (1 where `shape` has no such axis).
fn dim_at(shape: &[usize], axis: usize, rank: usize) -> usize {
    let lead = rank - shape.len();
    if axis < lead {
        1
    } else {
        shape[axis - lead]
    }
}

/// Strides of a contiguous row-major `shape` seen through the broadcast `out_shape` (0 on repeated axes).
fn broadcast_strides(shape: &[usize], out_shape: &[usize]) -> Vec<usize> {
    let rank = out_shape.len();
    let lead = rank - shape.len();
    let mut strides = vec![0; rank];
    let mut step = 1;
    for axis in (0..shape.len()).rev() {
        if shape[axis] != 1 {
            strides[lead + axis] = step;
        }
        step *= shape[axis];
    }
    strides
}

/// The collapsed iteration space of an elementwise op over `K` operands.
struct Plan<const K: usize> {
    /// Output dims after dropping size-1 axes and merging contiguous ones (never empty).
    dims: Vec<usize>,
    /// Each operand's stride on each of `dims`.
    strides: [Vec<usize>; K],
}

impl<const K: usize> Plan<K> {
    fn new(shapes: [&[usize]; K], out_shape: &[usize]) -> Plan<K> {
        let full: [Vec<usize>; K] = shapes.map(|s| broadcast_strides(s, out_shape));
        // Walk from the innermost axis outwards, merging an axis into the current group when
        // every operand steps over the group exactly by its stride.
        let mut dims: Vec<usize> = Vec::new();
        let mut strides: [Vec<usize>; K] = std::array::from_fn(|_| Vec::new());
        for axis in (0..out_shape.len()).rev() {
            let d = out_shape[axis];
            if d == 1 {
                continue;
            }
            let merge = match dims.last() {
                Some(&inner) => {
                    (0..K).all(|k| full[k][axis] == strides[k].last().copied().unwrap_or(0) * inner)
                }
                None => false,
            };
            if merge {
                *dims.last_mut().expect("a group exists") *= d;
            } else {
                dims.push(d);
                for k in 0..K {
                    strides[k].push(full[k][axis]);
                }
            }
        }
        if dims.is_empty() {
            dims.push(1);
            for s in &mut strides {
                s.push(0);
            }
        }
        dims.reverse();
        for s in &mut strides {
            s.reverse();
        }
        Plan { dims, strides }
    }

    /// Calls `run(out_offset, operand_offsets, len)` for each innermost run covering output elements `first..first + len`.
    #[inline(always)]
    fn for_each_run(
        &self,
        first: usize,
        len: usize,
        mut run: impl FnMut(usize, [usize; K], usize),
    ) {
        if len == 0 {
            return;
        }
        let rank = self.dims.len();
        let inner = self.dims[rank - 1];
        // The multi-index of `first`, and the operand offsets there.
        let mut idx = vec![0; rank];
        let mut rest = first;
        for axis in (0..rank).rev() {
            idx[axis] = rest % self.dims[axis];
            rest /= self.dims[axis];
        }
        let mut offs = [0; K];
        for (k, off) in offs.iter_mut().enumerate() {
            *off = (0..rank).map(|a| idx[a] * self.strides[k][a]).sum();
        }
        let mut done = 0;
        while done < len {
            let n = (inner - idx[rank - 1]).min(len - done);
            run(first + done, offs, n);
            done += n;
            // Advance the odometer by n along the innermost axis, carrying outwards.
            idx[rank - 1] += n;
            for (k, off) in offs.iter_mut().enumerate() {
                *off += n * self.strides[k][rank - 1];
            }
            let mut axis = rank - 1;
            while axis > 0 && idx[axis] == self.dims[axis] {
                for (k, off) in offs.iter_mut().enumerate() {
                    *off -= idx[axis] * self.strides[k][axis];
                    *off += self.strides[k][axis - 1];
                }
                idx[axis] = 0;
                idx[axis - 1] += 1;
                axis -= 1;
            }
        }
    }
}

/// Writes `f(x[i])` into `out[i]`, in parallel for large slices.
pub fn map_into<A, O, F>(x: &[A], out: &mut [O], f: F)
where
    A: Copy + Sync,
    O: Send,
    F: Fn(A) -> O + Sync,
{
    assert_eq!(
        x.len(),
        out.len(),
        "map_into: input and output lengths differ"
    );
    for_each_chunk(out, 1, CHEAP_WORK, |first, chunk| {
        for (o, &v) in chunk.iter_mut().zip(&x[first..]) {
            *o = f(v);
        }
    });
}

/// Writes `f(x[i])` for a math function `f` into `out[i]`, with loops compiled for the best CPU level.
pub fn math_into<T: FloatMath>(f: MathFn, x: &[T], out: &mut [T]) {
    assert_eq!(
        x.len(),
        out.len(),
        "math_into: input and output lengths differ"
    );
    for_each_chunk(out, 1, MATH_WORK, |first, chunk| {
        T::map_slice(f, &x[first..first + chunk.len()], chunk);
    });
}

/// `out = f(a, b)` with broadcasting: `a` and `b` are contiguous row-major with the given
/// shapes, `out` has `out_shape` (their broadcast shape, from [`broadcast_shapes`]).
#[allow(clippy::too_many_arguments)]
pub fn binary_into<A, B, O, F>(
    a: &[A],
    a_shape: &[usize],
    b: &[B],
    b_shape: &[usize],
    out_shape: &[usize],
    out: &mut [O],
    f: F,
) where
    A: Copy + Sync,
    B: Copy + Sync,
    O: Copy + Send,
    F: Fn(A, B) -> O + Sync,
{
    if a_shape == b_shape {
        // Equal shapes: one flat zip, the most common case.
        for_each_chunk(out, 1, CHEAP_WORK, |first, chunk| {
            let n = chunk.len();
            for ((o, &x), &y) in chunk
                .iter_mut()
                .zip(&a[first..first + n])
                .zip(&b[first..first + n])
            {
                *o = f(x, y);
            }
        });
        return;
    }
    let plan = Plan::new([a_shape, b_shape], out_shape);
    for_each_chunk(out, 1, CHEAP_WORK, |first, chunk| {
        plan.for_each_run(first, chunk.len(), |pos, [oa, ob], n| {
            let o = &mut chunk[pos - first..pos - first + n];
            binary_run(
                o,
                &a[oa..],
                plan_inner(&plan, 0),
                &b[ob..],
                plan_inner(&plan, 1),
                &f,
            );
        });
    });
}

/// The innermost stride of operand `k` (0 or 1).
#[inline(always)]
fn plan_inner<const K: usize>(plan: &Plan<K>, k: usize) -> usize {
    *plan.strides[k].last().expect("plans are never empty")
}

/// One innermost run of a binary op: each operand advances by one or repeats its first element.
#[inline(always)]
fn binary_run<A: Copy, B: Copy, O: Copy>(
    o: &mut [O],
    a: &[A],
    sa: usize,
    b: &[B],
    sb: usize,
    f: &impl Fn(A, B) -> O,
) {
    let n = o.len();
    match (sa, sb) {
        (0, 0) => o.fill(f(a[0], b[0])),
        (0, _) => {
            let x = a[0];
            for (o, &y) in o.iter_mut().zip(&b[..n]) {
                *o = f(x, y);
            }
        }
        (_, 0) => {
            let y = b[0];
            for (o, &x) in o.iter_mut().zip(&a[..n]) {
                *o = f(x, y);
            }
        }
        _ => {
            for ((o, &x), &y) in o.iter_mut().zip(&a[..n]).zip(&b[..n]) {
                *o = f(x, y);
            }
        }
    }
}

/// `out = f(c, a, b)` with three-way broadcasting (the kernel of `select`).
#[allow(clippy::too_many_arguments)]
pub fn ternary_into<C, A, B, O, F>(
    c: &[C],
    c_shape: &[usize],
    a: &[A],
    a_shape: &[usize],
    b: &[B],
    b_shape: &[usize],
    out_shape: &[usize],
    out: &mut [O],
    f: F,
) where
    C: Copy + Sync,
    A: Copy + Sync,
    B: Copy + Sync,
    O: Copy + Send,
    F: Fn(C, A, B) -> O + Sync,
{
    let plan = Plan::new([c_shape, a_shape, b_shape], out_shape);
    let [sc, sa, sb] = [0, 1, 2].map(|k| plan_inner(&plan, k));
    for_each_chunk(out, 1, CHEAP_WORK, |first, chunk| {
        plan.for_each_run(first, chunk.len(), |pos, [oc, oa, ob], n| {
            let o = &mut chunk[pos - first..pos - first + n];
            for (i, o) in o.iter_mut().enumerate() {
                *o = f(c[oc + i * sc], a[oa + i * sa], b[ob + i * sb]);
            }
        });
    });
}

/// Copies contiguous row-major `x` of `x_shape` into `out` of the broadcast shape `out_shape`.
pub fn broadcast_into<T: Copy + Send + Sync>(
    x: &[T],
    x_shape: &[usize],
    out_shape: &[usize],
    out: &mut [T],
) {
    let plan = Plan::new([x_shape], out_shape);
    let s = plan_inner(&plan, 0);
    for_each_chunk(out, 1, CHEAP_WORK, |first, chunk| {
        plan.for_each_run(first, chunk.len(), |pos, [ox], n| {
            let o = &mut chunk[pos - first..pos - first + n];
            if s == 0 {
                o.fill(x[ox]);
            } else {
                o.copy_from_slice(&x[ox..ox + n]);
            }
        });
    });
}
