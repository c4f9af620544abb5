//! Checked sizes and fallible allocation of tensor buffers: a size that overflows or that the allocator refuses is an [`Error`], never a panic or an abort.
//!
//! Every result and intermediate buffer of the eager API and of compiled graphs comes from
//! here. Sizes follow ndarray's rule (the product of the nonzero dims must fit, and a
//! buffer may not exceed `isize::MAX` bytes, the limit of every Rust allocation), so an
//! array built from a buffer of a checked size never fails its own shape check.
//!
//! Buffers of the five element types are allocated zeroed (`calloc`-backed): fresh pages
//! come from the OS already zero, so this costs no pass over memory, and a kernel that
//! overwrites its output never sees uninitialised memory.

use crate::error::Error;
use std::alloc::Layout;
use std::any::TypeId;

/// The element count of `shape` for a buffer of `T`, or [`Error::SizeOverflow`] naming `op`.
///
/// Every partial product of the dims fits as well (the nonzero dims multiply to at most
/// `isize::MAX / size_of::<T>()`), so code that multiplies some of the dims of a checked
/// shape cannot overflow either.
pub fn element_count<T>(op: &'static str, shape: &[usize]) -> Result<usize, Error> {
    let elem_bytes = std::mem::size_of::<T>().max(1);
    let limit = isize::MAX as usize / elem_bytes;
    let mut nonzero = 1usize;
    let mut empty = false;
    for &d in shape {
        if d == 0 {
            empty = true;
            continue;
        }
        nonzero = match nonzero.checked_mul(d) {
            Some(n) if n <= limit => n,
            _ => return Err(Error::size_overflow(op, shape, elem_bytes)),
        };
    }
    Ok(if empty { 0 } else { nonzero })
}

/// Whether all-zero bytes are a valid `T` equal to `T::default()` (the five element types).
fn zero_is_default<T: 'static>() -> bool {
    let t = TypeId::of::<T>();
    [
        TypeId::of::<f32>(),
        TypeId::of::<f64>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
        TypeId::of::<bool>(),
    ]
    .contains(&t)
}

/// The layout of `len` elements of `T`, or [`Error::SizeOverflow`].
fn layout_of<T>(op: &'static str, len: usize) -> Result<Layout, Error> {
    Layout::array::<T>(len).map_err(|_| Error::size_overflow(op, &[len], std::mem::size_of::<T>()))
}

/// `len` elements of `T::default()` (zero for the five element types), or an error naming `op`.
pub fn zeroed<T: Default + Clone + 'static>(op: &'static str, len: usize) -> Result<Vec<T>, Error> {
    let layout = layout_of::<T>(op, len)?;
    if layout.size() == 0 || !zero_is_default::<T>() {
        return filled(op, len, T::default());
    }
    // SAFETY: the layout's size is not zero (checked above).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return Err(Error::out_of_memory(op, len, layout.size()));
    }
    // SAFETY: `ptr` comes from the global allocator with the layout of `[T; len]`, which is
    // the layout a `Vec<T>` of capacity `len` frees with; its `len` elements are all-zero
    // bytes, which for the types `zero_is_default` accepts is a valid value (+0.0, 0,
    // false); nothing else owns the allocation.
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// The zeroed buffer of a result of `shape` (see [`zeroed`] and [`element_count`]).
pub fn zeroed_for<T: Default + Clone + 'static>(
    op: &'static str,
    shape: &[usize],
) -> Result<Vec<T>, Error> {
    zeroed(op, element_count::<T>(op, shape)?)
}

/// `len` copies of `value`, or an error naming `op`.
pub fn filled<T: Clone>(op: &'static str, len: usize, value: T) -> Result<Vec<T>, Error> {
    let mut v = with_capacity(op, len)?;
    v.resize(len, value);
    Ok(v)
}

/// A copy of `data` in a buffer of its own, or an error naming `op`.
pub fn copied<T: Clone>(op: &'static str, data: &[T]) -> Result<Vec<T>, Error> {
    let mut v = with_capacity(op, data.len())?;
    v.extend_from_slice(data);
    Ok(v)
}

/// An empty vector with room for exactly `len` elements, or an error naming `op`.
pub fn with_capacity<T>(op: &'static str, len: usize) -> Result<Vec<T>, Error> {
    let layout = layout_of::<T>(op, len)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| Error::out_of_memory(op, len, layout.size()))?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_filled_and_copied_buffers_hold_what_they_say() {
        for len in [0usize, 1, 7, 1023, 1 << 20] {
            let z: Vec<f32> = zeroed("t", len).unwrap();
            assert!(
                z.len() == len && z.iter().all(|v| v.to_bits() == 0),
                "{len}"
            );
            let b: Vec<bool> = zeroed("t", len).unwrap();
            assert!(b.len() == len && b.iter().all(|v| !v));
            let i: Vec<i64> = zeroed("t", len).unwrap();
            assert!(i.len() == len && i.iter().all(|&v| v == 0));
            let f = filled("t", len, -0.0f64).unwrap();
            assert!(f.len() == len && f.iter().all(|v| v.is_sign_negative()));
            let c = copied("t", &f).unwrap();
            assert_eq!(c.len(), len);
        }
        assert!(matches!(
            element_count::<f32>("t", &[1 << 40, 1 << 40]),
            Err(Error::SizeOverflow { op: "t", .. })
        ));
        assert_eq!(element_count::<f32>("t", &[0, 1 << 40]).unwrap(), 0);
        assert!(matches!(
            zeroed::<f32>("t", 1 << 60),
            Err(Error::OutOfMemory { op: "t", .. })
        ));
    }
}
