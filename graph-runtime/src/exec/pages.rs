//! Large fresh buffers on transparent huge pages where the OS allows it, so their first touch costs a few faults instead of thousands.
//!
//! A fresh 16 MiB result (W1's, W4's) is 4096 pages of 4 KiB, each faulted and zeroed by the
//! kernel the first time a kernel writes it: on the first call in a process (and whenever the
//! allocator has returned the memory to the OS) those faults cost more than the arithmetic.
//! On Linux with transparent huge pages in `madvise` mode, `MADV_HUGEPAGE` on the buffer's
//! 2 MiB-aligned interior makes that 8 faults of 2 MiB; pages already faulted stay as they
//! are, and where THP is off or the call fails nothing changes (it is advice).

/// Buffers smaller than this are left alone: they span at most one huge page.
pub const MIN_HUGE_BYTES: usize = 4 << 20;

/// The huge page size of x86-64 and aarch64 (with 4 KiB base pages).
const HUGE_PAGE: usize = 2 << 20;

/// Advises the kernel to back `v`'s allocation (its whole capacity) with huge pages.
#[inline]
pub fn advise_huge<T>(v: &Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes >= MIN_HUGE_BYTES {
        advise_range(v.as_ptr() as usize, bytes);
    }
}

#[cfg(target_os = "linux")]
#[cold]
fn advise_range(addr: usize, bytes: usize) {
    let start = addr.next_multiple_of(HUGE_PAGE);
    let end = (addr + bytes) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: [start, end) lies inside the vector's allocation, which this process
        // owns; MADV_HUGEPAGE only changes how the kernel backs it, never its contents.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_range(_addr: usize, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_keeps_contents_of_small_large_and_empty_buffers() {
        for len in [
            0usize,
            1,
            1023,
            (MIN_HUGE_BYTES / 4) - 1,
            3 * MIN_HUGE_BYTES / 4 + 7,
        ] {
            let v: Vec<f32> = (0..len).map(|i| i as f32).collect();
            advise_huge(&v);
            assert!(
                v.iter().enumerate().all(|(i, &x)| x == i as f32),
                "len {len}"
            );
        }
        // Advice before the first touch (how `compiled::fresh` uses it), then writes.
        let mut w = vec![0.0f64; MIN_HUGE_BYTES];
        advise_huge(&w);
        w.iter_mut().enumerate().for_each(|(i, x)| *x = -(i as f64));
        assert!(w.iter().enumerate().all(|(i, &x)| x == -(i as f64)));
    }
}
