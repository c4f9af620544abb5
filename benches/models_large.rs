//! W10 (ResNet-18 inference, batches 1 and 8 of 224x224x3) and W11 (the 12-block GPT-2 stack,
//! batch 1 of 128 tokens): compiled, session and eager side by side in one criterion group each.
//!
//! Run with `cargo bench -p grafo-benches --bench models_large` (release). The models are the
//! examples' (`examples/resnet18.rs`, `examples/gpt2.rs`), with PyTorch's weights from
//! `models/` when `scripts/export_torch_models.py` has written them and `init` weights
//! otherwise (the times do not depend on the values); their PyTorch peers are timed by
//! `scripts/bench_models_large_torch.py` on the same shapes. Before timing, each case checks
//! compiled == eager == session.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use grafo::ndarray::{Array3, Array4};
use grafo::Session;
use std::hint::black_box;
use std::time::Duration;

#[path = "../examples/resnet18.rs"]
#[allow(dead_code)]
mod resnet18_example;

#[path = "../examples/gpt2.rs"]
#[allow(dead_code)]
mod gpt2_example;

/// `models/` at the repository's root, where `scripts/export_torch_models.py` writes the files
/// (the examples' `models_dir` reads the first argument, criterion's `--bench` here, and its
/// `CARGO_MANIFEST_DIR` would be `benches/` in this package).
fn models_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("models")
}

/// Seeded values in [-1, 1), the inputs of every arm.
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

/// W10: about 1.82 G multiply-adds per image.
fn w10(c: &mut Criterion) {
    use resnet18_example::resnet::{self, ResNet18, CLASSES, IMG_H, IMG_W};
    let path = models_dir().join("resnet18.safetensors");
    let p = match ResNet18::load_safetensors_with(&path, &resnet18_example::torch_remap()) {
        Ok(p) => p,
        Err(_) => {
            eprintln!("{} not loaded: timing ResNet18::init(0)", path.display());
            ResNet18::init(0)
        }
    };
    let mut group = c.benchmark_group("W10_resnet18");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(8));
    let mut session = Session::default();
    for batch in [1usize, 8] {
        let x = Array4::from_shape_vec(
            (batch, IMG_H, IMG_W, 3),
            uniform(batch * IMG_H * IMG_W * 3, 10),
        )
        .expect("the image's shape");
        let compiled = resnet::forward(&x, &p).unwrap();
        assert_eq!(compiled.shape(), &[batch, CLASSES]);
        assert_eq!(compiled, resnet::forward::eager(&x, &p).unwrap());
        assert_eq!(
            compiled,
            resnet::forward::run(&mut session, &x, &p).unwrap()
        );
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_with_input(BenchmarkId::new("compiled", batch), &x, |b, x| {
            b.iter(|| black_box(resnet::forward(x, &p).unwrap()))
        });
        group.bench_with_input(BenchmarkId::new("session", batch), &x, |b, x| {
            b.iter(|| black_box(resnet::forward::run(&mut session, x, &p).unwrap()))
        });
        group.bench_with_input(BenchmarkId::new("eager", batch), &x, |b, x| {
            b.iter(|| black_box(resnet::forward::eager(x, &p).unwrap()))
        });
    }
    group.finish();
}

/// W11: 12 blocks of 2·T·(D·3D + D² + 2·D·FF) + 4·T²·D flops, about 22.3 GFLOP.
fn w11(c: &mut Criterion) {
    use gpt2_example::gpt2::{self, Gpt2, D, D3, FF, LAYERS, T};
    let path = models_dir().join("gpt2.safetensors");
    let p = match Gpt2::load_safetensors_with(&path, &gpt2_example::torch_remap()) {
        Ok(p) => p,
        Err(_) => {
            eprintln!("{} not loaded: timing Gpt2::init(0)", path.display());
            Gpt2::init(0)
        }
    };
    let batch = 1;
    let x = Array3::from_shape_vec((batch, T, D), uniform(batch * T * D, 11))
        .expect("the embeddings' shape");
    let mut session = Session::default();
    let compiled = gpt2::forward(&x, &p).unwrap();
    assert_eq!(compiled, gpt2::forward::eager(&x, &p).unwrap());
    assert_eq!(compiled, gpt2::forward::run(&mut session, &x, &p).unwrap());
    let flops = LAYERS * (2 * T * (D * D3 + D * D + 2 * D * FF) + 4 * T * T * D);
    let mut group = c.benchmark_group("W11_gpt2_stack");
    group.throughput(Throughput::Elements(flops as u64));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(8));
    group.bench_function("compiled", |b| {
        b.iter(|| black_box(gpt2::forward(&x, &p).unwrap()))
    });
    group.bench_function("session", |b| {
        b.iter(|| black_box(gpt2::forward::run(&mut session, &x, &p).unwrap()))
    });
    group.bench_function("eager", |b| {
        b.iter(|| black_box(gpt2::forward::eager(&x, &p).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, w10, w11);
criterion_main!(benches);
