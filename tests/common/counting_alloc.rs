//! A counting global allocator for the tests that prove what a graph allocates.
//!
//! Include it with `#[path = "common/counting_alloc.rs"] mod counting_alloc;`: it installs
//! itself as the test binary's `#[global_allocator]`.
// Each test binary that includes this module uses some of its counts, not all.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
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

std::thread_local! {
    /// Whether this thread runs the closure of [`allocations`].
    static MEASURING: Cell<bool> = const { Cell::new(false) };
}

/// Whether an allocation on this thread belongs to the measured work: the thread that runs
/// it, or a rayon worker (of any pool: the tests that count run one at a time, see
/// [`serial`], so the only rayon work while counting is the measured one). Other threads
/// are not the measured code: the test harness reports the previous test and starts the
/// next one's thread while a test measures. (Neither check allocates: both thread-locals
/// are constant-initialised cells without destructors.)
fn measured_thread() -> bool {
    MEASURING.with(Cell::get) || rayon::current_thread_index().is_some()
}

fn record(size: usize) {
    if ON.load(Ordering::Relaxed) && measured_thread() {
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

/// What a closure allocated, on its own thread and on rayon's workers.
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

/// Runs `f` and returns what it allocated on this thread and on rayon's worker threads.
pub fn allocations<R>(f: impl FnOnce() -> R) -> (Counts, R) {
    for c in [&ALL_COUNT, &ALL_BYTES, &BIG_COUNT, &BIG_BYTES] {
        c.store(0, Ordering::SeqCst);
    }
    MEASURING.with(|m| m.set(true));
    ON.store(true, Ordering::SeqCst);
    let r = f();
    ON.store(false, Ordering::SeqCst);
    MEASURING.with(|m| m.set(false));
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

/// Runs `f` on a worker of `pool` while every other worker of it is held busy, so that all
/// the parallel work `f` starts runs on that one thread: a warm-up as it can happen on a
/// loaded machine, after which the other workers meet their first blocks in steady state.
pub fn with_one_worker<R: Send>(pool: &rayon::ThreadPool, f: impl FnOnce() -> R + Send) -> R {
    pool.install(|| {
        let others = pool.current_num_threads() - 1;
        let started = AtomicUsize::new(0);
        let release = AtomicBool::new(false);
        rayon::scope(|s| {
            for _ in 0..others {
                s.spawn(|_| {
                    started.fetch_add(1, Ordering::SeqCst);
                    while !release.load(Ordering::SeqCst) {
                        std::thread::yield_now();
                    }
                });
            }
            // Each other worker holds one of the jobs (a worker in a job takes no other), so
            // none is left for this thread to take while `f` waits on its own work.
            while started.load(Ordering::SeqCst) < others {
                std::thread::yield_now();
            }
            // Released also when `f` panics, so that the scope can end.
            let _release = Release(&release);
            f()
        })
    })
}

/// Sets its flag when dropped.
struct Release<'a>(&'a AtomicBool);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
