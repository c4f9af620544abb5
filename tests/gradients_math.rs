//! The gradient rules of issue 31's everyday ops (relu6, log1p, expm1, reciprocal, the step
//! ops, the Keras activation composites, reduce_prod, cumsum, top_k, band_part, resize)
//! against central finite differences in f64, and the compiled gradients against the eager
//! ones bit for bit (the `check` harness of `tests/gradients.rs`, copied).

use grafo::ndarray::{ArrayD, Ix1, IxDyn};
use grafo::prelude::*;

/// Deterministic values in [-1, 1) (a small LCG: the test needs no exact distribution).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

fn array(shape: &[usize], seed: u64) -> ArrayD<f64> {
    let n = shape.iter().product();
    ArrayD::from_shape_vec(IxDyn(shape), values(n, seed)).unwrap()
}

/// Central differences of `loss` at `inputs[which]`, element by element.
fn finite_difference(
    loss: &dyn Fn(&[ArrayD<f64>]) -> f64,
    inputs: &[ArrayD<f64>],
    which: usize,
) -> ArrayD<f64> {
    let h = 1e-6;
    let mut out = ArrayD::zeros(inputs[which].raw_dim());
    for i in 0..inputs[which].len() {
        let mut plus = inputs.to_vec();
        let mut minus = inputs.to_vec();
        plus[which].as_slice_mut().unwrap()[i] += h;
        minus[which].as_slice_mut().unwrap()[i] -= h;
        out.as_slice_mut().unwrap()[i] = (loss(&plus) - loss(&minus)) / (2.0 * h);
    }
    out
}

/// Asserts `got` is within `tol` (absolute plus relative) of the finite differences.
fn assert_close(what: &str, got: &ArrayD<f64>, want: &ArrayD<f64>, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: gradients gave {g}, finite differences {w}"
        );
    }
}

fn bits_equal(a: &ArrayD<f64>, b: &ArrayD<f64>) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b.iter())
            .all(|(x, y)| x.to_bits() == y.to_bits())
}

type V<'a, D> = grafo::ndarray::ArrayView<'a, f64, D>;
/// Runs a `(loss, grads...)` function on inputs, compiled (`false`) or eagerly (`true`).
type Runner<'a> = &'a dyn Fn(&[ArrayD<f64>], bool) -> Vec<ArrayD<f64>>;
fn d<D: grafo::ndarray::Dimension>(a: &ArrayD<f64>) -> V<'_, D> {
    a.view().into_dimensionality::<D>().unwrap()
}

/// Checks the gradients of a `(loss, grads...)` function: compiled == eager bit for bit, and
/// each gradient against central finite differences of the compiled loss.
fn check(what: &str, inputs: &[ArrayD<f64>], wrt: &[usize], run: Runner<'_>, tol: f64) {
    let got = run(inputs, false);
    let eager = run(inputs, true);
    let loss = |v: &[ArrayD<f64>]| run(v, false)[0].iter().sum::<f64>();
    for (k, &p) in wrt.iter().enumerate() {
        let (g, e) = (&got[k + 1], &eager[k + 1]);
        assert!(
            bits_equal(g, e),
            "{what}, input {p}: compiled {g} eager {e}"
        );
        let fd = finite_difference(&loss, inputs, p);
        assert_close(&format!("{what}, input {p}"), g, &fd, tol);
    }
}

#[graph]
fn unary_grads(x: Tensor<f64, N>) -> (Tensor<f64>, Tensor<f64, N>) {
    let y = reduce_sum(
        relu6(x * 5.0 + 2.0) * x
            + log1p(x * x * 3.0)
            + log1p(x * 0.5)
            + expm1(x * 2.0)
            + reciprocal(x * x + 0.5)
            + reciprocal(x - 2.0) * x
            + (floor(x * 3.0) + ceil(x * 2.0) + round(x * 2.5) + sign(x)) * x
            + hard_sigmoid(x * 4.0)
            + hard_swish(x * 4.0) * x
            + silu(x * 3.0)
            + swish(x * 2.0) * x
            + softsign(x * 3.0),
    );
    (y, gradients(y, x))
}

#[test]
fn elementwise_rules_match_finite_differences() {
    for (n, seed) in [(1, 1), (7, 2), (64, 3)] {
        let run = |v: &[ArrayD<f64>], eager: bool| {
            let f = if eager {
                unary_grads::eager
            } else {
                unary_grads
            };
            let (l, g) = f(&d::<Ix1>(&v[0])).unwrap();
            vec![l.into_dyn(), g.into_dyn()]
        };
        check(
            &format!("unary ops, n = {n}"),
            &[array(&[n], seed)],
            &[0],
            &run,
            1e-6,
        );
    }
}

#[graph]
fn step_grads(x: Tensor<f64, N>) -> (Tensor<f64>, Tensor<f64, N>) {
    let y = reduce_sum(sign(x) + floor(x) + ceil(x) + round(x) + relu6(x * 0.0 - 1.0));
    (y, gradients(y, x))
}

#[test]
fn step_ops_pass_no_gradient() {
    let x = array(&[9], 4);
    let (_, g) = step_grads(d::<Ix1>(&x)).unwrap();
    let (_, ge) = step_grads::eager(d::<Ix1>(&x)).unwrap();
    assert!(g.iter().all(|&v| v == 0.0), "{g}");
    assert!(bits_equal(&g.into_dyn(), &ge.into_dyn()));
}

use grafo::ndarray::{Ix2, Ix3, Ix4};

#[graph]
fn prod_grads(
    x: Tensor<f64, 4, 3>,
    y: Tensor<f64, 2, 3, 2>,
    w: Tensor<f64, 4>,
) -> (Tensor<f64>, Tensor<f64, 4, 3>, Tensor<f64, 2, 3, 2>) {
    let l = reduce_sum(reduce_prod(x, 1) * w)
        + reduce_prod(x * 0.5 + 1.0)
        + reduce_sum(reduce_prod(y, [0, 2], true) * 0.3)
        + reduce_sum(reduce_prod(y, [1, 2]));
    let (gx, gy) = gradients(l, (x, y));
    (l, gx, gy)
}

#[test]
fn reduce_prod_rule_matches_finite_differences_with_zeros() {
    let mut x = array(&[4, 3], 21);
    // One zero in row 1, two in row 2: TF's rule is right at zeros, where prod / x is not.
    x[[1, 2]] = 0.0;
    x[[2, 0]] = 0.0;
    x[[2, 1]] = 0.0;
    let mut y = array(&[2, 3, 2], 22);
    y[[1, 1, 0]] = 0.0;
    let inputs = vec![x, y, array(&[4], 23)];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let f = if eager { prod_grads::eager } else { prod_grads };
        let (l, gx, gy) = f(&d::<Ix2>(&v[0]), &d::<Ix3>(&v[1]), &d::<Ix1>(&v[2])).unwrap();
        vec![l.into_dyn(), gx.into_dyn(), gy.into_dyn()]
    };
    check("reduce_prod", &inputs, &[0, 1], &run, 1e-6);
}

#[graph]
fn cumsum_grads(x: Tensor<f64, 3, 5>, w: Tensor<f64, 3, 5>) -> (Tensor<f64>, Tensor<f64, 3, 5>) {
    let l = reduce_sum(
        w * cumsum(x, 1)
            + square(cumsum(x, 0, true))
            + w * w * cumsum(x, -1, false, true)
            + w * cumsum(x * x, 0, true, true),
    );
    (l, gradients(l, x))
}

#[test]
fn cumsum_rule_matches_finite_differences() {
    let inputs = vec![array(&[3, 5], 31), array(&[3, 5], 32)];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let f = if eager {
            cumsum_grads::eager
        } else {
            cumsum_grads
        };
        let (l, g) = f(&d::<Ix2>(&v[0]), &d::<Ix2>(&v[1])).unwrap();
        vec![l.into_dyn(), g.into_dyn()]
    };
    check("cumsum", &inputs, &[0], &run, 1e-6);
}

#[graph]
fn top_k_grads(x: Tensor<f64, 4, 6>, w: Tensor<f64, 4, 3>) -> (Tensor<f64>, Tensor<f64, 4, 6>) {
    let (v, i) = top_k(x * x + x, 3);
    let l = reduce_sum(w * v * v) + reduce_sum(cast::<f64>(i)) * 0.0;
    (l, gradients(l, x))
}

#[test]
fn top_k_rule_scatters_to_the_indices() {
    let inputs = vec![array(&[4, 6], 41), array(&[4, 3], 42)];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let f = if eager {
            top_k_grads::eager
        } else {
            top_k_grads
        };
        let (l, g) = f(&d::<Ix2>(&v[0]), &d::<Ix2>(&v[1])).unwrap();
        vec![l.into_dyn(), g.into_dyn()]
    };
    check("top_k", &inputs, &[0], &run, 1e-6);
}

#[graph]
fn resize_grads(
    x: Tensor<f64, 2, 3, 4, 2>,
    w: Tensor<f64, 2, 5, 7, 2>,
    v: Tensor<f64, 2, 2, 3, 2>,
) -> (Tensor<f64>, Tensor<f64, 2, 3, 4, 2>) {
    let l = reduce_sum(w * resize(x, [5, 7], BILINEAR))
        + reduce_sum(v * resize(x * x, [2, 3], BILINEAR))
        + reduce_sum(w * resize(x, [5, 7], NEAREST) * 0.7)
        + reduce_sum(v * square(resize(x, [2, 3], NEAREST)));
    (l, gradients(l, x))
}

#[test]
fn resize_rules_are_the_adjoints_of_the_interpolation() {
    let inputs = vec![
        array(&[2, 3, 4, 2], 51),
        array(&[2, 5, 7, 2], 52),
        array(&[2, 2, 3, 2], 53),
    ];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let f = if eager {
            resize_grads::eager
        } else {
            resize_grads
        };
        let (l, g) = f(&d::<Ix4>(&v[0]), &d::<Ix4>(&v[1]), &d::<Ix4>(&v[2])).unwrap();
        vec![l.into_dyn(), g.into_dyn()]
    };
    check("resize", &inputs, &[0], &run, 1e-6);
}

/// The rules of the backward ops themselves (`cumprod`, the scatter of `top_k`, `resize`'s
/// adjoint): the gradient of a gradient.
#[graph]
fn second_order(
    x: Tensor<f64, 3, 4>,
    w: Tensor<f64, 3, 4>,
    im: Tensor<f64, 1, 2, 3, 1>,
    u: Tensor<f64, 1, 2, 3, 1>,
) -> (Tensor<f64>, Tensor<f64, 3, 4>, Tensor<f64, 1, 2, 3, 1>) {
    let (best, _) = top_k(x, 2);
    let g = gradients(
        reduce_sum(reduce_prod(x, 1)) + reduce_sum(best * x[s![.., 0..2]]),
        x,
    );
    let gi = gradients(reduce_sum(square(resize(im, [3, 5], BILINEAR))), im);
    let l = reduce_sum(w * g) + reduce_sum(u * gi);
    let (gx, gim) = gradients(l, (x, im));
    (l, gx, gim)
}

#[test]
fn the_backward_ops_differentiate_again() {
    // No zeros: TF's `cumprod` rule divides by x.
    let inputs = vec![
        array(&[3, 4], 61).mapv(|v| v + 1.5),
        array(&[3, 4], 62),
        array(&[1, 2, 3, 1], 63),
        array(&[1, 2, 3, 1], 64),
    ];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let f = if eager {
            second_order::eager
        } else {
            second_order
        };
        let (l, gx, gim) = f(
            &d::<Ix2>(&v[0]),
            &d::<Ix2>(&v[1]),
            &d::<Ix4>(&v[2]),
            &d::<Ix4>(&v[3]),
        )
        .unwrap();
        vec![l.into_dyn(), gx.into_dyn(), gim.into_dyn()]
    };
    check("second order", &inputs, &[0, 2], &run, 1e-5);
}

#[graph]
fn band_grads(
    x: Tensor<f64, 2, 4, 5>,
    w: Tensor<f64, 4, 5>,
) -> (Tensor<f64>, Tensor<f64, 2, 4, 5>) {
    let l = reduce_sum(w * band_part(x, -1, 0))
        + reduce_sum(square(band_part(x * w, 1, 2)))
        + reduce_sum(band_part(x, 0, 0) * 3.0);
    (l, gradients(l, x))
}

#[test]
fn band_part_masks_the_gradient() {
    let inputs = vec![array(&[2, 4, 5], 71), array(&[4, 5], 72)];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let f = if eager { band_grads::eager } else { band_grads };
        let (l, g) = f(&d::<Ix3>(&v[0]), &d::<Ix2>(&v[1])).unwrap();
        vec![l.into_dyn(), g.into_dyn()]
    };
    check("band_part", &inputs, &[0], &run, 1e-6);
}
