//! W6 (transformer encoder block) and W7 (the TF tutorial's MNIST CNN): compiled, eager and session side by side in one criterion group each.
//!
//! Run with `cargo bench -p grafo-benches --bench models` (release). The graphs and their seeded weights are
//! the examples' (`examples/transformer_block.rs`, `examples/mnist_cnn.rs`); their PyTorch
//! peers are timed by `scripts/bench_models_torch.py` on the same shapes. Before timing,
//! each group checks compiled == eager.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use grafo::Session;
use std::hint::black_box;
use std::time::Duration;

#[path = "../examples/transformer_block.rs"]
#[allow(dead_code)]
mod transformer_block;

#[path = "../examples/mnist_cnn.rs"]
#[allow(dead_code)]
mod mnist_example;

/// W6 at batch 8: 2·B·S·(4·D² + 2·S·D + 2·D·F) multiply-adds, about 2.4 GFLOP.
fn w6(c: &mut Criterion) {
    use transformer_block::{encoder, Weights, FFN, MODEL, SEQ};
    let batch = 8;
    let w = Weights::seeded();
    let x = Weights::input(batch);
    assert_eq!(w.compiled(&x).unwrap(), w.eager(&x).unwrap());
    let flops = 2 * batch * SEQ * (4 * MODEL * MODEL + 2 * SEQ * MODEL + 2 * MODEL * FFN);
    let mut group = c.benchmark_group("W6_transformer_block");
    group.throughput(Throughput::Elements(flops as u64));
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(4));
    group.bench_function("compiled", |b| {
        b.iter(|| black_box(w.compiled(&x).unwrap()))
    });
    let mut session = Session::default();
    group.bench_function("session", |b| {
        b.iter(|| {
            black_box(
                encoder::block::run(
                    &mut session,
                    &x,
                    &w.wq,
                    &w.wk,
                    &w.wv,
                    &w.wo,
                    &w.gamma1,
                    &w.beta1,
                    &w.w1,
                    &w.c1,
                    &w.w2,
                    &w.c2,
                    &w.gamma2,
                    &w.beta2,
                )
                .unwrap(),
            )
        })
    });
    group.bench_function("eager", |b| b.iter(|| black_box(w.eager(&x).unwrap())));
    group.finish();
}

/// W7 at batch 64.
fn w7(c: &mut Criterion) {
    use mnist_example::{mnist_cnn, Weights};
    let batch = 64;
    let w = Weights::seeded();
    let x = Weights::input(batch);
    assert_eq!(w.compiled(&x).unwrap(), w.eager(&x).unwrap());
    let mut group = c.benchmark_group("W7_mnist_cnn");
    group.throughput(Throughput::Elements(batch as u64));
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(4));
    group.bench_function("compiled", |b| {
        b.iter(|| black_box(w.compiled(&x).unwrap()))
    });
    let mut session = Session::default();
    group.bench_function("session", |b| {
        b.iter(|| {
            black_box(
                mnist_cnn::run(&mut session, &x, &w.k1, &w.c1, &w.k2, &w.c2, &w.w, &w.c).unwrap(),
            )
        })
    });
    group.bench_function("eager", |b| b.iter(|| black_box(w.eager(&x).unwrap())));
    group.finish();
}

criterion_group!(benches, w6, w7);
criterion_main!(benches);
