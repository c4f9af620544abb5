//! Counting-allocator proofs of the buffer plan: W1 allocates exactly its output, W4 its output plus two row-statistics vectors.

use grafo::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Counts allocations of at least `BIG` bytes (any thread) while `ON` is set.
struct Counting;

static ON: AtomicBool = AtomicBool::new(false);
static BIG_COUNT: AtomicUsize = AtomicUsize::new(0);
static BIG_BYTES: AtomicUsize = AtomicUsize::new(0);
static SMALL_BYTES: AtomicUsize = AtomicUsize::new(0);
/// Allocations smaller than this are thread-pool bookkeeping, not tensor buffers.
const BIG: usize = 4096;
/// The tests share the counters, so they run one at a time.
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
        if size >= BIG {
            BIG_COUNT.fetch_add(1, Ordering::Relaxed);
            BIG_BYTES.fetch_add(size, Ordering::Relaxed);
        } else {
            SMALL_BYTES.fetch_add(size, Ordering::Relaxed);
        }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` and returns (big allocations, their bytes, small bytes).
fn count<R>(f: impl FnOnce() -> R) -> (usize, usize, usize, R) {
    BIG_COUNT.store(0, Ordering::SeqCst);
    BIG_BYTES.store(0, Ordering::SeqCst);
    SMALL_BYTES.store(0, Ordering::SeqCst);
    ON.store(true, Ordering::SeqCst);
    let r = f();
    ON.store(false, Ordering::SeqCst);
    (
        BIG_COUNT.load(Ordering::SeqCst),
        BIG_BYTES.load(Ordering::SeqCst),
        SMALL_BYTES.load(Ordering::SeqCst),
        r,
    )
}

#[graph]
fn gelu(x: Tensor<f32, N>) -> Tensor<f32, N> {
    0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
}

#[graph]
fn layernorm(
    x: Tensor<f32, N, 1024>,
    gamma: Tensor<f32, 1024>,
    beta: Tensor<f32, 1024>,
) -> Tensor<f32, N, 1024> {
    let mean = reduce_mean(x, -1, true);
    let d = x - mean;
    let var = reduce_mean(d * d, -1, true);
    d / sqrt(var + 1e-5) * gamma + beta
}

#[test]
fn w1_allocates_exactly_its_output() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let n = 1 << 20;
    let x = Array1::from_iter((0..n).map(|i| (i % 1000) as f32 / 500.0 - 1.0));
    let _ = gelu(&x).unwrap();
    let (big, bytes, small, y) = count(|| gelu(&x).unwrap());
    assert_eq!(y.len(), n);
    assert_eq!(big, 1, "one buffer: the output");
    assert_eq!(bytes, n * 4);
    assert!(small < 4096, "bookkeeping only, found {small} bytes");
    // The eager path materialises every intermediate.
    let (eager_big, _, _, _) = count(|| gelu::eager(&x).unwrap());
    assert!(
        eager_big >= 8,
        "eager materialises its intermediates, found {eager_big}"
    );
}

#[test]
fn w4_allocates_its_output_and_two_row_vectors() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rows = 2048;
    let x = Array2::from_shape_fn((rows, 1024), |(i, j)| ((i * 7 + j * 3) % 101) as f32 / 50.0);
    let g = Array1::from_elem(1024, 1.5f32);
    let b = Array1::from_elem(1024, 0.25f32);
    let _ = layernorm(&x, &g, &b).unwrap();
    let (big, bytes, _, y) = count(|| layernorm(&x, &g, &b).unwrap());
    assert_eq!(y.shape(), &[rows, 1024]);
    assert_eq!(big, 3, "the output and the mean and variance rows");
    assert_eq!(bytes, rows * 1024 * 4 + 2 * rows * 4);
}
