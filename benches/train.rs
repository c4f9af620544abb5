//! The training workloads of WORKLOADS.md (W8: one Adam step of W2's MLP): compiled, in a `Session` and eager side by side.
//!
//! Run with `cargo bench -p grafo-benches --bench train` (release); the peers are
//! `../shared/peers/bench_train.py`, run the same hour. Each arm runs the same step on the
//! same parameters (the step's new values are dropped, so every iteration does equal work).

use criterion::{criterion_group, criterion_main, Criterion};
use grafo::ndarray::{Array1, Array2};
use grafo::prelude::*;
use std::hint::black_box;
use std::time::Duration;

#[path = "../tests/common/training.rs"]
mod training;
use training::mlp_train_step;

/// Deterministic uniform values in [-1, 1) (xorshift32).
fn uniform(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

fn w8(c: &mut Criterion) {
    let b = 256;
    let x = Array2::from_shape_vec((b, 784), uniform(b * 784, 1)).unwrap();
    let y = Array1::from_iter((0..b).map(|i| (i * 7 % 10) as i32));
    let w1 = Array2::from_shape_vec((784, 512), uniform(784 * 512, 2)).unwrap() / 28.0;
    let b1 = Array1::<f32>::zeros(512);
    let w2 = Array2::from_shape_vec((512, 10), uniform(5120, 3)).unwrap() / 22.6;
    let b2 = Array1::<f32>::zeros(10);
    let (m1, m2) = (
        Array2::<f32>::zeros((784, 512)),
        Array2::<f32>::zeros((512, 10)),
    );
    let (mb1, mb2) = (Array1::<f32>::zeros(512), Array1::<f32>::zeros(10));
    let compiled = mlp_train_step(
        &x, &y, &w1, &b1, &w2, &b2, &m1, &mb1, &m2, &mb2, &m1, &mb1, &m2, &mb2, 1.0,
    )
    .unwrap();
    let eager = mlp_train_step::eager(
        &x, &y, &w1, &b1, &w2, &b2, &m1, &mb1, &m2, &mb2, &m1, &mb1, &m2, &mb2, 1.0,
    )
    .unwrap();
    assert_eq!(compiled, eager, "W8: compiled == eager before timing");
    let mut g = c.benchmark_group("w8_mlp_train");
    g.bench_function("compiled", |bch| {
        bch.iter(|| {
            black_box(
                mlp_train_step(
                    &x, &y, &w1, &b1, &w2, &b2, &m1, &mb1, &m2, &mb2, &m1, &mb1, &m2, &mb2, 1.0,
                )
                .unwrap(),
            )
        })
    });
    let mut session = Session::new(SessionConfig {
        intra_op_threads: 2,
        ..Default::default()
    })
    .unwrap();
    g.bench_function("session", |bch| {
        bch.iter(|| {
            black_box(
                mlp_train_step::run(
                    &mut session,
                    &x,
                    &y,
                    &w1,
                    &b1,
                    &w2,
                    &b2,
                    &m1,
                    &mb1,
                    &m2,
                    &mb2,
                    &m1,
                    &mb1,
                    &m2,
                    &mb2,
                    1.0,
                )
                .unwrap(),
            )
        })
    });
    g.bench_function("eager", |bch| {
        bch.iter(|| {
            black_box(
                mlp_train_step::eager(
                    &x, &y, &w1, &b1, &w2, &b2, &m1, &mb1, &m2, &mb2, &m1, &mb1, &m2, &mb2, 1.0,
                )
                .unwrap(),
            )
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    targets = w8
}
criterion_main!(benches);
