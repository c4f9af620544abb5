//! The training workloads of WORKLOADS.md (W8: one Adam step of W2's MLP; W9: one Adam step of W7's CNN): compiled, in a `Session` and eager side by side.
//!
//! Run with `cargo bench -p grafo-benches --bench train` (release); the peers are
//! `../shared/peers/bench_train.py`, run the same hour. Each arm runs the same step on the
//! same parameters (the functional step's new values are dropped, so every iteration does
//! equal work); the `in_place` arms update the parameters and Adam's state through `&mut`, as
//! a training loop does, so each iteration is the next step (the same work: Adam's update
//! costs the same whatever the values).

use criterion::{criterion_group, criterion_main, Criterion};
use grafo::ndarray::{Array1, Array2, Array4};
use grafo::prelude::*;
use std::hint::black_box;
use std::time::Duration;

#[path = "../tests/common/training.rs"]
mod training;
use training::{cnn_train_step, mlp_train_step, mlp_train_step_in_place};

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
    let (mut p1, mut p2, mut p3, mut p4) = (w1.clone(), b1.clone(), w2.clone(), b2.clone());
    let (mut s1, mut s2, mut s3, mut s4) = (m1.clone(), mb1.clone(), m2.clone(), mb2.clone());
    let (mut v1, mut v2, mut v3, mut v4) = (m1.clone(), mb1.clone(), m2.clone(), mb2.clone());
    let mut t = 0.0f32;
    g.bench_function("compiled_in_place", |bch| {
        bch.iter(|| {
            t += 1.0;
            black_box(
                mlp_train_step_in_place(
                    &x, &y, &mut p1, &mut p2, &mut p3, &mut p4, &mut s1, &mut s2, &mut s3, &mut s4,
                    &mut v1, &mut v2, &mut v3, &mut v4, t,
                )
                .unwrap(),
            )
        })
    });
    g.bench_function("session_in_place", |bch| {
        bch.iter(|| {
            t += 1.0;
            black_box(
                mlp_train_step_in_place::run(
                    &mut session,
                    &x,
                    &y,
                    &mut p1,
                    &mut p2,
                    &mut p3,
                    &mut p4,
                    &mut s1,
                    &mut s2,
                    &mut s3,
                    &mut s4,
                    &mut v1,
                    &mut v2,
                    &mut v3,
                    &mut v4,
                    t,
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

/// W9's parameters, or one of Adam's states: k1 c1 k2 c2 w c.
struct Cnn {
    k1: Array4<f32>,
    c1: Array1<f32>,
    k2: Array4<f32>,
    c2: Array1<f32>,
    w: Array2<f32>,
    c: Array1<f32>,
}

impl Cnn {
    /// Parameters at about Glorot's scale.
    fn seeded() -> Cnn {
        Cnn {
            k1: Array4::from_shape_vec((3, 3, 1, 32), uniform(288, 21)).unwrap() * 0.3,
            c1: Array1::zeros(32),
            k2: Array4::from_shape_vec((3, 3, 32, 64), uniform(18432, 23)).unwrap() * 0.06,
            c2: Array1::zeros(64),
            w: Array2::from_shape_vec((1600, 10), uniform(16000, 25)).unwrap() * 0.05,
            c: Array1::zeros(10),
        }
    }
    /// A zero optimizer state.
    fn zeros() -> Cnn {
        Cnn {
            k1: Array4::zeros((3, 3, 1, 32)),
            c1: Array1::zeros(32),
            k2: Array4::zeros((3, 3, 32, 64)),
            c2: Array1::zeros(64),
            w: Array2::zeros((1600, 10)),
            c: Array1::zeros(10),
        }
    }
}

/// One W9 step on `(p, m, v)`: 0 compiled, 1 in `session`, 2 eager. Returns the loss.
fn cnn_step(
    path: usize,
    session: &mut Session,
    x: &Array4<f32>,
    y: &Array1<i32>,
    (p, m, v): &mut (Cnn, Cnn, Cnn),
    t: f32,
) -> f32 {
    let loss = match path {
        0 => cnn_train_step(
            x, y, &mut p.k1, &mut p.c1, &mut p.k2, &mut p.c2, &mut p.w, &mut p.c, &mut m.k1,
            &mut m.c1, &mut m.k2, &mut m.c2, &mut m.w, &mut m.c, &mut v.k1, &mut v.c1, &mut v.k2,
            &mut v.c2, &mut v.w, &mut v.c, t,
        ),
        1 => cnn_train_step::run(
            session, x, y, &mut p.k1, &mut p.c1, &mut p.k2, &mut p.c2, &mut p.w, &mut p.c,
            &mut m.k1, &mut m.c1, &mut m.k2, &mut m.c2, &mut m.w, &mut m.c, &mut v.k1, &mut v.c1,
            &mut v.k2, &mut v.c2, &mut v.w, &mut v.c, t,
        ),
        _ => cnn_train_step::eager(
            x, y, &mut p.k1, &mut p.c1, &mut p.k2, &mut p.c2, &mut p.w, &mut p.c, &mut m.k1,
            &mut m.c1, &mut m.k2, &mut m.c2, &mut m.w, &mut m.c, &mut v.k1, &mut v.c1, &mut v.k2,
            &mut v.c2, &mut v.w, &mut v.c, t,
        ),
    };
    loss.unwrap().into_scalar()
}

fn w9(c: &mut Criterion) {
    let b = 64;
    let x = Array4::from_shape_vec((b, 28, 28, 1), uniform(b * 784, 1)).unwrap();
    let y = Array1::from_iter((0..b).map(|i| (i * 7 % 10) as i32));
    let mut session = Session::new(SessionConfig {
        intra_op_threads: 2,
        ..Default::default()
    })
    .unwrap();
    // The three paths agree bit for bit on the first two steps before anything is timed.
    let mut states: Vec<_> = (0..3)
        .map(|_| (Cnn::seeded(), Cnn::zeros(), Cnn::zeros()))
        .collect();
    for t in [1.0, 2.0] {
        let losses: Vec<u32> = (0..3)
            .map(|path| cnn_step(path, &mut session, &x, &y, &mut states[path], t).to_bits())
            .collect();
        assert!(
            losses.iter().all(|&l| l == losses[0]),
            "W9: compiled == session == eager"
        );
        for path in 1..3 {
            assert_eq!(
                states[path].0.k2, states[0].0.k2,
                "W9: the same kernels after a step"
            );
        }
    }
    if std::env::var_os("GRAFO_BENCH_PROFILE").is_some() {
        profile_w9(&x, &y);
    }
    let mut g = c.benchmark_group("w9_cnn_train");
    for (path, name) in ["compiled", "session", "eager"].iter().enumerate() {
        let mut t = 2.0f32;
        let state = &mut states[path];
        g.bench_function(*name, |bch| {
            bch.iter(|| {
                t += 1.0;
                black_box(cnn_step(path, &mut session, &x, &y, state, t))
            })
        });
    }
    g.finish();
}

/// Prints where a W9 step's time goes: 20 steps in a profiled `Session`, one row per fusion
/// group (`GRAFO_BENCH_PROFILE=1 cargo bench -p grafo-benches --bench train -- w9`).
fn profile_w9(x: &Array4<f32>, y: &Array1<i32>) {
    let mut session = Session::new(SessionConfig {
        intra_op_threads: 2,
        profile: true,
        ..Default::default()
    })
    .unwrap();
    let mut state = (Cnn::seeded(), Cnn::zeros(), Cnn::zeros());
    for step in 1..=20 {
        cnn_step(1, &mut session, x, y, &mut state, step as f32);
    }
    println!("W9, 20 steps in a profiled session:\n{}", session.profile());
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    targets = w8, w9
}
criterion_main!(benches);
