//! An all-axes f32 `norm`, `reduce_sum` or `reduce_mean` of a conv2d's result, whose partial sums the convolution records block by block (W3's `norm(y)`): compiled == eager bit for bit, a `Session`'s second run (a reused buffer) too, both == a naive reference, on odd, empty and multi-segment sizes, channel counts that do and do not divide a block, NaN and infinities.

mod refs;

use grafo::ndarray::{Array0, Array1, Array4, ArrayD, Ix1, Ix4};
use grafo::prelude::*;
use refs::*;

/// The result of a first layer and its norm.
#[graph]
fn layer_norm2(
    x: Tensor<f32, N, H, W, 3>,
    k: Tensor<f32, 3, 3, 3, C>,
    b: Tensor<f32, C>,
) -> (Tensor<f32, N, H, W, C>, Tensor<f32>) {
    let y = conv2d(x, k, 1, SAME) + b;
    (y, norm(y))
}

/// A bare convolution (no epilogue), stride 2, VALID, and its sum.
#[graph]
fn strided_sum(x: Tensor<f32, N, 41, 37, 2>, k: Tensor<f32, 3, 3, 2, C>) -> Tensor<f32> {
    let y = conv2d(x, k, 2, VALID);
    reduce_sum(y)
}

/// The mean, kept as `[1, 1, 1, 1]`, next to a relu epilogue; a second reduction of the
/// same result reads it from memory (one reduction per convolution records).
#[graph]
fn relu_mean(
    x: Tensor<f32, N, H, W, 3>,
    k: Tensor<f32, 3, 3, 3, C>,
    b: Tensor<f32, C>,
) -> (Tensor<f32, 1, 1, 1, 1>, Tensor<f32>) {
    let y = relu(conv2d(x, k, 1, SAME) + b);
    (reduce_mean(y, [0, 1, 2, 3], true), norm(y))
}

/// The f64 twin: not recorded (the f64 norm scales by the largest magnitude first).
#[graph]
fn layer_norm_f64(x: Tensor<f64, N, H, W, 3>, k: Tensor<f64, 3, 3, 3, C>) -> Tensor<f64> {
    norm(conv2d(x, k, 1, SAME))
}

fn bits(v: f32) -> u32 {
    if v.is_nan() {
        f32::NAN.to_bits()
    } else {
        v.to_bits()
    }
}

fn same_bits<D: grafo::ndarray::Dimension>(
    what: &str,
    a: &grafo::ndarray::Array<f32, D>,
    b: &grafo::ndarray::Array<f32, D>,
) {
    assert_eq!(a.shape(), b.shape(), "{what}: shape");
    for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        assert_eq!(bits(*x), bits(*y), "{what}: element {i}: {x} vs {y}");
    }
}

fn scalar_close(what: &str, got: f32, want: f64) {
    // The f32 result is the reference rounded once (a norm above f32's range is inf).
    let ok = if want.is_nan() {
        got.is_nan()
    } else if (want as f32).is_infinite() {
        got == want as f32
    } else {
        (got as f64 - want).abs() <= 1e-5 * (1.0 + want.abs())
    };
    assert!(ok, "{what}: got {got}, want {want}");
}

/// The reductions whose partial sums a convolution of the graph records, as
/// `(conv2d group, reduction kind)`.
fn recorded(g: &grafo::GraphDef) -> Vec<(usize, String)> {
    g.groups
        .iter()
        .filter_map(|gr| {
            let r = gr.records_for?;
            assert_eq!(gr.kind, "conv2d");
            assert_eq!(g.groups[r].kind, "reduce");
            Some((gr.id, g.nodes[g.groups[r].output].op.clone()))
        })
        .collect()
}

/// Shapes: empty, one pixel, odd, a channel count that does not divide a block of 1024,
/// several segments of 32768 elements, and a batch.
const SHAPES: &[(usize, usize, usize, usize)] = &[
    (0, 4, 4, 16),
    (1, 0, 5, 16),
    (1, 1, 1, 16),
    (1, 1, 1, 1),
    (1, 7, 7, 5),
    (2, 9, 13, 16),
    (1, 64, 64, 16),
    (1, 70, 70, 16),
    (2, 33, 47, 5),
    (1, 100, 101, 7),
];

/// A first layer's input, kernel and bias for `n x h x w x 3` images and `c` channels.
fn layer_inputs(
    seed: u64,
    (n, h, w, c): (usize, usize, usize, usize),
) -> (Array4<f32>, Array4<f32>, Array1<f32>) {
    (
        rand_arr(seed, Ix4(n, h, w, 3), -1.0, 1.0),
        rand_arr(seed + 1000, Ix4(3, 3, 3, c), -0.5, 0.5),
        rand_arr(seed + 2000, Ix1(c), -0.1, 0.1),
    )
}

/// Asserts that the compiled call and a `Session`'s first and second run (the second writes
/// into the first's buffer) give the eager bits for both results of `$f(x, k, b)`; yields
/// the compiled results.
macro_rules! both_results_agree {
    ($f:ident, $x:expr, $k:expr, $b:expr, $what:expr) => {{
        let (a0, a1) = $f($x, $k, $b).unwrap();
        let (e0, e1) = $f::eager($x, $k, $b).unwrap();
        same_bits(&format!("{} first result", $what), &a0, &e0);
        same_bits(&format!("{} second result", $what), &a1, &e1);
        let mut sess = Session::default();
        for run in 0..2 {
            let (r0, r1) = $f::run(&mut sess, $x, $k, $b).unwrap();
            same_bits(&format!("{} run {run} first result", $what), &r0, &e0);
            same_bits(&format!("{} run {run} second result", $what), &r1, &e1);
        }
        (a0, a1)
    }};
}

#[test]
fn norm_of_a_conv_layer_matches_eager_bit_for_bit() {
    assert_eq!(recorded(&layer_norm2::graph()).len(), 1);
    for (seed, &(n, h, w, c)) in SHAPES.iter().enumerate() {
        let (x, k, b) = layer_inputs(10 + seed as u64, (n, h, w, c));
        let what = format!("{n}x{h}x{w}x{c}");
        let (y, s) = both_results_agree!(layer_norm2, &x, &k, &b, what);
        let want = zip2(
            &ref_conv2d(&to_f64(&x), &to_f64(&k), 1, true),
            &to_f64(&b),
            |a, b| a + b,
        );
        assert_close(&format!("{what} result vs reference"), &y, &want);
        scalar_close(
            &format!("{what} norm vs reference"),
            s.into_scalar(),
            ref_norm(&want),
        );
    }
}

#[test]
fn sums_and_means_of_conv_layers_match_eager_bit_for_bit() {
    assert_eq!(recorded(&strided_sum::graph()).len(), 1);
    // One reduction per convolution records; the other reads the result from memory.
    assert_eq!(recorded(&relu_mean::graph()).len(), 1);
    for (seed, &(n, h, w, c)) in SHAPES.iter().enumerate() {
        let what = format!("{n}x{h}x{w}x{c}");
        // Values of both signs and mixed magnitudes, so the order of the additions shows.
        let x2: Array4<f32> = rand_arr(100 + seed as u64, Ix4(n, 41, 37, 2), -1.0, 1.0).mapv(|v| {
            if v > 0.9 {
                v * 1e6
            } else {
                v
            }
        });
        let k2: Array4<f32> = rand_arr(130 + seed as u64, Ix4(3, 3, 2, c), -0.5, 0.5);
        let s = strided_sum(&x2, &k2).unwrap();
        let se = strided_sum::eager(&x2, &k2).unwrap();
        same_bits(&format!("{what} strided sum"), &s, &se);
        let want: f64 = ref_conv2d(&to_f64(&x2), &to_f64(&k2), 2, false).sum();
        let got = s.into_scalar() as f64;
        let scale: f64 = ref_conv2d(&to_f64(&x2), &to_f64(&k2), 2, false)
            .iter()
            .map(|v| v.abs())
            .sum();
        assert!(
            (got - want).abs() <= 1e-5 * (1.0 + scale),
            "{what} strided sum: {got} vs {want}"
        );

        let (x, k, b) = layer_inputs(160 + seed as u64, (n, h, w, c));
        let (m, s) = both_results_agree!(relu_mean, &x, &k, &b, what);
        let y = zip2(
            &ref_conv2d(&to_f64(&x), &to_f64(&k), 1, true),
            &to_f64(&b),
            |a, b| ref_relu(a + b),
        );
        let count = y.len();
        let want_mean = if count == 0 {
            f64::NAN
        } else {
            y.sum() / count as f64
        };
        scalar_close(
            &format!("{what} mean vs reference"),
            m.iter().copied().next().unwrap(),
            want_mean,
        );
        scalar_close(
            &format!("{what} norm vs reference"),
            s.into_scalar(),
            ref_norm(&y),
        );
    }
}

#[test]
fn nan_and_infinities_reach_the_recorded_norm() {
    let (n, h, w, c) = (1, 80, 90, 16);
    let k: Array4<f32> = rand_arr(5, Ix4(3, 3, 3, c), -0.5, 0.5);
    let b: Array1<f32> = rand_arr(6, Ix1(c), -0.1, 0.1);
    let cases: [(&str, f32, usize); 5] = [
        ("inf", f32::INFINITY, 4000),
        ("-inf", f32::NEG_INFINITY, 21000),
        ("nan", f32::NAN, 100),
        ("huge", 3e38, 7000),
        ("squares overflow f32", 1e25, 15000),
    ];
    for (name, special, at) in cases {
        let mut x: Array4<f32> = rand_arr(7, Ix4(n, h, w, 3), -1.0, 1.0);
        x.as_slice_mut().unwrap()[at] = special;
        let (y, s) = layer_norm2(&x, &k, &b).unwrap();
        let (ye, se) = layer_norm2::eager(&x, &k, &b).unwrap();
        same_bits(&format!("{name} result"), &y, &ye);
        same_bits(&format!("{name} norm"), &s, &se);
        let want = zip2(
            &ref_conv2d(&to_f64(&x), &to_f64(&k), 1, true),
            &to_f64(&b),
            |a, b| a + b,
        );
        // The reference sums the f32 results' squares (the conv's own rounding is f32's).
        let y64: ArrayD<f64> = to_f64(&y);
        let r = ref_norm(&y64);
        scalar_close(&format!("{name} norm vs reference"), s.into_scalar(), r);
        if special.is_finite() && special < 1e30 {
            // Finite results: the reference conv agrees with the kernel to f32 rounding.
            assert_close_tol(
                &format!("{name} result vs reference"),
                &y,
                &want,
                1e-4,
                1e-2,
            );
        }
    }
}

#[test]
fn f64_norms_of_convolutions_still_agree() {
    assert!(recorded(&layer_norm_f64::graph()).is_empty());
    let x = rand_f64(1, Ix4(1, 40, 41, 3), -1.0, 1.0);
    let k = rand_f64(2, Ix4(3, 3, 3, 9), -0.5, 0.5);
    let a: Array0<f64> = layer_norm_f64(&x, &k).unwrap();
    let e: Array0<f64> = layer_norm_f64::eager(&x, &k).unwrap();
    assert_eq!(a.into_scalar().to_bits(), e.into_scalar().to_bits());
    let want = ref_norm(&ref_conv2d(&to_f64(&x), &to_f64(&k), 1, true));
    let got = layer_norm_f64(&x, &k).unwrap().into_scalar();
    assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
}

/// The norm is taken in an arm, the convolution outside it: not recorded (the arm may not
/// run), same bits on both paths.
#[graph]
fn norm_in_an_arm(
    x: Tensor<f32, N, H, W, 3>,
    k: Tensor<f32, 3, 3, 3, C>,
    t: Tensor<f32>,
) -> (Tensor<f32, N, H, W, C>, Tensor<f32>) {
    let y = conv2d(x, k, 1, SAME);
    let mut s = t;
    if t > 0.0 {
        s = norm(y);
    }
    (y, s)
}

#[test]
fn a_reduction_in_another_arm_reads_the_result() {
    assert!(recorded(&norm_in_an_arm::graph()).is_empty());
    let x: Array4<f32> = rand_arr(3, Ix4(1, 50, 60, 3), -1.0, 1.0);
    let k: Array4<f32> = rand_arr(4, Ix4(3, 3, 3, 16), -0.5, 0.5);
    for t in [1.0f32, -1.0] {
        let (y, s) = norm_in_an_arm(&x, &k, &arr0(t)).unwrap();
        let (ye, se) = norm_in_an_arm::eager(&x, &k, &arr0(t)).unwrap();
        same_bits("result", &y, &ye);
        same_bits("norm", &s, &se);
        let want = if t > 0.0 {
            ref_norm(&to_f64(&y))
        } else {
            t as f64
        };
        scalar_close("norm vs reference", s.into_scalar(), want);
    }
}
