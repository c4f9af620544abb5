//! A Session reuses its buffers: after the first run with given dims, a run allocates nothing but its results (W1–W4, both arms of W3).

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
#[path = "common/workloads.rs"]
mod workloads;

use counting_alloc::serial;
use grafo::prelude::*;
use workloads::{convnet, gelu, layernorm, mlp};

/// Allocations (count, bytes) made by `f` on any thread.
fn allocations<R>(f: impl FnOnce() -> R) -> (usize, usize, R) {
    let (c, r) = counting_alloc::allocations(f);
    (c.all, c.all_bytes, r)
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
    let _guard = serial();
    let mut s = session();

    let x = Array1::from_vec(ramp(300_000));
    for _ in 0..3 {
        gelu::run(&mut s, &x).unwrap();
    }
    let (count, bytes, y) = allocations(|| gelu::run(&mut s, &x).unwrap());
    assert_eq!(y, gelu(&x).unwrap());
    assert_eq!((count, bytes), (1, 300_000 * 4), "W1: the result only");

    let xl = Array2::from_shape_vec((60, 1024), ramp(60 * 1024)).unwrap();
    let (g, b) = (
        Array1::from_elem(1024, 2.0f32),
        Array1::from_elem(1024, 0.5f32),
    );
    for _ in 0..3 {
        layernorm::run(&mut s, &xl, &g, &b).unwrap();
    }
    let (count, bytes, _) = allocations(|| layernorm::run(&mut s, &xl, &g, &b).unwrap());
    assert_eq!(
        (count, bytes),
        (1, 60 * 1024 * 4),
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
    let _guard = serial();
    let mut s = session();
    let xm = Array2::from_shape_vec((16, 784), ramp(16 * 784)).unwrap();
    let w1 = Array2::from_shape_vec((784, 512), ramp(784 * 512)).unwrap();
    let w2 = Array2::from_shape_vec((512, 10), ramp(5120)).unwrap();
    let (b1, b2) = (Array1::from_vec(ramp(512)), Array1::from_vec(ramp(10)));
    for _ in 0..3 {
        mlp::run(&mut s, &xm, &w1, &b1, &w2, &b2).unwrap();
    }
    let (count, _, _) = allocations(|| mlp::run(&mut s, &xm, &w1, &b1, &w2, &b2).unwrap());
    assert_eq!(count, 1, "W2: the result only");
}

#[test]
fn new_symbolic_dims_replan_once() {
    let _guard = serial();
    let mut s = session();
    let (g, b) = (
        Array1::from_elem(1024, 1.0f32),
        Array1::from_elem(1024, 0.0f32),
    );
    let small = Array2::from_shape_vec((10, 1024), ramp(10240)).unwrap();
    let big = Array2::from_shape_vec((50, 1024), ramp(51200)).unwrap();
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
