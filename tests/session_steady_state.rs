//! A Session reuses its buffers: after the first run with given dims, a run allocates nothing but its results (W1–W4, both arms of W3).

use grafo::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

struct Counting;
static ON: AtomicBool = AtomicBool::new(false);
static COUNT: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);
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
        COUNT.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(size, Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations (count, bytes) made by `f` on any thread.
fn allocations<R>(f: impl FnOnce() -> R) -> (usize, usize, R) {
    COUNT.store(0, Ordering::SeqCst);
    BYTES.store(0, Ordering::SeqCst);
    ON.store(true, Ordering::SeqCst);
    let r = f();
    ON.store(false, Ordering::SeqCst);
    (
        COUNT.load(Ordering::SeqCst),
        BYTES.load(Ordering::SeqCst),
        r,
    )
}

#[graph]
fn gelu(x: Tensor<f32, N>) -> Tensor<f32, N> {
    0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
}

#[graph]
fn layernorm(
    x: Tensor<f32, N, 256>,
    gamma: Tensor<f32, 256>,
    beta: Tensor<f32, 256>,
) -> Tensor<f32, N, 256> {
    let mean = reduce_mean(x, -1, true);
    let d = x - mean;
    let var = reduce_mean(d * d, -1, true);
    d / sqrt(var + 1e-5) * gamma + beta
}

#[graph]
fn mlp(
    x: Tensor<f32, B, 64>,
    w1: Tensor<f32, 64, 32>,
    b1: Tensor<f32, 32>,
    w2: Tensor<f32, 32, 10>,
    b2: Tensor<f32, 10>,
) -> Tensor<f32, B, 10> {
    softmax(matmul(relu(matmul(x, w1) + b1), w2) + b2, -1)
}

#[graph]
fn convnet(
    x: Tensor<f32, B, 32, 32, 3>,
    k0: Tensor<f32, 3, 3, 3, 16>,
    b0: Tensor<f32, 16>,
    k1: Tensor<f32, 3, 3, 16, 16>,
    b1: Tensor<f32, 16>,
    limit: Tensor<f32>,
) -> Tensor<f32, B, 32, 32, 16> {
    let mut y = relu(conv2d(x, k0, 1, SAME) + b0);
    if norm(y) < limit {
        y = relu(conv2d(y, k1, 1, SAME) + b1);
    }
    y
}

fn session() -> Session {
    Session::new(SessionConfig {
        intra_op_threads: 2,
        ..Default::default()
    })
    .unwrap()
}

fn ramp(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 31 % 97) as f32 / 97.0) - 0.5)
        .collect()
}

#[test]
fn steady_state_runs_allocate_only_their_results() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut s = session();

    let x = Array1::from_vec(ramp(300_000));
    for _ in 0..3 {
        gelu::run(&mut s, &x).unwrap();
    }
    let (count, bytes, y) = allocations(|| gelu::run(&mut s, &x).unwrap());
    assert_eq!(y, gelu(&x).unwrap());
    assert_eq!((count, bytes), (1, 300_000 * 4), "W1: the result only");

    let xl = Array2::from_shape_vec((300, 256), ramp(300 * 256)).unwrap();
    let (g, b) = (
        Array1::from_elem(256, 2.0f32),
        Array1::from_elem(256, 0.5f32),
    );
    for _ in 0..3 {
        layernorm::run(&mut s, &xl, &g, &b).unwrap();
    }
    let (count, bytes, _) = allocations(|| layernorm::run(&mut s, &xl, &g, &b).unwrap());
    assert_eq!(
        (count, bytes),
        (1, 300 * 256 * 4),
        "W4: the result only (the row statistics are reused)"
    );

    let xc = Array4::from_shape_vec((1, 32, 32, 3), ramp(3072)).unwrap();
    let k0 = Array4::from_shape_vec((3, 3, 3, 16), ramp(432)).unwrap();
    let k1 = Array4::from_shape_vec((3, 3, 16, 16), ramp(2304)).unwrap();
    let (c0, c1) = (Array1::from_vec(ramp(16)), Array1::from_vec(ramp(16)));
    for limit in [f32::INFINITY, 0.0] {
        let l = arr0(limit);
        for _ in 0..3 {
            convnet::run(&mut s, &xc, &k0, &c0, &k1, &c1, &l).unwrap();
        }
        let (count, bytes, y) =
            allocations(|| convnet::run(&mut s, &xc, &k0, &c0, &k1, &c1, &l).unwrap());
        assert_eq!(y, convnet(&xc, &k0, &c0, &k1, &c1, &l).unwrap());
        assert_eq!(
            (count, bytes),
            (1, 32 * 32 * 16 * 4),
            "W3 with limit {limit}: the result only"
        );
    }
}

#[test]
fn steady_state_mlp_allocates_only_its_result() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut s = session();
    let xm = Array2::from_shape_vec((100, 64), ramp(6400)).unwrap();
    let w1 = Array2::from_shape_vec((64, 32), ramp(2048)).unwrap();
    let w2 = Array2::from_shape_vec((32, 10), ramp(320)).unwrap();
    let (b1, b2) = (Array1::from_vec(ramp(32)), Array1::from_vec(ramp(10)));
    for _ in 0..3 {
        mlp::run(&mut s, &xm, &w1, &b1, &w2, &b2).unwrap();
    }
    let (count, _, _) = allocations(|| mlp::run(&mut s, &xm, &w1, &b1, &w2, &b2).unwrap());
    assert_eq!(count, 1, "W2: the result only");
}

#[test]
fn new_symbolic_dims_replan_once() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut s = session();
    let (g, b) = (
        Array1::from_elem(256, 1.0f32),
        Array1::from_elem(256, 0.0f32),
    );
    let small = Array2::from_shape_vec((10, 256), ramp(2560)).unwrap();
    let big = Array2::from_shape_vec((50, 256), ramp(12800)).unwrap();
    // Warm up: the pool's worker threads allocate their queues when they first run.
    for _ in 0..3 {
        layernorm::run(&mut s, &small, &g, &b).unwrap();
    }
    let (first_big, _, _) = allocations(|| layernorm::run(&mut s, &big, &g, &b).unwrap());
    assert!(first_big > 1, "the larger dims grow the plan's buffers");
    let (second_big, _, _) = allocations(|| layernorm::run(&mut s, &big, &g, &b).unwrap());
    assert_eq!(second_big, 1);
    let (back_small, _, _) = allocations(|| layernorm::run(&mut s, &small, &g, &b).unwrap());
    assert_eq!(back_small, 1, "smaller dims fit in the grown buffers");
}
