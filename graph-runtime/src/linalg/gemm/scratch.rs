//! [`ScratchPool`]: scratch buffers shared by every thread and provisioned up front, so that a kernel allocates nothing in steady state whichever thread rayon hands a block to.
//!
//! Thread-local scratch is grown by a thread the first time it runs a block that needs it,
//! and which thread gets a block varies from run to run: a warm-up run whose blocks all
//! happened to run on one thread leaves the other threads without scratch, and a later
//! run allocates. A pool instead lends its buffers to whichever thread asks, and the
//! thread that starts a parallel loop provisions it first ([`ScratchPool::reserve`]) with
//! one buffer per thread, each as long as the longest block needs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Buffers of `T` lent to any thread; see the module docs.
pub struct ScratchPool<T> {
    free: Mutex<Vec<Vec<T>>>,
    /// Buffers made so far (free or lent).
    made: AtomicUsize,
    /// Every buffer made holds at least this many elements.
    min_len: AtomicUsize,
}

impl<T> Default for ScratchPool<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> ScratchPool<T> {
    /// An empty pool (usable in a `static`).
    pub const fn new() -> ScratchPool<T> {
        ScratchPool {
            free: Mutex::new(Vec::new()),
            made: AtomicUsize::new(0),
            min_len: AtomicUsize::new(0),
        }
    }

    fn free(&self) -> MutexGuard<'_, Vec<Vec<T>>> {
        // A panic elsewhere cannot leave the list inconsistent: ignore poisoning.
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Buffers made so far, free or lent.
    pub fn made(&self) -> usize {
        self.made.load(Ordering::Acquire)
    }
}

impl<T: Copy + Default> ScratchPool<T> {
    /// Makes sure the pool holds `count` buffers of at least `len` elements and can take
    /// them all back without growing its list: call it on the thread that starts a
    /// parallel loop, before the loop, with the loop's thread count and the longest
    /// block's need. Once provisioned, the call itself allocates nothing and takes no lock.
    pub fn reserve(&self, count: usize, len: usize) {
        if self.made.load(Ordering::Acquire) >= count && self.min_len.load(Ordering::Acquire) >= len
        {
            return;
        }
        let mut free = self.free();
        let made = self.made.load(Ordering::Acquire);
        let len = len.max(self.min_len.load(Ordering::Acquire));
        for buf in free.iter_mut() {
            grow(buf, len);
        }
        let missing = count.saturating_sub(made);
        let total = made + missing;
        // Room for every buffer, those lent now included, to come back.
        let room = total.saturating_sub(free.len());
        free.reserve(room);
        for _ in 0..missing {
            let mut buf = Vec::new();
            grow(&mut buf, len);
            free.push(buf);
        }
        self.made.store(total, Ordering::Release);
        // The buffers lent now may be shorter: only when all are here is every one known
        // to hold `len`.
        if free.len() == total {
            self.min_len.store(len, Ordering::Release);
        }
    }

    /// Runs `f` on `len` elements of a buffer borrowed from the pool (one already that long
    /// if any is free, else one grown or made now), which goes back to the pool afterwards,
    /// also when `f` panics. The elements hold whatever the last borrower left.
    pub fn with<R>(&self, len: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
        let popped = {
            let mut free = self.free();
            let at = free.iter().position(|b| b.len() >= len);
            match at {
                Some(i) => Some(free.swap_remove(i)),
                None => free.pop(),
            }
        };
        let buf = popped.unwrap_or_else(|| {
            self.made.fetch_add(1, Ordering::AcqRel);
            let mut buf = Vec::new();
            grow(&mut buf, self.min_len.load(Ordering::Acquire));
            buf
        });
        let mut lent = Lent { pool: self, buf };
        grow(&mut lent.buf, len);
        f(&mut lent.buf[..len])
    }
}

/// A buffer borrowed from a pool, returned when dropped.
struct Lent<'a, T> {
    pool: &'a ScratchPool<T>,
    buf: Vec<T>,
}

impl<T> Drop for Lent<'_, T> {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        self.pool.free().push(buf);
    }
}

/// Grows `buf` to `len` elements (exactly that capacity), keeping what it holds.
#[cold]
fn grow_slow<T: Copy + Default>(buf: &mut Vec<T>, len: usize) {
    buf.reserve_exact(len - buf.len());
    buf.resize(len, T::default());
}

#[inline]
fn grow<T: Copy + Default>(buf: &mut Vec<T>, len: usize) {
    if buf.len() < len {
        grow_slow(buf, len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_buffers_serve_every_borrower() {
        let pool = ScratchPool::<f32>::new();
        pool.reserve(2, 10);
        assert_eq!(pool.made(), 2);
        // Two borrowers at once, each finding a buffer of 10.
        pool.with(10, |a| {
            a.fill(1.0);
            pool.with(7, |b| {
                assert_eq!(b.len(), 7);
                b.fill(2.0);
            });
        });
        assert_eq!(pool.made(), 2, "no buffer was made by a borrower");
        // A third nested borrower makes one buffer as long as the reserved ones.
        pool.with(3, |_| {
            pool.with(3, |_| pool.with(3, |c| assert_eq!(c.len(), 3)))
        });
        assert_eq!(pool.made(), 3);
        // Reserving again for as much is free; for more it grows what is there.
        pool.reserve(3, 10);
        pool.reserve(2, 20);
        assert_eq!(pool.made(), 3);
        pool.with(20, |a| {
            pool.with(20, |b| {
                pool.with(20, |c| {
                    assert_eq!((a.len(), b.len(), c.len()), (20, 20, 20));
                })
            })
        });
    }

    #[test]
    fn a_panicking_borrower_returns_its_buffer() {
        let pool = ScratchPool::<u8>::new();
        pool.reserve(1, 4);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.with(4, |_| panic!("inside"))
        }));
        assert!(r.is_err());
        assert_eq!(pool.free().len(), 1);
        assert_eq!(pool.made(), 1);
    }
}
