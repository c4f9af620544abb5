//! Linear-algebra benchmarks: sgemm through `matmul_into` next to ndarray's `dot`, and W3's two convolutions.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use graph_runtime::conv::{conv2d_into, conv2d_output_hw, SAME};
use graph_runtime::matmul::{matmul_into, no_epilogue, MatmulDims};
use ndarray::Array2;

/// Deterministic values in [-1, 1), cheap to make.
fn values(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i.wrapping_mul(2_654_435_761).wrapping_add(seed) % 1000) as f32) / 500.0 - 1.0)
        .collect()
}

fn sgemm(c: &mut Criterion) {
    let mut group = c.benchmark_group("sgemm");
    for n in [256usize, 512, 1024] {
        // 2 n^3 floating-point operations: criterion's "elements/s" reads as FLOP/s.
        group.throughput(Throughput::Elements(2 * (n as u64).pow(3)));
        let a = values(n * n, 1);
        let b = values(n * n, 2);
        let mut out = vec![0.0f32; n * n];
        group.bench_with_input(BenchmarkId::new("grafo", n), &n, |bench, &n| {
            bench.iter(|| matmul_into(&a, &b, &mut out, MatmulDims::single(n, n, n), no_epilogue));
        });
        let a2 = Array2::from_shape_vec((n, n), a.clone()).unwrap();
        let b2 = Array2::from_shape_vec((n, n), b.clone()).unwrap();
        group.bench_with_input(BenchmarkId::new("ndarray_dot", n), &n, |bench, _| {
            bench.iter(|| a2.dot(&b2));
        });
    }
    group.finish();
}

/// W2's two products (`x @ w1` and `h @ w2`, batch 256), the second one narrow.
fn matmul_w2(c: &mut Criterion) {
    let mut group = c.benchmark_group("sgemm_w2");
    for (name, m, k, n) in [
        ("256x784x512", 256usize, 784usize, 512usize),
        ("256x512x10", 256, 512, 10),
    ] {
        group.throughput(Throughput::Elements(2 * (m * k * n) as u64));
        let a = values(m * k, 5);
        let b = values(k * n, 6);
        let mut out = vec![0.0f32; m * n];
        group.bench_function(BenchmarkId::new("grafo", name), |bench| {
            bench.iter(|| matmul_into(&a, &b, &mut out, MatmulDims::single(m, k, n), no_epilogue));
        });
        let a2 = Array2::from_shape_vec((m, k), a.clone()).unwrap();
        let b2 = Array2::from_shape_vec((k, n), b.clone()).unwrap();
        group.bench_function(BenchmarkId::new("ndarray_dot", name), |bench| {
            bench.iter(|| a2.dot(&b2));
        });
    }
    group.finish();
}

fn conv2d_w3(c: &mut Criterion) {
    let mut group = c.benchmark_group("conv2d_w3");
    // W3: a 512x512 RGB image, then two 3x3 SAME convolutions to 16 channels.
    for (name, cin) in [("layer1_3to16", 3usize), ("layer2_16to16", 16)] {
        let xs = [1, 512, 512, cin];
        let ks = [3, 3, cin, 16];
        let (oh, ow) = conv2d_output_hw(512, 512, 3, 3, 1, SAME).unwrap();
        let macs = (oh * ow * 16 * 9 * cin) as u64;
        group.throughput(Throughput::Elements(2 * macs));
        let x = values(xs.iter().product(), 3);
        let k = values(ks.iter().product(), 4);
        let mut out = vec![0.0f32; oh * ow * 16];
        group.bench_function(BenchmarkId::new("grafo", name), |bench| {
            bench.iter(|| conv2d_into(&x, xs, &k, ks, 1, SAME, &mut out, |_, _: &mut [f32]| {}));
        });
    }
    group.finish();
}

criterion_group!(benches, sgemm, matmul_w2, conv2d_w3);
criterion_main!(benches);
