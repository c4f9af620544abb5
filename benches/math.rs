//! The vectorised math against memory bandwidth: f32 `tanh` of 4M elements next to a parallel copy of the same bytes, and a division by a shared divisor against `/`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use graph_runtime::elementwise::math_into;
use graph_runtime::math::MathFn;
use graph_runtime::parallel::for_each_chunk;

const N: usize = 4 << 20;

fn tanh_vs_copy(c: &mut Criterion) {
    let x: Vec<f32> = (0..N).map(|i| (i % 2000) as f32 / 250.0 - 4.0).collect();
    let mut out = vec![0.0f32; N];
    let mut group = c.benchmark_group("tanh_vs_copy");
    // Bytes read plus bytes written.
    group.throughput(Throughput::Bytes(
        (2 * N * std::mem::size_of::<f32>()) as u64,
    ));
    group.bench_function(BenchmarkId::new("copy", N), |b| {
        b.iter(|| {
            for_each_chunk(&mut out, 1, 1, |first, chunk| {
                chunk.copy_from_slice(&x[first..first + chunk.len()]);
            })
        })
    });
    group.bench_function(BenchmarkId::new("tanh", N), |b| {
        b.iter(|| math_into(MathFn::Tanh, &x, &mut out))
    });
    group.finish();
    // Once more outside the timed loops, so the check holds when a filter skipped them.
    math_into(MathFn::Tanh, &x, &mut out);
    assert!((out[0] - (-4.0f32).tanh()).abs() < 1e-6);
}

/// `x / b` for one `b` over 4M elements, one thread: the shared divisor's fused sequence
/// (`graph-runtime/src/division.rs`, the path at the AVX-512 level) against a plain `/` loop.
fn shared_division(c: &mut Criterion) {
    use graph_runtime::division::divide_f32;
    let x: Vec<f32> = (0..N).map(|i| (i % 2000) as f32 / 250.0 - 4.0).collect();
    let mut out = vec![0.0f32; N];
    let mut group = c.benchmark_group("shared_division");
    group.throughput(Throughput::Elements(N as u64));
    group.bench_function(BenchmarkId::new("divide_f32", N), |b| {
        b.iter(|| divide_f32(&x, criterion::black_box(3.0), &mut out))
    });
    graph_runtime::multiversion! {
        fn plain(x: &[f32], b: f32, out: &mut [f32]) {
            for (o, &a) in out.iter_mut().zip(x) {
                *o = a / b;
            }
        }
    }
    group.bench_function(BenchmarkId::new("slash", N), |b| {
        b.iter(|| plain(&x, criterion::black_box(3.0), &mut out))
    });
    group.finish();
    divide_f32(&x, 3.0, &mut out);
    assert!(out
        .iter()
        .zip(&x)
        .all(|(q, a)| q.to_bits() == (a / 3.0).to_bits()));
}

criterion_group!(benches, tanh_vs_copy, shared_division);
criterion_main!(benches);
