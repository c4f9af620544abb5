//! Linear-algebra benchmarks: sgemm through `matmul_into` next to the `gemm` crate and `matrixmultiply`, and W3's two convolutions.
//!
//! Every GEMM shape runs three arms in one group: `grafo` (`matmul_into`, rayon over row
//! blocks), `gemm` (the crate candle uses, rayon over all threads, run-time AVX-512/AVX2
//! dispatch) and `matrixmultiply` (ndarray's core, with its `threading` feature: one
//! thread per physical core). The shapes are sgemm 256-2048, W2's two products and W3's
//! two convolutions seen as GEMMs (`[512*512, K] x [K, 16]`, K = 27 and 144).
//!
//! On a machine shared with other work, `GRAFO_BENCH_CPU_TIME=1` times each iteration by
//! the process's CPU time instead of the wall clock: run single-threaded
//! (`RAYON_NUM_THREADS=1 MATMUL_NUM_THREADS=1`), it measures the kernels without the time
//! the process spent descheduled.

use criterion::{criterion_group, criterion_main, Bencher, BenchmarkId, Criterion, Throughput};
use graph_runtime::conv::{conv2d_into, conv2d_output_hw, conv2d_with, Algorithm, SAME};
use graph_runtime::matmul::{matmul_into, no_epilogue, MatmulDims};
use std::time::Duration;

/// Deterministic values in [-1, 1), cheap to make.
fn values(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i.wrapping_mul(2_654_435_761).wrapping_add(seed) % 1000) as f32) / 500.0 - 1.0)
        .collect()
}

/// `c = a * b` (`m x k` times `k x n`, row-major) through the `gemm` crate on every rayon thread.
fn gemm_crate(m: usize, k: usize, n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    let parallelism = match rayon::current_num_threads() {
        1 => gemm::Parallelism::None,
        threads => gemm::Parallelism::Rayon(threads),
    };
    // SAFETY: the slices hold the extents the sizes and row-major strides describe.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            1,
            n as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        )
    }
}

/// `c = a * b` through `matrixmultiply::sgemm` (threaded by its own pool).
fn matrixmultiply_sgemm(m: usize, k: usize, n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    // SAFETY: as above.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        )
    }
}

/// One group of the three GEMMs on the shapes `(label, m, k, n)`.
fn gemm_group(c: &mut Criterion, group_name: &str, shapes: &[(String, usize, usize, usize)]) {
    let mut group = c.benchmark_group(group_name);
    for (label, m, k, n) in shapes {
        let (m, k, n) = (*m, *k, *n);
        // 2 m k n floating-point operations: criterion's "elements/s" reads as FLOP/s.
        group.throughput(Throughput::Elements(2 * (m * k * n) as u64));
        let a = values(m * k, 5);
        let b = values(k * n, 6);
        let mut out = vec![0.0f32; m * n];
        group.bench_function(BenchmarkId::new("grafo", label), |bench| {
            run(bench, || {
                matmul_into(&a, &b, &mut out, MatmulDims::single(m, k, n), no_epilogue)
            });
        });
        let reference = out.clone();
        group.bench_function(BenchmarkId::new("gemm", label), |bench| {
            run(bench, || gemm_crate(m, k, n, &a, &b, &mut out));
        });
        check_same(&out, &reference, k, label);
        group.bench_function(BenchmarkId::new("matrixmultiply", label), |bench| {
            run(bench, || matrixmultiply_sgemm(m, k, n, &a, &b, &mut out));
        });
        check_same(&out, &reference, k, label);
    }
    group.finish();
}

/// Panics unless two GEMM results agree to the rounding of a `k`-term sum.
fn check_same(got: &[f32], want: &[f32], k: usize, label: &str) {
    let tol = 1e-6 * k as f32 * 4.0;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{label}: element {i}: {g} vs {w}"
        );
    }
}

/// Whether iterations are timed by process CPU time (`GRAFO_BENCH_CPU_TIME=1`).
fn cpu_time_mode() -> bool {
    std::env::var_os("GRAFO_BENCH_CPU_TIME").is_some_and(|v| v == "1")
}

/// CPU time used by this process so far.
fn process_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Times `f` by the wall clock, or by process CPU time in [`cpu_time_mode`].
fn run<F: FnMut()>(bench: &mut Bencher<'_>, mut f: F) {
    if !cpu_time_mode() {
        bench.iter(f);
        return;
    }
    bench.iter_custom(|iters| {
        let start = process_cpu_time();
        for _ in 0..iters {
            f();
        }
        process_cpu_time() - start
    });
}

fn sgemm(c: &mut Criterion) {
    let shapes: Vec<_> = [256usize, 512, 1024, 2048]
        .into_iter()
        .map(|n| (n.to_string(), n, n, n))
        .collect();
    gemm_group(c, "sgemm", &shapes);
}

/// W2's two products (`x @ w1` and `h @ w2`, batch 256), the second one narrow.
fn matmul_w2(c: &mut Criterion) {
    let shapes = [
        ("256x784x512".to_string(), 256usize, 784usize, 512usize),
        ("256x512x10".to_string(), 256, 512, 10),
    ];
    gemm_group(c, "sgemm_w2", &shapes);
}

/// W3's two convolutions as plain GEMMs: the im2col matrix `[512*512, K]` times the kernel `[K, 16]`.
fn matmul_w3(c: &mut Criterion) {
    let shapes = [
        ("262144x27x16".to_string(), 512usize * 512, 27usize, 16usize),
        ("262144x144x16".to_string(), 512 * 512, 144, 16),
    ];
    gemm_group(c, "sgemm_w3_conv_as_gemm", &shapes);
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
        // The default: the gather (implicit GEMM) kernel, patches read in place.
        group.bench_function(BenchmarkId::new("grafo", name), |bench| {
            run(bench, || {
                conv2d_into(&x, xs, &k, ks, 1, SAME, &mut out, |_, _: &mut [f32]| {})
            });
        });
        // im2col of each pixel block into scratch, then the packed GEMM.
        group.bench_function(BenchmarkId::new("grafo_im2col_gemm", name), |bench| {
            run(bench, || {
                conv2d_with(
                    &x,
                    xs,
                    &k,
                    ks,
                    1,
                    SAME,
                    &mut out,
                    |_, _: &mut [f32]| {},
                    Algorithm::Im2colGemm,
                )
            });
        });
    }
    group.finish();
}

criterion_group!(benches, sgemm, matmul_w2, matmul_w3, conv2d_w3);
criterion_main!(benches);
