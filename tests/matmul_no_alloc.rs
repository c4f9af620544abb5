//! Counting-allocator proof that `matmul_into` allocates nothing in steady state: after one
//! warm-up call, W2's two products (`[256, 784] x [784, 512]` and `[256, 512] x [512, 10]`,
//! f32 and f64) run inside a 2-thread rayon pool without a single heap allocation.

use graph_runtime::matmul::{matmul_into, GemmElement, MatmulDims};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Counts every allocation, on any thread, while `ON` is set.
struct Counting;

static ON: AtomicBool = AtomicBool::new(false);
static COUNT: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);
/// Allocations of at least this many bytes (a packing buffer is about 1.2 MB).
static BIG_COUNT: AtomicUsize = AtomicUsize::new(0);
const BIG: usize = 1024;
/// The tests share the counters, so they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

// SAFETY: forwards to the system allocator; counting touches only atomics.
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
        COUNT.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(size, Ordering::Relaxed);
        if size >= BIG {
            BIG_COUNT.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` with counting on; returns (allocations, their bytes, allocations >= BIG).
fn count(f: impl FnOnce()) -> (usize, usize, usize) {
    COUNT.store(0, Ordering::SeqCst);
    BYTES.store(0, Ordering::SeqCst);
    BIG_COUNT.store(0, Ordering::SeqCst);
    ON.store(true, Ordering::SeqCst);
    f();
    ON.store(false, Ordering::SeqCst);
    (
        COUNT.load(Ordering::SeqCst),
        BYTES.load(Ordering::SeqCst),
        BIG_COUNT.load(Ordering::SeqCst),
    )
}

/// One product: its sizes, `a`, `b` and the output.
type Op<T> = (MatmulDims, Vec<T>, Vec<T>, Vec<T>);

/// W2's products: `x @ w1` and `h @ w2`.
const W2_SHAPES: [(usize, usize, usize); 2] = [(256, 784, 512), (256, 512, 10)];

fn values<T: GemmElement>(len: usize, seed: usize) -> Vec<T> {
    (0..len)
        .map(|i| T::from_f64(((i * 7 + seed * 13) % 17) as f64 / 8.0 - 1.0))
        .collect()
}

/// Warm-up, then `rounds` more calls of both products under the counter, with an epilogue
/// (a ReLU, as in W2) so the fused path is the one measured.
fn check_steady_state<T: GemmElement>() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let mut ops: Vec<Op<T>> = W2_SHAPES
        .iter()
        .map(|&(m, k, n)| {
            let a = values::<T>(m * k, 1);
            let b = values::<T>(k * n, 2);
            let out = vec![T::ZERO; m * n];
            (MatmulDims::single(m, k, n), a, b, out)
        })
        .collect();
    let run = |ops: &mut Vec<Op<T>>| {
        pool.install(|| {
            for (dims, a, b, out) in ops.iter_mut() {
                matmul_into(a, b, out, *dims, |_, _, blk: &mut [T]| {
                    for v in blk {
                        *v = v.maximum(T::ZERO);
                    }
                });
            }
        })
    };
    // One warm-up call makes the packing buffers (for every thread of the pool).
    run(&mut ops);
    let reference: Vec<Vec<T>> = ops.iter().map(|op| op.3.clone()).collect();
    let rounds = 20;
    let (allocs, bytes, big) = count(|| {
        for _ in 0..rounds {
            run(&mut ops);
        }
    });
    // Same results each time (the buffers really were reused, not skipped).
    for (op, r) in ops.iter().zip(&reference) {
        assert!(op.3 == *r, "results changed between runs");
    }
    let name = std::any::type_name::<T>();
    eprintln!("{name}: {rounds} rounds of W2's products: {allocs} allocations, {bytes} bytes, {big} of >= {BIG} bytes");
    assert_eq!(
        (allocs, bytes),
        (0, 0),
        "{name}: matmul_into allocated in steady state"
    );
}

#[test]
fn matmul_f32_allocates_nothing_after_warm_up() {
    check_steady_state::<f32>();
}

#[test]
fn matmul_f64_allocates_nothing_after_warm_up() {
    check_steady_state::<f64>();
}
