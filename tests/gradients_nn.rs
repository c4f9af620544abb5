//! `gradients` through the convolutions, pooling, `gather` and `conv2d_transpose`: every rule
//! against central finite differences of the same compiled function (f64), and the compiled
//! gradients against the eager ones bit for bit: a small CNN (conv2d SAME stride 1, conv2d
//! VALID stride 2, depthwise, max and average pooling, relu, dense), dilated convolutions, an
//! embedding model, `conv2d_transpose`, and gradients of gradients (the rules of the gradient
//! ops themselves).

use grafo::ndarray::{ArrayD, Dimension, IxDyn};
use grafo::prelude::*;

/// Deterministic values in [-1, 1) (a small LCG).
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

fn bits_equal(a: &ArrayD<f64>, b: &ArrayD<f64>) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b.iter())
            .all(|(x, y)| x.to_bits() == y.to_bits())
}

/// A `(loss, grads...)` function on the inputs, compiled or eager (`true`).
type Run<'a> = dyn Fn(&[ArrayD<f64>], bool) -> Vec<ArrayD<f64>> + 'a;

/// Checks a `(loss, grads...)` function: compiled == eager bit for bit, and the gradient of
/// input `wrt[k]` (result `k + 1`) within `tol` of central finite differences of the loss.
fn check(what: &str, inputs: &[ArrayD<f64>], wrt: &[usize], run: &Run<'_>, tol: f64) {
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
        assert_eq!(g.shape(), fd.shape(), "{what}, input {p}: shape");
        for (i, (a, b)) in g.iter().zip(fd.iter()).enumerate() {
            assert!(
                (a - b).abs() <= tol * (1.0 + b.abs()),
                "{what}, input {p}[{i}]: gradients gave {a}, finite differences {b}"
            );
        }
    }
}

fn d<D: Dimension>(a: &ArrayD<f64>) -> grafo::ndarray::ArrayView<'_, f64, D> {
    a.view().into_dimensionality::<D>().unwrap()
}
use grafo::ndarray::{Ix1, Ix2, Ix4};

#[graph]
fn cnn_loss(
    x: Tensor<f64, B, 8, 8, 2>,
    k1: Tensor<f64, 3, 3, 2, 3>,
    b1: Tensor<f64, 3>,
    k2: Tensor<f64, 3, 3, 3, 4>,
    kd: Tensor<f64, 3, 3, 4, 1>,
    w: Tensor<f64, 4, 3>,
    labels: Tensor<f64, B, 3>,
) -> (
    Tensor<f64>,
    Tensor<f64, B, 8, 8, 2>,
    Tensor<f64, 3, 3, 2, 3>,
    Tensor<f64, 3>,
    Tensor<f64, 3, 3, 3, 4>,
    Tensor<f64, 3, 3, 4, 1>,
    Tensor<f64, 4, 3>,
) {
    let h1 = relu(conv2d(x, k1, 1, SAME) + b1);
    let h2 = conv2d(h1, k2, 2, VALID);
    let h3 = relu(depthwise_conv2d(h2, kd, 1, SAME));
    let p = max_pool2d(h3, 2, 1, VALID);
    let a = avg_pool2d(p, 2, 2, SAME);
    let f = reshape(a, [B, 4]);
    let logits = matmul(f, w);
    let l = reduce_mean(square(logits - labels));
    let (gx, gk1, gb1, gk2, gkd, gw) = gradients(l, (x, k1, b1, k2, kd, w));
    (l, gx, gk1, gb1, gk2, gkd, gw)
}

#[test]
fn small_cnn_gradients_match_finite_differences() {
    for b in [1usize, 2] {
        let inputs = vec![
            array(&[b, 8, 8, 2], 1),
            array(&[3, 3, 2, 3], 2),
            array(&[3], 3),
            array(&[3, 3, 3, 4], 4),
            array(&[3, 3, 4, 1], 5),
            array(&[4, 3], 6),
            array(&[b, 3], 7),
        ];
        let run = |v: &[ArrayD<f64>], eager: bool| {
            let f = if eager { cnn_loss::eager } else { cnn_loss };
            let r = f(
                &d::<Ix4>(&v[0]),
                &d::<Ix4>(&v[1]),
                &d::<Ix1>(&v[2]),
                &d::<Ix4>(&v[3]),
                &d::<Ix4>(&v[4]),
                &d::<Ix2>(&v[5]),
                &d::<Ix2>(&v[6]),
            )
            .unwrap();
            vec![
                r.0.into_dyn(),
                r.1.into_dyn(),
                r.2.into_dyn(),
                r.3.into_dyn(),
                r.4.into_dyn(),
                r.5.into_dyn(),
                r.6.into_dyn(),
            ]
        };
        check(
            &format!("cnn B={b}"),
            &inputs,
            &[0, 1, 2, 3, 4, 5],
            &run,
            1e-5,
        );
    }
}

#[graph]
fn dilated_loss(
    x: Tensor<f64, 2, 7, 6, 2>,
    k: Tensor<f64, 2, 3, 2, 3>,
    kd: Tensor<f64, 3, 2, 3, 2>,
) -> (
    Tensor<f64>,
    Tensor<f64, 2, 7, 6, 2>,
    Tensor<f64, 2, 3, 2, 3>,
    Tensor<f64, 3, 2, 3, 2>,
) {
    let h = tanh(conv2d(x, k, 2, SAME, 2));
    let y = depthwise_conv2d(h, kd, 1, VALID, [1, 2]);
    let l = reduce_sum(y * y) * 0.5 + reduce_sum(avg_pool2d(h, 3, 2, SAME));
    let (gx, gk, gkd) = gradients(l, (x, k, kd));
    (l, gx, gk, gkd)
}

#[test]
fn dilated_and_depthwise_gradients_match_finite_differences() {
    let inputs = vec![
        array(&[2, 7, 6, 2], 11),
        array(&[2, 3, 2, 3], 12),
        array(&[3, 2, 3, 2], 13),
    ];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let f = if eager {
            dilated_loss::eager
        } else {
            dilated_loss
        };
        let r = f(&d::<Ix4>(&v[0]), &d::<Ix4>(&v[1]), &d::<Ix4>(&v[2])).unwrap();
        vec![
            r.0.into_dyn(),
            r.1.into_dyn(),
            r.2.into_dyn(),
            r.3.into_dyn(),
        ]
    };
    check("dilated", &inputs, &[0, 1, 2], &run, 1e-6);
}

#[graph]
fn embedding_loss(
    table: Tensor<f64, 10, 4>,
    ids: Tensor<i32, B, 3>,
    w: Tensor<f64, 4, 2>,
    scale: Tensor<f64, 3, 5, 2>,
    cols: Tensor<i64, 4>,
) -> (
    Tensor<f64>,
    Tensor<f64, 10, 4>,
    Tensor<f64, 4, 2>,
    Tensor<f64, 3, 5, 2>,
) {
    let e = gather(table, ids, 0);
    let m = reduce_mean(e, 1);
    let s = gather(scale, cols, 1);
    let l = reduce_sum(square(matmul(m, w))) + reduce_sum(s * s * s);
    let (gt, gw, gs) = gradients(l, (table, w, scale));
    (l, gt, gw, gs)
}

#[test]
fn embedding_gradients_match_finite_differences() {
    // Repeated ids (and unused rows) in the table.
    let ids = grafo::ndarray::arr2(&[[1, 4, 1], [9, 1, 0], [4, 4, 7]]);
    let cols = grafo::ndarray::arr1(&[4i64, 0, 4, 2]);
    let inputs = vec![
        array(&[10, 4], 21),
        array(&[4, 2], 22),
        array(&[3, 5, 2], 23),
    ];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let f = if eager {
            embedding_loss::eager
        } else {
            embedding_loss
        };
        let r = f(
            &d::<Ix2>(&v[0]),
            &ids,
            &d::<Ix2>(&v[1]),
            &v[2]
                .view()
                .into_dimensionality::<grafo::ndarray::Ix3>()
                .unwrap(),
            &cols,
        )
        .unwrap();
        vec![
            r.0.into_dyn(),
            r.1.into_dyn(),
            r.2.into_dyn(),
            r.3.into_dyn(),
        ]
    };
    check("embedding", &inputs, &[0, 1, 2], &run, 1e-6);
}

#[graph]
fn transpose_loss(
    x: Tensor<f64, B, 3, 3, 4>,
    k: Tensor<f64, 3, 3, 2, 4>,
) -> (
    Tensor<f64>,
    Tensor<f64, B, 3, 3, 4>,
    Tensor<f64, 3, 3, 2, 4>,
) {
    let up = conv2d_transpose(x, k, [B, 6, 5, 2], 2, SAME);
    let l = reduce_sum(sin(up));
    let (gx, gk) = gradients(l, (x, k));
    (l, gx, gk)
}

#[test]
fn conv2d_transpose_gradients_match_finite_differences() {
    let inputs = vec![array(&[2, 3, 3, 4], 31), array(&[3, 3, 2, 4], 32)];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let f = if eager {
            transpose_loss::eager
        } else {
            transpose_loss
        };
        let r = f(&d::<Ix4>(&v[0]), &d::<Ix4>(&v[1])).unwrap();
        vec![r.0.into_dyn(), r.1.into_dyn(), r.2.into_dyn()]
    };
    check("conv2d_transpose", &inputs, &[0, 1], &run, 1e-6);
}

/// Gradients of gradients: the input gradient of a conv2d differentiated again (the rules
/// of the input and filter gradient ops), and the same through an average pooling's and a
/// gather's gradient.
#[graph]
fn second_order(
    x: Tensor<f64, 1, 5, 5, 2>,
    k: Tensor<f64, 3, 3, 2, 3>,
    kd: Tensor<f64, 2, 2, 2, 2>,
    table: Tensor<f64, 6, 2>,
    ids: Tensor<i32, 4>,
) -> (
    Tensor<f64>,
    Tensor<f64, 1, 5, 5, 2>,
    Tensor<f64, 3, 3, 2, 3>,
    Tensor<f64, 2, 2, 2, 2>,
    Tensor<f64, 6, 2>,
) {
    let y = conv2d(x, k, 2, SAME);
    let z = depthwise_conv2d(tanh(x), kd, 1, VALID);
    let p = avg_pool2d(x * x, 3, 2, SAME);
    let e = gather(table, ids, 0);
    let inner = reduce_sum(y * y * y)
        + reduce_sum(z * z * z)
        + reduce_sum(p * p * p)
        + reduce_sum(e * e * e);
    let (gx, gk, gkd, gt) = gradients(inner, (x, k, kd, table));
    let l = reduce_sum(gx * gx) + reduce_sum(gk * gk) + reduce_sum(gkd * gkd) + reduce_sum(gt * gt);
    let (hx, hk, hkd, ht) = gradients(l, (x, k, kd, table));
    (l, hx, hk, hkd, ht)
}

#[test]
fn gradients_of_gradients_match_finite_differences() {
    let ids = grafo::ndarray::arr1(&[2, 5, 2, 0]);
    let inputs = vec![
        array(&[1, 5, 5, 2], 41),
        array(&[3, 3, 2, 3], 42),
        array(&[2, 2, 2, 2], 43),
        array(&[6, 2], 44),
    ];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let f = if eager {
            second_order::eager
        } else {
            second_order
        };
        let r = f(
            &d::<Ix4>(&v[0]),
            &d::<Ix4>(&v[1]),
            &d::<Ix4>(&v[2]),
            &d::<Ix2>(&v[3]),
            &ids,
        )
        .unwrap();
        vec![
            r.0.into_dyn(),
            r.1.into_dyn(),
            r.2.into_dyn(),
            r.3.into_dyn(),
            r.4.into_dyn(),
        ]
    };
    check("second order", &inputs, &[0, 1, 2, 3], &run, 1e-5);
}
