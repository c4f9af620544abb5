//! The vectorised math against memory bandwidth: f32 `tanh` of 4M elements next to a parallel copy of the same bytes.

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

criterion_group!(benches, tanh_vs_copy);
criterion_main!(benches);
