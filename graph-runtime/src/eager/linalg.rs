//! Eager linear algebra: `matmul`, `transpose` and `reshape` over ndarray operands, on the same kernels as compiled graphs.

use ndarray::{ArrayD, IxDyn};

use super::IntoView;
use crate::dtype::Element;
use crate::error::Error;
use crate::layout::{check_perm, transpose_into};
use crate::matmul::{matmul_into, no_epilogue, GemmElement, MatmulDims};

/// `matmul(a, b)`: `[m, k] x [k, n]`, batched `[B, m, k] x [B, k, n]`, or one matrix
/// broadcast over the batch (`[B, m, k] x [k, n]` or `[m, k] x [B, k, n]`).
///
/// Errors name the op, both shapes and the offending axis of the left operand.
pub fn matmul<'a, T: GemmElement>(
    a: impl IntoView<'a, T>,
    b: impl IntoView<'a, T>,
) -> Result<ArrayD<T>, Error> {
    let (a, b) = (a.into_view(), b.into_view());
    let (sa, sb) = (a.shape(), b.shape());
    if !(2..=3).contains(&sa.len()) || !(2..=3).contains(&sb.len()) {
        return Err(Error::shape(
            "matmul",
            "operands must be matrices or batches of matrices (rank 2 or 3)",
            sa,
            sb,
            None,
        ));
    }
    // The last two axes are the matrices; a leading axis, if any, is the batch.
    let (m, k) = (sa[sa.len() - 2], sa[sa.len() - 1]);
    let (k2, n) = (sb[sb.len() - 2], sb[sb.len() - 1]);
    if k != k2 {
        return Err(Error::shape(
            "matmul",
            format!("inner dimensions differ ({k} != {k2})"),
            sa,
            sb,
            Some(sa.len() - 1),
        ));
    }
    let batch_a = (sa.len() == 3).then(|| sa[0]);
    let batch_b = (sb.len() == 3).then(|| sb[0]);
    let batch = match (batch_a, batch_b) {
        (Some(x), Some(y)) if x != y => {
            return Err(Error::shape(
                "matmul",
                format!("batch sizes differ ({x} != {y})"),
                sa,
                sb,
                Some(0),
            ))
        }
        (Some(x), _) | (None, Some(x)) => Some(x),
        (None, None) => None,
    };
    let dims = MatmulDims {
        batch: batch.unwrap_or(1),
        m,
        k,
        n,
        a_batch_stride: if batch_a.is_some() { m * k } else { 0 },
        b_batch_stride: if batch_b.is_some() { k * n } else { 0 },
    };
    // Non-contiguous views (transposed, sliced) are copied to row-major once.
    let (a, b) = (a.as_standard_layout(), b.as_standard_layout());
    let (a_s, b_s) = (contiguous(&a), contiguous(&b));
    let mut out = vec![T::ZERO; dims.batch * m * n];
    matmul_into(a_s, b_s, &mut out, dims, no_epilogue);
    let shape = match batch {
        Some(bs) => vec![bs, m, n],
        None => vec![m, n],
    };
    Ok(from_vec(shape, out))
}

/// `transpose(x)` (axes reversed) or `transpose(x, perm)` (output axis `j` is input axis `perm[j]`).
pub fn transpose<'a, T: Element>(
    x: impl IntoView<'a, T>,
    perm: Option<&[usize]>,
) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    let rank = x.ndim();
    let reversed: Vec<usize> = (0..rank).rev().collect();
    let perm = perm.unwrap_or(&reversed);
    check_perm(perm, rank)?;
    let x = x.as_standard_layout();
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape()[p]).collect();
    let mut out = vec![T::default(); x.len()];
    transpose_into(contiguous(&x), x.shape(), perm, &mut out);
    Ok(from_vec(shape, out))
}

/// `reshape(x, shape)`: the same elements in row-major order under a new shape of the same size.
pub fn reshape<'a, T: Element>(
    x: impl IntoView<'a, T>,
    shape: &[usize],
) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    let (from, to) = (x.len(), shape.iter().product::<usize>());
    if from != to {
        return Err(Error::shape(
            "reshape",
            format!("element counts differ ({from} != {to})"),
            x.shape(),
            shape,
            None,
        ));
    }
    let data = x.as_standard_layout().iter().copied().collect();
    Ok(from_vec(shape.to_vec(), data))
}

/// The elements of a standard-layout array as one slice.
pub(crate) fn contiguous<'s, T>(x: &'s ndarray::CowArray<'_, T, IxDyn>) -> &'s [T] {
    x.as_slice()
        .expect("as_standard_layout gives a contiguous array")
}

/// An `ArrayD` from a row-major vector whose length matches `shape`.
pub(crate) fn from_vec<T>(shape: Vec<usize>, data: Vec<T>) -> ArrayD<T> {
    ArrayD::from_shape_vec(IxDyn(&shape), data)
        .expect("the kernel filled exactly the output's elements")
}
