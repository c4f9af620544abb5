//! `gradients(y, xs)`: every rule checked against central finite differences of the same
//! compiled function (in f64), and the compiled gradients against the eager ones bit for bit.

use grafo::ndarray::{ArrayD, IxDyn};
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

#[graph]
fn unary_chain(x: Tensor<f64, 7>) -> (Tensor<f64>, Tensor<f64, 7>) {
    let y = reduce_sum(
        tanh(x) * sigmoid(x) + exp(x) * 0.3 + square(x) + sin(x) - cos(x) * abs(x)
            + log(x * x + 1.0)
            + sqrt(x * x + 0.5)
            + rsqrt(x * x + 2.0)
            + relu(x) * 2.0
            + softplus(x)
            + elu(x)
            + erf(x)
            + gelu(x)
            + gelu(x, true)
            + leaky_relu(x, 0.2)
            - x / (x * x + 3.0)
            + pow(x * x + 1.0, x)
            + maximum(x, 0.1) * minimum(x, -0.1),
    );
    (y, gradients(y, x))
}

#[test]
fn elementwise_rules_match_finite_differences() {
    let x = array(&[7], 1);
    let loss = |v: &[ArrayD<f64>]| {
        let x = v[0].view().into_dimensionality().unwrap();
        unary_chain(x).unwrap().0.into_scalar()
    };
    let x1 = x.view().into_dimensionality().unwrap();
    let (_, g) = unary_chain(x1.view()).unwrap();
    let (_, ge) = unary_chain::eager(x1.view()).unwrap();
    let (g, ge) = (g.into_dyn(), ge.into_dyn());
    assert!(bits_equal(&g, &ge), "compiled {g} eager {ge}");
    let fd = finite_difference(&loss, std::slice::from_ref(&x), 0);
    assert_close("d unary_chain / dx", &g, &fd, 1e-6);
}

#[graph]
fn mlp_loss(
    x: Tensor<f64, B, 5>,
    labels: Tensor<f64, B, 3>,
    w: Tensor<f64, 5, 4>,
    b: Tensor<f64, 4>,
    v: Tensor<f64, 4, 3>,
    c: Tensor<f64, 3>,
) -> (
    Tensor<f64>,
    Tensor<f64, 5, 4>,
    Tensor<f64, 4>,
    Tensor<f64, 4, 3>,
    Tensor<f64, 3>,
) {
    let h = tanh(matmul(x, w) + b);
    let logits = matmul(h, v) + c;
    let l = reduce_mean(-reduce_sum(labels * log_softmax(logits, -1), -1));
    let (gw, gb, gv, gc) = gradients(l, (w, b, v, c));
    (l, gw, gb, gv, gc)
}

#[test]
fn mlp_gradients_match_finite_differences() {
    let inputs = vec![
        array(&[6, 5], 2),
        softmax_rows(array(&[6, 3], 3)),
        array(&[5, 4], 4),
        array(&[4], 5),
        array(&[4, 3], 6),
        array(&[3], 7),
    ];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let d2 = |i: usize| {
            v[i].view()
                .into_dimensionality::<grafo::ndarray::Ix2>()
                .unwrap()
        };
        let d1 = |i: usize| {
            v[i].view()
                .into_dimensionality::<grafo::ndarray::Ix1>()
                .unwrap()
        };
        let f = if eager { mlp_loss::eager } else { mlp_loss };
        f(&d2(0), &d2(1), &d2(2), &d1(3), &d2(4), &d1(5)).unwrap()
    };
    let loss = |v: &[ArrayD<f64>]| run(v, false).0.into_scalar();
    let (_, gw, gb, gv, gc) = run(&inputs, false);
    let (_, ew, eb, ev, ec) = run(&inputs, true);
    let got = [gw.into_dyn(), gb.into_dyn(), gv.into_dyn(), gc.into_dyn()];
    let eager = [ew.into_dyn(), eb.into_dyn(), ev.into_dyn(), ec.into_dyn()];
    for (k, (g, e)) in got.iter().zip(&eager).enumerate() {
        assert!(bits_equal(g, e), "parameter {k}: compiled {g} eager {e}");
        let fd = finite_difference(&loss, &inputs, k + 2);
        assert_close(&format!("parameter {k}"), g, &fd, 1e-6);
    }
}

fn softmax_rows(a: ArrayD<f64>) -> ArrayD<f64> {
    let mut a = a.mapv(f64::exp);
    for mut row in a.rows_mut() {
        let s: f64 = row.sum();
        row.mapv_inplace(|v| v / s);
    }
    a
}

type V<'a, D> = grafo::ndarray::ArrayView<'a, f64, D>;
fn d<D: grafo::ndarray::Dimension>(a: &ArrayD<f64>) -> V<'_, D> {
    a.view().into_dimensionality::<D>().unwrap()
}
use grafo::ndarray::{Ix0, Ix1, Ix2, Ix3, Ix4};

/// Runs a `(loss, grads...)` function on inputs, compiled (`false`) or eagerly (`true`).
type Runner<'a> = &'a dyn Fn(&[ArrayD<f64>], bool) -> Vec<ArrayD<f64>>;

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
fn cond_grad(
    x: Tensor<f64, 4>,
    w: Tensor<f64, 4>,
    limit: Tensor<f64>,
) -> (Tensor<f64>, Tensor<f64, 4>, Tensor<f64, 4>) {
    let mut y = x * w;
    if reduce_sum(x) < limit {
        let t = tanh(y);
        y = t * t * w + x;
    } else {
        y = exp(y * 0.5);
    }
    let l = reduce_sum(y * y);
    let (gx, gw) = gradients(l, (x, w));
    (l, gx, gw)
}

#[test]
fn cond_runs_the_backward_of_the_taken_arm() {
    for limit in [-100.0, 100.0] {
        let inputs = vec![
            array(&[4], 11),
            array(&[4], 12),
            ArrayD::from_elem(IxDyn(&[]), limit),
        ];
        let run = |v: &[ArrayD<f64>], eager: bool| {
            let f = if eager { cond_grad::eager } else { cond_grad };
            let (l, a, b) = f(&d::<Ix1>(&v[0]), &d::<Ix1>(&v[1]), &d::<Ix0>(&v[2])).unwrap();
            vec![l.into_dyn(), a.into_dyn(), b.into_dyn()]
        };
        check(
            &format!("cond, limit {limit}"),
            &inputs,
            &[0, 1],
            &run,
            1e-6,
        );
    }
}

#[graph]
fn rnn_grad(
    xs: Tensor<f64, 2, 5, 3>,
    wx: Tensor<f64, 3, 4>,
    wh: Tensor<f64, 4, 4>,
    b: Tensor<f64, 4>,
) -> (
    Tensor<f64>,
    Tensor<f64, 3, 4>,
    Tensor<f64, 4, 4>,
    Tensor<f64, 4>,
    Tensor<f64, 2, 5, 3>,
) {
    let mut h = zeros::<f64>([2, 4]);
    for t in 0..5 {
        h = tanh(matmul(xs[s![.., t, ..]], wx) + matmul(h, wh) + b);
    }
    let l = reduce_mean(square(h)) + reduce_max(h) - reduce_min(h);
    let (gx, gh, gb, gxs) = gradients(l, (wx, wh, b, xs));
    (l, gx, gh, gb, gxs)
}

#[test]
fn unrolled_loop_backpropagates_through_time() {
    let inputs = vec![
        array(&[2, 5, 3], 21),
        array(&[3, 4], 22),
        array(&[4, 4], 23),
        array(&[4], 24),
    ];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let f = if eager { rnn_grad::eager } else { rnn_grad };
        let (l, a, b, c, e) = f(
            &d::<Ix3>(&v[0]),
            &d::<Ix2>(&v[1]),
            &d::<Ix2>(&v[2]),
            &d::<Ix1>(&v[3]),
        )
        .unwrap();
        vec![
            l.into_dyn(),
            a.into_dyn(),
            b.into_dyn(),
            c.into_dyn(),
            e.into_dyn(),
        ]
    };
    let run_reordered = |v: &[ArrayD<f64>], eager: bool| run(v, eager);
    check("rnn", &inputs, &[1, 2, 3, 0], &run_reordered, 1e-6);
}

#[graph]
fn shapes_grad(
    a: Tensor<f64, 2, 3>,
    b: Tensor<f64, 2, 3>,
    m: Tensor<f64, 2, 3, 4>,
    n: Tensor<f64, 4, 3>,
) -> (
    Tensor<f64>,
    Tensor<f64, 2, 3>,
    Tensor<f64, 2, 3>,
    Tensor<f64, 2, 3, 4>,
    Tensor<f64, 4, 3>,
) {
    let c = concat([a, b * 2.0], 0);
    let s = stack([a, b], 1);
    let t = tile(a, [2, 1]);
    let p = pad(b, [[1, 0], [0, 2]]);
    let r = reshape(transpose(c), [2, 6]);
    let q = matmul(m, n);
    let bm = matmul(transpose(m, [0, 2, 1]), transpose(n)) + matmul(n, m);
    let sl = m[s![.., 1..3, -1]];
    let l = reduce_sum(square(c))
        + reduce_sum(s * s * s)
        + reduce_sum(sin(t) * t)
        + reduce_sum(exp(p))
        + reduce_sum(r * r) * 0.5
        + reduce_sum(tanh(q))
        + reduce_sum(sigmoid(bm))
        + reduce_sum(softmax(sl, -1) * sl)
        + reduce_sum(log_softmax(a, 0) * b)
        + reduce_sum(bias_add(m, n[s![.., 0]]) * m)
        + reduce_sum(select(a > b, a * a, b));
    let (ga, gb, gm, gn) = gradients(l, (a, b, m, n));
    (l, ga, gb, gm, gn)
}

#[test]
fn shape_and_selection_rules_match_finite_differences() {
    let inputs = vec![
        array(&[2, 3], 31),
        array(&[2, 3], 32),
        array(&[2, 3, 4], 33),
        array(&[4, 3], 34),
    ];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let f = if eager {
            shapes_grad::eager
        } else {
            shapes_grad
        };
        let (l, a, b, c, e) = f(
            &d::<Ix2>(&v[0]),
            &d::<Ix2>(&v[1]),
            &d::<Ix3>(&v[2]),
            &d::<Ix2>(&v[3]),
        )
        .unwrap();
        vec![
            l.into_dyn(),
            a.into_dyn(),
            b.into_dyn(),
            c.into_dyn(),
            e.into_dyn(),
        ]
    };
    check("shapes", &inputs, &[0, 1, 2, 3], &run, 1e-6);
}

#[graph]
fn norms_grad(
    x: Tensor<f64, B, 6>,
    gamma: Tensor<f64, 6>,
    beta: Tensor<f64, 6>,
) -> (
    Tensor<f64>,
    Tensor<f64, B, 6>,
    Tensor<f64, 6>,
    Tensor<f64, 6>,
) {
    let y = layer_norm(x, gamma, beta);
    let m = reduce_mean(x, 0);
    let v = reduce_mean(square(x - m), 0);
    let z = batch_normalization(x, m, v, beta, gamma, 0.001);
    let l = reduce_mean(y * y * y)
        + reduce_mean(z * x)
        + norm(x)
        + reduce_mean(reduce_max(x, 1, true) * reduce_min(x, 0, true));
    let (gx, gg, gb) = gradients(l, (x, gamma, beta));
    (l, gx, gg, gb)
}

#[test]
fn normalisation_and_reduction_rules_over_a_symbolic_batch() {
    let inputs = vec![array(&[5, 6], 41), array(&[6], 42), array(&[6], 43)];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let f = if eager { norms_grad::eager } else { norms_grad };
        let (l, a, b, c) = f(&d::<Ix2>(&v[0]), &d::<Ix1>(&v[1]), &d::<Ix1>(&v[2])).unwrap();
        vec![l.into_dyn(), a.into_dyn(), b.into_dyn(), c.into_dyn()]
    };
    check("norms", &inputs, &[0, 1, 2], &run, 1e-6);
}

#[graph]
fn stop_and_unconnected(
    x: Tensor<f64, 3>,
    w: Tensor<f64, 3>,
    u: Tensor<f64, 2>,
) -> (
    Tensor<f64, 3>,
    Tensor<f64, 3>,
    Tensor<f64, 2>,
    Tensor<f64, 3>,
) {
    let y = x * stop_gradient(x * w) + w;
    let (gx, gw, gu) = gradients(y, (x, w, u));
    let weighted = gradients(y, x, w);
    (gx, gw, gu, weighted)
}

#[test]
fn stop_gradient_unconnected_inputs_and_grad_ys() {
    let x = grafo::ndarray::arr1(&[1.0, -2.0, 3.0]);
    let w = grafo::ndarray::arr1(&[0.5, 4.0, -1.0]);
    let u = grafo::ndarray::arr1(&[7.0, 8.0]);
    let (gx, gw, gu, weighted) = stop_and_unconnected(&x, &w, &u).unwrap();
    // y = x * const + w: dy/dx = x * w (held constant), dy/dw = 1, u unconnected.
    assert_eq!(gx, &x * &w);
    assert_eq!(gw, grafo::ndarray::arr1(&[1.0, 1.0, 1.0]));
    assert_eq!(gu, grafo::ndarray::arr1(&[0.0, 0.0]));
    assert_eq!(weighted, &x * &w * &w);
    let e = stop_and_unconnected::eager(&x, &w, &u).unwrap();
    assert_eq!((e.0, e.1, e.2, e.3), (gx, gw, gu, weighted));
}

#[graph]
mod trainer {
    pub fn dense(
        x: Tensor<f64, R, I>,
        w: Tensor<f64, I, O>,
        b: Tensor<f64, O>,
    ) -> Tensor<f64, R, O> {
        tanh(matmul(x, w) + b)
    }

    pub fn loss(
        x: Tensor<f64, B, 3>,
        w1: Tensor<f64, 3, 4>,
        b1: Tensor<f64, 4>,
        w2: Tensor<f64, 4, 2>,
        b2: Tensor<f64, 2>,
    ) -> Tensor<f64> {
        reduce_mean(square(dense(dense(x, w1, b1), w2, b2)))
    }

    pub fn step(
        x: Tensor<f64, B, 3>,
        w1: Tensor<f64, 3, 4>,
        b1: Tensor<f64, 4>,
        w2: Tensor<f64, 4, 2>,
        b2: Tensor<f64, 2>,
    ) -> (
        Tensor<f64>,
        Tensor<f64, 3, 4>,
        Tensor<f64, 4>,
        Tensor<f64, 4, 2>,
        Tensor<f64, 2>,
    ) {
        let l = loss(x, w1, b1, w2, b2);
        let (g1, gb1, g2, gb2) = gradients(l, (w1, b1, w2, b2));
        (
            l,
            w1 - 0.1 * g1,
            b1 - 0.1 * gb1,
            w2 - 0.1 * g2,
            b2 - 0.1 * gb2,
        )
    }
}

#[test]
fn gradients_through_inlined_calls_in_a_graph_mod() {
    let inputs = vec![
        array(&[3, 3], 51),
        array(&[3, 4], 52),
        array(&[4], 53),
        array(&[4, 2], 54),
        array(&[2], 55),
    ];
    let run = |v: &[ArrayD<f64>], eager: bool| {
        let f = if eager {
            trainer::step::eager
        } else {
            trainer::step
        };
        let (l, a, b, c, e) = f(
            &d::<Ix2>(&v[0]),
            &d::<Ix2>(&v[1]),
            &d::<Ix1>(&v[2]),
            &d::<Ix2>(&v[3]),
            &d::<Ix1>(&v[4]),
        )
        .unwrap();
        // The step returns updated parameters: turn them back into gradients for the check.
        let g = |new: ArrayD<f64>, old: &ArrayD<f64>| (old - &new) / 0.1;
        vec![
            l.into_dyn(),
            g(a.into_dyn(), &v[1]),
            g(b.into_dyn(), &v[2]),
            g(c.into_dyn(), &v[3]),
            g(e.into_dyn(), &v[4]),
        ]
    };
    check("graph mod step", &inputs, &[1, 2, 3, 4], &run, 1e-5);
    let _ = Ix4::default;
}

#[graph]
fn second_order(x: Tensor<f64, 5>) -> (Tensor<f64, 5>, Tensor<f64, 5>) {
    let y = reduce_sum(x * x * x + tanh(x));
    let g = gradients(y, x);
    let h = gradients(reduce_sum(g), x);
    (g, h)
}

#[test]
fn a_gradient_differentiates_again() {
    let x = grafo::ndarray::arr1(&[-1.5, -0.2, 0.0, 0.7, 2.0]);
    let (g, h) = second_order(&x).unwrap();
    assert_eq!((g.clone(), h.clone()), second_order::eager(&x).unwrap());
    for i in 0..5 {
        let (v, t) = (x[i], x[i].tanh());
        assert!((g[i] - (3.0 * v * v + 1.0 - t * t)).abs() < 1e-12);
        // d/dx (1 - tanh^2) = -2 tanh (1 - tanh^2).
        let want = 6.0 * v - 2.0 * t * (1.0 - t * t);
        assert!((h[i] - want).abs() < 1e-12, "{i}: {} vs {want}", h[i]);
    }
}

#[test]
fn backward_nodes_sit_in_the_gradients_name_scope() {
    let g = mlp_loss::graph();
    let backward: Vec<&str> = g
        .nodes
        .iter()
        .map(|n| n.name.as_str())
        .filter(|n| n.starts_with("gradients/"))
        .collect();
    assert!(backward.contains(&"gradients/d_w"), "{backward:?}");
    assert!(backward.len() > 10, "{backward:?}");
    // The forward nodes keep their own names.
    assert!(g.node("logits").is_some() && g.node("h").is_some());
}
