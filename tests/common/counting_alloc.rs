//! A counting global allocator for the tests that prove what a graph allocates.
//!
//! Include it with `#[path = "common/counting_alloc.rs"] mod counting_alloc;`: it installs
//! itself as the test binary's `#[global_allocator]`.
// Each test binary that includes this module uses some of its counts, not all.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Allocations smaller than this are bookkeeping (thread pools, formatting), not tensor buffers.
pub const BIG: usize = 4096;

struct Counting;

static ON: AtomicBool = AtomicBool::new(false);
static ALL_COUNT: AtomicUsize = AtomicUsize::new(0);
static ALL_BYTES: AtomicUsize = AtomicUsize::new(0);
static BIG_COUNT: AtomicUsize = AtomicUsize::new(0);
static BIG_BYTES: AtomicUsize = AtomicUsize::new(0);
static SERIAL: Mutex<()> = Mutex::new(());

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

fn record(size: usize) {
    if ON.load(Ordering::Relaxed) {
        ALL_COUNT.fetch_add(1, Ordering::Relaxed);
        ALL_BYTES.fetch_add(size, Ordering::Relaxed);
        if size >= BIG {
            BIG_COUNT.fetch_add(1, Ordering::Relaxed);
            BIG_BYTES.fetch_add(size, Ordering::Relaxed);
        }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// What a closure allocated, on every thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub all: usize,
    pub all_bytes: usize,
    /// Allocations of at least [`BIG`] bytes.
    pub big: usize,
    pub big_bytes: usize,
}

/// The counters are global, so tests that count run one at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` and returns what it allocated.
pub fn allocations<R>(f: impl FnOnce() -> R) -> (Counts, R) {
    for c in [&ALL_COUNT, &ALL_BYTES, &BIG_COUNT, &BIG_BYTES] {
        c.store(0, Ordering::SeqCst);
    }
    ON.store(true, Ordering::SeqCst);
    let r = f();
    ON.store(false, Ordering::SeqCst);
    let load = |c: &AtomicUsize| c.load(Ordering::SeqCst);
    (
        Counts {
            all: load(&ALL_COUNT),
            all_bytes: load(&ALL_BYTES),
            big: load(&BIG_COUNT),
            big_bytes: load(&BIG_BYTES),
        },
        r,
    )
}
