//! The eager API: every op of docs/OPS.md run at once over ndarray arrays and views, each allocating its result.
//!
//! This is `NAME::eager` and the baseline of every benchmark. Each op checks its operands'
//! shapes at run time and returns [`Error`] naming the op, both shapes and
//! the axis; no op panics on bad input. The ops call the same kernels as compiled graphs,
//! so a speed-up of a compiled graph measures the compiler, not a better kernel.
//!
//! Operands are anything that views as an array ([`IntoView`]): `&Array2<f32>`,
//! `ArrayView2<f32>`, `&ArrayD<f32>`... Results are dynamic-rank `ArrayD`.

use crate::error::Error;
use ndarray::{ArrayBase, ArrayD, ArrayView, ArrayViewD, CowArray, Data, Dimension, IxDyn};

mod elementwise;
mod image;
mod linalg;
mod nn;
mod reduce;
mod selection;

pub use elementwise::*;
pub use image::*;
pub use linalg::*;
pub use nn::*;
pub use reduce::*;
pub use selection::*;

/// `x` in contiguous row-major layout, borrowed when it already is, copied otherwise into a
/// buffer allocated fallibly: a view too large to copy (a huge broadcast) is
/// [`Error::OutOfMemory`] naming `op`, never an abort. Every eager op reads its operands
/// through here.
fn standard<'v, T: Clone, D: Dimension>(
    op: &'static str,
    x: &'v ArrayView<'_, T, D>,
) -> Result<CowArray<'v, T, D>, Error> {
    crate::exec::compiled::standard(op, x.view())
}

/// The elements of `x` in row-major order, in a buffer of their own allocated fallibly
/// (an error naming `op`).
fn to_vec<T: Clone>(op: &'static str, x: &ArrayViewD<'_, T>) -> Result<Vec<T>, Error> {
    match x.as_slice() {
        Some(s) => crate::exec::buffer::copied(op, s),
        None => {
            let mut data = crate::exec::buffer::with_capacity(op, x.len())?;
            data.extend(x.iter().cloned());
            Ok(data)
        }
    }
}

/// The elements of a standard-layout array as one slice.
fn flat<'a, T, D: Dimension>(x: &'a CowArray<'_, T, D>) -> &'a [T] {
    x.as_slice().expect("a standard-layout array is contiguous")
}

/// A fresh array of `shape` from a row-major vector the kernel filled, of the right length.
fn from_vec<T>(shape: &[usize], v: Vec<T>) -> ArrayD<T> {
    ArrayD::from_shape_vec(IxDyn(shape), v).expect("the kernel filled exactly the shape's elements")
}

/// Anything an eager op can read as a dynamic-rank view without copying.
pub trait IntoView<'a, T> {
    fn into_view(self) -> ArrayViewD<'a, T>;
}

impl<'a, T, S, D> IntoView<'a, T> for &'a ArrayBase<S, D>
where
    S: Data<Elem = T>,
    D: Dimension,
{
    fn into_view(self) -> ArrayViewD<'a, T> {
        self.view().into_dyn()
    }
}

impl<'a, T, D: Dimension> IntoView<'a, T> for ArrayView<'a, T, D> {
    fn into_view(self) -> ArrayViewD<'a, T> {
        self.into_dimensionality::<IxDyn>()
            .expect("any dimension converts to IxDyn")
    }
}
