//! `constant` with nested array literals and with TF's `shape` argument, through `#[graph]`:
//! each function runs compiled, eager and in a `Session`, and every result is compared bit for
//! bit (signed zeros included) with the array written out here by hand, alone and broadcast
//! onto inputs of sizes 0, 1, 7 and 1023.

use grafo::ndarray::{arr1, arr2, Array1, Array2, Array3, ArrayD, IxDyn};
use grafo::prelude::*;

#[path = "common/entry_points.rs"]
#[macro_use]
mod entry_points;

/// The sizes of the symbolic dim the broadcasting functions are checked on.
const SIZES: [usize; 4] = [0, 1, 7, 1023];

/// Equal shapes and bit-identical f32 elements.
fn same_bits<D: grafo::ndarray::Dimension, E: grafo::ndarray::Dimension>(
    what: &str,
    got: &Array<f32, D>,
    want: &Array<f32, E>,
) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
        assert_eq!(
            g.to_bits(),
            w.to_bits(),
            "{what}: element {i}: got {g:?}, want {w:?}"
        );
    }
}

#[graph]
#[allow(clippy::type_complexity)]
fn literal_forms() -> (
    Tensor<f32, 3>,
    Tensor<f32, 2, 3>,
    Tensor<i32, 4>,
    Tensor<f64, 2>,
    Tensor<bool, 2, 2>,
    Tensor<i64, 3>,
    Tensor<f32, 1>,
) {
    (
        constant([1.0, -0.0, 2.5]),
        constant([[1, 2, 3], [4, 5, 6.5]]),
        constant([7, -8, 2147483647, -2147483648]),
        constant([1.0f64, -3.0e300]),
        constant([[true, false], [false, true]]),
        constant::<i64>([5000000000, -1, 0]),
        constant([-0.0]),
    )
}

#[test]
fn array_literals_give_their_shape_dtype_and_values() {
    for (how, (a, b, c, d, e, f, g)) in runs_ok!(literal_forms()) {
        same_bits(how, &a, &arr1(&[1.0f32, -0.0, 2.5]));
        same_bits(how, &b, &arr2(&[[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.5]]));
        assert_eq!(c, arr1(&[7, -8, i32::MAX, i32::MIN]), "{how}");
        assert_eq!(d, arr1(&[1.0f64, -3.0e300]), "{how}");
        assert_eq!(e, arr2(&[[true, false], [false, true]]), "{how}");
        assert_eq!(f, arr1(&[5_000_000_000i64, -1, 0]), "{how}");
        same_bits(how, &g, &arr1(&[-0.0f32]));
    }
}

#[graph]
#[allow(clippy::type_complexity)]
fn repeats_empties_and_shapes() -> (
    Tensor<f32, 4>,
    Tensor<i32, 3, 2>,
    Tensor<f32, 0>,
    Tensor<f32, 2, 0>,
    Tensor<f32, 0, 2>,
    Tensor<f32, 16>,
    Tensor<i32, 2, 3>,
    Tensor<f32>,
    Tensor<f64, 2, 2>,
) {
    const K: usize = 3;
    (
        constant([0.5; 4]),
        constant([[1, 2]; K]),
        constant([]),
        constant([[], []]),
        constant([[1.0, 2.0]; 0]),
        constant(0.0, [16]),
        constant([1, 2, 3, 4, 5, 6], [2, 3]),
        constant([4.5], []),
        constant::<f64>([[1, 2], [3, 4]]),
    )
}

#[test]
fn repeats_empty_lists_and_tf_shape() {
    for (how, (a, b, c, d, e, f, g, h, i)) in runs_ok!(repeats_empties_and_shapes()) {
        same_bits(how, &a, &Array1::from_elem(4, 0.5f32));
        assert_eq!(b, arr2(&[[1, 2], [1, 2], [1, 2]]), "{how}");
        assert_eq!(c.shape(), &[0], "{how}");
        assert_eq!(d.shape(), &[2, 0], "{how}");
        assert_eq!(e.shape(), &[0, 2], "{how}");
        same_bits(how, &f, &Array1::zeros(16));
        assert_eq!(g, arr2(&[[1, 2, 3], [4, 5, 6]]), "{how}");
        same_bits(how, &h, &ArrayD::from_elem(IxDyn(&[]), 4.5f32));
        assert_eq!(i, arr2(&[[1.0f64, 2.0], [3.0, 4.0]]), "{how}");
    }
}

/// A constant row and a constant matrix meet inputs of a symbolic size: broadcast in a fused
/// loop, a matmul operand, and two constants that differ only in the sign of zero (common
/// subexpression elimination must keep both).
#[graph]
fn constants_meet_inputs(
    x: Tensor<f32, B, 3>,
) -> (
    Tensor<f32, B, 3>,
    Tensor<f32, B, 2>,
    Tensor<f32, B, 3>,
    Tensor<f32, B, 3>,
) {
    let row = constant([1.0, -0.0, 2.5]);
    let w = constant([[1.0, 0.0], [0.0, 1.0], [2.0, -1.0]]);
    (
        x * row + 1.0,
        matmul(x, w),
        x + constant([0.0, 0.0, 0.0]),
        x + constant([-0.0, -0.0, -0.0]),
    )
}

#[test]
fn constants_broadcast_multiply_and_keep_the_sign_of_zero() {
    let (row, w) = (
        [1.0f32, -0.0, 2.5],
        [[1.0f32, 0.0], [0.0, 1.0], [2.0, -1.0]],
    );
    for b in SIZES {
        let x = Array2::from_shape_fn((b, 3), |(i, j)| match (i + j) % 4 {
            0 => -0.0,
            1 => f32::NAN,
            2 => -(i as f32) * 0.25,
            _ => f32::INFINITY,
        });
        let mut scaled = Array2::zeros((b, 3));
        let mut product = Array2::zeros((b, 2));
        let mut plus_zero = Array2::zeros((b, 3));
        let mut plus_minus_zero = Array2::zeros((b, 3));
        for i in 0..b {
            for j in 0..3 {
                scaled[[i, j]] = x[[i, j]] * row[j] + 1.0;
                plus_zero[[i, j]] = x[[i, j]] + 0.0;
                plus_minus_zero[[i, j]] = x[[i, j]] + -0.0;
            }
            for k in 0..2 {
                let mut s = 0.0f32;
                for j in 0..3 {
                    s += x[[i, j]] * w[j][k];
                }
                product[[i, k]] = s;
            }
        }
        for (how, (s, p, z, m)) in runs_ok!(constants_meet_inputs(&x)) {
            let how = format!("{how}, B = {b}");
            same_bits(&how, &s, &scaled);
            // The product's sums may take another order than this loop; NaN and inf rows
            // agree by class, finite ones exactly (small integers and quarters).
            for (g, r) in p.iter().zip(product.iter()) {
                assert!(g == r || (g.is_nan() && r.is_nan()), "{how}: {g} vs {r}");
            }
            same_bits(&how, &z, &plus_zero);
            same_bits(&how, &m, &plus_minus_zero);
        }
    }
}

/// An array constant inside both arms of a cond and a loop.
#[graph]
fn constants_in_control_flow(x: Tensor<f32, N>, t: Tensor<f32>) -> Tensor<f32, N> {
    let mut y = x;
    if t > 0.0 {
        y = y + reduce_sum(constant([1.0, 2.0]));
    } else {
        y = y - reduce_max(constant([[1.0, 9.0], [3.0, 4.0]]));
    }
    for _ in 0..2 {
        y = y * reduce_min(constant([2.0, 3.0]));
    }
    y
}

#[test]
fn constants_in_cond_arms_and_loops() {
    for n in SIZES {
        let x = Array1::from_shape_fn(n, |i| i as f32 - 3.0);
        for t in [1.0f32, -1.0] {
            let want = x.mapv(|v| (if t > 0.0 { v + 3.0 } else { v - 9.0 }) * 2.0 * 2.0);
            for (how, got) in runs_ok!(constants_in_control_flow(&x, &arr0(t))) {
                same_bits(&format!("{how}, n = {n}, t = {t}"), &got, &want);
            }
        }
    }
}

/// A constant of 1023 values (written by a `[v; n]` repeat and an explicit list) summed with
/// a rank-3 input: the largest constant form, checked against the same values by hand.
#[graph]
fn long_constant(x: Tensor<f32, B, 2, 1023>) -> Tensor<f32, B, 2, 1023> {
    x + constant([[0.25; 1023], [-1.5; 1023]])
}

#[test]
fn a_long_constant_broadcasts_over_a_batch() {
    for b in [0usize, 1, 7] {
        let x = Array3::from_shape_fn((b, 2, 1023), |(i, j, k)| (i * 3 + j * 5 + k) as f32);
        let want = Array3::from_shape_fn((b, 2, 1023), |(i, j, k)| {
            x[[i, j, k]] + if j == 0 { 0.25 } else { -1.5 }
        });
        for (how, got) in runs_ok!(long_constant(&x)) {
            same_bits(&format!("{how}, B = {b}"), &got, &want);
        }
    }
}

#[test]
fn the_graph_describes_an_array_constant() {
    use grafo::Dim;
    let g = literal_forms::graph();
    let node = g
        .nodes
        .iter()
        .find(|n| n.op == "constant" && n.shape == vec![Dim::Static(2), Dim::Static(3)])
        .expect("the [2, 3] constant is a node");
    let value = node
        .attrs
        .iter()
        .find(|(k, _)| k == "value")
        .map(|(_, v)| v.as_str());
    assert_eq!(value, Some("[1.0, 2.0, 3.0, 4.0, 5.0, 6.5]"));
    assert!(g.to_dot().contains("constant"));
}

/// Two `range`s that differ only in the sign of a zero start are two nodes after common
/// subexpression elimination, as two such constants are.
#[graph]
fn signed_zero_ranges() -> (Tensor<f32, 3>, Tensor<f32, 3>) {
    (range(0.0, 3.0, 1.0), range(-0.0, 3.0, 1.0))
}

#[test]
fn ranges_keep_the_sign_of_a_zero_start() {
    for (how, (plus, minus)) in runs_ok!(signed_zero_ranges()) {
        same_bits(how, &plus, &arr1(&[0.0f32, 1.0, 2.0]));
        same_bits(how, &minus, &arr1(&[-0.0f32, 1.0, 2.0]));
    }
}

// ----- constants of a dtype: f32::NEG_INFINITY, i32::MAX, f64::consts::PI -----------------

/// Causal attention's mask: scores above the diagonal become `f32::NEG_INFINITY`, so softmax
/// gives them exactly 0; a row masked whole (the last, by `keep`) is all -inf, whose
/// softmax is NaN, as TF's.
#[graph]
fn causal_softmax(
    x: Tensor<f32, T, T>,
    keep: Tensor<bool, T, 1>,
) -> (Tensor<f32, T, T>, Tensor<f32, T, T>) {
    let i = expand_dims(range(T), 1);
    let j = expand_dims(range(T), 0);
    let masked = select(j <= i, x, f32::NEG_INFINITY);
    let masked = select(keep, masked, f32::NEG_INFINITY);
    (masked, softmax(masked, -1))
}

#[test]
fn a_causal_mask_of_neg_infinity_then_softmax() {
    for t in [0usize, 1, 5, 67] {
        let x = Array2::from_shape_fn((t, t), |(i, j)| ((i * 7 + j * 3) % 11) as f32 * 0.5 - 2.0);
        let keep = Array2::from_shape_fn((t, 1), |(i, _)| i + 1 < t || t == 1);
        let mut want_masked = x.clone();
        let mut want = Array2::<f32>::zeros((t, t));
        for i in 0..t {
            for j in 0..t {
                if j > i || !keep[[i, 0]] {
                    want_masked[[i, j]] = f32::NEG_INFINITY;
                }
            }
            let row = want_masked.row(i);
            let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let s: f64 = row.iter().map(|&v| f64::from(v - m).exp()).sum();
            for j in 0..t {
                want[[i, j]] = (f64::from(want_masked[[i, j]] - m).exp() / s) as f32;
            }
        }
        let runs = runs_ok!(causal_softmax(&x, &keep));
        for (how, (masked, soft)) in &runs {
            let how = format!("{how}, T = {t}");
            same_bits(&how, masked, &want_masked);
            // Compiled, eager and session agree bit for bit; the reference to rounding.
            same_bits(&how, soft, &runs[0].1 .1);
            for ((i, j), &w) in want.indexed_iter() {
                let g = soft[[i, j]];
                if j > i {
                    assert_eq!(g.to_bits(), 0, "{how}: [{i}, {j}] is masked: {g}");
                } else if w.is_nan() {
                    assert!(g.is_nan(), "{how}: [{i}, {j}]: {g}, want NaN");
                } else {
                    assert!((g - w).abs() <= 1e-6, "{how}: [{i}, {j}]: {g} vs {w}");
                }
            }
        }
    }
}

/// The constants of each dtype, as Rust spells them, alone, in an array constant, folded
/// with each other (into NaN, infinity) and meeting an input at run time.
#[graph]
#[allow(clippy::type_complexity)]
fn dtype_constants(
    x: Tensor<f32, N>,
    k: Tensor<i32, N>,
) -> (
    Tensor<f32, 7>,
    Tensor<f64, 8>,
    (Tensor<i32, 2>, Tensor<i64, 2>),
    Tensor<f32, 6>,
    (Tensor<f32, N>, Tensor<f32, N>, Tensor<i32, N>),
) {
    let all32 = constant([
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
        std::f32::MIN_POSITIVE,
    ]);
    let all64 = constant([
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MAX,
        f64::MIN,
        f64::EPSILON,
        f64::consts::PI,
        core::f64::consts::LN_2,
    ]);
    let ints = (
        constant([i32::MAX, i32::MIN]),
        constant([i64::MAX, i64::MIN]),
    );
    // Folded: 0 * inf and inf - inf are the hardware's NaN (negative on x86), -NaN flips
    // NAN's sign, MAX * 2 overflows, and maximum with NaN is NaN.
    let folded = stack(
        [
            f32::INFINITY * 0.0,
            f32::INFINITY - f32::INFINITY,
            -f32::NAN,
            f32::MAX * 2.0,
            maximum(f32::NAN, 1.0),
            f32::MIN - f32::MAX,
        ],
        0,
    );
    (
        all32,
        all64,
        ints,
        folded,
        (x + f32::EPSILON, x * f32::NAN, k + i32::MAX),
    )
}

#[test]
fn constants_of_a_dtype_are_typed_values() {
    let nan_product = std::hint::black_box(f32::INFINITY) * std::hint::black_box(0.0f32);
    let nan_difference = std::hint::black_box(f32::INFINITY) - std::hint::black_box(f32::INFINITY);
    for n in SIZES {
        let x = Array1::from_shape_fn(n, |i| i as f32 - 1.0);
        let k = Array1::from_shape_fn(n, |i| i as i32 - 1);
        let runs = runs_ok!(dtype_constants(&x, &k));
        for (how, (a, b, (c, d), f, (p, q, r))) in &runs {
            let how = format!("{how}, N = {n}");
            same_bits(
                &how,
                a,
                &arr1(&[
                    f32::INFINITY,
                    f32::NEG_INFINITY,
                    f32::NAN,
                    f32::MAX,
                    f32::MIN,
                    f32::EPSILON,
                    f32::MIN_POSITIVE,
                ]),
            );
            let want64 = [
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                f64::MAX,
                f64::MIN,
                f64::EPSILON,
                std::f64::consts::PI,
                std::f64::consts::LN_2,
            ];
            let got64: Vec<u64> = b.iter().map(|v| v.to_bits()).collect();
            let want64: Vec<u64> = want64.iter().map(|v| v.to_bits()).collect();
            assert_eq!(got64, want64, "{how}");
            assert_eq!(c, &arr1(&[i32::MAX, i32::MIN]), "{how}");
            assert_eq!(d, &arr1(&[i64::MAX, i64::MIN]), "{how}");
            same_bits(
                &how,
                f,
                &arr1(&[
                    nan_product,
                    nan_difference,
                    -f32::NAN,
                    f32::INFINITY,
                    f32::NAN,
                    f32::NEG_INFINITY,
                ]),
            );
            same_bits(&how, p, &x.mapv(|v| v + f32::EPSILON));
            same_bits(&how, q, &runs[0].1 .4 .1);
            assert!(q.iter().all(|v| v.is_nan()), "{how}");
            assert_eq!(r, &k.mapv(|v| v.wrapping_add(i32::MAX)), "{how}");
        }
    }
}
