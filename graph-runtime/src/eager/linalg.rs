//! Eager linear algebra: `matmul`, `transpose` and `reshape` over ndarray operands, on the same kernels as compiled graphs.

use ndarray::ArrayD;

use super::{flat, from_vec, standard, IntoView};
use crate::dtype::Element;
use crate::error::Error;
use crate::exec::buffer;
use crate::kernels::layout::{check_perm, transpose_into};
use crate::linalg::gemm::{no_epilogue, GemmElement};
use crate::linalg::matmul_nd::{check, matmul_nd_into, NdMatmul};

/// `matmul(a, b)`: `[.., m, k] x [.., k, n]`, the leading (batch) axes broadcast as NumPy
/// does (`[B, H, S, D] x [B, H, D, S]`, `[B, S, D] x [D, E]`, `[B, 1, m, k] x [H, k, n]`).
///
/// Errors name the op, both shapes and the offending axis of the left operand.
pub fn matmul<'a, T: GemmElement>(
    a: impl IntoView<'a, T>,
    b: impl IntoView<'a, T>,
) -> Result<ArrayD<T>, Error> {
    let (a, b) = (a.into_view(), b.into_view());
    let (sa, sb) = (a.shape(), b.shape());
    let shape = check(sa, sb)?;
    let (ra, rb) = (sa.len(), sb.len());
    let spec = NdMatmul {
        a_batch: &sa[..ra - 2],
        b_batch: &sb[..rb - 2],
        m: sa[ra - 2],
        k: sa[ra - 1],
        n: sb[rb - 1],
        a_transposed: false,
        b_transposed: false,
    };
    // Non-contiguous views (transposed, sliced) are copied to row-major once.
    let (ac, bc) = (standard("matmul", &a)?, standard("matmul", &b)?);
    let (a_s, b_s) = (flat(&ac), flat(&bc));
    let mut out = buffer::zeroed_for("matmul", &shape)?;
    matmul_nd_into(a_s, b_s, &mut out, spec, no_epilogue);
    Ok(from_vec(&shape, out))
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
    let x = standard("transpose", &x)?;
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape()[p]).collect();
    let mut out = buffer::zeroed("transpose", x.len())?;
    transpose_into(flat(&x), x.shape(), perm, &mut out);
    Ok(from_vec(&shape, out))
}

/// `reshape(x, shape)`: the same elements in row-major order under a new shape of the same size.
pub fn reshape<'a, T: Element>(
    x: impl IntoView<'a, T>,
    shape: &[usize],
) -> Result<ArrayD<T>, Error> {
    let x = x.into_view();
    let (from, to) = (x.len(), buffer::element_count::<T>("reshape", shape)?);
    if from != to {
        return Err(Error::shape(
            "reshape",
            format!("element counts differ ({from} != {to})"),
            x.shape(),
            shape,
            None,
        ));
    }
    let data = match x.as_slice() {
        Some(s) => buffer::copied("reshape", s)?,
        None => {
            let mut data = buffer::with_capacity("reshape", from)?;
            data.extend(x.iter().copied());
            data
        }
    };
    Ok(from_vec(shape, data))
}
