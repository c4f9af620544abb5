//! Helpers the code emitted by `#[graph]` calls: argument views, entry checks binding symbolic dims, broadcast offsets, result arrays.

use super::buffer;
use crate::error::Error;
use ndarray::{
    Array, ArrayBase, ArrayView, ArrayViewD, ArrayViewMut, CowArray, Data, DataMut, Dimension,
    IxDyn,
};

// The output buffers the emitted code writes its results through live with the other
// buffers; the emitted code names them here.
pub use super::out_buf::{fresh, fresh_by_blocks, fresh_with, OutBlock, OutBuf, OutRows};

/// What a compiled function accepts for a `Tensor<T, ...>` parameter of rank `D`: `&Array`, `ArrayView`, `&ArrayView`.
pub trait TensorArg<'a, T, D: Dimension> {
    fn arg_view(self) -> ArrayView<'a, T, D>;
}

impl<'a, T, S, D> TensorArg<'a, T, D> for &'a ArrayBase<S, D>
where
    S: Data<Elem = T>,
    D: Dimension,
{
    #[inline]
    fn arg_view(self) -> ArrayView<'a, T, D> {
        self.view()
    }
}

impl<'a, T, D: Dimension> TensorArg<'a, T, D> for ArrayView<'a, T, D> {
    #[inline]
    fn arg_view(self) -> ArrayView<'a, T, D> {
        self
    }
}

/// What a compiled function accepts for an in-place parameter `w: &mut Tensor<T, ...>` of rank
/// `D`: `&mut Array` (any owned or mutably viewable array) or an `ArrayViewMut`, in any layout.
pub trait TensorArgMut<'a, T, D: Dimension> {
    fn arg_view_mut(self) -> ArrayViewMut<'a, T, D>;
}

impl<'a, T, S, D> TensorArgMut<'a, T, D> for &'a mut ArrayBase<S, D>
where
    S: DataMut<Elem = T>,
    D: Dimension,
{
    #[inline]
    fn arg_view_mut(self) -> ArrayViewMut<'a, T, D> {
        self.view_mut()
    }
}

impl<'a, T, D: Dimension> TensorArgMut<'a, T, D> for ArrayViewMut<'a, T, D> {
    #[inline]
    fn arg_view_mut(self) -> ArrayViewMut<'a, T, D> {
        self
    }
}

/// An in-place parameter during a compiled call whose loop writes the parameter's new value
/// straight into the caller's memory: the call reads the current value through
/// [`InPlace::current`] and the loop writes through [`InPlace::target`], the parameter's own
/// elements when it is in standard layout. A parameter in another layout (a transposed or
/// sliced view) is staged: a contiguous copy made at entry is read and written instead, and
/// [`InPlace::finish`] writes it back.
pub struct InPlace<'p, 'a, T, D: Dimension> {
    param: &'p mut ArrayViewMut<'a, T, D>,
    staged: Option<Vec<T>>,
}

impl<'p, 'a, T: Copy, D: Dimension> InPlace<'p, 'a, T, D> {
    /// The parameter `name`, staged when it is not in standard layout (the copy's buffer is
    /// allocated fallibly: [`Error::OutOfMemory`] names the parameter).
    #[inline]
    pub fn new(name: &'static str, param: &'p mut ArrayViewMut<'a, T, D>) -> Result<Self, Error> {
        let staged = if param.is_standard_layout() {
            None
        } else {
            let mut data = buffer::with_capacity(name, param.len())?;
            data.extend(param.iter().copied());
            Some(data)
        };
        Ok(InPlace { param, staged })
    }

    /// The parameter's value as the call found it, row-major.
    #[inline]
    pub fn current(&self) -> &[T] {
        match &self.staged {
            Some(s) => s,
            None => match self.param.as_slice() {
                Some(s) => s,
                None => contiguous_invariant(),
            },
        }
    }

    /// Where the parameter's new value goes, row-major: its own elements, or the staged copy.
    #[inline]
    pub fn target(&mut self) -> &mut [T] {
        match &mut self.staged {
            Some(s) => s,
            None => match self.param.as_slice_mut() {
                Some(s) => s,
                None => contiguous_invariant(),
            },
        }
    }

    /// Writes a staged copy back into the parameter (nothing to do when the loop wrote the
    /// parameter itself).
    #[inline]
    pub fn finish(self) {
        if let Some(s) = self.staged {
            write_param(self.param, &s);
        }
    }
}

/// Writes `value` (row-major, the parameter's element count) into an in-place parameter of
/// any layout: the copy path of a parameter's new value.
#[inline]
pub fn write_param<T: Copy, D: Dimension>(param: &mut ArrayViewMut<'_, T, D>, value: &[T]) {
    if value.len() != param.len() {
        contiguous_invariant();
    }
    match param.as_slice_mut() {
        Some(s) => s.copy_from_slice(value),
        None => param.iter_mut().zip(value).for_each(|(p, v)| *p = *v),
    }
}

/// Writes an eager value into an in-place parameter of any layout (`NAME::eager`'s last step).
#[inline]
pub fn write_param_eager<T: Copy, D: Dimension>(
    param: &mut ArrayViewMut<'_, T, D>,
    value: &ArrayViewD<'_, T>,
) {
    if value.shape() != param.shape() {
        contiguous_invariant();
    }
    match value.as_slice() {
        Some(s) => write_param(param, s),
        None => param
            .iter_mut()
            .zip(value.iter())
            .for_each(|(p, v)| *p = *v),
    }
}

/// Whether `f(x, y)` holds for every element pair of two operands of one shape, or of an
/// operand and a single value (either side): a compiled `assert_less`/`assert_greater`
/// checks this without the eager op's temporary, which then only builds the error.
#[inline]
pub fn holds_everywhere<T: Copy>(x: &[T], y: &[T], f: impl Fn(T, T) -> bool) -> bool {
    match (x.len(), y.len()) {
        (_, 1) => x.iter().all(|&a| f(a, y[0])),
        (1, _) => y.iter().all(|&b| f(x[0], b)),
        _ => x.len() == y.len() && x.iter().zip(y).all(|(&a, &b)| f(a, b)),
    }
}

/// The size of a product dim (`B*4`, from a `reshape`) from its factors, or an error if it
/// overflows `usize`.
#[inline]
pub fn product_dim(dim: &'static str, factors: &[usize]) -> Result<usize, Error> {
    factors
        .iter()
        .try_fold(1usize, |acc, &f| acc.checked_mul(f))
        .ok_or_else(|| product_overflow(dim, factors))
}

#[cold]
#[inline(never)]
fn product_overflow(dim: &'static str, factors: &[usize]) -> Error {
    Error::invalid(
        "reshape",
        format!("the dim {dim} overflows usize (its factors are {factors:?})"),
    )
}

/// Checks axis `axis` of parameter `param`, declared as the product dim `dim` (`B*4`) whose
/// symbols are all bound: its size is the product of `factors` (the symbols' sizes and the
/// constant).
#[inline]
pub fn check_product_dim(
    param: &'static str,
    axis: usize,
    dim: &'static str,
    factors: &[usize],
    shape: &[usize],
) -> Result<(), Error> {
    let expected = factors
        .iter()
        .try_fold(1usize, |acc, &f| acc.checked_mul(f));
    if expected == Some(shape[axis]) {
        return Ok(());
    }
    let message = match expected {
        Some(e) => format!("expected size {e}, found {}", shape[axis]),
        None => format!(
            "its factors {factors:?} overflow usize; found {}",
            shape[axis]
        ),
    };
    Err(product_dim_error(param, axis, dim, message, shape))
}

/// Binds `symbol`, the one symbol of the product dim `dim` (`B*4`) at axis `axis` of `param`
/// that no plain dim binds: the axis's size divided by `known` (the other factors, the
/// constant included), which must divide it exactly.
#[inline]
pub fn bind_from_product(
    param: &'static str,
    axis: usize,
    dim: &'static str,
    symbol: &'static str,
    known: &[usize],
    shape: &[usize],
) -> Result<usize, Error> {
    let size = shape[axis];
    let message = match known.iter().try_fold(1usize, |acc, &f| acc.checked_mul(f)) {
        Some(0) => {
            format!("its other factors are 0, so size {size} leaves `{symbol}` without a size")
        }
        Some(d) if size.is_multiple_of(d) => return Ok(size / d),
        Some(d) => format!("size {size} is not a multiple of {d}, so `{symbol}` has no size"),
        None => format!("its other factors {known:?} overflow usize"),
    };
    Err(product_dim_error(param, axis, dim, message, shape))
}

#[cold]
#[inline(never)]
fn product_dim_error(
    param: &'static str,
    axis: usize,
    dim: &'static str,
    message: String,
    shape: &[usize],
) -> Error {
    Error::InputProductDim {
        param: param.to_string(),
        axis,
        dim: dim.to_string(),
        message,
        found_shape: shape.to_vec(),
    }
}

/// Checks a static dim of parameter `param`.
#[inline]
pub fn check_dim(
    param: &'static str,
    axis: usize,
    expected: usize,
    shape: &[usize],
) -> Result<(), Error> {
    if shape[axis] == expected {
        Ok(())
    } else {
        Err(dim_error(param, axis, expected, shape))
    }
}

#[cold]
#[inline(never)]
fn dim_error(param: &'static str, axis: usize, expected: usize, shape: &[usize]) -> Error {
    Error::InputDim {
        param: param.to_string(),
        axis,
        expected,
        found: shape[axis],
        found_shape: shape.to_vec(),
    }
}

/// Checks that symbol `symbol`, bound to `bound` by `bound_by`, has the same size at `param` axis `axis`.
#[inline]
pub fn check_symbol(
    symbol: &'static str,
    bound: usize,
    bound_by: &'static str,
    param: &'static str,
    axis: usize,
    shape: &[usize],
) -> Result<(), Error> {
    if shape[axis] == bound {
        Ok(())
    } else {
        Err(symbol_error(symbol, bound, bound_by, param, axis, shape))
    }
}

#[cold]
#[inline(never)]
fn symbol_error(
    symbol: &'static str,
    bound: usize,
    bound_by: &'static str,
    param: &'static str,
    axis: usize,
    shape: &[usize],
) -> Error {
    Error::SymbolConflict {
        symbol: symbol.to_string(),
        bound,
        bound_by: bound_by.to_string(),
        param: param.to_string(),
        axis,
        found: shape[axis],
    }
}

/// Checks at entry that the value of op `op`, of `shape` (some dims symbolic), has an
/// element count that fits: every size the compiled code computes from this shape is then
/// free of overflow.
#[inline]
pub fn check_size<T>(op: &'static str, shape: &[usize]) -> Result<(), Error> {
    buffer::element_count::<T>(op, shape).map(|_| ())
}

/// A contiguous row-major copy of `view`, or the view itself when it already is one (no copy).
///
/// The copy's buffer is allocated fallibly: [`Error::OutOfMemory`] names the parameter.
#[inline]
pub fn standard<'a, T: Clone, D: Dimension>(
    param: &'static str,
    view: ArrayView<'a, T, D>,
) -> Result<CowArray<'a, T, D>, Error> {
    if view.is_standard_layout() {
        return Ok(CowArray::from(view));
    }
    let mut data = buffer::with_capacity(param, view.len())?;
    data.extend(view.iter().cloned());
    match Array::from_shape_vec(view.raw_dim(), data) {
        Ok(a) => Ok(CowArray::from(a)),
        Err(_) => contiguous_invariant(),
    }
}

/// The elements of a standard-layout array as a slice.
#[inline]
pub fn contiguous<'b, T, D: Dimension>(a: &'b CowArray<'_, T, D>) -> &'b [T] {
    match a.as_slice() {
        Some(s) => s,
        None => contiguous_invariant(),
    }
}

#[cold]
#[inline(never)]
fn contiguous_invariant() -> ! {
    unreachable!("a standard-layout array (or copy) is contiguous and has its view's shape")
}

/// The single element of a rank-0 view.
#[inline]
pub fn scalar_of<T: Copy, D: Dimension>(view: &ArrayView<'_, T, D>) -> T {
    match view.iter().next() {
        Some(v) => *v,
        None => contiguous_invariant(),
    }
}

/// The element of a rank-0 eager value (the `if` of `NAME::eager`).
pub fn eager_scalar<T: Copy>(a: &ndarray::ArrayViewD<'_, T>) -> Result<T, Error> {
    match (a.ndim(), a.iter().next()) {
        (0, Some(v)) => Ok(*v),
        _ => Err(Error::invalid(
            "if",
            format!(
                "the condition must be a rank-0 tensor, found shape {:?}",
                a.shape()
            ),
        )),
    }
}

/// Wraps a buffer as the array of a result; `shape` is the result's shape.
#[inline]
pub fn into_array<T, D: Dimension>(shape: D, data: Vec<T>) -> Result<Array<T, D>, Error> {
    let len = data.len();
    Array::from_shape_vec(shape, data).map_err(|e| {
        Error::invalid(
            "result",
            format!("a buffer of {len} elements does not match the result shape: {e}"),
        )
    })
}

/// Converts an eager result to the declared rank.
pub fn into_rank<T, D: Dimension>(a: ndarray::ArrayD<T>) -> Result<Array<T, D>, Error> {
    let shape = a.shape().to_vec();
    a.into_dimensionality::<D>().map_err(|_| {
        Error::invalid(
            "result",
            format!("expected rank {:?}, found shape {shape:?}", D::NDIM),
        )
    })
}

/// A dynamic-rank view of a contiguous buffer (for ops that take views, like the checks).
#[inline]
pub fn view_of<'a, T>(data: &'a [T], shape: &[usize]) -> Result<ArrayView<'a, T, IxDyn>, Error> {
    ArrayView::from_shape(IxDyn(shape), data).map_err(|e| Error::invalid("view", e.to_string()))
}

/// Maximum rank for broadcast offsets.
pub const MAX_RANK: usize = 8;

/// Offsets of a broadcast operand's rows: for row `r` of an output split into rows at an
/// axis, the element offset in the operand where that row's data starts.
#[derive(Debug, Clone, Copy)]
pub struct RowBroadcast {
    outer: usize,
    dims: [usize; MAX_RANK],
    strides: [usize; MAX_RANK],
}

impl RowBroadcast {
    /// `out` is the output shape, `leaf` the operand's shape (right-aligned), `split` the first axis of a row.
    pub fn new(out: &[usize], leaf: &[usize], split: usize) -> RowBroadcast {
        let r = out.len();
        let mut padded = [1usize; MAX_RANK];
        for (i, &d) in leaf.iter().enumerate() {
            padded[r - leaf.len() + i] = d;
        }
        let mut strides = [0usize; MAX_RANK];
        let mut s = 1;
        for k in (0..r).rev() {
            strides[k] = if padded[k] == 1 { 0 } else { s };
            s *= padded[k];
        }
        let mut dims = [1usize; MAX_RANK];
        dims[..split].copy_from_slice(&out[..split]);
        RowBroadcast {
            outer: split,
            dims,
            strides,
        }
    }

    /// The element offset of row `row` in the operand.
    #[inline(always)]
    pub fn offset(&self, mut row: usize) -> usize {
        let mut off = 0;
        let mut k = self.outer;
        while k > 0 {
            k -= 1;
            let d = self.dims[k];
            let c = row % d.max(1);
            row /= d.max(1);
            off += c * self.strides[k];
        }
        off
    }
}
