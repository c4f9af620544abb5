//! conv2d's patch-GEMM plan for deep kernels (few output pixels, many channels: ResNet's later stages) against a naive loop reference, and bit for bit against the im2col path, across thread counts, the fused pooling and fresh output buffers.
//!
//! A kernel matrix (`KH*KW*Cin x Cout`) of at least 1 MiB takes the plan
//! (`graph_runtime::linalg::conv_plan`): f32 `[3, 3, 128, 256]` is 1.18 MB, f64
//! `[3, 3, 64, 256]` 1.18 MB. The shapes cover batch 1 (the GEMM split over output channels)
//! and batches of several images (split over pixels), 1x1 and 7x7 maps, odd channel counts,
//! stride 2, SAME and VALID, and an empty batch.

mod linalg_harness;

use graph_runtime::compiled::OutBuf;
use graph_runtime::conv::{
    conv2d_buf, conv2d_into, conv2d_output_hw, conv2d_with, Algorithm, Padding, SAME, VALID,
};
use graph_runtime::conv_pool::{conv2d_pool_into, conv2d_pool_shape};
use graph_runtime::matmul::GemmElement;
use graph_runtime::pool::{pool2d_into, Pool2d, PoolKind};
use linalg_harness::{assert_close, naive_conv2d, Rng};

/// One convolution: input shape, kernel shape, stride, padding.
type Case = ([usize; 4], [usize; 4], usize, Padding);

/// Deep f32 cases (kernels of 1.2 to 2.4 MB).
const F32_CASES: &[Case] = &[
    // ResNet's stage-4 shape in small: a 7x7 map, SAME, batch 1 (column panels).
    ([1, 7, 7, 128], [3, 3, 128, 256], 1, SAME),
    // Batch 3, odd output channels, VALID: several blocks of pixels.
    ([3, 7, 7, 128], [3, 3, 128, 263], 1, VALID),
    // Stride 2 on an even map, SAME (the odd pixel of padding after).
    ([2, 8, 8, 131], [3, 3, 131, 256], 2, SAME),
    // A 1x1 map: every patch is mostly padding.
    ([1, 1, 1, 256], [3, 3, 256, 128], 1, SAME),
    // A wide kernel over a map it only just fits, and a 1x1 kernel at stride 1 (the input
    // rows are the patches).
    ([2, 5, 9, 64], [5, 5, 64, 200], 1, VALID),
    ([2, 7, 7, 1024], [1, 1, 1024, 264], 1, SAME),
    // An empty batch.
    ([0, 7, 7, 128], [3, 3, 128, 256], 1, SAME),
];

/// Deep f64 and i32 cases.
const F64_CASES: &[Case] = &[
    ([1, 7, 7, 64], [3, 3, 64, 256], 1, SAME),
    ([2, 6, 5, 67], [3, 3, 67, 250], 2, VALID),
];
const I32_CASES: &[Case] = &[([2, 7, 7, 128], [3, 3, 128, 264], 1, SAME)];

/// Runs `conv2d_with(algorithm)` on a rayon pool of `threads`, with an epilogue that adds the
/// element's flat index (so a wrong pixel index shows), and checks it saw every element once.
fn conv_on<T: GemmElement>(
    (xs, ks, stride, padding): Case,
    x: &[T],
    k: &[T],
    threads: usize,
    algorithm: Algorithm,
) -> Vec<T> {
    let (oh, ow) = conv2d_output_hw(xs[1], xs[2], ks[0], ks[1], stride, padding).unwrap();
    let cout = ks[3];
    let mut out = vec![T::ONE; xs[0] * oh * ow * cout];
    let seen = std::sync::atomic::AtomicUsize::new(0);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        conv2d_with(
            x,
            xs,
            k,
            ks,
            stride,
            padding,
            &mut out,
            |p0, block: &mut [T]| {
                seen.fetch_add(block.len(), std::sync::atomic::Ordering::Relaxed);
                assert_eq!(block.len() % cout, 0, "whole pixels");
                for (i, v) in block.iter_mut().enumerate() {
                    *v = v.add(T::from_f64(((p0 * cout + i) % 5) as f64));
                }
            },
            algorithm,
        )
    });
    assert_eq!(seen.into_inner(), out.len(), "epilogue coverage");
    out
}

/// The bits of a result, comparable for every element type (NaN included).
fn bits<T: GemmElement>(v: &[T]) -> Vec<String> {
    v.iter().map(|e| format!("{e:?}")).collect()
}

/// The plan against the naive reference, and bit for bit against the im2col path, on 1, 2
/// and 3 threads (the blocks and column panels differ, the values must not).
fn check_deep<T: GemmElement>(seed: u64, case: Case) {
    let (xs, ks, stride, padding) = case;
    let mut rng = Rng::new(seed);
    let x: Vec<T> = rng.values(xs.iter().product());
    let k: Vec<T> = rng.values(ks.iter().product());
    let what = format!("deep conv {xs:?} {ks:?} stride {stride} {padding:?}");
    let best = conv_on(case, &x, &k, 2, Algorithm::Best);
    let want: Vec<f64> = naive_conv2d(&x, xs, &k, ks, stride, padding)
        .into_iter()
        .enumerate()
        .map(|(i, v)| v + (i % 5) as f64)
        .collect();
    assert_close(&best, &want, (ks[0] * ks[1] * ks[2]) as f64, &what);
    let reference = bits(&conv_on(case, &x, &k, 1, Algorithm::Im2colGemm));
    assert_eq!(bits(&best), reference, "{what}: Best vs Im2colGemm");
    for threads in [1, 3] {
        let got = conv_on(case, &x, &k, threads, Algorithm::Best);
        assert_eq!(bits(&got), reference, "{what}: {threads} threads");
    }
    let forced = conv_on(case, &x, &k, 2, Algorithm::PatchGemm);
    assert_eq!(bits(&forced), reference, "{what}: PatchGemm");
}

#[test]
fn deep_f32_convolutions_match_naive_and_im2col_bit_for_bit() {
    for (i, &case) in F32_CASES.iter().enumerate() {
        check_deep::<f32>(100 + i as u64, case);
    }
}

#[test]
fn deep_f64_and_integer_convolutions_match_naive_and_im2col_bit_for_bit() {
    for (i, &case) in F64_CASES.iter().enumerate() {
        check_deep::<f64>(200 + i as u64, case);
    }
    for (i, &case) in I32_CASES.iter().enumerate() {
        check_deep::<i32>(300 + i as u64, case);
    }
}

/// The plan forced on small kernels (which `Best` gives the gather or im2col path) gives the
/// im2col path's bits too, down to one pixel and one channel.
#[test]
fn the_patch_plan_on_small_kernels_matches_im2col() {
    let cases: &[Case] = &[
        ([1, 1, 1, 1], [1, 1, 1, 1], 1, SAME),
        ([1, 7, 7, 3], [3, 3, 3, 16], 1, SAME),
        ([2, 9, 9, 5], [3, 3, 5, 7], 2, VALID),
        ([1, 33, 31, 16], [3, 3, 16, 160], 1, SAME),
    ];
    for (i, &case) in cases.iter().enumerate() {
        let (xs, ks, ..) = case;
        let mut rng = Rng::new(400 + i as u64);
        let x: Vec<f32> = rng.values(xs.iter().product());
        let k: Vec<f32> = rng.values(ks.iter().product());
        let want = bits(&conv_on(case, &x, &k, 1, Algorithm::Im2colGemm));
        for threads in [1, 2] {
            let got = conv_on(case, &x, &k, threads, Algorithm::PatchGemm);
            assert_eq!(bits(&got), want, "{case:?} on {threads} threads");
        }
    }
}

/// Wide kernels that are not deep (patches of at least 512, 64 channels or more: ResNet's
/// stages 1 and 2) take the im2col path's values too, on any thread count, and match the
/// naive reference.
#[test]
fn wide_convolutions_take_the_im2col_values() {
    let cases: &[Case] = &[
        ([1, 9, 9, 64], [3, 3, 64, 64], 1, SAME),
        ([2, 10, 10, 64], [3, 3, 64, 128], 2, VALID),
        ([1, 7, 5, 129], [3, 3, 129, 67], 1, SAME),
    ];
    for (i, &case) in cases.iter().enumerate() {
        let (xs, ks, stride, padding) = case;
        let mut rng = Rng::new(450 + i as u64);
        let x: Vec<f32> = rng.values(xs.iter().product());
        let k: Vec<f32> = rng.values(ks.iter().product());
        let want = bits(&conv_on(case, &x, &k, 1, Algorithm::Im2colGemm));
        for threads in [1, 2] {
            let got = conv_on(case, &x, &k, threads, Algorithm::Best);
            assert_eq!(bits(&got), want, "{case:?} on {threads} threads");
        }
        let naive: Vec<f64> = naive_conv2d(&x, xs, &k, ks, stride, padding)
            .into_iter()
            .enumerate()
            .map(|(i, v)| v + (i % 5) as f64)
            .collect();
        let got = conv_on(case, &x, &k, 2, Algorithm::Best);
        assert_close(
            &got,
            &naive,
            (ks[0] * ks[1] * ks[2]) as f64,
            &format!("{case:?}"),
        );
    }
}

/// A fresh (never zeroed) output buffer and a reused one give `conv2d_into`'s bits, and the
/// observer sees each finished block once.
#[test]
fn deep_convolutions_into_fresh_buffers_match_conv2d_into() {
    let mut rng = Rng::new(500);
    for &(xs, ks, stride, padding) in &F32_CASES[..3] {
        let (oh, ow) = conv2d_output_hw(xs[1], xs[2], ks[0], ks[1], stride, padding).unwrap();
        let len = xs[0] * oh * ow * ks[3];
        let x: Vec<f32> = rng.values(xs.iter().product());
        let k: Vec<f32> = rng.values(ks.iter().product());
        let epi = |p0: usize, block: &mut [f32]| {
            for (i, v) in block.iter_mut().enumerate() {
                *v = (*v * 0.5 + (p0 + i) as f32).max(0.0);
            }
        };
        let mut want = vec![0.0f32; len];
        conv2d_into(&x, xs, &k, ks, stride, padding, &mut want, epi);
        let observed = std::sync::atomic::AtomicUsize::new(0);
        let observe = |first: usize, block: &[f32]| {
            assert_eq!(bits(block), bits(&want[first..first + block.len()]));
            observed.fetch_add(block.len(), std::sync::atomic::Ordering::Relaxed);
        };
        let mut fresh = OutBuf::<f32>::fresh("conv2d", len).unwrap();
        conv2d_buf(&x, xs, &k, ks, stride, padding, &mut fresh, epi, observe);
        assert_eq!(bits(&fresh.into_vec()), bits(&want), "{xs:?} {ks:?}: fresh");
        let mut reused = OutBuf::reused(vec![f32::NAN; len]);
        conv2d_buf(&x, xs, &k, ks, stride, padding, &mut reused, epi, observe);
        assert_eq!(
            bits(&reused.into_vec()),
            bits(&want),
            "{xs:?} {ks:?}: reused"
        );
        assert_eq!(observed.into_inner(), 2 * len, "{xs:?} {ks:?}: observed");
    }
}

/// The fused conv2d + max pooling on a deep kernel: conv2d, the epilogue and the pooling one
/// after the other, bit for bit.
#[test]
fn deep_convolution_fused_with_pooling_matches_conv_then_pool() {
    let mut rng = Rng::new(600);
    let (xs, ks, stride, padding) = ([2, 8, 8, 128], [3, 3, 128, 256], 1, SAME);
    let x: Vec<f32> = rng.values(xs.iter().product());
    let k: Vec<f32> = rng.values(ks.iter().product());
    let pool = Pool2d {
        kind: PoolKind::Max,
        ksize: [2, 2],
        strides: [2, 2],
        padding: VALID,
    };
    let epi = |p0: usize, block: &mut [f32]| {
        for (i, v) in block.iter_mut().enumerate() {
            *v += ((p0 + i / ks[3]) % 7) as f32;
        }
    };
    let (oh, ow) = conv2d_output_hw(xs[1], xs[2], ks[0], ks[1], stride, padding).unwrap();
    let mut conv_out = vec![0.0f32; xs[0] * oh * ow * ks[3]];
    conv2d_into(&x, xs, &k, ks, stride, padding, &mut conv_out, epi);
    let shape = conv2d_pool_shape(xs, ks, stride, padding, pool).unwrap();
    let mut want = vec![0.0f32; shape.iter().product()];
    pool2d_into(&conv_out, [xs[0], oh, ow, ks[3]], pool, &mut want);
    let mut got = vec![1.0f32; want.len()];
    conv2d_pool_into(&x, xs, &k, ks, stride, padding, pool, &mut got, epi);
    assert_eq!(bits(&got), bits(&want));
}

/// NaN and infinities in the input reach exactly the outputs whose patches hold them.
#[test]
fn deep_convolutions_propagate_nan_and_infinity() {
    let (xs, ks) = ([1, 7, 7, 128], [3, 3, 128, 256]);
    let mut x = vec![0.5f32; xs.iter().product()];
    let k = vec![0.25f32; ks.iter().product()];
    x[(2 * 7 + 2) * 128 + 5] = f32::NAN; // pixel (2, 2)
    x[(5 * 7 + 6) * 128 + 9] = f32::INFINITY; // pixel (5, 6)
    let mut out = vec![0.0f32; 7 * 7 * 256];
    conv2d_into(&x, xs, &k, ks, 1, SAME, &mut out, |_, _: &mut [f32]| {});
    for y in 0..7usize {
        for xo in 0..7usize {
            let v = out[(y * 7 + xo) * 256 + 100];
            let nan = y.abs_diff(2) <= 1 && xo.abs_diff(2) <= 1;
            let inf = y.abs_diff(5) <= 1 && xo.abs_diff(6) <= 1;
            match (nan, inf) {
                (true, _) => assert!(v.is_nan(), "pixel ({y}, {xo}): {v}"),
                (false, true) => assert_eq!(v, f32::INFINITY, "pixel ({y}, {xo})"),
                (false, false) => assert!(v.is_finite(), "pixel ({y}, {xo}): {v}"),
            }
        }
    }
}
