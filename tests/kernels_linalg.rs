//! Linear-algebra kernels (matmul, conv2d, transpose, reshape, bias_add) against naive references, plus every eager shape check.

mod linalg_harness;

use graph_runtime::compiled::OutBuf;
use graph_runtime::conv::{
    conv2d_buf, conv2d_into, conv2d_output_hw, conv2d_with, Algorithm, Padding, SAME, VALID,
};
use graph_runtime::conv_pool::{conv2d_pool_into, conv2d_pool_shape};
use graph_runtime::eager;
use graph_runtime::layout::{check_perm, transpose_into};
use graph_runtime::matmul::{matmul_into, no_epilogue, GemmElement, MatmulDims};
use graph_runtime::pool::{pool2d_into, Pool2d, PoolKind};
use graph_runtime::Error;
use linalg_harness::{assert_close, naive_conv2d, naive_matmul, Rng};
use ndarray::{Array, ArrayD, IxDyn};
use std::mem::MaybeUninit;

/// Shapes `(m, k, n)` from trivial to odd, with one large enough for the parallel path.
const MATMUL_SHAPES: &[(usize, usize, usize)] = &[
    (0, 3, 4),
    (3, 0, 4),
    (3, 4, 0),
    (1, 1, 1),
    (1, 7, 1),
    (7, 7, 7),
    (33, 17, 9),
    (5, 33, 65),
    (67, 45, 31),
    (129, 63, 71),
    (3, 1023, 5),
    // Few rows, many columns: the row block is split into parallel column panels.
    (40, 100, 200),
    // Edges of the packed GEMM: row and column tails (tiles of 6 x 16 or 4 x 8), shared
    // dimensions past one KC slice (256), more than one NC block (1024), narrow and tall.
    (13, 13, 13),
    (33, 33, 33),
    (65, 65, 65),
    (1, 300, 40),
    (7, 257, 17),
    (1023, 17, 17),
    (1023, 65, 1),
    (17, 600, 1041),
    (150, 513, 10),
    (256, 512, 10),
    (200, 300, 48),
    // Several row blocks sharing one pre-packed `b`, also split into column panels.
    (300, 200, 300),
    (520, 300, 70),
    (1100, 70, 33),
    // The AVX-512 f32 tiles (6 rows, up to 64 columns): `b` packed 64 wide with a tail of
    // 36 over two equal slices of 260, and a narrow `b` packed 64 wide (50 columns) or 48.
    (130, 520, 100),
    (300, 40, 50),
    (61, 70, 47),
];

fn check_matmul<T: GemmElement>(seed: u64) {
    let mut rng = Rng::new(seed);
    for &(m, k, n) in MATMUL_SHAPES {
        check_matmul_shape::<T>(&mut rng, m, k, n);
    }
}

/// One random `m x k x n` product of `T` into a buffer of stale values, against the naive one.
fn check_matmul_shape<T: GemmElement>(rng: &mut Rng, m: usize, k: usize, n: usize) {
    let a: Vec<T> = rng.values(m * k);
    let b: Vec<T> = rng.values(k * n);
    let mut out = vec![T::ONE; m * n];
    matmul_into(&a, &b, &mut out, MatmulDims::single(m, k, n), no_epilogue);
    assert_close(
        &out,
        &naive_matmul(&a, &b, m, k, n),
        k as f64,
        &format!("{m}x{k}x{n}"),
    );
}

#[test]
fn matmul_matches_naive_for_every_type() {
    check_matmul::<f32>(1);
    check_matmul::<f64>(2);
    check_matmul::<i32>(3);
    check_matmul::<i64>(4);
}

#[test]
fn matmul_batched_and_broadcast() {
    let mut rng = Rng::new(5);
    let (batch, m, k, n) = (3, 41, 23, 37);
    let a: Vec<f32> = rng.values(batch * m * k);
    let b: Vec<f32> = rng.values(batch * k * n);
    // (a batched?, b batched?)
    for (ab, bb) in [(true, true), (true, false), (false, true)] {
        let dims = MatmulDims {
            batch,
            m,
            k,
            n,
            a_batch_stride: if ab { m * k } else { 0 },
            b_batch_stride: if bb { k * n } else { 0 },
        };
        let mut out = vec![0.0f32; batch * m * n];
        matmul_into(&a, &b, &mut out, dims, no_epilogue);
        for i in 0..batch {
            let ai = if ab {
                &a[i * m * k..(i + 1) * m * k]
            } else {
                &a[..m * k]
            };
            let bi = if bb {
                &b[i * k * n..(i + 1) * k * n]
            } else {
                &b[..k * n]
            };
            let want = naive_matmul(ai, bi, m, k, n);
            assert_close(
                &out[i * m * n..(i + 1) * m * n],
                &want,
                k as f64,
                &format!("batch {i} ({ab}, {bb})"),
            );
        }
    }
}

#[test]
fn matmul_epilogue_runs_once_per_element_with_its_position() {
    let mut rng = Rng::new(6);
    // Small (sequential path) and large (parallel blocks), batched.
    for &(batch, m, k, n) in &[
        (1, 5, 4, 3),
        (2, 150, 40, 60),
        (1, 40, 100, 200),
        (2, 9, 0, 5),
        // Deep, with a `b` too large to pre-pack: blocks of LARGE_B_MIN_ROWS, a short last one.
        (1, 1100, 260, 520),
    ] {
        let a: Vec<f64> = rng.values(batch * m * k);
        let b: Vec<f64> = rng.values(batch * k * n);
        let dims = MatmulDims {
            batch,
            m,
            k,
            n,
            a_batch_stride: m * k,
            b_batch_stride: k * n,
        };
        let mut out = vec![0.0f64; batch * m * n];
        // The epilogue adds 1 plus a code of the element's (batch, row), so a misplaced
        // block or a second call shows up.
        matmul_into(&a, &b, &mut out, dims, |bi, r0, block: &mut [f64]| {
            assert_eq!(block.len() % n, 0);
            for (i, v) in block.iter_mut().enumerate() {
                *v += 1.0 + (bi * 1000 + r0 + i / n) as f64;
            }
        });
        for bi in 0..batch {
            let want = naive_matmul(&a[bi * m * k..], &b[bi * k * n..], m, k, n);
            let want: Vec<f64> = want
                .iter()
                .enumerate()
                .map(|(i, w)| w + 1.0 + (bi * 1000 + i / n) as f64)
                .collect();
            assert_close(
                &out[bi * m * n..(bi + 1) * m * n],
                &want,
                k as f64,
                "epilogue",
            );
        }
    }
}

/// An f32 product on the plan for deep products with a large `b` (blocks of
/// `LARGE_B_MIN_ROWS` rows, each packing all of `b`), on the wide AVX-512 tiles where present.
#[test]
fn deep_product_with_a_large_b_matches_naive() {
    check_matmul_shape::<f32>(&mut Rng::new(7), 1100, 260, 1030);
}

#[test]
fn block_plans_cover_the_output() {
    use graph_runtime::matmul::{block_plan, LARGE_B_MIN_ROWS};
    // sgemm `size` is cut into `blocks` row blocks of at least LARGE_B_MIN_ROWS, no panels.
    let assert_deep_plan = |size: usize, blocks: usize| {
        let plan = block_plan::<f32>(size, size, size, 1);
        assert!(
            plan.rows >= LARGE_B_MIN_ROWS
                && size.div_ceil(plan.rows) == blocks
                && plan.cols >= size,
            "sgemm {size}: {plan:?}"
        );
    };
    for &(m, k, n, batch) in &[
        (1024, 1024, 1024, 1),
        (256, 784, 512, 1),
        (256, 512, 10, 1),
        (40, 100, 200, 1),
        (7, 3, 5, 4),
    ] {
        let plan = block_plan::<f32>(m, k, n, batch);
        assert!(plan.rows >= 1 && plan.rows <= m, "{plan:?}");
        assert!(plan.cols >= 1, "{plan:?}");
    }
    // On two threads, a tall product is split by rows only; a short wide one gets column
    // panels.
    let two = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    two.install(|| {
        assert!(block_plan::<f32>(1024, 1024, 1024, 1).cols >= 1024);
        assert!(block_plan::<f32>(40, 100, 200, 1).cols < 200);
        assert!(block_plan::<f32>(256, 784, 512, 1).rows < 256);
        // A deep product with a large `b` gets blocks of LARGE_B_MIN_ROWS rather than 16
        // blocks of 128 rows (each block packs all of `b`).
        assert_deep_plan(2048, 4);
    });
    // On one, blocks hold up to 2^18 output elements (give or take the row alignment) unless
    // the product is deep with a large `b`, and are never split into panels.
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    one.install(|| {
        assert_eq!(block_plan::<f32>(256, 784, 512, 1).rows, 256);
        let plan = block_plan::<f32>(40, 100, 200, 1);
        assert!(plan.rows == 40 && plan.cols >= 200, "{plan:?}");
        let plan = block_plan::<f32>(1024, 128, 1024, 1);
        assert!(
            1024usize.div_ceil(plan.rows) == 4 && plan.cols >= 1024,
            "{plan:?}"
        );
        assert_deep_plan(1024, 2);
    });
}

#[test]
fn matmul_propagates_nan() {
    let (m, k, n) = (70, 50, 80);
    let mut a = vec![1.0f32; m * k];
    let b = vec![1.0f32; k * n];
    a[3 * k + 7] = f32::NAN;
    let mut out = vec![0.0f32; m * n];
    matmul_into(&a, &b, &mut out, MatmulDims::single(m, k, n), no_epilogue);
    for i in 0..m {
        for j in 0..n {
            assert_eq!(out[i * n + j].is_nan(), i == 3, "row {i} col {j}");
        }
    }
}

fn check_conv<T: GemmElement>(
    seed: u64,
    xs: [usize; 4],
    ks: [usize; 4],
    stride: usize,
    padding: Padding,
) {
    check_conv_with::<T>(seed, xs, ks, stride, padding, Algorithm::Best);
    check_conv_with::<T>(seed, xs, ks, stride, padding, Algorithm::Im2colGemm);
}

fn check_conv_with<T: GemmElement>(
    seed: u64,
    xs: [usize; 4],
    ks: [usize; 4],
    stride: usize,
    padding: Padding,
    algorithm: Algorithm,
) {
    let mut rng = Rng::new(seed);
    let x: Vec<T> = rng.values(xs.iter().product());
    let k: Vec<T> = rng.values(ks.iter().product());
    let (oh, ow) = conv2d_output_hw(xs[1], xs[2], ks[0], ks[1], stride, padding).unwrap();
    let mut out = vec![T::ONE; xs[0] * oh * ow * ks[3]];
    let calls = std::sync::atomic::AtomicUsize::new(0);
    conv2d_with(
        &x,
        xs,
        &k,
        ks,
        stride,
        padding,
        &mut out,
        |p0, block: &mut [T]| {
            calls.fetch_add(block.len(), std::sync::atomic::Ordering::Relaxed);
            assert_eq!(block.len() % ks[3], 0);
            assert!(p0 * ks[3] + block.len() <= xs[0] * oh * ow * ks[3]);
            for v in block.iter_mut() {
                *v = v.add(T::ONE);
            }
        },
        algorithm,
    );
    assert_eq!(calls.into_inner(), out.len(), "epilogue coverage");
    let want: Vec<f64> = naive_conv2d(&x, xs, &k, ks, stride, padding)
        .into_iter()
        .map(|v| v + 1.0)
        .collect();
    let what = format!("conv {xs:?} {ks:?} stride {stride} {padding:?} {algorithm:?}");
    assert_close(&out, &want, (ks[0] * ks[1] * ks[2]) as f64, &what);
}

#[test]
fn conv2d_matches_naive() {
    let cases: &[([usize; 4], [usize; 4], usize, Padding)] = &[
        ([1, 5, 5, 1], [3, 3, 1, 1], 1, SAME),
        ([1, 5, 5, 1], [3, 3, 1, 1], 1, VALID),
        ([2, 7, 9, 3], [3, 3, 3, 16], 1, SAME),
        ([2, 7, 9, 3], [3, 3, 3, 16], 2, SAME),
        ([2, 7, 9, 3], [3, 3, 3, 5], 2, VALID),
        ([1, 8, 6, 16], [3, 3, 16, 16], 1, SAME),
        ([1, 9, 11, 16], [3, 2, 16, 4], 2, SAME),
        ([1, 10, 10, 16], [4, 4, 16, 3], 3, VALID),
        ([1, 6, 6, 4], [1, 1, 4, 7], 1, SAME),
        ([1, 6, 6, 4], [1, 1, 4, 7], 2, VALID),
        ([1, 3, 3, 2], [5, 5, 2, 3], 1, SAME),
        ([1, 4, 4, 3], [4, 4, 3, 2], 1, VALID),
        // 16 + 8 output channels: both column panels of the f32 gather kernel.
        ([1, 9, 7, 5], [3, 3, 5, 24], 1, SAME),
        ([2, 5, 5, 3], [2, 2, 3, 8], 2, VALID),
        // Large enough to split into parallel blocks.
        ([2, 33, 31, 3], [3, 3, 3, 16], 1, SAME),
        // One input channel, rows narrower than three tiles (MNIST's first layer): interior
        // runs wrap from one output row to the next.
        ([1, 28, 28, 1], [3, 3, 1, 32], 1, VALID),
        ([2, 13, 13, 32], [3, 3, 32, 64], 1, VALID),
    ];
    for (i, &(xs, ks, stride, padding)) in cases.iter().enumerate() {
        check_conv::<f32>(10 + i as u64, xs, ks, stride, padding);
        check_conv::<f64>(30 + i as u64, xs, ks, stride, padding);
        check_conv::<i32>(50 + i as u64, xs, ks, stride, padding);
    }
    check_conv::<i64>(70, [1, 7, 5, 3], [3, 3, 3, 4], 2, SAME);
}

#[test]
fn conv2d_output_sizes_follow_tensorflow() {
    assert_eq!(conv2d_output_hw(5, 5, 3, 3, 1, SAME), Some((5, 5)));
    assert_eq!(conv2d_output_hw(5, 6, 3, 3, 2, SAME), Some((3, 3)));
    assert_eq!(conv2d_output_hw(5, 6, 3, 3, 2, VALID), Some((2, 2)));
    assert_eq!(conv2d_output_hw(3, 3, 4, 1, 1, VALID), None);
    assert_eq!(conv2d_output_hw(3, 3, 1, 1, 0, SAME), None);
}

/// The epilogue sees every output element once, with its flat pixel index, however the
/// kernel cuts the output into blocks and runs (interior rows, border pixels, row tails).
#[test]
fn conv2d_epilogue_sees_each_pixel_once_with_its_index() {
    for &(xs, ks, stride, padding) in &[
        ([2usize, 40, 53, 16], [3usize, 3, 16, 16], 1usize, SAME),
        ([1, 28, 28, 1], [3, 3, 1, 32], 1, VALID),
        ([1, 33, 31, 3], [3, 3, 3, 16], 2, SAME),
        ([3, 5, 7, 2], [1, 1, 2, 8], 1, VALID),
    ] {
        let (oh, ow) = conv2d_output_hw(xs[1], xs[2], ks[0], ks[1], stride, padding).unwrap();
        let cout = ks[3];
        let x = vec![1.0f32; xs.iter().product()];
        let k = vec![0.0f32; ks.iter().product()];
        let pixels = xs[0] * oh * ow;
        let mut out = vec![f32::NAN; pixels * cout];
        let seen = std::sync::Mutex::new(vec![0u32; pixels]);
        conv2d_into(
            &x,
            xs,
            &k,
            ks,
            stride,
            padding,
            &mut out,
            |p0, block: &mut [f32]| {
                let mut seen = seen.lock().unwrap();
                for (i, v) in block.iter_mut().enumerate() {
                    // The kernel wrote 0 (a zero kernel); the epilogue adds the element's index.
                    assert_eq!(*v, 0.0, "{xs:?}: element written before the epilogue");
                    *v += (p0 * cout + i) as f32;
                    if i % cout == 0 {
                        seen[p0 + i / cout] += 1;
                    }
                }
            },
        );
        assert!(
            seen.into_inner().unwrap().iter().all(|&c| c == 1),
            "{xs:?}: coverage"
        );
        for (i, v) in out.iter().enumerate() {
            assert_eq!(*v, i as f32, "{xs:?}: element {i}");
        }
    }
}

/// conv2d into a fresh, never zeroed buffer (what compiled code hands it for a new result)
/// gives the bits of conv2d into a zeroed one, epilogue included, on every geometry of
/// `conv2d_matches_naive`; and into a reused buffer holding stale values.
#[test]
fn conv2d_into_fresh_memory_matches_conv2d_into() {
    let mut rng = Rng::new(79);
    for &(xs, ks, stride, padding) in &[
        ([1usize, 5, 5, 1], [3usize, 3, 1, 1], 1usize, SAME),
        ([2, 7, 9, 3], [3, 3, 3, 16], 1, SAME),
        ([2, 7, 9, 3], [3, 3, 3, 16], 2, SAME),
        ([1, 8, 6, 16], [3, 3, 16, 16], 1, SAME),
        ([1, 9, 7, 5], [3, 3, 5, 24], 1, SAME),
        ([2, 33, 31, 3], [3, 3, 3, 16], 1, SAME),
        ([1, 28, 28, 1], [3, 3, 1, 32], 1, VALID),
        ([1, 40, 70, 16], [3, 3, 16, 16], 1, SAME),
        ([1, 6, 6, 0], [3, 3, 0, 16], 1, SAME),
        ([0, 6, 6, 3], [3, 3, 3, 16], 1, SAME),
    ] {
        let (oh, ow) = conv2d_output_hw(xs[1], xs[2], ks[0], ks[1], stride, padding).unwrap();
        let len = xs[0] * oh * ow * ks[3];
        let x: Vec<f32> = rng.values(xs.iter().product());
        let k: Vec<f32> = rng.values(ks.iter().product());
        let epi = |p0: usize, block: &mut [f32]| {
            for (i, v) in block.iter_mut().enumerate() {
                *v = *v * 0.5 + (p0 * 3 + i) as f32;
            }
        };
        let mut want = vec![0.0f32; len];
        conv2d_into(&x, xs, &k, ks, stride, padding, &mut want, epi);
        // The observer sees every block once, in its final values (after the epilogue).
        let observed = std::sync::Mutex::new(Vec::<(usize, Vec<f32>)>::new());
        let observe = |first: usize, block: &[f32]| {
            observed.lock().unwrap().push((first, block.to_vec()));
        };
        let check_observed = |how: &str| {
            let mut blocks = std::mem::take(&mut *observed.lock().unwrap());
            blocks.sort_by_key(|(first, _)| *first);
            let mut at = 0;
            for (first, block) in &blocks {
                assert_eq!(*first, at, "{xs:?} {ks:?} {how}: blocks in a row");
                assert_eq!(
                    f32_bits(block),
                    f32_bits(&want[at..at + block.len()]),
                    "{xs:?} {ks:?} {how}: block at {at}"
                );
                at += block.len();
            }
            assert_eq!(at, len, "{xs:?} {ks:?} {how}: blocks cover the output");
        };
        let mut fresh = OutBuf::<f32>::fresh("conv2d", len).unwrap();
        conv2d_buf(&x, xs, &k, ks, stride, padding, &mut fresh, epi, observe);
        let got = fresh.into_vec();
        check_observed("fresh");
        let mut reused = OutBuf::reused(vec![f32::NAN; len]);
        conv2d_buf(&x, xs, &k, ks, stride, padding, &mut reused, epi, observe);
        let again = reused.into_vec();
        check_observed("reused");
        assert_eq!(f32_bits(&got), f32_bits(&want), "{xs:?} {ks:?}: fresh");
        assert_eq!(f32_bits(&again), f32_bits(&want), "{xs:?} {ks:?}: reused");
    }
}

#[test]
fn conv2d_propagates_nan() {
    let xs = [1, 6, 6, 3];
    let ks = [3, 3, 3, 2];
    let mut x = vec![1.0f32; 6 * 6 * 3];
    x[(2 * 6 + 2) * 3 + 1] = f32::NAN; // pixel (2, 2)
    let k = vec![1.0f32; 3 * 3 * 3 * 2];
    let mut out = vec![0.0f32; 6 * 6 * 2];
    conv2d_into(&x, xs, &k, ks, 1, SAME, &mut out, |_, _: &mut [f32]| {});
    for y in 0..6usize {
        for xo in 0..6usize {
            let touched = y.abs_diff(2) <= 1 && xo.abs_diff(2) <= 1;
            assert_eq!(out[(y * 6 + xo) * 2].is_nan(), touched, "pixel ({y}, {xo})");
        }
    }
}

/// The fused conv2d + pooling kernel against conv2d, the same epilogue and the pooling op run
/// one after the other: bit for bit, for every geometry (overlapping, gapped and dropped
/// rows, SAME and VALID on both ops) and element type.
fn check_conv_pool<T: GemmElement + 'static>(
    seed: u64,
    xs: [usize; 4],
    ks: [usize; 4],
    conv: (usize, Padding),
    pool: Pool2d,
) {
    let mut rng = Rng::new(seed);
    let x: Vec<T> = rng.values(xs.iter().product());
    let k: Vec<T> = rng.values(ks.iter().product());
    let (stride, padding) = conv;
    let (oh, ow) = conv2d_output_hw(xs[1], xs[2], ks[0], ks[1], stride, padding).unwrap();
    // An epilogue that depends on the pixel index, so a wrong index shows.
    let epi = |p0: usize, block: &mut [T]| {
        for (i, v) in block.iter_mut().enumerate() {
            let pixel = p0 + i / ks[3];
            *v = v.add(T::from_f64((pixel % 7) as f64));
        }
    };
    let mut conv_out = vec![T::ZERO; xs[0] * oh * ow * ks[3]];
    conv2d_into(&x, xs, &k, ks, stride, padding, &mut conv_out, epi);
    let shape = conv2d_pool_shape(xs, ks, stride, padding, pool).unwrap();
    let mut want = vec![T::ZERO; shape.iter().product()];
    pool2d_into(&conv_out, [xs[0], oh, ow, ks[3]], pool, &mut want);
    let mut got = vec![T::ONE; want.len()];
    conv2d_pool_into(&x, xs, &k, ks, stride, padding, pool, &mut got, epi);
    let what = format!("conv2d_pool {xs:?} {ks:?} {conv:?} {pool:?}");
    let bits = |v: &[T]| v.iter().map(|e| format!("{e:?}")).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&want), "{what}");
}

#[test]
fn conv2d_pool_matches_conv_then_pool() {
    let pool = |kind, ksize, strides, padding| Pool2d {
        kind,
        ksize,
        strides,
        padding,
    };
    type Case = ([usize; 4], [usize; 4], (usize, Padding), Pool2d);
    let cases: &[Case] = &[
        (
            [1, 28, 28, 1],
            [3, 3, 1, 32],
            (1, VALID),
            pool(PoolKind::Max, [2, 2], [2, 2], VALID),
        ),
        (
            [3, 13, 13, 32],
            [3, 3, 32, 64],
            (1, VALID),
            pool(PoolKind::Max, [2, 2], [2, 2], VALID),
        ),
        (
            [2, 9, 7, 3],
            [3, 3, 3, 16],
            (1, SAME),
            pool(PoolKind::Max, [3, 3], [1, 1], SAME),
        ),
        (
            [2, 9, 7, 3],
            [3, 3, 3, 16],
            (2, SAME),
            pool(PoolKind::Avg, [2, 3], [3, 2], SAME),
        ),
        (
            [1, 20, 17, 2],
            [5, 5, 2, 7],
            (1, VALID),
            pool(PoolKind::Max, [2, 3], [3, 2], SAME),
        ),
        (
            [1, 15, 13, 3],
            [3, 3, 3, 8],
            (2, VALID),
            pool(PoolKind::Avg, [2, 2], [2, 2], VALID),
        ),
        (
            [1, 1, 1, 3],
            [3, 3, 3, 5],
            (1, SAME),
            pool(PoolKind::Max, [2, 2], [2, 2], SAME),
        ),
        (
            [1, 1, 1023, 3],
            [1, 3, 3, 16],
            (1, SAME),
            pool(PoolKind::Avg, [1, 4], [1, 3], VALID),
        ),
        (
            [0, 8, 8, 3],
            [3, 3, 3, 16],
            (1, SAME),
            pool(PoolKind::Max, [2, 2], [2, 2], VALID),
        ),
        (
            [4, 33, 31, 3],
            [3, 3, 3, 16],
            (1, SAME),
            pool(PoolKind::Max, [3, 3], [2, 2], SAME),
        ),
    ];
    for (i, &(xs, ks, conv, p)) in cases.iter().enumerate() {
        check_conv_pool::<f32>(80 + i as u64, xs, ks, conv, p);
        check_conv_pool::<f64>(90 + i as u64, xs, ks, conv, p);
        if p.kind == PoolKind::Max {
            check_conv_pool::<i32>(100 + i as u64, xs, ks, conv, p);
        }
    }
}

/// The bit patterns of `v`, for comparisons that must be exact (NaN payloads, -0).
fn f32_bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Runs a gather GEMM into `len` elements of output memory it must only write (as conv2d
/// hands it fresh memory) and returns them, asserting it stored every one: the memory starts
/// as a NaN bit pattern no product of these finite inputs gives.
fn gathered(len: usize, gemm: impl FnOnce(&mut [MaybeUninit<f32>])) -> Vec<f32> {
    const UNWRITTEN: u32 = 0x7fc0_dead;
    let mut out = vec![MaybeUninit::new(f32::from_bits(UNWRITTEN)); len];
    gemm(&mut out);
    // SAFETY: every element was initialised with the sentinel, and the kernel only stores
    // initialised values.
    let out: Vec<f32> = out
        .into_iter()
        .map(|x| unsafe { x.assume_init() })
        .collect();
    let unwritten = out.iter().filter(|x| x.to_bits() == UNWRITTEN).count();
    assert_eq!(
        unwritten, 0,
        "the gather GEMM left {unwritten} of {len} elements unwritten"
    );
    out
}

/// The strided form of the gather GEMM gives the table form's bits, for strides compiled
/// into the AVX-512 tile and others, runs shorter and longer than one tile, and every column
/// count the kernel takes.
#[test]
fn gemm_gather_strided_matches_the_table_form() {
    let mut rng = Rng::new(77);
    for &(stride, rows, n, k) in &[
        (16usize, 24usize, 16usize, 144usize),
        (16, 72, 16, 144),
        (3, 25, 16, 27),
        (1, 48, 32, 9),
        (32, 23, 64, 288),
        (5, 30, 16, 20),
        (2, 100, 24, 8),
        (64, 1, 8, 3),
        (8, 0, 16, 4),
        (1, 72, 32, 9),
        (1, 26, 32, 9),
    ] {
        if !f32::has_gather_kernel(n) {
            continue;
        }
        let cols: Vec<usize> = (0..k).map(|p| (p / 3) * 28 + p % 3).collect();
        let span = rows.saturating_sub(1) * stride + cols.iter().max().unwrap() + 1;
        let src: Vec<f32> = rng.values(span + 5);
        let b: Vec<f32> = rng.values(k * n);
        let first = 5;
        let table: Vec<usize> = (0..rows).map(|r| first + r * stride).collect();
        let want = gathered(rows * n, |out| {
            f32::gemm_gather(&src, &table, &cols, &b, n, out)
        });
        let got = gathered(rows * n, |out| {
            f32::gemm_gather_strided(&src, first, stride, rows, &cols, &b, n, out)
        });
        assert_eq!(
            f32_bits(&got),
            f32_bits(&want),
            "stride {stride} rows {rows} n {n} k {k}"
        );
    }
}

/// The table form of the gather GEMM on every tile height (the 24-row tile, and the 16- and
/// 8-row ones its short remainders run on; the 6-row AVX2 tile): each row agrees with a naive
/// sum, and with the same row gathered alone (the bits do not depend on the tile it ran in).
#[test]
fn gemm_gather_matches_naive_on_every_tile_height() {
    let mut rng = Rng::new(78);
    for &(n, k) in &[(16usize, 27usize), (24, 144), (8, 5)] {
        if !f32::has_gather_kernel(n) {
            continue;
        }
        for rows in 1..=50usize {
            let cols: Vec<usize> = (0..k).map(|p| (p / 3) * 40 + p % 3).collect();
            // Rows in a scrambled order, some repeated, as border pixels' scratch rows are not.
            let table: Vec<usize> = (0..rows).map(|r| (r * 7) % 31 * 3).collect();
            let span = table.iter().max().unwrap() + cols.iter().max().unwrap() + 1;
            let src: Vec<f32> = rng.values(span);
            let b: Vec<f32> = rng.values(k * n);
            let got = gathered(rows * n, |out| {
                f32::gemm_gather(&src, &table, &cols, &b, n, out)
            });
            let mut want = vec![0.0f64; rows * n];
            for (r, &row) in table.iter().enumerate() {
                for j in 0..n {
                    want[r * n + j] = (0..k)
                        .map(|p| src[row + cols[p]] as f64 * b[p * n + j] as f64)
                        .sum();
                }
            }
            assert_close(&got, &want, k as f64, &format!("rows {rows} n {n} k {k}"));
            for (r, &row) in table.iter().enumerate() {
                let alone = gathered(n, |out| f32::gemm_gather(&src, &[row], &cols, &b, n, out));
                assert_eq!(
                    f32_bits(&alone),
                    f32_bits(&got[r * n..(r + 1) * n]),
                    "row {r} of {rows}, n {n} k {k}"
                );
            }
        }
    }
}

/// The conv tile that loads each input once for its three outputs along a row gives the
/// bits of the table form with the same column order (kernel row, channel, kernel column),
/// on whole tiles, several column panels, and channel counts 1, 3, 16.
#[test]
fn conv_rows_kw3_matches_the_table_form() {
    let mut rng = Rng::new(80);
    for &(kh, cin, pixels, n) in &[
        (3usize, 16usize, 24usize, 16usize),
        (3, 16, 50, 32),
        (3, 3, 48, 16),
        (1, 1, 72, 16),
        (2, 5, 24, 48),
        (3, 16, 23, 16),
    ] {
        let row_stride = (pixels + 2) * cin + 7;
        let first = 3;
        let src: Vec<f32> = rng.values(first + kh * row_stride + 5);
        let b: Vec<f32> = rng.values(kh * cin * 3 * n);
        let mut cols = Vec::new();
        for i in 0..kh {
            for c in 0..cin {
                for j in 0..3 {
                    cols.push(i * row_stride + j * cin + c);
                }
            }
        }
        let mut done = 0;
        let got = gathered(pixels * n, |out| {
            done = f32::conv_rows_kw3(&src, first, row_stride, kh, cin, pixels, &b, n, out);
            // What the tile leaves (short tails, other CPUs) is not its to write.
            for v in &mut out[done * n..] {
                v.write(0.0);
            }
        });
        let whole = pixels / 24 * 24;
        let avx512 = graph_runtime::cpu::avx512_tiles();
        assert_eq!(
            done,
            if avx512 { whole } else { 0 },
            "kh {kh} cin {cin} pixels {pixels}"
        );
        if done == 0 {
            // Nothing computed (a short run, or no AVX-512: asserted just above).
            continue;
        }
        let table: Vec<usize> = (0..done).map(|r| first + r * cin).collect();
        let want = gathered(done * n, |out| {
            f32::gemm_gather(&src, &table, &cols, &b, n, out)
        });
        assert_eq!(
            f32_bits(&got[..done * n]),
            f32_bits(&want),
            "kh {kh} cin {cin} pixels {pixels} n {n}"
        );
    }
}

/// Naive permutation through ndarray's views.
fn naive_transpose(x: &ArrayD<i64>, perm: &[usize]) -> Vec<i64> {
    x.clone()
        .permuted_axes(IxDyn(perm))
        .iter()
        .copied()
        .collect()
}

#[test]
fn transpose_matches_naive_for_random_perms() {
    let mut rng = Rng::new(90);
    for case in 0..60 {
        let rank = 1 + case % 5;
        let shape: Vec<usize> = (0..rank).map(|_| 1 + rng.below(5)).collect();
        let len: usize = shape.iter().product();
        let x = Array::from_shape_vec(IxDyn(&shape), (0..len as i64).collect()).unwrap();
        let perm = rng.perm(rank);
        let mut out = vec![0i64; len];
        transpose_into(x.as_slice().unwrap(), &shape, &perm, &mut out);
        assert_eq!(
            out,
            naive_transpose(&x, &perm),
            "shape {shape:?} perm {perm:?}"
        );
    }
    // Big enough for the parallel paths: 2-D tiles, batched tiles, general gather.
    for (shape, perm) in [
        (vec![300, 130], vec![1, 0]),
        (vec![3, 120, 101], vec![0, 2, 1]),
        (vec![20, 30, 70], vec![2, 0, 1]),
        (vec![6, 10, 9, 70], vec![3, 1, 0, 2]),
    ] {
        let len: usize = shape.iter().product();
        let x = Array::from_shape_vec(IxDyn(&shape), (0..len as i64).collect()).unwrap();
        let mut out = vec![0i64; len];
        transpose_into(x.as_slice().unwrap(), &shape, &perm, &mut out);
        assert_eq!(
            out,
            naive_transpose(&x, &perm),
            "shape {shape:?} perm {perm:?}"
        );
    }
}

#[test]
fn check_perm_rejects_non_permutations() {
    assert!(check_perm(&[1, 0, 2], 3).is_ok());
    assert!(check_perm(&[], 0).is_ok());
    for (perm, rank) in [(&[0, 0][..], 2), (&[0, 2][..], 2), (&[0][..], 2)] {
        match check_perm(perm, rank) {
            Err(Error::InvalidArgument { op, message }) => {
                assert_eq!(op, "transpose");
                assert!(message.contains(&format!("{perm:?}")), "{message}");
            }
            other => panic!("{perm:?}: expected InvalidArgument, got {other:?}"),
        }
    }
}

fn arr(shape: &[usize], rng: &mut Rng) -> ArrayD<f32> {
    let len = shape.iter().product();
    Array::from_shape_vec(IxDyn(shape), rng.values(len)).unwrap()
}

#[test]
fn eager_matmul_shapes_and_views() {
    let mut rng = Rng::new(100);
    let a = arr(&[7, 5], &mut rng);
    let b = arr(&[5, 3], &mut rng);
    let want = a
        .clone()
        .into_dimensionality::<ndarray::Ix2>()
        .unwrap()
        .dot(&b.clone().into_dimensionality::<ndarray::Ix2>().unwrap());
    let got = eager::matmul(&a, &b).unwrap();
    assert_eq!(got.shape(), &[7, 3]);
    assert_close(
        got.as_slice().unwrap(),
        &want.iter().map(|&v| v as f64).collect::<Vec<_>>(),
        5.0,
        "2-D",
    );
    // A transposed (non-contiguous) view is copied to row-major first.
    let bt = arr(&[3, 5], &mut rng);
    let got = eager::matmul(&a, bt.t()).unwrap();
    let bt_std: Vec<f32> = bt.t().iter().copied().collect();
    assert_close(
        got.as_slice().unwrap(),
        &naive_matmul(a.as_slice().unwrap(), &bt_std, 7, 5, 3),
        5.0,
        "view",
    );
    // Batched, and a matrix broadcast over the batch.
    let a3 = arr(&[2, 4, 5], &mut rng);
    let b3 = arr(&[2, 5, 6], &mut rng);
    let got = eager::matmul(&a3, &b3).unwrap();
    assert_eq!(got.shape(), &[2, 4, 6]);
    let got = eager::matmul(&a3, &b).unwrap();
    assert_eq!(got.shape(), &[2, 4, 3]);
    let want = naive_matmul(
        &a3.as_slice().unwrap()[20..],
        b.as_slice().unwrap(),
        4,
        5,
        3,
    );
    assert_close(&got.as_slice().unwrap()[12..], &want, 5.0, "broadcast");
}

/// Asserts a shape error naming `op`, both shapes and `axis`.
fn assert_shape_err(
    r: Result<ArrayD<f32>, Error>,
    op: &str,
    left: &[usize],
    right: &[usize],
    axis: Option<usize>,
) {
    match r {
        Err(e @ Error::Shape { .. }) => {
            let text = e.to_string();
            let Error::Shape {
                op: o,
                left: l,
                right: rt,
                axis: ax,
                ..
            } = e
            else {
                unreachable!()
            };
            assert_eq!(
                (o, l.as_slice(), rt.as_slice(), ax),
                (op, left, right, axis),
                "{text}"
            );
            assert!(text.contains(&format!("`{op}`")), "{text}");
            assert!(
                text.contains(&format!("{left:?}")) && text.contains(&format!("{right:?}")),
                "{text}"
            );
        }
        other => panic!("expected a shape error from {op}, got {other:?}"),
    }
}

#[test]
fn eager_matmul_errors() {
    let mut rng = Rng::new(101);
    let a = arr(&[4, 784], &mut rng);
    let b = arr(&[512, 10], &mut rng);
    assert_shape_err(
        eager::matmul(&a, &b),
        "matmul",
        &[4, 784],
        &[512, 10],
        Some(1),
    );
    let a3 = arr(&[2, 3, 4], &mut rng);
    let b3 = arr(&[3, 4, 5], &mut rng);
    assert_shape_err(
        eager::matmul(&a3, &b3),
        "matmul",
        &[2, 3, 4],
        &[3, 4, 5],
        Some(0),
    );
    let v = arr(&[4], &mut rng);
    assert_shape_err(eager::matmul(&v, &b), "matmul", &[4], &[512, 10], None);
    // N-D operands broadcast their batch axes; the inner dims must still agree.
    let r4 = arr(&[1, 2, 3, 4], &mut rng);
    assert_shape_err(
        eager::matmul(&a, &r4),
        "matmul",
        &[4, 784],
        &[1, 2, 3, 4],
        Some(1),
    );
    let l4 = arr(&[2, 3, 4, 5], &mut rng);
    let r4 = arr(&[2, 2, 5, 6], &mut rng);
    assert_shape_err(
        eager::matmul(&l4, &r4),
        "matmul",
        &[2, 3, 4, 5],
        &[2, 2, 5, 6],
        Some(1),
    );
}

#[test]
fn eager_transpose_and_reshape() {
    let mut rng = Rng::new(102);
    let x = arr(&[2, 3, 4], &mut rng);
    let t = eager::transpose(&x, None).unwrap();
    assert_eq!(t, x.clone().reversed_axes());
    let t = eager::transpose(&x, Some(&[1, 0, 2])).unwrap();
    assert_eq!(t, x.clone().permuted_axes(IxDyn(&[1, 0, 2])));
    assert!(matches!(
        eager::transpose(&x, Some(&[0, 1])),
        Err(Error::InvalidArgument {
            op: "transpose",
            ..
        })
    ));
    // Transposing a non-contiguous view.
    let t = eager::transpose(x.t(), Some(&[0, 2, 1])).unwrap();
    assert_eq!(t, x.clone().permuted_axes(IxDyn(&[2, 0, 1])));

    let r = eager::reshape(&x, &[6, 4]).unwrap();
    assert_eq!(r.shape(), &[6, 4]);
    assert_eq!(
        r.iter().copied().collect::<Vec<_>>(),
        x.iter().copied().collect::<Vec<_>>()
    );
    let r = eager::reshape(x.t(), &[24]).unwrap();
    assert_eq!(
        r.iter().copied().collect::<Vec<_>>(),
        x.t().iter().copied().collect::<Vec<_>>()
    );
    assert_shape_err(
        eager::reshape(&x, &[5, 5]),
        "reshape",
        &[2, 3, 4],
        &[5, 5],
        None,
    );
}

#[test]
fn eager_conv2d_and_bias_add() {
    let mut rng = Rng::new(103);
    let x = arr(&[1, 6, 5, 3], &mut rng);
    let k = arr(&[3, 3, 3, 4], &mut rng);
    let y = eager::conv2d(&x, &k, 2, SAME).unwrap();
    assert_eq!(y.shape(), &[1, 3, 3, 4]);
    let want = naive_conv2d(
        x.as_slice().unwrap(),
        [1, 6, 5, 3],
        k.as_slice().unwrap(),
        [3, 3, 3, 4],
        2,
        SAME,
    );
    assert_close(y.as_slice().unwrap(), &want, 27.0, "eager conv2d");

    let b = arr(&[4], &mut rng);
    let z = eager::bias_add(&y, &b).unwrap();
    for (i, (zv, yv)) in z.iter().zip(y.iter()).enumerate() {
        assert_eq!(*zv, yv + b[[i % 4]]);
    }
    // Large enough for the parallel loop.
    let big = arr(&[300, 128], &mut rng);
    let b2 = arr(&[128], &mut rng);
    let z = eager::bias_add(&big, &b2).unwrap();
    assert_eq!(z[[299, 127]], big[[299, 127]] + b2[[127]]);
}

#[test]
fn eager_conv2d_and_bias_add_errors() {
    let mut rng = Rng::new(104);
    let x = arr(&[1, 6, 5, 3], &mut rng);
    let k = arr(&[3, 3, 3, 4], &mut rng);
    let x3 = arr(&[6, 5, 3], &mut rng);
    assert_shape_err(
        eager::conv2d(&x3, &k, 1, SAME),
        "conv2d",
        &[6, 5, 3],
        &[3, 3, 3, 4],
        None,
    );
    let k3 = arr(&[3, 3, 3], &mut rng);
    assert_shape_err(
        eager::conv2d(&x, &k3, 1, SAME),
        "conv2d",
        &[1, 6, 5, 3],
        &[3, 3, 3],
        None,
    );
    let k16 = arr(&[3, 3, 16, 4], &mut rng);
    let r = eager::conv2d(&x, &k16, 1, SAME);
    assert!(r
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("axis 2 of the kernel"));
    assert_shape_err(r, "conv2d", &[1, 6, 5, 3], &[3, 3, 16, 4], Some(3));
    let big = arr(&[7, 2, 3, 4], &mut rng);
    assert_shape_err(
        eager::conv2d(&x, &big, 1, VALID),
        "conv2d",
        &[1, 6, 5, 3],
        &[7, 2, 3, 4],
        Some(1),
    );
    assert!(matches!(
        eager::conv2d(&x, &k, 0, SAME),
        Err(Error::InvalidArgument { op: "conv2d", .. })
    ));

    let b2 = arr(&[2, 3], &mut rng);
    assert_shape_err(
        eager::bias_add(&x, &b2),
        "bias_add",
        &[1, 6, 5, 3],
        &[2, 3],
        None,
    );
    let b4 = arr(&[4], &mut rng);
    assert_shape_err(
        eager::bias_add(&x, &b4),
        "bias_add",
        &[1, 6, 5, 3],
        &[4],
        Some(3),
    );
}
