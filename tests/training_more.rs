//! The regression losses (`mean_squared_error`, `huber_loss`), `clip_by_norm`, and the Adagrad
//! and RMSProp updates: compiled == eager bit for bit, against plain loops written here (TF's
//! definitions), on sizes 0, 1, 7 and 1023 with NaN and infinities, and their gradients
//! against central finite differences in f64.

use grafo::ndarray::Array1;
use grafo::prelude::*;

/// A scalar result.
type Tensor0 = grafo::ndarray::Array0<f32>;

/// Values in [lo, hi), spread deterministically (a golden-ratio sequence).
fn spread(n: usize, lo: f64, hi: f64, seed: f64) -> Vec<f64> {
    (0..n)
        .map(|i| lo + (hi - lo) * ((i as f64 + seed) * 0.618_033_988_749_895).fract())
        .collect()
}

/// Central differences of `f` at `x`.
fn fd(f: &dyn Fn(&Array1<f64>) -> f64, x: &Array1<f64>) -> Array1<f64> {
    let h = 1e-6;
    Array1::from_iter((0..x.len()).map(|i| {
        let (mut p, mut m) = (x.clone(), x.clone());
        p[i] += h;
        m[i] -= h;
        (f(&p) - f(&m)) / (2.0 * h)
    }))
}

fn close(what: &str, got: &Array1<f64>, want: &Array1<f64>, tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for i in 0..got.len() {
        assert!(
            (got[i] - want[i]).abs() <= tol * (1.0 + want[i].abs()),
            "{what}[{i}]: {} vs {}",
            got[i],
            want[i]
        );
    }
}

/// Equal bit for bit, NaN included.
fn same_bits(a: &Array1<f32>, b: &Array1<f32>) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

#[graph]
fn losses(
    labels: Tensor<f32, N>,
    predictions: Tensor<f32, N>,
) -> (Tensor<f32>, Tensor<f32>, Tensor<f32>, Tensor<f32, N>) {
    (
        mean_squared_error(labels, predictions),
        huber_loss(labels, predictions),
        huber_loss(labels, predictions, 0.25),
        clip_by_norm(predictions, 2.0),
    )
}

/// TF's Huber loss of one error, in f64.
fn huber(e: f64, delta: f64) -> f64 {
    let q = e.abs().min(delta);
    0.5 * q * q + delta * (e.abs() - q)
}

#[test]
fn losses_and_clip_by_norm_match_tf_definitions() {
    for n in [0usize, 1, 7, 1023] {
        let labels = Array1::from_iter(spread(n, -2.0, 2.0, 0.3).iter().map(|&v| v as f32));
        let predictions = Array1::from_iter(spread(n, -2.0, 2.0, 0.8).iter().map(|&v| v as f32));
        let got = losses(&labels, &predictions).unwrap();
        let eager = losses::eager(&labels, &predictions).unwrap();
        let bits = |t: &(Tensor0, Tensor0, Tensor0, Array1<f32>)| {
            let s = |a: &Tensor0| a.clone().into_scalar().to_bits();
            (s(&t.0), s(&t.1), s(&t.2), t.3.mapv(f32::to_bits))
        };
        assert_eq!(
            bits(&got),
            bits(&eager),
            "n {n}: compiled == eager, bit for bit"
        );
        let errors: Vec<f64> = labels
            .iter()
            .zip(&predictions)
            .map(|(&l, &p)| p as f64 - l as f64)
            .collect();
        let mean = |f: &dyn Fn(f64) -> f64| errors.iter().map(|&e| f(e)).sum::<f64>() / n as f64;
        let want = [
            mean(&|e| e * e),
            mean(&|e| huber(e, 1.0)),
            mean(&|e| huber(e, 0.25)),
        ];
        for (k, (got, want)) in [&got.0, &got.1, &got.2].iter().zip(want).enumerate() {
            let got = (*got).clone().into_scalar() as f64;
            if n == 0 {
                // The mean of no elements is 0 / 0, NaN, as TF's reduce_mean of an empty tensor.
                assert!(got.is_nan(), "n 0, loss {k}: {got}");
            } else {
                assert!(
                    (got - want).abs() <= 1e-5 * (1.0 + want),
                    "n {n}, loss {k}: {got} vs {want}"
                );
            }
        }
        let norm = predictions
            .iter()
            .map(|&p| (p as f64).powi(2))
            .sum::<f64>()
            .sqrt();
        for (i, &p) in predictions.iter().enumerate() {
            let want = p as f64 * 2.0 / norm.max(2.0);
            assert!(
                (got.3[i] as f64 - want).abs() <= 1e-6 * (1.0 + want.abs()),
                "clip n {n} [{i}]"
            );
        }
    }
    // A norm within the bound leaves t's bits alone, and an all-zero t stays zero.
    let small = Array1::from_vec(vec![0.5f32, -0.25, 1.0]);
    assert!(same_bits(&losses(&small, &small).unwrap().3, &small));
    let zero = Array1::<f32>::zeros(4);
    assert!(same_bits(&losses(&zero, &zero).unwrap().3, &zero));
    // NaN and infinities pass through as TF's composites pass them.
    let odd = Array1::from_vec(vec![f32::NAN, f32::INFINITY, 1.0]);
    let (mse, h1, h2, clipped) = losses(&Array1::zeros(3), &odd).unwrap();
    let eager = losses::eager(&Array1::zeros(3), &odd).unwrap();
    assert!(mse.into_scalar().is_nan() && h1.into_scalar().is_nan() && h2.into_scalar().is_nan());
    assert!(clipped.iter().all(|v| v.is_nan()), "{clipped}");
    assert!(same_bits(&eager.3, &clipped));
}

#[graph]
fn loss_gradients(
    labels: Tensor<f64, N>,
    predictions: Tensor<f64, N>,
) -> (Tensor<f64>, Tensor<f64, N>, Tensor<f64, N>) {
    let loss = mean_squared_error(labels, predictions)
        + huber_loss(labels, predictions, 0.3)
        + reduce_sum(square(clip_by_norm(predictions, 1.5)) * labels);
    let (gl, gp) = gradients(loss, (labels, predictions));
    (loss, gl, gp)
}

#[graph]
fn clip_zero_gradient(t: Tensor<f64, N>) -> Tensor<f64, N> {
    gradients(reduce_sum(clip_by_norm(t, 1.0)), t)
}

#[test]
fn loss_gradients_match_finite_differences() {
    for n in [1usize, 7] {
        let labels = Array1::from(spread(n, -2.0, 2.0, 0.3));
        let predictions = Array1::from(spread(n, -2.0, 2.0, 0.8));
        let got = loss_gradients(&labels, &predictions).unwrap();
        let eager = loss_gradients::eager(&labels, &predictions).unwrap();
        assert_eq!(got, eager, "compiled == eager");
        let by_labels = |v: &Array1<f64>| loss_gradients(v, &predictions).unwrap().0.into_scalar();
        let by_predictions = |v: &Array1<f64>| loss_gradients(&labels, v).unwrap().0.into_scalar();
        close("labels", &got.1, &fd(&by_labels, &labels), 1e-6);
        close(
            "predictions",
            &got.2,
            &fd(&by_predictions, &predictions),
            1e-6,
        );
    }
    // TF's select makes the gradient at an all-zero t finite: g / clip_norm * clip_norm = g.
    let g = clip_zero_gradient(&Array1::zeros(3)).unwrap();
    assert_eq!(g, Array1::from_vec(vec![1.0; 3]));
}

#[graph]
fn optimizers(
    w: Tensor<f32, N>,
    accum: Tensor<f32, N>,
    ms: Tensor<f32, N>,
    mom: Tensor<f32, N>,
    g: Tensor<f32, N>,
) -> (
    (Tensor<f32, N>, Tensor<f32, N>),
    (Tensor<f32, N>, Tensor<f32, N>, Tensor<f32, N>),
) {
    (
        apply_adagrad(w, accum, 0.1, g),
        apply_rms_prop(w, ms, mom, 0.01, 0.9, 0.5, 1e-7, g),
    )
}

#[test]
fn adagrad_and_rms_prop_match_tf_update_rules() {
    for n in [0usize, 1, 7, 1023] {
        let f = |lo, hi, seed| Array1::from_iter(spread(n, lo, hi, seed).iter().map(|&v| v as f32));
        let (w, accum, ms, mom, g) = (
            f(-1.0, 1.0, 0.1),
            f(0.1, 1.0, 0.2),
            f(0.0, 1.0, 0.3),
            f(-0.1, 0.1, 0.4),
            f(-2.0, 2.0, 0.5),
        );
        let got = optimizers(&w, &accum, &ms, &mom, &g).unwrap();
        let eager = optimizers::eager(&w, &accum, &ms, &mom, &g).unwrap();
        assert_eq!(got, eager, "n {n}: compiled == eager");
        let ((aw, aa), (rw, rms, rmom)) = got;
        for i in 0..n {
            // TF's ApplyAdagrad and ApplyRMSProp, written out in f32 in the kernels' order.
            let a = accum[i] + g[i] * g[i];
            assert_eq!(aa[i].to_bits(), a.to_bits(), "adagrad accum [{i}]");
            assert_eq!(
                aw[i].to_bits(),
                (w[i] - g[i] * 0.1 / a.sqrt()).to_bits(),
                "adagrad var [{i}]"
            );
            let m = ms[i] + (g[i] * g[i] - ms[i]) * (1.0 - 0.9);
            let p = mom[i] * 0.5 + g[i] * 0.01 / (m + 1e-7).sqrt();
            assert_eq!(rms[i].to_bits(), m.to_bits(), "rms ms [{i}]");
            assert_eq!(rmom[i].to_bits(), p.to_bits(), "rms mom [{i}]");
            assert_eq!(rw[i].to_bits(), (w[i] - p).to_bits(), "rms var [{i}]");
        }
    }
    // A NaN gradient makes NaN state and weights, as TF's kernels do (no silent skip).
    let one = Array1::from_vec(vec![1.0f32]);
    let nan = Array1::from_vec(vec![f32::NAN]);
    let ((aw, _), (rw, _, _)) = optimizers(&one, &one, &one, &one, &nan).unwrap();
    assert!(aw[0].is_nan() && rw[0].is_nan());
}

/// Adagrad and RMSProp train a least-squares fit: the loss goes down.
#[graph]
fn fit_step(
    x: Tensor<f32, B, 3>,
    y: Tensor<f32, B>,
    w: &mut Tensor<f32, 3>,
    accum: &mut Tensor<f32, 3>,
    v: &mut Tensor<f32, 3>,
    ms: &mut Tensor<f32, 3>,
    mom: &mut Tensor<f32, 3>,
) -> (Tensor<f32>, Tensor<f32>) {
    let loss_w = mean_squared_error(y, reduce_sum(x * w, 1));
    let loss_v = mean_squared_error(y, reduce_sum(x * v, 1));
    let (gw, gv) = gradients(loss_w + loss_v, (w, v));
    (w, accum) = apply_adagrad(w, accum, 0.1, clip_by_norm(gw, 10.0));
    (v, ms, mom) = apply_rms_prop(v, ms, mom, 0.01, 0.9, 0.0, 1e-7, gv);
    (loss_w, loss_v)
}

#[test]
fn adagrad_and_rms_prop_fit_a_line() {
    let b = 16;
    let x = grafo::ndarray::Array2::from_shape_vec(
        (b, 3),
        spread(3 * b, -1.0, 1.0, 0.2)
            .iter()
            .map(|&v| v as f32)
            .collect(),
    )
    .unwrap();
    let y = x.dot(&Array1::from_vec(vec![0.5f32, -1.0, 2.0]));
    let mut w = Array1::<f32>::zeros(3);
    let mut accum = Array1::from_elem(3, 0.1f32);
    let mut v = Array1::<f32>::zeros(3);
    let (mut ms, mut mom) = (Array1::<f32>::zeros(3), Array1::<f32>::zeros(3));
    let (mut we, mut ae, mut ve, mut mse, mut mome) =
        (w.clone(), accum.clone(), v.clone(), ms.clone(), mom.clone());
    let mut first = None;
    let mut last = (0.0, 0.0);
    for _ in 0..200 {
        let (lw, lv) = fit_step(&x, &y, &mut w, &mut accum, &mut v, &mut ms, &mut mom).unwrap();
        let eager =
            fit_step::eager(&x, &y, &mut we, &mut ae, &mut ve, &mut mse, &mut mome).unwrap();
        assert_eq!((lw.clone(), lv.clone()), eager, "compiled == eager");
        last = (lw.into_scalar(), lv.into_scalar());
        first.get_or_insert(last);
    }
    let first = first.unwrap();
    assert!(
        last.0 < 0.05 * first.0 && last.1 < 0.05 * first.1,
        "{first:?} -> {last:?}"
    );
}
