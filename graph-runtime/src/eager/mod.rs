//! The eager API: every op of docs/OPS.md run at once over ndarray arrays and views, each allocating its result.
//!
//! This is `NAME::eager` and the baseline of every benchmark. Each op checks its operands'
//! shapes at run time and returns [`Error`](crate::Error) naming the op, both shapes and
//! the axis; no op panics on bad input. The ops call the same kernels as compiled graphs,
//! so a speed-up of a compiled graph measures the compiler, not a better kernel.
//!
//! Operands are anything that views as an array ([`IntoView`]): `&Array2<f32>`,
//! `ArrayView2<f32>`, `&ArrayD<f32>`... Results are dynamic-rank `ArrayD`.

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

/// `x` in contiguous row-major layout, borrowed when it already is, copied otherwise.
fn standard<'v, T: Clone>(x: &'v ArrayViewD<'_, T>) -> CowArray<'v, T, IxDyn> {
    x.as_standard_layout()
}

/// The elements of a standard-layout array as one slice.
fn flat<'a, T>(x: &'a CowArray<'_, T, IxDyn>) -> &'a [T] {
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
